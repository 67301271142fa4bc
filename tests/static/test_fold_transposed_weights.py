"""Small linear weights stored transposed (``StaticOptions.fold_transposed_weights``): the
on/off agreement on the goldens is in test_fold_batch_norm.py
(``tests/passes/fold_transposed_weights``); here, what the fold promises of the
arrays, and scripted torch modules against torch."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from compiler import parse
from compiler.passes.fold_transposed_weights import MAX_ELEMENTS, fold_transposed_weights
from tests.support.paths import TOOLS
from vm import StaticModule, StaticRuntime
from vm.static import StaticOptions

IR = """
graph(%x : Float(4, 8)):
  %w : Float(16, 8) = prim::Constant[value=<Tensor>]()
  %none : NoneType = prim::Constant()
  %y : Tensor = aten::linear(%x, %w, %none)
  return (%y)
"""


def test_the_new_constant_holds_the_same_values_column_major() -> None:
    """The added array equals the weight and is stored so that its transpose is row-major
    (what BLAS reads without packing); the original array is left untouched."""
    module = parse(IR)
    w = np.arange(128, dtype=np.float32).reshape(16, 8)
    folded = fold_transposed_weights(module, {"w": w})
    arrays = folded.folded_tensors
    (name, array), = arrays.items()
    assert name == "w.t" and array.flags.f_contiguous and array.T.flags.c_contiguous
    np.testing.assert_array_equal(array, w)
    assert w.flags.c_contiguous
    assert folded is not module and "w.t" in folded.main.value_names()


def test_a_weight_above_the_bound_is_left_alone() -> None:
    """A weight of more than MAX_ELEMENTS elements, where the transposed BLAS kernel is as
    fast, keeps its layout: no copy of the module, no array."""
    rows = MAX_ELEMENTS // 8 + 1
    module = parse(IR.replace("Float(16, 8)", f"Float({rows}, 8)"))
    w = np.ones((rows, 8), np.float32)
    folded = fold_transposed_weights(module, {"w": w})
    arrays = folded.folded_tensors
    assert folded is module and arrays == {}


def test_a_small_transformer_matches_torch_with_the_fold_on_and_off() -> None:
    """A scripted encoder layer (d_model 32, feed-forward 64: every linear under the bound)
    on (1, 16, 32): the static runtime matches torch with the fold on and off, and with it
    on every ``aten::linear`` reads a transposed copy."""
    torch = pytest.importorskip("torch")
    sys.path.insert(0, str(TOOLS))
    import export_torch

    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Linear(32, 64), nn.GELU(), nn.Linear(64, 32), nn.LayerNorm(32)).eval()
    x = torch.randn(1, 16, 32)
    exp = export_torch.export(model, "mlp", (x,))
    program = parse(exp.ir)
    with torch.no_grad():
        want = model(x).numpy()
    for options in (StaticOptions(), StaticOptions(fold_transposed_weights=False)):
        got = StaticRuntime(program, exp.weights, options=options)(x.numpy())
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    module = StaticModule(program, exp.weights)
    linears = [n for n in module.ir.main.walk() if n.kind == "aten::linear"]
    assert len(linears) == 2 and all(n.inputs[1].name.endswith(".t") for n in linears)


def test_a_weight_that_contradicts_the_declared_sizes_is_left_to_the_checks() -> None:
    """A traced graph declares the linear's result ``Float(4, 10)``; a (5, 8) weight (of a
    5-class model) is not rewritten, so the runtime's weight check names it as bound."""
    module = parse(IR.replace("%y : Tensor", "%y : Float(4, 10)"))
    w = np.ones((5, 8), np.float32)
    folded = fold_transposed_weights(module, {"w": w})
    arrays = folded.folded_tensors
    assert folded is module and arrays == {}
