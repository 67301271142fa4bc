"""Runs refuse, before the first operator, the input dtypes PyTorch refuses, and take the
ones it takes (vm/binding/preflight.py).

Differential: each model is scripted by torch and run by torch on inputs of several
dtypes; irvm (interpreter and static runtime, Python API) must refuse exactly the calls
torch refuses, with a RunError naming the input, and give torch's answer on the others.
"""

from __future__ import annotations

import itertools
import sys
from typing import Any

import numpy as np
import pytest

from tests.support.paths import ROOT

torch = pytest.importorskip("torch")
nn = torch.nn

sys.path.insert(0, str(ROOT / "tools"))
import export_torch

import compiler
from compiler.diagnostics import RunError
from tests.support.torch_models import BACKENDS, SmallCNN, runtime_for
from vm.binding import preflight
from vm.interpreter.machine import Interpreter


class BiasThenLinear(nn.Module):
    """float64 input + a float32 buffer promotes to float64, which the Linear then refuses."""

    def __init__(self):
        super().__init__()
        self.register_buffer("shift", torch.ones(3))
        self.fc = nn.Linear(3, 2)

    def forward(self, x):
        return self.fc(x + self.shift)


class Norm(nn.Module):
    def __init__(self):
        super().__init__()
        self.ln = nn.LayerNorm(3)

    def forward(self, x):
        return self.ln(x)


