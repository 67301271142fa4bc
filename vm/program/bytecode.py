"""The instruction set and the bytecode container, modelled on TorchScript's interpreter.

A compiled program is a tuple of ``Function``s.  Each function is a flat list of
instructions for a stack machine with registers (TorchScript's ``instruction.h``):
operands are pushed with LOAD/MOVE/LOADC, an OP pops its inputs and pushes its results,
STORE/STOREN pop results into registers.  Every value of the IR gets its own register;
memory is reclaimed not by reusing registers but by MOVE (the last use of a value clears
its register) and DROPR (a value nobody reads again), chosen by the emitter
(``compiler.emit``) from the last-use information of ``compiler.passes.insert_drops``.

Everything here is immutable (frozen attrs classes, tuples), so one ``Program`` can be
shared by any number of threads; a run owns its frames, registers and stack.

``OPCODES`` is the one table of the instruction set: each opcode with its operand kinds
and its meaning.  The disassembler below, the file format (``vm.program.irbc``) and the
interpreter all read it.  Operand X and N of an instruction mean what the table says:

========  =======================================================================
kind      meaning of the operand
========  =======================================================================
reg       a register index of the current frame
const     an index into the function's constant table
op        an index into the function's operator table (``vm.ops.registry.OpRef``)
func      an index into ``Program.functions``
target    an absolute instruction index inside the same function (a jump target)
count     a plain number of values
========  =======================================================================

A loop (TorchScript's LOOP, see ``Opcode.LOOP``) keeps its trip counter on the stack: the
emitter pushes ``LOADC 0`` (the counter), the max trip count, the initial condition and the
carried values, then ``LOOP exit N`` with N = 2 + carried.  While ``trip < max and cond``
the LOOP replaces the condition slot by the iteration index, increments the counter and
falls into the body, which starts with a STOREN of (index, carried...) and ends by pushing
(next condition, carried...) and jumping back to the LOOP.  When the loop ends, LOOP drops
the three header slots under the carried values and jumps to ``exit``.
"""

from __future__ import annotations

import enum
import threading
from typing import Any, NamedTuple

import attrs

from vm.core.errors import Span
from vm.ops.registry import OpRef


class Operand(enum.Enum):
    """What an instruction operand refers to (see the module docstring)."""

    NONE = "-"
    REG = "reg"
    CONST = "const"
    OP = "op"
    FUNC = "func"
    TARGET = "target"
    COUNT = "count"


class Opcode(enum.IntEnum):
    """The instruction set. Each member carries its operand kinds (``x``, ``n``) and ``doc``."""

    x: Operand
    n: Operand
    doc: str

    def __new__(cls, code: int, x: Operand, n: Operand, doc: str) -> Opcode:
        member = int.__new__(cls, code)
        member._value_ = code
        member.x, member.n, member.doc = x, n, doc
        return member

    # fmt: off
    OP     = 0,  Operand.OP,     Operand.NONE,  "pop operators[X].n_inputs values, call the kernel, push its n_outputs results"
    OPN    = 1,  Operand.OP,     Operand.COUNT, "variadic OP: pop N values (N == operators[X].n_inputs), call, push results"
    LOAD   = 2,  Operand.REG,    Operand.NONE,  "push register X (it stays set: not its last use)"
    MOVE   = 3,  Operand.REG,    Operand.NONE,  "push register X and clear it (the value's last use)"
    STORE  = 4,  Operand.REG,    Operand.NONE,  "pop one value into register X"
    STOREN = 5,  Operand.REG,    Operand.COUNT, "pop N values into registers X..X+N-1 (the top goes to X+N-1)"
    DROP   = 6,  Operand.NONE,   Operand.NONE,  "pop one value and discard it"
    DROPR  = 7,  Operand.REG,    Operand.NONE,  "clear register X (a value that is never read again)"
    LOADC  = 8,  Operand.CONST,  Operand.NONE,  "push constants[X]"
    JF     = 9,  Operand.TARGET, Operand.NONE,  "pop a bool; jump to X if it is false"
    JMP    = 10, Operand.TARGET, Operand.NONE,  "jump to X"
    LOOP   = 11, Operand.TARGET, Operand.COUNT, "loop header over [trip, max, cond, carried(N-2)]: continue or exit to X"
    CALL   = 12, Operand.FUNC,   Operand.NONE,  "call functions[X] on its n_inputs top values in a new frame"
    RET    = 13, Operand.NONE,   Operand.NONE,  "leave the frame; its n_outputs results stay on the stack"
    # fmt: on


