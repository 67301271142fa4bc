"""The interpreter runs real programs and agrees with PyTorch.

Two sources of programs: the seed programs of the differential corpus (torch 2.13 dumps
with torch's own outputs in ``tests/data/corpus``), and functions scripted here with torch
when it is installed (if/else, while with break/continue, nested loops carrying tuples,
lists built in loops, Optional inputs).  Every program also runs on the reference loop
(``run_traced``), which executes the bytecode without pre-decoding: both loops must agree.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from compiler import compile_source
from tests.support.against_torch import to_numpy, to_torch
from tests.support.paths import CORPUS
from tests.support.reference import same_value
from vm.files.npz import compare_flat, flatten_outputs, load_inputs, outputs_as_list, read_npz
from vm.interpreter.machine import Interpreter

SEEDS = ["x2", "dim_loop", "ratio_iou", "lunif2", "lstm_cell"]


@pytest.mark.parametrize("name", SEEDS)
def test_seed_program_matches_torch_output(name: str) -> None:
    """x*2, the x = x*x loop over x.dim(), ratio_iou, lunif2 and the LSTM cell give
    what torch.jit.script gave (saved in the corpus), on both interpreter loops."""
    path = CORPUS / f"{name}.ir"
    program = compile_source(path.read_text(), str(path))
    interp = Interpreter(program)
    args = load_inputs(CORPUS / f"{name}.inputs.npz", program)
    result = interp(*args)
    expected = read_npz(CORPUS / f"{name}.expected.npz")
    got = flatten_outputs(outputs_as_list(result, program.n_outputs))
    assert compare_flat(expected, got) == []
    traced, values = interp.run_traced(*args)
    assert same_value(traced, result)
    assert values, "the trace records the stored values"


def test_fusion_group_is_one_kernel_call_that_blocks_big_and_runs_small_tensors_straight() -> None:
    """A fusion group is one operator of the decoded code, whatever the size: big tensors
    run blocked, small ones run the group's kernels straight-line inside the fused kernel
    (cheaper than dispatching them); both give what the unfused group gives."""
    from vm.fusion.kernels import FusedKernel

    path = CORPUS / "ratio_iou.ir"
    fused = Interpreter(compile_source(path.read_text(), str(path)))
    plain = Interpreter(compile_source(path.read_text(), str(path), fused_kernels=False))
    kernels = [k for ins in fused.decoded[0].code for k in ins if isinstance(k, FusedKernel)]
    assert len(kernels) == 1
    kernel = kernels[0]
    rng = np.random.default_rng(0)
    for n, kind in ((16, "unfused"), (2 * kernel.min_block + 4096, "fused")):
        args = [rng.random(n, dtype=np.float32) + 0.5 for _ in range(8)]
        before = kernel.stats
        np.testing.assert_array_equal(fused(*args), plain(*args))
        after = kernel.stats
        assert after[kind] == before[kind] + 1, (n, before, after)


FIB = """\
graph(%n.1 : int):
  %fib : Function = prim::Constant[name="fib"]()
  %r.1 : int = prim::CallFunction(%fib, %n.1)
  return (%r.1)
with fib = graph(%n : int):
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=2]()
  %small : bool = aten::lt(%n, %two)
  %r : int = prim::If(%small)
    block0():
      -> (%n)
    block1():
      %f : Function = prim::Constant[name="fib"]()
      %a : int = aten::sub(%n, %one)
      %fa : int = prim::CallFunction(%f, %a)
      %b : int = aten::sub(%n, %two)
      %fb : int = prim::CallFunction(%f, %b)
      %s : int = aten::add(%fa, %fb)
      -> (%s)
  return (%r)
"""


def test_recursive_fib_module() -> None:
    """A module of two graphs where fib calls itself: CALL/RET with a frame per call."""
    program = compile_source(FIB, "fib.ir")
    interp = Interpreter(program)
    fibs = [0, 1, 1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144]
    assert [interp(n) for n in range(len(fibs))] == fibs
    assert interp.run_traced(10)[0] == 55


# ---------------------------------------------------------------------------------------
# Scripted with torch

torch = pytest.importorskip("torch")

Tensor = torch.Tensor


def if_else(x: Tensor, flag: bool) -> Tensor:
    if flag:
        y = x + 1
    else:
        y = x * 2
    return y.relu()


def while_break_continue(n: int) -> int:
    i = 0
    total = 0
    while True:
        i += 1
        if i % 3 == 0:
            continue
        if i > n:
            break
        total += i
    return total


def nested_loops_tuple(x: Tensor, n: int) -> tuple[Tensor, int]:
    acc = (x, 0)
    for i in range(n):
        for j in range(i):
            a, c = acc
            acc = (a + j, c + 1)
    return acc


def list_in_loop(x: Tensor, n: int) -> list[Tensor]:
    out: list[Tensor] = []
    for i in range(n):
        out.append(x * i)
    return out


def optional_scale(x: Tensor, scale: float | None) -> Tensor:
    if scale is None:
        return x
    return x * scale


def small_loop(x: Tensor, y: Tensor) -> Tensor:
    for _ in range(100):
        x = torch.relu(x * y + 1.0) - y
    return x


X = np.linspace(-2, 2, 16, dtype=np.float32).reshape(4, 4)
CASES = [
    (if_else, (X, True)),
    (if_else, (X, False)),
    (while_break_continue, (10,)),
    (while_break_continue, (0,)),
    (nested_loops_tuple, (X, 5)),
    (list_in_loop, (X, 4)),
    (optional_scale, (X, 2.5)),
    (optional_scale, (X, None)),
    (small_loop, (X, np.full((4, 4), 0.5, np.float32))),
]


@pytest.mark.parametrize("fn,args", CASES, ids=[f"{f.__name__}-{i}" for i, (f, _) in enumerate(CASES)])
def test_scripted_function_matches_torch(fn: Any, args: tuple[Any, ...]) -> None:
    """The graph torch.jit.script prints runs on irvm with torch's result (kind, dtype,
    values), on the fast loop and on the reference loop."""
    scripted = torch.jit.script(fn)
    program = compile_source(str(scripted.graph), f"{fn.__name__}.ir")
    expected = to_numpy(scripted(*[to_torch(a) for a in args]))
    interp = Interpreter(program)
    got = interp(*args)
    traced, _ = interp.run_traced(*args)
    for result in (got, traced):
        flat_e = flatten_outputs([expected])
        flat_a = flatten_outputs([result])
        assert compare_flat(flat_e, flat_a) == [], (fn.__name__, result, expected)
