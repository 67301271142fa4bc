"""The optimized IR of a program read from a ``.irbc`` file, for the static runtime.

The static runtime runs the optimized IR itself (PyTorch's Static Runtime runs the graph
too), so it needs the IR objects that the interpreter never does.  A program compiled in
this process has them (``Program.module``); a program read from a file carries the
optimized IR as printed (``Program.optimized_ir``) and the original span of each of its
nodes (``Program.node_spans``, in ``compiler.program_tables.all_nodes`` order).
``optimized_module`` parses that text once per program, when a static runtime is first
built from it, gives every node back its span, and keeps the module on the program.  It
never optimizes again.
"""

from __future__ import annotations

from typing import Any


def optimized_module(program: Any) -> Any:
    """The optimized IR module of ``program`` (parsed from its text the first time for a
    program read from a file); None when it has neither."""
    if program.module_if_loaded is None and program.optimized_ir:
        with program._lock:
            if program.module_if_loaded is None:
                object.__setattr__(program, "_module", _parse(program))
    return program.module_if_loaded


def _parse(program: Any) -> Any:
    from compiler.parser import parse
    from compiler.program_tables import all_nodes
    from vm.check_graph import span_of

    module = parse(program.optimized_ir, "<optimized IR>")
    module.attributes = dict(program.folded)  # the attribute values it was compiled for
    nodes = list(all_nodes(module))
    if len(nodes) == len(program.node_spans):  # else the printed spans stay (never wrong nodes)
        for node, stored in zip(nodes, program.node_spans):
            node.span = span_of(stored)
    return module


__all__ = ["optimized_module"]
