"""Weights of another model are refused before the run, where PyTorch's load_state_dict
refuses them (vm/binding/weight_checks.py, vm/binding/weights.py): parameters of a standard module that
contradict each other, weights that contradict the shapes a traced or frozen graph
declares, frozen constants of the wrong shape or dtype.  Differential: torch refuses each
state_dict first; both irvm backends must refuse it too, naming the weight.
"""

from __future__ import annotations

import sys
from pathlib import Path
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


class Recurrent(nn.Module):
    def __init__(self, hidden: int = 4):
        super().__init__()
        self.lstm = nn.LSTM(3, hidden)

    def forward(self, x):
        return self.lstm(x)[0]


def _export(model: Any, shape: tuple[int, ...], **mode: bool) -> Any:
    torch.manual_seed(0)
    return export_torch.export(model.eval(), "m", (torch.randn(*shape),), **mode)


def _state(model: Any) -> dict[str, np.ndarray]:
    return {k: v.detach().numpy() for k, v in model.state_dict().items()}


def _refused_by_torch(model: Any, weights: dict[str, np.ndarray]) -> None:
    with pytest.raises(RuntimeError, match="size mismatch"):
        model.load_state_dict({k: torch.from_numpy(v) for k, v in weights.items() if k in model.state_dict()})


def _refused_by_irvm(exp: Any, weights: dict[str, np.ndarray], backend: str, match: str) -> None:
    program = compiler.compile_source(exp.ir, "m.ir")
    with pytest.raises(RunError, match=match):
        runtime_for(backend, program, weights)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", ["fc.bias", "conv.bias", "bn.running_var"])
def test_parameters_that_contradict_their_module_are_refused(backend: str, case: str) -> None:
    """A Linear/Conv bias of another size than the weight's rows, BatchNorm statistics of
    another size than its weight: load_state_dict refuses, and so does irvm."""
    model = SmallCNN(10)
    exp = _export(model, (2, 1, 8, 8))
    weights = dict(exp.weights)
    weights[case] = np.zeros(weights[case].shape[0] + 1, np.float32)
    _refused_by_torch(SmallCNN(10), weights)
    _refused_by_irvm(exp, weights, backend, case.split(".")[1])


@pytest.mark.parametrize("backend", BACKENDS)
def test_an_lstm_of_another_hidden_size_is_refused(backend: str) -> None:
    exp = _export(Recurrent(4), (5, 2, 3))
    weights = dict(exp.weights)
    weights.update({k: v for k, v in _state(Recurrent(5)).items() if k.startswith("lstm.bias")})
    _refused_by_torch(Recurrent(4), weights)
    _refused_by_irvm(exp, weights, backend, "bias_ih_l0")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_traced_graph_refuses_the_weights_of_another_num_classes(backend: str) -> None:
    """Issue 17: SmallCNN(num_classes=5) weights bound to the 10-class graph answered (2, 5).
    The traced graph declares Float(2, 10) on the Linear's output."""
    exp = _export(SmallCNN(10), (2, 1, 8, 8), trace=True)
    weights = dict(exp.weights)
    weights.update(_state(SmallCNN(5)))
    _refused_by_torch(SmallCNN(10), weights)
    _refused_by_irvm(exp, weights, backend, "fc.weight")


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_frozen_graph_refuses_constants_of_another_shape_or_dtype(backend: str) -> None:
    """Issue 17: a frozen graph's declared Float(10) constant was not checked against the
    array bound to it (the interpreter bound any array)."""
    exp = _export(SmallCNN(10), (2, 1, 8, 8), freeze=True)
    key = next(k for k, v in exp.weights.items() if k.endswith("fc.weight"))
    five = dict(exp.weights)
    five[key] = np.zeros((5, exp.weights[key].shape[1]), np.float32)
    _refused_by_torch(SmallCNN(10), {"fc.weight": five[key]})
    _refused_by_irvm(exp, five, backend, "shape")
    doubled = dict(exp.weights)
    doubled[key] = exp.weights[key].astype(np.float64)
    _refused_by_irvm(exp, doubled, backend, "float64")


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_models_own_weights_pass(backend: str) -> None:
    for mode in ({}, {"trace": True}, {"freeze": True}):
        exp = _export(SmallCNN(10), (2, 1, 8, 8), **mode)
        program = compiler.compile_source(exp.ir, "m.ir")
        runtime = runtime_for(backend, program, exp.weights)
        got = runtime(*exp.inputs.values())
        np.testing.assert_allclose(got, exp.outputs[0], rtol=1e-4, atol=1e-5)


def test_a_scripted_archive_refuses_weights_of_another_num_classes(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 17's case, SmallCNN(num_classes=5) weights given to the 10-class model: a
    scripted dump's text is the same for both, but a .pt archive holds the model's own
    weights, so `irvm run model.pt --weights` refuses a size mismatch as load_state_dict does."""
    from vm.cli import main as irvm_main

    model = SmallCNN(10).eval()
    pt, weights, inputs = tmp_path / "cnn10.pt", tmp_path / "cnn5.npz", tmp_path / "x.npz"
    torch.jit.save(torch.jit.script(model), str(pt))
    other = _state(SmallCNN(5))
    _refused_by_torch(model, other)
    np.savez(weights, **other)
    np.savez(inputs, x=np.ones((2, 1, 8, 8), np.float32))
    code = irvm_main(["run", str(pt), "--inputs", str(inputs), "--weights", str(weights)])
    err = capsys.readouterr().err
    assert code == 1, err
    assert "size mismatch" in err and "fc.weight: [5, 144] given, [10, 144]" in err and "fc.bias" in err
    np.savez(weights, **_state(SmallCNN(10)))  # weights of the same architecture replace the archive's
    assert irvm_main(["run", str(pt), "--inputs", str(inputs), "--weights", str(weights)]) == 0, capsys.readouterr().err
