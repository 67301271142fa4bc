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
    from vm.program.check_graph import span_of

    module = parse(program.optimized_ir, "<optimized IR>")
    module.attributes = dict(program.folded)  # the attribute values it was compiled for
    # and, compiled for its weights, the tensors its folds made and what from
    module.specialized = program.specialized
    module.folded_tensors = dict(program.folded_tensors)
    module.folded_from = dict(program.folded_from)
    nodes = list(all_nodes(module))
    if len(nodes) == len(program.node_spans):  # else the printed spans stay (never wrong nodes)
        for node, stored in zip(nodes, program.node_spans):
            node.span = span_of(stored)
    _restore_enum_values(program, nodes)
    return module


def _restore_enum_values(program: Any, nodes: list[Any]) -> None:
    """Give enum-member constants back their values: the printed IR names a member only
    (``__torch__.Color.RED``), the bytecode's constants keep its value (``.irbc`` stores it)."""
    from vm.core.enum_values import EnumValue

    values: dict[tuple[str, str], Any] = {}

    def collect(value: Any) -> None:
        if isinstance(value, EnumValue) and value.value is not None:
            values[(value.qualname, value.name)] = value.value
        elif isinstance(value, (list, tuple)):
            for item in value:
                collect(item)

    for function in program.functions:
        collect(function.constants)
    if not values:
        return
    for node in nodes:
        member = node.attrs.get("value") if node.kind == "prim::Constant" else None
        if isinstance(member, EnumValue) and member.value is None and (member.qualname, member.name) in values:
            node.attrs["value"] = EnumValue(member.qualname, member.name, values[(member.qualname, member.name)])


__all__ = ["optimized_module"]
