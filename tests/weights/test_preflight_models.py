"""Every dumped nn model (tests/nn_models: MLP, CNN, decoder, Conv1d, LSTM/GRU cells and
layers, embeddings, attention, encoders; scripted, traced, frozen) given float64 or int64
inputs instead of float32:
irvm refuses the run, before its first operator, exactly when eager PyTorch raises on the
same module and dtypes (vm/binding/preflight.py), on both backends.
"""

from __future__ import annotations

import sys
from typing import Any

import numpy as np
import pytest

from tests.support.paths import ROOT

torch = pytest.importorskip("torch")

sys.path.insert(0, str(ROOT / "tools"))
import dump_nn_models

import compiler
from compiler.diagnostics import RunError
from tests.support.torch_models import BACKENDS, runtime_for
from vm.files import npz as io

MODELS = ROOT / "tests" / "data" / "nn_models"
DUMPS = sorted(p.stem for p in MODELS.glob("*.ir"))


def _family(dump: str) -> str:
    return next(name for name in sorted(dump_nn_models.MODELS, key=len, reverse=True) if dump.startswith(name + "_"))


def _torch_refuses(name: str, dtype: Any) -> bool:
    factory, inputs, _ = dump_nn_models.MODELS[name]
    torch.manual_seed(0)
    module = factory().eval()
    args = tuple(a.to(dtype) if a.is_floating_point() else a for a in inputs())
    try:
        with torch.no_grad():
            module(*args)
    except (RuntimeError, ValueError):  # an RNN's dtype check raises ValueError
        return True
    return False


_verdicts: dict[tuple[str, str], bool] = {}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("dtype", ["float64", "int64"])
@pytest.mark.parametrize("dump", DUMPS)
def test_other_input_dtypes_are_refused_exactly_when_torch_refuses(dump: str, dtype: str, backend: str) -> None:
    name = _family(dump)
    program = compiler.compile_source((MODELS / f"{dump}.ir").read_text(), f"{dump}.ir")
    args = io.load_inputs(MODELS / f"{dump}.inputs.npz", program)
    if not any(isinstance(a, np.ndarray) and a.dtype == np.float32 for a in args):
        pytest.skip("no floating input")
    if (name, dtype) not in _verdicts:
        _verdicts[name, dtype] = _torch_refuses(name, getattr(torch, dtype))
    cast: list[Any] = [a.astype(dtype) if isinstance(a, np.ndarray) and a.dtype == np.float32 else a for a in args]
    weights = io.read_npz(MODELS / f"{dump}.weights.npz")
    runtime = runtime_for(backend, program, weights)
    if _verdicts[name, dtype]:
        with pytest.raises(RunError, match=dtype):
            runtime(*cast)
    else:
        runtime(*cast)
