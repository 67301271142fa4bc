"""Pre-decoding: bytecode -> the tuples the interpreter's fast loop dispatches on.

The bytecode is a faithful stack machine (``vm.program.bytecode``): an operator node costs
about four instructions (``MOVE a; LOADC k; OP f; STORE r``), and in CPython every
dispatched instruction costs 30-90 ns, more than the budget.  So once, when an
``Interpreter`` is built, each function is translated into *register form*, the way a
superinstruction-forming loader would:

- constants become registers: a frame's register file starts as a copy of a template
  ``[None] * n_registers + constants``, so ``LOADC k`` reads register ``n_registers + k``;
- a run of pushes (LOAD/MOVE/LOADC) that feeds exactly one OP, followed by the STORE or
  STOREN of its results, becomes ONE tuple ``(code, kernel, in-registers..., out)``:
  ``regs[o] = f(regs[a], regs[b])``, specialised for 1, 2 and any number of inputs, and
  for whether some input is MOVEd (its register is cleared after the call);
- a push followed by JF becomes a test of the register;
- the pushes of an If branch's outputs, with the JMP to the join (or the fall through
  into it) and the join's STORE, become one COPY from register to register;
- a fused kernel (``vm.fusion.kernels``) is an operator like any other: for small tensors it
  calls the group's kernels itself, straight-line, which costs less than dispatching
  them here one by one or calling the group's function;
- the pushes of a CALL's arguments, the CALL and the store of its results become one
  CALLR that copies the arguments into the callee's registers and names the caller's
  registers that RET fills; ``push r; RET`` of a one-result function becomes RET1;
- everything else (block outputs on the stack, LOOP headers, CALL/RET) keeps its stack
  form.

A fusion never spans a jump target, so control flow is unchanged; jump targets are
renumbered.  ``origin[i]`` maps decoded instruction ``i`` back to the bytecode
instruction whose span and node text an error reports.  ``DecodedOp`` is the table of
this instruction set (each code's operands and meaning), which the interpreter's loop
and ``listing`` (``tools/disasm.py --decoded``) read, as ``vm.program.bytecode.Opcode`` is for
the bytecode.  Kernels are bound here, once
(``vm.ops.registry.bind``): nothing is looked up while running.
"""

from __future__ import annotations

import enum
from collections.abc import Callable
from typing import Any

import attrs

from vm.program.bytecode import Function, Instruction, Opcode, Program


class DecodedOp(enum.IntEnum):
    """The register-form instruction set ``Interpreter._run`` dispatches on.

    A decoded instruction is a tuple ``(code, *operands)``; each member names its operands
    in order (``f`` a bound kernel, ``a``/``b``/``r``/``o`` registers, ``args``/``moved``/
    ``carried``/``sources`` tuples of registers, ``n`` a count, ``target``/``exit``/
    ``body``/``next`` decoded instruction indices) and says what it does.  The codes are
    ordered as the loop tests them: operators in register form (0-5: one range test),
    the stack forms, then the superinstructions (19 and up: one range test).
    """

    operands: tuple[str, ...]
    doc: str

    def __new__(cls, code: int, operands: str, doc: str) -> DecodedOp:
        member = int.__new__(cls, code)
        member._value_ = code
        member.operands, member.doc = tuple(operands.split()), doc
        return member

    # fmt: off
    OP1    = 0,  "f a o",                         "regs[o] = f(regs[a])"
    OP1M   = 1,  "f a o",                         "OP1, then clear regs[a] (its last use)"
    OP2    = 2,  "f a b o",                       "regs[o] = f(regs[a], regs[b])"
    OP2M   = 3,  "f a b o m1 m2",                 "OP2, then clear regs[m1] and regs[m2]"
    OPG    = 4,  "f args o n moved",              "f(*regs[args]) into n registers from o (n == 0: none)"
    OPGM   = 5,  "f args o n moved",              "OPG, clearing the registers in moved after the call"
    PUSH   = 6,  "r",                             "push regs[r]"
    PUSHM  = 7,  "r",                             "push regs[r] and clear it"
    STORE  = 8,  "r",                             "pop one value into regs[r]"
    STOREN = 9,  "r n",                           "pop n values into regs[r..r+n-1]"
    JFR    = 10, "r target moved",                "jump to target if regs[r] is false; clear it if moved"
    JF     = 11, "target",                        "pop a bool; jump to target if it is false"
    JMP    = 12, "target",                        "jump to target"
    LOOP   = 13, "exit n",                        "the bytecode LOOP over [trip, max, cond, carried(n-2)]"
    CALL   = 14, "func",                          "call functions[func] on its arguments on the stack"
    RET    = 15, "",                              "return: results on the stack, or into CALLR's registers"
    DROPR  = 16, "r",                             "clear regs[r]"
    DROP   = 17, "",                              "pop one value and discard it"
    OPS    = 18, "f n_in n_out",                  "pop n_in values, call f, push its n_out results"
    LOOPE  = 19, "exit n params body",            "loop header storing (index, carried...) from params: body or exit"
    LOOPB  = 20, "cond carried moved params body exit", "back edge: test regs[cond], store carried, to body or exit"
    CALLR  = 21, "func args moved out n",         "call with arguments from registers, n results into out..."
    RET1   = 22, "r",                             "return regs[r]"
    COPY   = 23, "sources moved dest next",       "an If branch's outputs into regs[dest...]; continue at next"
    # fmt: on


