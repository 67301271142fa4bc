"""The optimized IR of a program read from a ``.irbc`` file, for the static runtime.

The static runtime runs the optimized IR itself (PyTorch's Static Runtime runs the graph
too), so it needs the IR objects that the interpreter never does.  A program compiled in
this process has them (``Program.module``); a program read from a file carries the
optimized IR as tables (``Program.ir_table``, ``vm.ir.tables``: every node with its
original span).  ``optimized_module`` decodes them once per program, when a static
runtime is first built from it, and keeps the module on the program: plain data read back
into the ground floor's IR objects, with no parser and nothing of the compiler.  It never
optimizes again.

The tables are tied to the bytecode (``tie``): the file's hash covers both, but an edited
file can be re-hashed, and then the two backends would run different programs.  So the
decoded IR must have one node per entry of the operator table ``node_refs`` (which the
emitter wrote from the same IR), and each node with an operator, printed as the emitter
printed it into the bytecode's node texts (``%y = aten::add(%a, %b, %1)``), must pair
with its operator exactly as the bytecode's ``OP``/``OPN`` instructions pair their node
text with their operator-table entry (as multisets over the program: fusion sub-graphs
are functions of their own in the bytecode).  An operator, an overload, an operand or a
result changed on one side only is refused with a ``BytecodeError``.
"""

from __future__ import annotations

from typing import Any


def optimized_module(program: Any) -> Any:
    """The optimized IR module of ``program`` (decoded from its tables the first time for
    a program read from a file); None when it has neither."""
    if program.module_if_loaded is None and program.ir_table is not None:
        with program._lock:
            if program.module_if_loaded is None:
                object.__setattr__(program, "_module", _decode(program))
    return program.module_if_loaded


def _decode(program: Any) -> Any:
    from vm.ir.graph import all_nodes
    from vm.ir.tables import module_from_table

    module = module_from_table(program.ir_table, "<optimized IR>", "<optimized IR>")
    nodes = list(all_nodes(module))
    tie(program, nodes)
    module.attributes = dict(program.folded)  # the attribute values it was compiled for
    # and, compiled for its weights, the tensors its folds made and what from
    module.specialized = program.specialized
    module.folded_tensors = dict(program.folded_tensors)
    module.folded_from = dict(program.folded_from)
    module.state = frozenset(program.state)  # what the module's other methods write
    module.model_keys = dict(program.model_keys)
    module.source_reads = dict(program.source_reads)
    _restore_enum_values(program, nodes)
    return module


def tie(program: Any, nodes: list[Any]) -> None:
    """Refuse an optimized IR (``nodes``, in ``all_nodes`` order) that is not the one the
    program's bytecode was emitted from (see the module essay); a program that recorded
    no operator table (an older file) is not checked."""
    from collections import Counter

    from vm.core.errors import BytecodeError
    from vm.program.bytecode import Opcode

    refs = program.node_refs
    if not refs:
        return
    if len(nodes) != len(refs):
        raise BytecodeError(f"the optimized IR has {len(nodes)} nodes, its operator table {len(refs)}: not the IR the bytecode was emitted from")
    from_ir = Counter((repr(node), ref) for node, ref in zip(nodes, refs) if ref is not None)
    from_code = Counter(
        (function.nodes[pc] if pc < len(function.nodes) else "", function.operators[ins.x])
        for function in program.functions
        for pc, ins in enumerate(function.instructions)
        if ins.op in (Opcode.OP, Opcode.OPN) and function.operators[ins.x].name != "prim::FusedKernel"
    )
    if from_ir != from_code:
        text, ref = next(iter((from_ir - from_code) or (from_code - from_ir)))
        raise BytecodeError(
            f"the optimized IR does not match the bytecode at {text} ({ref.name}): the two backends would run "
            "different programs (an edited file?)"
        )


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
