"""What a compiled program keeps of its IR for binding ``%self`` without the IR.

A ``Program`` read from a ``.irbc`` file carries no IR objects: the interpreter runs the
bytecode alone.  Binding ``%self`` (``vm.binding.weights.bind_self``) walks the ``prim::GetAttr``
nodes that read from it.  The compiler records them as ``self_reads``
(``compiler.program_tables.self_reads_of``): one entry per GetAttr, ``(parent, name,
type, required, span)`` with ``parent`` the index of the entry whose result it reads from
(-1 for ``%self``).  ``self_graph`` rebuilds just those nodes as a ``vm.ir.graph.Graph``
(``vm.program.check_graph.self_graph``), a few hundred nodes at most.  The other checks before
a run read the program's check table (``vm.program.check_graph``); the static runtime, which
runs the optimized IR itself, decodes the tables the file carries (``vm.static.ir_text``).
"""

from __future__ import annotations

from typing import Any

SelfRead = tuple[int, str, str, bool, Any]


def self_graph(program: Any) -> Any:
    """A graph whose ``%self`` has the GetAttr nodes of ``program`` (for ``bind_self``):
    the IR module's own entry graph when it is at hand, else one rebuilt from
    ``self_reads``; None for a program that takes no ``%self``."""
    module = program.module_if_loaded
    if module is not None:
        return module.main
    if not program.takes_self:
        return None
    from vm.program.check_graph import self_graph as rebuilt

    return rebuilt(program.input_types[0], program.self_reads)


__all__ = ["SelfRead", "self_graph"]