# The codes as plain ints, for the decoder to store and the dispatch loop to compare
# (CPython's fast int comparison does not apply to an IntEnum member).
OP1, OP1M, OP2, OP2M = DecodedOp.OP1.value, DecodedOp.OP1M.value, DecodedOp.OP2.value, DecodedOp.OP2M.value
OPG, OPGM, OPS = DecodedOp.OPG.value, DecodedOp.OPGM.value, DecodedOp.OPS.value
PUSH, PUSHM, STORE, STOREN = DecodedOp.PUSH.value, DecodedOp.PUSHM.value, DecodedOp.STORE.value, DecodedOp.STOREN.value
JFR, JF, JMP, LOOP = DecodedOp.JFR.value, DecodedOp.JF.value, DecodedOp.JMP.value, DecodedOp.LOOP.value
CALL, RET, DROPR, DROP = DecodedOp.CALL.value, DecodedOp.RET.value, DecodedOp.DROPR.value, DecodedOp.DROP.value
LOOPE, LOOPB, CALLR, RET1, COPY = (
    DecodedOp.LOOPE.value, DecodedOp.LOOPB.value, DecodedOp.CALLR.value, DecodedOp.RET1.value, DecodedOp.COPY.value
)  # fmt: skip
NAMES = [op.name for op in DecodedOp]
_JUMP_OPERANDS = {"target", "exit", "body", "next"}
# code -> positions in the tuple of the operands that are jump targets (renumbered)
_JUMPS = {
    op.value: tuple(i + 1 for i, name in enumerate(op.operands) if name in _JUMP_OPERANDS)
    for op in DecodedOp
    if _JUMP_OPERANDS & set(op.operands)
}

_PUSHES = (Opcode.LOAD, Opcode.MOVE, Opcode.LOADC)


@attrs.frozen
class Decoded:
    """One function in register form (see the module docstring)."""

    code: tuple[tuple[Any, ...], ...]
    template: tuple[Any, ...]  # the initial register file: None * n_registers + constants
    origin: tuple[int, ...]  # decoded index -> bytecode index
    n_registers: int
    n_inputs: int = 0
    start: int = 0  # 1 when code[0] stores the inputs into registers 0..n_inputs-1: callers
    #               put the arguments there themselves and start at 1


def decode(
    program: Program,
    function: Function,
    kernels: list[Callable[..., Any]],
    constants: list[Any],
) -> Decoded:
    """``function`` in register form, with ``kernels[k]`` bound to operator-table entry k
    and ``constants`` (already bound from the weights) as its constant registers."""
    return _Decoder(program, function, kernels).run(constants)


