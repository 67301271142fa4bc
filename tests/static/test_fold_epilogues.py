"""Activations written in place into a conv/matmul result (``StaticOptions.fold_epilogues``),
on real modules: the on/off agreement on the goldens is in test_fold_batch_norm.py
(``tests/passes/fold_epilogues``); here, scripted torch modules against torch."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from compiler import parse
from tests.support.paths import TOOLS
from vm import StaticRuntime
from vm.static import StaticOptions

torch = pytest.importorskip("torch")


class _Block(torch.nn.Module):
    """A conv + BatchNorm + SiLU stem, a conv + Hardswish whose result is also a residual,
    and a transformer MLP (Linear, GELU, Linear)."""

    def __init__(self) -> None:
        super().__init__()
        nn = torch.nn
        self.stem = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.SiLU())
        self.conv = nn.Conv2d(8, 8, 1)
        self.act = nn.Hardswish()
        self.mlp = nn.Sequential(nn.Linear(8, 32), nn.GELU(), nn.Linear(32, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.stem(x)
        c = self.conv(y)
        y = self.act(c) + c
        t = y.flatten(2).transpose(1, 2)
        return self.mlp(t)


def _exported() -> tuple[object, dict, torch.Tensor, np.ndarray]:
    sys.path.insert(0, str(TOOLS))
    import export_torch

    torch.manual_seed(0)
    model = _Block().eval()
    model.stem[1].running_mean.uniform_(-1, 1)
    model.stem[1].running_var.uniform_(0.5, 2)
    x = torch.randn(2, 3, 6, 6)
    exp = export_torch.export(model, "block", (x,))
    with torch.no_grad():
        want = model(x).numpy()
    return parse(exp.ir), exp.weights, x, want


def test_activations_run_in_place_and_match_torch() -> None:
    """With the fold on, the SiLU after the folded conv and the GELU after the linear run
    in place (the Hardswish, whose operand is also the residual, does not), and the result
    is torch's to float32 rounding; with it off, the same result, no in-place activation."""
    module, weights, x, want = _exported()
    on = StaticRuntime(module, weights)
    off = StaticRuntime(module, weights, options=StaticOptions(fold_epilogues=False))
    np.testing.assert_allclose(on(x.numpy()), want, rtol=1e-5, atol=1e-5)
    np.testing.assert_array_equal(on(x.numpy()), off(x.numpy()))
    kinds = {pn.ref.name.split(".")[0] for pn in on.module.processed_nodes if pn.ref is not None}
    assert {"aten::silu_", "aten::gelu_", "aten::hardswish"} <= kinds
    assert "aten::hardswish_" not in kinds
    off_kinds = {pn.ref.name.split(".")[0] for pn in off.module.processed_nodes if pn.ref is not None}
    assert not {"aten::silu_", "aten::gelu_"} & off_kinds


def test_steady_runs_with_a_plan_agree_with_the_first() -> None:
    """The memory plan knows an in-place activation aliases the product: planned steady
    runs (every tensor managed) give the first run's result."""
    module, weights, x, want = _exported()
    runtime = StaticRuntime(module, weights, options=StaticOptions(min_managed_bytes=0))
    first = runtime(x.numpy())
    for _ in range(3):
        np.testing.assert_array_equal(runtime(x.numpy()), first)
    np.testing.assert_allclose(first, want, rtol=1e-5, atol=1e-5)
