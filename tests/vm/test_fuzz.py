"""Property: on random valid programs, the interpreter's two loops and a direct walk of
the IR agree.

``tests.support.strategies.graphs()`` draws modules with pointwise ops, reductions, views,
scalar arithmetic, If and Loop with carried tensors, calls between functions and in-place
ops.  Each is emitted as is (``passes=[]``, so the emitter sees every construct the
strategy makes) and after the default pipeline, then run by the fast register-form loop,
by the reference loop over the bytecode (fusion groups both as fused-kernel OPs and as
CALLs of their subgraphs), and by the reference evaluator of the strategy
module: all results must be equal (kinds, dtypes, shapes and values).
"""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given, settings

from compiler.emit import emit
from compiler.pipeline import optimize
from tests.support.reference import run_reference, same_value
from tests.support.strategies import graphs
from vm.interpreter.machine import Interpreter


def _results(interp: Interpreter, inputs: list[Any]) -> tuple[Any, Any]:
    return interp(*copy.deepcopy(inputs)), interp.run_reference(*copy.deepcopy(inputs))


@settings(deadline=None)
@given(graphs())
def test_fast_and_reference_loops_agree_with_ir_walk(
    drawn: tuple[Any, list[Any]],
) -> None:
    module, inputs = drawn
    expected = run_reference(module, inputs)
    optimized = optimize(module)[0]
    for program in (emit(module, ""), emit(optimized, ""), emit(optimized, "", fused_kernels=False)):
        fast, reference = _results(Interpreter(program), inputs)
        assert same_value(fast, expected), (fast, expected)
        assert same_value(reference, expected), (reference, expected)
