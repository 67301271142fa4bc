"""Known functions: a ``.graph`` dump's calls of ``torch.nn.functional`` helpers (printed
as ``prim::CallFunction`` of a body the dump does not contain) run with irvm's bodies,
and give PyTorch's answer on both the interpreter and the static runtime.

Each case is a one-line scripted wrapper: the test scripts it with torch, prints its
``.graph`` (so the dump is exactly what a user gets), compiles that text and compares
both engines with torch on the same inputs (dtype, shape, values).
"""

from __future__ import annotations

import importlib.util
import itertools
from typing import Any

import numpy as np
import pytest

import compiler
import vm
from compiler.diagnostics import CompileError

torch = pytest.importorskip("torch")

_HEADER = "import torch\nimport torch.nn.functional as F\nfrom torch import Tensor\nfrom typing import List, Optional, Tuple\n\n"
_COUNTER = itertools.count()


def _script(tmp_path: Any, source: str) -> Any:
    """``torch.jit.script`` of ``def f...`` in ``source`` (TorchScript needs a real file)."""
    name = f"kf_case_{next(_COUNTER)}"
    path = tmp_path / f"{name}.py"
    path.write_text(_HEADER + source + "\n")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return torch.jit.script(module.f)


def _to_numpy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.detach().numpy().copy()
    if isinstance(value, tuple):
        return tuple(_to_numpy(v) for v in value)
    return value


def _same(got: Any, want: Any) -> None:
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want):
            _same(g, w)
        return
    assert isinstance(got, np.ndarray), type(got)
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.dtype, want.shape)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True)


def run_case(tmp_path: Any, source: str, *inputs: Any) -> None:
    """Script ``source``, compile its printed graph, compare both engines with torch."""
    fn = _script(tmp_path, source)
    text = str(fn.graph)
    assert "prim::CallFunction" in text, "the case must exercise a call without a body"
    want = _to_numpy(fn(*[torch.from_numpy(x.copy()) if isinstance(x, np.ndarray) else x for x in inputs]))
    program = compiler.compile_source(text, "case.ir")
    for engine in (vm.Interpreter(program), vm.StaticRuntime(program)):
        got = engine(*[x.copy() if isinstance(x, np.ndarray) else x for x in inputs])
        _same(got, want)


RNG = np.random.default_rng(0)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


# (wrapper source, inputs): defaults and non-default arguments of each function
ACTIVATIONS = [
    ("def f(x: Tensor): return F.relu(x)", randn(3, 4)),
    ("def f(x: Tensor):\n    y = x * 1.0\n    z = F.relu(y, inplace=True)\n    return y + z", randn(3, 4)),
    ("def f(x: Tensor): return F.relu6(x * 4.0) + F.relu6(x, True)", randn(3, 4)),
    ("def f(x: Tensor): return F.leaky_relu(x)", randn(3, 4)),
    ("def f(x: Tensor): return F.leaky_relu(x, 0.2)", randn(3, 4)),
    ("def f(x: Tensor):\n    y = x.clone()\n    F.leaky_relu(y, 0.3, True)\n    return y", randn(3, 4)),
    ("def f(x: Tensor): return F.elu(x) + F.elu(x, 0.5)", randn(3, 4)),
    ("def f(x: Tensor): return F.selu(x)", randn(3, 4)),
    ("def f(x: Tensor): return F.celu(x) + F.celu(x, 2.0)", randn(3, 4)),
    ("def f(x: Tensor): return F.silu(x) + F.mish(x)", randn(3, 4)),
    ("def f(x: Tensor): return F.hardswish(x * 4.0) + F.hardsigmoid(x * 4.0)", randn(3, 4)),
    ("def f(x: Tensor): return F.hardtanh(x)", randn(3, 4)),
    ("def f(x: Tensor): return F.hardtanh(x, -0.5, 0.25)", randn(3, 4)),
    ("def f(x: Tensor): return F.threshold(x, 0.1, 2.0)", randn(3, 4)),
    ("def f(x: Tensor): return F.glu(x) + F.glu(x.t(), 0).t().sum()", randn(4, 4)),
    ("def f(x: Tensor): return F.softmax(x, 1)", randn(3, 4)),
    ("def f(x: Tensor): return F.softmax(x, dim=0, dtype=torch.float64)", randn(3, 4)),
    ("def f(x: Tensor): return F.log_softmax(x, -1)", randn(2, 3, 4)),
    ("def f(x: Tensor): return F.softmin(x, 1)", randn(3, 4)),
    ("def f(x: Tensor): return F.softsign(x) + F.tanhshrink(x)", randn(3, 4)),
    ("def f(x: Tensor): return F.sigmoid(x) + F.tanh(x)", randn(3, 4)),
    ("def f(x: Tensor): return F.dropout(x, 0.3, False) + F.dropout(x, training=False, inplace=True)", randn(3, 4)),
    ("def f(x: Tensor): return F.dropout1d(x, 0.5, False) + F.dropout2d(x, 0.5, False)", randn(2, 3, 4)),
    ("def f(x: Tensor): return F.dropout3d(x, 0.5, False) + F.alpha_dropout(x, 0.2, False)", randn(2, 3, 4, 5)),
    ("def f(x: Tensor): return F.feature_alpha_dropout(x, 0.2, False)", randn(2, 3, 4)),
]


@pytest.mark.parametrize("case", ACTIVATIONS, ids=lambda c: c[0].split("return ")[-1][:60])
def test_activation(tmp_path: Any, case: tuple[Any, ...]) -> None:
    run_case(tmp_path, *case)