class _Decoder:
    def __init__(self, program: Program, function: Function, kernels: list[Callable[..., Any]]):
        self.program, self.function, self.kernels = program, function, kernels
        self.code = function.instructions
        self.nreg = function.n_registers
        self.targets = {ins.x for ins in self.code if ins.op in (Opcode.JF, Opcode.JMP, Opcode.LOOP)}
        self.out: list[list[Any]] = []
        self.origin: list[int] = []
        self.new_index: dict[int, int] = {}

    def run(self, constants: list[Any]) -> Decoded:
        i = 0
        while i < len(self.code):
            i = self.step(i)
        self.new_index[len(self.code)] = len(self.out)
        for ins in self.out:  # renumber jump targets
            for pos in _JUMPS.get(ins[0], ()):
                ins[pos] = self.new_index[ins[pos]]
        template = (None,) * self.nreg + tuple(constants)
        code = tuple(tuple(x) for x in self.out)
        start = 1 if stores_inputs(self.function) else 0
        return Decoded(code, template, tuple(self.origin), self.nreg, self.function.n_inputs, start)

    def emit(self, at: int, first: int, item: list[Any]) -> None:
        """Append ``item`` decoded from bytecode ``first``..; errors report bytecode ``at``."""
        self.new_index.setdefault(first, len(self.out))
        self.out.append(item)
        self.origin.append(at)

    def reg(self, ins: Instruction) -> int:
        return self.nreg + ins.x if ins.op is Opcode.LOADC else ins.x

    def interior_target(self, start: int, end: int) -> bool:
        return any(t in self.targets for t in range(start + 1, end + 1))

    def loop_params(self, header: int) -> int | None:
        """The first parameter register when the LOOP at ``header`` is followed by the
        STORE(N) of (index, carried...) that the emitter puts there, else None."""
        code = self.code
        if header + 1 >= len(code) or header + 1 in self.targets:
            return None
        n_params = code[header].n - 1
        store = code[header + 1]
        if (store.op is Opcode.STORE and n_params == 1) or (store.op is Opcode.STOREN and store.n == n_params):
            return store.x
        return None

    def body_start(self, header: int, p: int) -> int:
        """Where the body begins after the parameters are stored: past a ``DROPR p`` of an
        unused iteration index (an int: keeping it in its register costs nothing)."""
        after = self.code[header + 2] if header + 2 < len(self.code) else None
        if after is not None and after.op is Opcode.DROPR and after.x == p and header + 2 not in self.targets:
            return header + 3
        return header + 2

    def step(self, i: int) -> int:
        code = self.code
        if code[i].op is Opcode.LOOP and (p := self.loop_params(i)) is not None:
            self.emit(i, i, [LOOPE, code[i].x, code[i].n, p, self.body_start(i, p)])
            return i + 2
        j = i
        while j < len(code) and code[j].op in _PUSHES:
            j += 1
        if j < len(code) and code[j].op in (Opcode.OP, Opcode.OPN):
            k = self.function.operators[code[j].x].n_inputs
            if j - i > k:  # pushes that feed something later: keep them as pushes
                self.push(i)
                return i + 1
            if j - i == k:
                fused = self.fuse_op(i, j)
                if fused is not None:
                    return fused
        elif j < len(code) and code[j].op is Opcode.CALL:
            fused = self.call(i, j)
            if fused is not None:
                return fused
        elif j == i + 1 and j < len(code) and code[j].op is Opcode.RET and self.function.n_outputs == 1:
            if j not in self.targets:
                self.emit(j, i, [RET1, self.reg(code[i])])
                return j + 1
        elif j < len(code) and code[j].op is Opcode.JMP and code[code[j].x].op is Opcode.LOOP:
            fused = self.back_edge(i, j)
            if fused is not None:
                return fused
        elif j > i and j < len(code) and code[j].op in (Opcode.STORE, Opcode.STOREN, Opcode.JMP):
            fused = self.copy(i, j)
            if fused is not None:
                return fused
        elif j == i + 1 and j < len(code) and code[j].op is Opcode.JF and j not in self.targets:
            ins = code[i]
            self.emit(j, i, [JFR, self.reg(ins), code[j].x, ins.op is Opcode.MOVE])
            return j + 1
        if code[i].op in _PUSHES:
            self.push(i)
        else:
            self.plain(i)
        return i + 1

    def push(self, i: int) -> None:
        ins = self.code[i]
        self.emit(i, i, [PUSHM if ins.op is Opcode.MOVE else PUSH, self.reg(ins)])

    def fuse_op(self, i: int, j: int) -> int | None:
        """Pushes i..j-1, OP at j, and the store of its results: one register-form op."""
        ref = self.function.operators[self.code[j].x]
        end = j  # last bytecode instruction folded in
        out: tuple[int, int] = (-1, 0)  # (first register, count); count 0: no result
        if ref.n_outputs >= 1:
            if j + 1 >= len(self.code):
                return None
            store = self.code[j + 1]
            if ref.n_outputs == 1 and store.op is Opcode.STORE:
                out = (store.x, 1)
            elif store.op is Opcode.STOREN and store.n == ref.n_outputs:
                out = (store.x, store.n)
            else:
                return None
            end = j + 1
        if self.interior_target(i, end):
            return None
        pushes = self.code[i:j]
        args = tuple(self.reg(p) for p in pushes)
        moved = tuple(sorted({p.x for p in pushes if p.op is Opcode.MOVE}))
        fn = self.kernels[self.code[j].x]
        if out[1] == 1 and len(args) == 1:
            self.emit(j, i, [OP1M if moved else OP1, fn, args[0], out[0]])
        elif out[1] == 1 and len(args) == 2:  # OP2M clears two registers (the same one twice if one)
            clears = [moved[0], moved[-1]] if moved else []
            self.emit(j, i, [OP2M if moved else OP2, fn, args[0], args[1], out[0], *clears])
        else:
            self.emit(j, i, [OPGM if moved else OPG, fn, args, out[0], out[1], moved])
        return end + 1

    def copy(self, i: int, j: int) -> int | None:
        """Pushes i..j-1 stored by the STORE(N) at j, or at the target of the JMP at j:
        a COPY into the stored registers that continues after that STORE(N)."""
        ins = self.code[j]
        join = ins.x if ins.op is Opcode.JMP else j
        store = self.code[join] if join < len(self.code) else None
        if store is None or store.op not in (Opcode.STORE, Opcode.STOREN):
            return None
        count = 1 if store.op is Opcode.STORE else store.n
        if j - i < count:
            return None
        start = j - count
        if start > i:
            self.push(i)
            return i + 1
        if self.interior_target(i, j - 1) or (ins.op is Opcode.JMP and j in self.targets):
            return None
        pushes = self.code[i:j]
        sources = tuple(self.reg(p) for p in pushes)
        moved = tuple(sorted({p.x for p in pushes if p.op is Opcode.MOVE}))
        self.emit(j, i, [COPY, sources, moved, store.x, join + 1])
        return j + 1 if ins.op is Opcode.JMP else j  # the STORE(N) at j stays for other jumps

    def call(self, i: int, j: int) -> int | None:
        """Argument pushes i..j-1, CALL at j and the store of the results: one CALLR."""
        callee = self.program.functions[self.code[j].x]
        k = callee.n_inputs
        if j - i > k:
            self.push(i)
            return i + 1
        if j - i < k or not (k == 0 or stores_inputs(callee)):
            return None
        end, out, n_out = j, -1, 0
        if callee.n_outputs:
            store = self.code[j + 1] if j + 1 < len(self.code) else None
            if store is not None and store.op is Opcode.STORE and callee.n_outputs == 1:
                out, n_out = store.x, 1
            elif store is not None and store.op is Opcode.STOREN and store.n == callee.n_outputs:
                out, n_out = store.x, store.n
            else:
                return None
            end = j + 1
        if self.interior_target(i, end):
            return None
        pushes = self.code[i:j]
        args = tuple(self.reg(p) for p in pushes)
        moved = tuple(sorted({p.x for p in pushes if p.op is Opcode.MOVE}))
        self.emit(j, i, [CALLR, self.code[j].x, args, moved, out, n_out])
        return end + 1

    def back_edge(self, i: int, j: int) -> int | None:
        """Pushes of (condition, carried...) and the JMP back to a LOOP whose parameters
        the header stores (LOOPE): one LOOPB that tests and stores in register form."""
        header = self.code[j].x
        p = self.loop_params(header)
        n = self.code[header].n - 1  # condition + carried
        if p is None or j - i < n:
            return None
        start = j - n
        if self.interior_target(start, j):
            return None
        if start > i:  # earlier pushes feed something else
            self.push(i)
            return i + 1
        pushes = self.code[start:j]
        sources = tuple(self.reg(q) for q in pushes)
        moved = tuple(sorted({q.x for q in pushes if q.op is Opcode.MOVE}))
        body = self.body_start(header, p)
        self.emit(
            j,
            start,
            [LOOPB, sources[0], sources[1:], moved, p, body, self.code[header].x],
        )
        return j + 1

    def plain(self, i: int) -> None:
        ins = self.code[i]
        op = ins.op
        if op in (Opcode.OP, Opcode.OPN):
            ref = self.function.operators[ins.x]
            self.emit(i, i, [OPS, self.kernels[ins.x], ref.n_inputs, ref.n_outputs])
        elif op is Opcode.STORE:
            self.emit(i, i, [STORE, ins.x])
        elif op is Opcode.STOREN:
            self.emit(i, i, [STOREN, ins.x, ins.n])
        elif op is Opcode.DROPR:
            self.emit(i, i, [DROPR, ins.x])
        elif op is Opcode.DROP:
            self.emit(i, i, [DROP])
        elif op is Opcode.JF:
            self.emit(i, i, [JF, ins.x])
        elif op is Opcode.JMP:
            self.emit(i, i, [JMP, ins.x])
        elif op is Opcode.LOOP:
            self.emit(i, i, [LOOP, ins.x, ins.n])
        elif op is Opcode.CALL:
            self.emit(i, i, [CALL, ins.x])
        elif op is Opcode.RET:
            self.emit(i, i, [RET])
        else:  # pragma: no cover - every opcode is handled above
            raise AssertionError(f"cannot decode {ins}")


