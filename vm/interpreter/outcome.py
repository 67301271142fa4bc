"""What a run of the bytecode hands back: its results, or, when an instruction fails, one
``RunError`` with the IR call stack (the node's text and ``file:line:col`` of each frame).

Both loops report through here: the interpreter's fast loop (``vm.interpreter.machine``) and the
reference loop (``vm.interpreter.reference``), so their errors read the same.
"""

from __future__ import annotations

from typing import Any

from vm.core.errors import IRError, RunError
from vm.program.bytecode import Opcode, Program


def stack_results(n_outputs: int, stack: list[Any]) -> Any:
    """The value a function returns with ``n_outputs`` results on top of ``stack``: one
    value, None, or a tuple."""
    if n_outputs == 1:
        return stack[-1]
    if n_outputs == 0:
        return None
    return tuple(stack[len(stack) - n_outputs :])


def describe_frame(program: Program, fid: int, at: int) -> str:
    function = program.functions[fid]
    span = function.spans[at] if at < len(function.spans) else None
    text = function.nodes[at] if at < len(function.nodes) else str(function.instructions[at])
    return f"{function.name} at {span if span is not None else '<unknown>'}: {text}"


def failure_error(
    program: Program,
    err: BaseException,
    fid: int,
    at: int,
    callers: list[tuple[int, int]],
) -> RunError:
    """A RunError for ``err`` raised by instruction ``at`` of function ``fid``; ``callers``
    are the (function, CALL instruction) pairs of the frames below, outermost first."""
    from vm.ops.prim import ScriptException

    function = program.functions[fid]
    ins = function.instructions[at]
    what = function.operators[ins.x].name if ins.op in (Opcode.OP, Opcode.OPN) else ins.op.name
    if isinstance(err, ScriptException):
        reason = f"the script raised an exception: {err}"
    elif isinstance(err, IRError):
        reason = err.message
    else:
        reason = f"{type(err).__name__}: {err}"
    stack = "\n".join(f"  {describe_frame(program, f, a)}" for f, a in [*callers, (fid, at)])
    message = (
        f"the following operation failed in the irvm interpreter: {what}\n"
        f"  while executing {function.nodes[at] if at < len(function.nodes) else ins}\n"
        f"  {reason}\n"
        f"IR call stack (most recent call last):\n{stack}"
    )
    run_error = RunError(message, function.spans[at] if at < len(function.spans) else None)
    run_error.cause = err
    return run_error


def depth_error(program: Program, fid: int, callers: list[tuple[int, int]], max_depth: int) -> RunError:
    shown = callers[-5:]
    stack = "\n".join(f"  {describe_frame(program, f, a)}" for f, a in shown)
    where = callers[-1] if callers else (fid, 0)
    function = program.functions[where[0]]
    return RunError(
        f"call depth exceeds {max_depth} frames (runaway recursion?) calling"
        f" {program.functions[fid].name}; innermost calls (most recent last):\n{stack}",
        function.spans[where[1]] if where[1] < len(function.spans) else None,
    )


__all__ = ["depth_error", "describe_frame", "failure_error", "stack_results"]
