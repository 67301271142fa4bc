"""Checking the tables of an ``.irbc`` beside its bytecode, at load.

``vm.program.irbc.verify`` checks the instructions (operands, jumps, stack depths); the file
carries more tables, which a run reads later: ``self_reads`` (the GetAttr chain binding
``%self`` walks, ``vm.program.self_reads``), the spans of the optimized IR's nodes, the
input defaults.  An entry out of shape there would pass the hash (it is recomputed by
whoever edits the file) and fail only at run time, as an ``IndexError`` deep in the
binding code.  ``check_tables`` checks each entry at load: ``self_reads`` parents refer
to an earlier entry (or -1, ``%self``), names are strings, types parse, spans are
``(file, line, column[, text])``; and a program that reads ``%self`` declares a ``%self``
of a class type.  Every failure is a ``BytecodeError`` naming the file, the table and the
entry.

``check_counts`` checks every count a run allocates by against the code that uses it
(issue #40: a recomputed hash made ``n_registers`` = 2^62 a ``MemoryError`` at the first
call, a fused kernel's slot count of 2^31 a 30-second, 2.8 GB run): a function declares no
more registers than its instructions name (the emitter allocates them densely) and at most
``MAX_REGISTERS``; inputs, outputs and operator arities are at most ``MAX_ARITY``; an
operator's inputs and defaults match its schema's arguments and its outputs the schema's
returns; and a fused kernel's ``FusionSpec`` (``vm.fusion.kernels``) is the one its
instruction calls: as many inputs and outputs as its operator entry, input kinds for
each input, constants in the slots after the inputs, each step's result in the next slot,
reading only slots already written, through an operator of the right arity, and outputs
among the slots.  The limits are fixed, far above what a compiler emits (a model of a
million registers is ~10^6 values live at once), and a file past them is refused naming
the function and the limit.
"""

from __future__ import annotations

import json
from typing import Any

from vm.core.errors import BytecodeError
from vm.ops import registry
from vm.ops.registry import OpRef
from vm.program.bytecode import Opcode, Operand

MAX_REGISTERS = 1 << 20  # registers of one function (a frame is a list of this many slots)
MAX_ARITY = 1 << 16  # inputs or outputs of a function or an operator, steps of a fused kernel
FUSED = "prim::FusedKernel"


def check_counts(program: Any, where: str) -> None:
    """Refuse ``program`` when a count it allocates by exceeds what its code uses."""
    for f in program.functions:
        used = _registers_used(f)
        if f.n_registers > used:
            raise BytecodeError(f"{where}: function {f.name!r} declares {f.n_registers:,} registers, "
                                f"its instructions use {used:,}")
        if f.n_registers > MAX_REGISTERS:
            raise BytecodeError(f"{where}: function {f.name!r} uses {f.n_registers:,} registers, "
                                f"more than irvm's limit of {MAX_REGISTERS:,}")
        if max(f.n_inputs, f.n_outputs) > MAX_ARITY:
            raise BytecodeError(f"{where}: function {f.name!r} takes {f.n_inputs:,} inputs and returns "
                                f"{f.n_outputs:,} values: irvm's limit is {MAX_ARITY:,}")
        for ref in f.operators:
            problem = operator_problem(ref)
            if problem is not None:
                raise BytecodeError(f"{where}: function {f.name!r}: {problem}")
    for ref in {id(r): r for r in program.node_refs if r is not None}.values():
        problem = operator_problem(ref)
        if problem is not None:
            raise BytecodeError(f"{where}: the static runtime's table of node operators: {problem}")


def _registers_used(f: Any) -> int:
    """One past the highest register ``f``'s instructions name."""
    used = 0
    for ins in f.instructions:
        if ins.op.x is Operand.REG:
            used = max(used, ins.x + (ins.n if ins.op is Opcode.STOREN else 1))
    return used


def operator_problem(ref: OpRef) -> str | None:
    """What is wrong with an operator reference of the file, or None."""
    if ref.n_inputs < 0 or ref.n_outputs < 0:
        return f"{ref.name} has a negative arity"
    if max(ref.n_inputs, ref.n_outputs, len(ref.defaults)) > MAX_ARITY:
        return f"{ref.name} takes {ref.n_inputs:,} inputs and returns {ref.n_outputs:,}: irvm's limit is {MAX_ARITY:,}"
    if ref.name == FUSED:
        return _fusion_problem(ref)
    if registry.has_factory(ref.name):
        return None
    try:
        info = registry.lookup(ref.name)
    except KeyError:
        return f"operator {ref.name!r} is not known to this irvm"
    n_args = len(info.schema.arguments)
    if not info.schema.vararg and ref.n_inputs + len(ref.defaults) != n_args:
        return f"operator {ref.name} gets {ref.n_inputs} inputs + {len(ref.defaults)} defaults, its schema takes {n_args}"
    n_returns = len(info.schema.returns)
    if ref.n_outputs != n_returns:
        return f"operator {ref.name} pushes {ref.n_outputs} values, its schema returns {n_returns}"
    return None