def stores_inputs(function: Function) -> bool:
    """True when ``function`` starts by storing its inputs into registers 0..n_inputs-1
    (callers may then put the arguments there themselves and start at instruction 1)."""
    code, n = function.instructions, function.n_inputs
    if not code or n == 0 or code[0].x != 0:
        return False
    if any(ins.x == 0 for ins in code if ins.op in (Opcode.JF, Opcode.JMP, Opcode.LOOP)):
        return False
    return (code[0].op is Opcode.STORE and n == 1) or (code[0].op is Opcode.STOREN and code[0].n == n)


def listing(decoded: Decoded, function: Function | None = None) -> str:
    """The decoded form, one instruction a line (tools/disasm.py --decoded, benchmarks).
    With ``function`` (the bytecode it came from), kernels show as operator names."""
    lines = []
    for i, ins in enumerate(decoded.code):
        name = None
        if function is not None:
            source = function.instructions[decoded.origin[i]]
            if source.op in (Opcode.OP, Opcode.OPN):
                name = function.operators[source.x].name
        ops = [(name or getattr(x, "__name__", "kernel")) if callable(x) else x for x in ins[1:]]
        lines.append(f"{i:04d} {DecodedOp(ins[0]).name:<7} {' '.join(map(str, ops))}")
    return "\n".join(lines)


__all__ = ["NAMES", "Decoded", "DecodedOp", "decode", "listing"]