OPCODES: tuple[Opcode, ...] = tuple(Opcode)
BY_NAME: dict[str, Opcode] = {op.name: op for op in Opcode}


class Instruction(NamedTuple):
    """One instruction: opcode and two integer operands (0 when unused), as TorchScript's
    8-byte ``Instruction`` (op, N, X)."""

    op: Opcode
    x: int = 0
    n: int = 0

    def __str__(self) -> str:
        parts = [self.op.name.ljust(6)]
        if self.op.x is not Operand.NONE:
            parts.append(str(self.x))
        if self.op.n is not Operand.NONE:
            parts.append(str(self.n))
        return " ".join(parts)


@attrs.frozen
class Function:
    """One compiled graph: its code and the tables its operands index.

    ``spans[i]`` and ``nodes[i]`` say which IR node emitted instruction ``i`` (its place
    in the IR file and its text, for error messages and the disassembly);
    ``register_names[r]`` is the IR name of the value held in register ``r`` (``x.1``);
    ``constant_names[k]`` the name of the constant in entry ``k``, so a runtime can bind a
    ``<Tensor>`` constant (``vm.ir.resolve.UnboundTensor``) or a rounded literal from
    the weights by name.
    A function's inputs arrive on the stack; its code starts by storing them.
    """

    name: str
    instructions: tuple[Instruction, ...]
    n_inputs: int
    n_outputs: int
    n_registers: int
    constants: tuple[Any, ...] = ()
    operators: tuple[OpRef, ...] = ()
    spans: tuple[Span | None, ...] = ()
    nodes: tuple[str, ...] = ()
    register_names: tuple[str, ...] = ()
    constant_names: tuple[str, ...] = ()  # IR value name of each constant ("" for the emitter's own)

    def __len__(self) -> int:
        return len(self.instructions)