def _fusion_problem(ref: OpRef) -> str | None:
    """What is wrong with a fused kernel's stored ``FusionSpec``, or None."""
    from vm.fusion.kernels import spec_from_attrs

    try:
        spec = spec_from_attrs(dict(ref.attrs)["spec"])
    except (KeyError, TypeError, ValueError, IndexError, AttributeError):
        return f"fused kernel {_group(ref)} has a malformed spec"
    what = f"fused kernel {_group(ref)}"
    if spec.n_inputs != ref.n_inputs or len(spec.input_kinds) != spec.n_inputs:
        return (f"{what} declares {spec.n_inputs:,} inputs ({len(spec.input_kinds):,} kinds), "
                f"its instruction passes {ref.n_inputs:,}")
    if len(spec.steps) > MAX_ARITY or len(spec.constants) > MAX_ARITY:
        return f"{what} has {len(spec.steps):,} steps and {len(spec.constants):,} constants: irvm's limit is {MAX_ARITY:,}"
    for k, (slot, _value) in enumerate(spec.constants):
        if slot != spec.n_inputs + k:
            return f"{what}: constant {k} is in slot {slot:,}, not {spec.n_inputs + k:,}"
    first = spec.n_inputs + len(spec.constants)
    for k, (step, inputs, output, _span, _text) in enumerate(spec.steps):
        if output != first + k or any(not 0 <= i < output for i in inputs):
            return f"{what}: step {k} ({step.name}) reads slots {list(inputs)} into slot {output:,}, not one after its inputs"
        if len(inputs) != step.n_inputs or step.n_outputs != 1 or step.name == FUSED:
            return f"{what}: step {k} passes {len(inputs)} values to {step.name} taking {step.n_inputs}"
        problem = operator_problem(step)
        if problem is not None:
            return f"{what}: step {k}: {problem}"
    if len(spec.outputs) != ref.n_outputs or any(not 0 <= o < first + len(spec.steps) for o in spec.outputs):
        return f"{what} returns slots {list(spec.outputs)[:8]} for {ref.n_outputs} outputs of {first + len(spec.steps)} slots"
    return None


def _group(ref: OpRef) -> str:
    return str(dict(ref.attrs).get("name", FUSED))


def check_tables(program: Any, where: str) -> None:
    """Refuse ``program`` (just read from ``where``) when a table is out of shape."""
    for k, span in enumerate(program.node_spans):
        if not _span_ok(span):
            raise BytecodeError(f"{where}: node span {k} is malformed: {_brief(span)}")
    reads = program.self_reads
    if reads and not (program.input_types and _type_ok(program.input_types[0])):
        raise BytecodeError(f"{where}: the program reads %self's attributes but takes no %self of a known type")
    for k, entry in enumerate(reads):
        parent, name, type_text, _required, span = entry
        if type(parent) is not int or not -1 <= parent < k:
            raise BytecodeError(f"{where}: self_reads entry {k} reads from entry {_brief(parent)}, not an earlier one")
        if not name:
            raise BytecodeError(f"{where}: self_reads entry {k} has no attribute name")
        if type_text and not _type_ok(type_text):
            raise BytecodeError(f"{where}: self_reads entry {k} has a malformed type {_brief(type_text)}")
        if not _span_ok(span):
            raise BytecodeError(f"{where}: self_reads entry {k} has a malformed span {_brief(span)}")


def _type_ok(text: str) -> bool:
    from vm.core.type_text import parse_type_text

    try:
        parse_type_text(text)
    except Exception:  # noqa: BLE001 - any failure to read a stored type is a malformed table
        return False
    return True


def _span_ok(span: Any) -> bool:
    if span is None:
        return True
    if not isinstance(span, (tuple, list)) or len(span) not in (3, 4):
        return False
    file, line, col, *rest = span
    return (isinstance(file, str) and type(line) is int and type(col) is int
            and all(r is None or isinstance(r, str) for r in rest))


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def read_state(stored: Any, where: str) -> tuple[str, ...]:
    """The attributes other methods write (``Program.state``): a list of dotted paths."""
    if not isinstance(stored, list) or not all(isinstance(a, str) and a for a in stored):
        raise BytecodeError(f"{where}: the module state table is not a list of attribute paths")
    return tuple(stored)


def read_checks(raw: bytes, where: str) -> Any:
    """The check table (``checks.json``): a JSON object."""
    try:
        table = json.loads(raw)
    except ValueError as err:
        raise BytecodeError(f"{where}: malformed check table ({err})") from None
    if not isinstance(table, dict):
        raise BytecodeError(f"{where}: malformed check table (not an object)")
    return table
