"""The reference loop: the bytecode executed one instruction at a time, as defined.

``Interpreter.run_traced`` and ``Interpreter(debug=True)`` run here instead of on the
pre-decoded fast loop.  Each case is the definition of its opcode in ``vm.program.bytecode``,
on an explicit operand stack; the loop also records every value stored into a register
under its IR name (``%x.1`` in the entry function, ``fib/%n`` in others) and, with
``debug``, prints the stack and the registers before each instruction, like clox's
DEBUG_TRACE_EXECUTION.  Tests run programs on both loops and compare.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol

from vm.core.errors import IRError
from vm.program.bytecode import Opcode, Program


class Interpreter(Protocol):
    """What the reference loop reads of the interpreter running it
    (``vm.interpreter.machine.Interpreter``, which imports this module): its program, its
    bound kernels and constants per function, and the call-depth bound."""

    program: Program
    kernels: list[list[Any]]
    constants: list[list[Any]]
    max_depth: int


class _Frame:
    __slots__ = ("fid", "pc", "regs")

    def __init__(self, fid: int, regs: list[Any]):
        self.fid, self.pc, self.regs = fid, 0, regs


def run(
    interp: Interpreter,
    stack: list[Any],
    values: dict[str, Any] | None,
    debug: bool = False,
) -> Any:
    """Run the entry function on ``stack`` (its inputs); fill ``values`` (unless None) with
    every value stored."""
    from vm.interpreter.outcome import depth_error, failure_error, stack_results

    program = interp.program
    frames = [_new_frame(interp, program.entry)]
    while True:
        frame = frames[-1]
        function = program.functions[frame.fid]
        ins = function.instructions[frame.pc]
        if debug:
            _show(function, frame, stack, ins)
        frame.pc += 1
        try:
            if ins.op is Opcode.CALL:
                if len(frames) > interp.max_depth:
                    callers = [(f.fid, f.pc - 1) for f in frames[:-1]]
                    raise depth_error(
                        program,
                        ins.x,
                        [*callers, (frame.fid, frame.pc - 1)],
                        interp.max_depth,
                    )
                frames.append(_new_frame(interp, ins.x))
            elif ins.op is Opcode.RET:
                frames.pop()
                if not frames:
                    return stack_results(function.n_outputs, stack)
            else:
                _step(interp, frame, ins, stack, values)
        except IRError as err:
            if "IR call stack" in err.message or "call depth exceeds" in err.message:
                raise
            callers = [(f.fid, f.pc - 1) for f in frames[:-1]]
            raise failure_error(program, err, frame.fid, frame.pc - 1, callers) from err
        except Exception as err:
            callers = [(f.fid, f.pc - 1) for f in frames[:-1]]
            raise failure_error(program, err, frame.fid, frame.pc - 1, callers) from err


def _new_frame(interp: Interpreter, fid: int) -> _Frame:
    function = interp.program.functions[fid]
    return _Frame(fid, [None] * function.n_registers)


def _step(
    interp: Interpreter,
    frame: _Frame,
    ins: Any,
    stack: list[Any],
    values: dict[str, Any] | None,
) -> None:
    op, x, n, regs = ins.op, ins.x, ins.n, frame.regs
    if op is Opcode.OP or op is Opcode.OPN:
        ref = interp.program.functions[frame.fid].operators[x]
        args = stack[len(stack) - ref.n_inputs :]
        del stack[len(stack) - ref.n_inputs :]
        result = interp.kernels[frame.fid][x](*args)
        if ref.n_outputs == 1:
            stack.append(result)
        elif ref.n_outputs:
            stack.extend(result)
    elif op is Opcode.LOAD:
        stack.append(regs[x])
    elif op is Opcode.MOVE:
        stack.append(regs[x])
        regs[x] = None
    elif op is Opcode.LOADC:
        stack.append(interp.constants[frame.fid][x])
    elif op is Opcode.STORE or op is Opcode.STOREN:
        count = 1 if op is Opcode.STORE else n
        for r in range(x + count - 1, x - 1, -1):
            regs[r] = stack.pop()
            if values is not None:
                _record(interp, frame.fid, r, regs[r], values)
    elif op is Opcode.DROP:
        stack.pop()
    elif op is Opcode.DROPR:
        regs[x] = None
    elif op is Opcode.JF:
        if not stack.pop():
            frame.pc = x
    elif op is Opcode.JMP:
        frame.pc = x
    elif op is Opcode.LOOP:
        _loop(frame, x, n, stack)


def _loop(frame: _Frame, exit_target: int, n: int, stack: list[Any]) -> None:
    """[trip, max, cond, carried(n-2)]: enter the body with cond := trip, or leave."""
    base = len(stack) - n - 1
    trip, max_trips, cond = stack[base], stack[base + 1], stack[base + 2]
    if trip < max_trips and cond:
        stack[base + 2] = trip
        stack[base] = trip + 1
    else:
        del stack[base : base + 3]
        frame.pc = exit_target


def _record(interp: Interpreter, fid: int, r: int, value: Any, values: dict[str, Any]) -> None:
    function = interp.program.functions[fid]
    name = f"%{function.register_names[r]}"
    values[name if fid == interp.program.entry else f"{function.name}/{name}"] = value


def _show(function: Any, frame: _Frame, stack: list[Any], ins: Any) -> None:
    def short(v: Any) -> str:
        shape = getattr(v, "shape", None)
        return f"<{getattr(v, 'dtype', '')}{list(shape)}>" if shape is not None else repr(v)[:30]

    regs = " ".join(f"r{i}={short(v)}" for i, v in enumerate(frame.regs) if v is not None)
    print(
        f"          stack [{', '.join(short(v) for v in stack)}]  regs {regs}",
        file=sys.stderr,
    )
    print(f"{function.name}:{frame.pc - 0:04d} {ins}", file=sys.stderr)


__all__ = ["run"]