@attrs.frozen
class Program:
    """A compiled module: functions, the entry, and what it was compiled from.

    ``source`` is the IR text of the program.  ``input_names``/``input_types`` describe
    the entry function's inputs (type strings as PyTorch prints them: ``Tensor``,
    ``Float(2, 3)``, ``int``, ``Tensor?``...); a class-typed first input is ``%self``,
    bound from the weights, not passed by callers; ``self_reads`` lists the attributes
    the program reads from it (``vm.program.self_reads``).

    ``module`` is the optimized ``vm.ir.graph.Module`` when there is one in memory: the
    compiler's own object for a program just compiled, or, for a program read from a
    ``.irbc``, the one the static runtime decoded from ``ir_table`` when it was built
    (``vm.static.ir_text``, ``vm.ir.tables``: data, no parse; never re-optimized).  The
    interpreter never needs it: the checks before a run read ``check_table()``
    (``vm.program.check_graph``) and ``self_reads`` (``vm.program.self_reads``).

    A program is data: tables, text and arrays, no closure and nothing of the compiler's
    machinery (the module is the IR data model, printed by ``str``).  A program compiled
    for its weights (``specialized``) also carries the tensors its folds made and digests
    of the weights they were made from (``vm.binding.folded``).
    """

    functions: tuple[Function, ...]
    entry: int = 0
    input_names: tuple[str, ...] = ()
    input_types: tuple[str, ...] = ()
    n_outputs: int = 1
    source: str = ""
    output_types: tuple[str, ...] = ()  # the entry's output types, as input_types
    # values for the entry's last ``len(input_defaults)`` inputs when a caller leaves them
    # out (from a torch.jit.save archive's source; see ``vm.binding.inputs.with_defaults``)
    input_defaults: tuple[Any, ...] = ()
    # ``module=`` in the constructor (attrs drops the underscore; the alias says so to type checkers)
    _module: Any = attrs.field(default=None, eq=False, repr=False, alias="module")
    # the optimized IR as the file stores it (``vm.ir.tables.module_table``), for a program
    # read from a ``.irbc``; None for one compiled in this process (its ``module`` is the IR)
    ir_table: dict[str, Any] | None = attrs.field(default=None, eq=False, repr=False)
    node_spans: tuple[Any, ...] = attrs.field(default=(), eq=False, repr=False)
    # the operator each node of ``module`` resolved to (None for constants and control
    # flow), in ``vm.ir.graph.all_nodes`` order: the static runtime's
    # resolution, done once by the compiler (empty: not recorded, resolve again)
    node_refs: tuple[Any, ...] = attrs.field(default=(), eq=False, repr=False)
    self_reads: tuple[tuple[int, str, str, bool, Any], ...] = attrs.field(default=(), eq=False, repr=False)
    folded: dict[str, Any] = attrs.field(factory=dict, eq=False, repr=False)  # ``Module.attributes`` of a loaded program
    # compiled for its weights by the specialization pipeline (``Module.specialized``): the
    # tensors its folds made, bound by name with the weights, and the digests of the weight
    # arrays they were made from, checked when weights are bound (``vm.binding.folded``)
    specialized: bool = attrs.field(default=False, eq=False, repr=False)
    folded_tensors: dict[str, Any] = attrs.field(factory=dict, eq=False, repr=False)
    folded_from: dict[str, str] = attrs.field(factory=dict, eq=False, repr=False)
    # module state: the attributes this program or another method of its module object
    # writes (``vm.ir.module_state.written_attributes``), dotted from %self
    state: tuple[str, ...] = attrs.field(default=(), eq=False, repr=False)
    # the keys of the model it was compiled from (``Module.model_keys``): strict weights are
    # checked against them (vm.binding.strict); {} when nothing recorded them
    model_keys: dict[str, bool] = attrs.field(factory=dict, eq=False, repr=False)
    source_reads: dict[str, bool] = attrs.field(factory=dict, eq=False, repr=False)  # ``Module.source_reads``
    # the check table (``vm.program.check_graph``): made by the emitter, or read from the file
    checks: dict[str, Any] | None = attrs.field(default=None, eq=False, repr=False)
    _lock: Any = attrs.field(factory=threading.Lock, eq=False, repr=False, init=False)

    @property
    def main(self) -> Function:
        return self.functions[self.entry]

    @property
    def takes_self(self) -> bool:
        """True when the entry's first input is a module object (``%self``)."""
        return bool(self.input_types) and is_class_type(self.input_types[0])

    @property
    def module_if_loaded(self) -> Any:
        """The optimized IR module if it exists already (never parses)."""
        return self._module

    @property
    def module(self) -> Any:
        """The optimized IR module in memory (see the class docstring), or None."""
        return self._module

    def check_table(self) -> dict[str, Any] | None:
        """The table of the IR the checks before a run read (``vm.program.check_graph``),
        made by the emitter or read from the file."""
        return self.checks

    def optimized_text(self) -> str:
        """The optimized IR as text: the module printed (``str(module)``; a program read
        from a file prints the IR its table stores)."""
        if self._module is not None:
            return str(self._module)
        if self.ir_table is None:
            return ""
        from vm.ir.tables import module_from_table

        return str(module_from_table(self.ir_table))


def is_class_type(type_text: str) -> bool:
    """``__torch__.Net`` and other class types (what ``%self`` is)."""
    return type_text.startswith(("__torch__", "__main__"))


# ---------------------------------------------------------------------------------------
# Stack effects (for the verifier and the interpreter's decoder)