class Recurrent(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(3, 4, batch_first=True)

    def forward(self, x):
        return self.lstm(x)[0]


class Embed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(5, 3)

    def forward(self, i):
        return self.emb(i)


def generic(x, y):
    return x * 2 + y


def matmul(x, y):
    return torch.matmul(x, y)


CASES: dict[str, tuple[Any, list[tuple[int, ...]]]] = {
    "cnn": (SmallCNN, [(2, 1, 8, 8)]),
    "bias_then_linear": (BiasThenLinear, [(2, 3)]),
    "layer_norm": (Norm, [(2, 3)]),
    "lstm": (Recurrent, [(2, 5, 3)]),
    "generic": (generic, [(2, 3), (2, 3)]),
    "matmul": (matmul, [(2, 3), (3, 4)]),
}
DTYPES = [np.float32, np.float64, np.int64]


def _case(name: str, dtypes: tuple[Any, ...], freeze: bool = False) -> tuple[Any, Any]:
    make, shapes = CASES[name]
    torch.manual_seed(0)
    target = make().eval() if isinstance(make, type) else make
    args = tuple(torch.from_numpy((np.arange(int(np.prod(s))) % 5).astype(d).reshape(s)) for s, d in zip(shapes, dtypes))
    return export_torch.export(target, name, args, freeze=freeze), args


def _run(exp: Any, backend: str) -> Any:
    program = compiler.compile_source(exp.ir, f"{exp.name}.ir")
    runtime = runtime_for(backend, program, exp.weights)
    names = [n for n in exp.inputs]
    return runtime(*[exp.inputs[n] for n in names])


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", sorted(CASES))
def test_irvm_refuses_exactly_the_dtypes_torch_refuses(name: str, dtype: Any, backend: str) -> None:
    """Issue 17: a float64 or int64 image fed to a float32 conv model ran and returned float64."""
    n_inputs = len(CASES[name][1])
    dtypes = (dtype,) + (np.float32,) * (n_inputs - 1)
    exp, _ = _case(name, dtypes)
    if exp.error is not None:
        with pytest.raises(RunError) as refused:
            _run(exp, backend)
        message = str(refused.value)
        assert "PyTorch" in message and "cast input %" in message, message
        assert ":" in message.splitlines()[0], "the error points at the node"
    else:
        got = _run(exp, backend)
        want = exp.outputs[0]
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_float_indices_into_an_embedding_are_refused_as_torch_does(backend: str) -> None:
    torch.manual_seed(0)
    exp = export_torch.export(Embed().eval(), "embed", (torch.tensor([0, 3]),))
    assert exp.error is None
    assert _run(exp, backend).shape == (2, 3)
    with pytest.raises(RuntimeError):
        Embed()(torch.tensor([0.0, 3.0]))
    exp.inputs = {k: v.astype(np.float32) for k, v in exp.inputs.items()}
    with pytest.raises(RunError, match="indices"):
        _run(exp, backend)


def test_a_frozen_model_checks_its_inputs_too() -> None:
    """Frozen weights are constants of the graph: their dtype is known before the run."""
    exp, _ = _case("cnn", (np.float64,), freeze=True)
    assert exp.error is not None
    with pytest.raises(RunError, match="float64"):
        _run(exp, "interp")


def test_the_guard_costs_nothing_for_a_dtype_generic_graph() -> None:
    """No strict op is reachable from the inputs: no guard is built."""
    exp, _ = _case("generic", (np.float32, np.float32))
    program = compiler.compile_source(exp.ir)
    assert Interpreter(program).dtype_guard is None


def _verdict(check: Any, args: list[Any]) -> str | None:
    try:
        check(args)
    except RunError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_prepared_guard_answers_as_the_whole_walk(name: str) -> None:
    """Property: for any input dtypes, the guard's check (what no input changes decided
    at construction; only the steps an input reaches that feed a strict op replayed)
    refuses exactly what the whole walk over the graph refuses, with the same message."""
    n_inputs = len(CASES[name][1])
    exp, _ = _case(name, (np.float32,) * n_inputs)
    program = compiler.compile_source(exp.ir)
    guard = Interpreter(program, exp.weights).dtype_guard
    if guard is None:
        return
    guard = getattr(guard, "__wrapped__", guard)
    assert guard._steps is not None

    def whole(args: list[Any]) -> None:
        known = {v: preflight.Known(a.dtype, a.ndim > 0, f"input %{v.name}", v.name)
                 for v, a in zip(guard.inputs, args) if isinstance(a, np.ndarray)}
        guard._walk(guard.graph.block, known, 0)

    base = [exp.inputs[n] for n in exp.inputs]
    for dtypes in itertools.product(DTYPES, repeat=n_inputs):
        args = [a.astype(d) for a, d in zip(base, dtypes)]
        assert _verdict(guard.check, args) == _verdict(whole, args), dtypes


@pytest.mark.parametrize("name", sorted(CASES))
def test_float32_inputs_are_checked_at_construction(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The guard checks the likely first inputs (float32 where no dtype is declared) when
    it is built: a first call with them checks nothing more, as a steady call; any other
    dtypes are still checked at the call that brings them."""
    n_inputs = len(CASES[name][1])
    exp, _ = _case(name, (np.float32,) * n_inputs)
    program = compiler.compile_source(exp.ir)
    guard = Interpreter(program, exp.weights).dtype_guard
    if guard is None:
        pytest.skip("no strict operator is reachable from an input: the program has no dtype guard")
    checked: list[Any] = []
    monkeypatch.setattr(guard, "check", checked.append)
    args = [exp.inputs[n].astype(np.float32) for n in exp.inputs]
    guard(args)
    assert checked == []
    guard([a.astype(np.float64) for a in args])
    assert len(checked) == 1


def test_a_steady_call_leaves_the_garbage_collector_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    """Only a check of new input dtypes pauses the collector; a steady call does not touch
    it (pausing per call asked ``gc.get_freeze_count()``, a walk over every frozen object:
    43 ms a call in a process that had frozen a big heap, as a benchmark does)."""
    import gc

    for name in sorted(CASES):
        exp, _ = _case(name, (np.float32,) * len(CASES[name][1]))
        interp = Interpreter(compiler.compile_source(exp.ir), exp.weights)
        if interp.dtype_guard is not None:
            break
    assert interp.dtype_guard is not None, "a case whose calls go through the dtype guard"
    args = [exp.inputs[n] for n in exp.inputs]
    interp(*args)
    touched: list[str] = []
    monkeypatch.setattr(gc, "disable", lambda: touched.append("disable"))
    monkeypatch.setattr(gc, "get_freeze_count", lambda: touched.append("freeze count") or 0)
    interp(*args)
    assert touched == []