def stack_effect(program: Program, function: Function, ins: Instruction) -> tuple[int, int]:
    """(values popped, values pushed) by ``ins`` when it falls through.

    LOOP falls through into its body without changing the depth; its exit edge pops the
    three header slots (``exit_effect``).  CALL pops the callee's inputs and pushes its
    outputs; RET pops the function's outputs (they go to the caller).
    """
    op = ins.op
    if op in (Opcode.OP, Opcode.OPN):
        ref = function.operators[ins.x]
        return ref.n_inputs, ref.n_outputs
    if op in (Opcode.LOAD, Opcode.MOVE, Opcode.LOADC):
        return 0, 1
    if op in (Opcode.STORE, Opcode.DROP, Opcode.JF):
        return 1, 0
    if op is Opcode.STOREN:
        return ins.n, 0
    if op is Opcode.LOOP:
        return ins.n + 1, ins.n + 1
    if op is Opcode.CALL:
        callee = program.functions[ins.x]
        return callee.n_inputs, callee.n_outputs
    if op is Opcode.RET:
        return function.n_outputs, 0
    return 0, 0  # DROPR, JMP


def loop_exit_effect(ins: Instruction) -> int:
    """Depth change along a LOOP's exit edge: the three header slots go."""
    return -3


# ---------------------------------------------------------------------------------------
# Disassembly (clox's disassembleInstruction)


def describe_operand(program: Program, function: Function, ins: Instruction) -> str:
    """What the operands of ``ins`` name: the operator, constant, register or target."""
    op = ins.op
    if op.x is Operand.OP:
        return function.operators[ins.x].name
    if op.x is Operand.CONST:
        return _short_repr(function.constants[ins.x])
    if op.x is Operand.REG:
        names = function.register_names
        first = f"%{names[ins.x]}" if ins.x < len(names) else "?"
        if op is Opcode.STOREN and ins.n > 1:
            last = names[ins.x + ins.n - 1] if ins.x + ins.n - 1 < len(names) else "?"
            return f"{first} .. %{last}"
        return first
    if op.x is Operand.TARGET:
        return f"-> {ins.x}"
    if op.x is Operand.FUNC:
        return program.functions[ins.x].name if ins.x < len(program.functions) else "?"
    return ""


def _short_repr(value: Any) -> str:
    text = _value_repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _value_repr(value: Any) -> str:
    shape = getattr(value, "shape", None)
    dtype = getattr(value, "dtype", None)
    if shape is not None and dtype is not None and getattr(value, "size", 0) > 8:
        return f"array({dtype}, shape={tuple(shape)})"
    return repr(value)


def disassemble_function(program: Program, function: Function) -> str:
    """A listing of ``function``: offset, ``line:col`` (``|`` when unchanged), opcode,
    operands and what they name."""
    lines = [
        f"== {function.name} ({function.n_inputs} inputs, {function.n_outputs} outputs,"
        f" {function.n_registers} registers) =="
    ]
    previous: tuple[int, int] | None = None
    for i, ins in enumerate(function.instructions):
        span = function.spans[i] if i < len(function.spans) else None
        where = (span.line, span.col) if span is not None else None
        if where is None:
            loc = "-"
        elif where == previous:
            loc = "|"
        else:
            loc = f"{where[0]}:{where[1]}"
        previous = where
        note = describe_operand(program, function, ins)
        text = f"{i:04d} {loc:>7} {ins!s:<16}"
        lines.append(f"{text} {note}".rstrip())
    return "\n".join(lines)


def disassemble(program: Program) -> str:
    """Every function of ``program``, the entry first."""
    order = [program.entry] + [i for i in range(len(program.functions)) if i != program.entry]
    return "\n\n".join(disassemble_function(program, program.functions[i]) for i in order) + "\n"


__all__ = [
    "BY_NAME",
    "OPCODES",
    "Function",
    "Instruction",
    "Opcode",
    "Operand",
    "Program",
    "disassemble",
    "disassemble_function",
    "is_class_type",
    "loop_exit_effect",
    "stack_effect",
]
