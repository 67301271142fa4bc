"""The specialization passes that fold weight values (``fold_batch_norm``,
``fold_epilogues``, ``fold_transposed_weights``; their goldens are
``tests/passes/<pass>/*.ir``, run by tests/passes/test_golden.py) in the static runtime:
every golden case runs with the fold on and off (its ``StaticOptions`` switch), on
seeded weights and random inputs, and the results agree to float32 rounding.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from compiler import parse
from compiler import types as T
from compiler.pipeline import VALUE_PASSES
from tests.passes.test_golden import case_weights
from tests.support.filecheck_runner import Case, golden_cases, strip_checks
from tests.support.paths import TOOLS
from vm import StaticRuntime
from vm.ir.graph import Module
from vm.static import StaticOptions

CASES = [c for c in golden_cases(Path(__file__).parent.parent / "passes") if c.group in VALUE_PASSES]


def _inputs(module: Module, seed: int = 1) -> list:
    rng = np.random.default_rng(seed)
    args = []
    for v in module.main.inputs:
        if isinstance(v.type, T.TensorType):
            args.append(rng.standard_normal(v.type.sizes).astype(np.float32))
        else:
            args.append(True)
    return args


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fold_on_and_off_agree(case: Case) -> None:
    """The static runtime gives the same results, to float32 rounding, with the rewrite
    switched on (the default) and off (its StaticOptions flag)."""
    name, text = case.group, case.text
    module = parse(strip_checks(text), f"{name}.ir")
    weights, args = case_weights(module, text), _inputs(module)

    def fresh() -> dict[str, np.ndarray]:
        return {k: np.array(v) for k, v in weights.items()}  # training BN writes its stats

    on = StaticRuntime(module, fresh())(*args)
    off = StaticRuntime(module, fresh(), options=StaticOptions(**{name: False}))(*args)
    got_leaves, want_leaves = _leaves(on), _leaves(off)
    assert len(got_leaves) == len(want_leaves)
    for got, want in zip(got_leaves, want_leaves):
        np.testing.assert_allclose(np.asarray(got, np.float64), np.asarray(want, np.float64), rtol=1e-5, atol=1e-5)


def test_folded_conv_bn_module_matches_torch() -> None:
    """A scripted torch module (Conv2d + BatchNorm2d in eval mode, inside Sequential and a
    residual) runs in the static runtime with its BatchNorms folded away, and its result
    matches torch's to float32 rounding."""
    torch = pytest.importorskip("torch")
    import sys

    sys.path.insert(0, str(TOOLS))
    import export_torch

    class Block(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.a = torch.nn.Sequential(torch.nn.Conv2d(3, 8, 3, padding=1, bias=False), torch.nn.BatchNorm2d(8))
            self.b = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
            self.bn = torch.nn.BatchNorm2d(8, affine=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            y = torch.relu(self.a(x))
            return self.bn(self.b(y)) + y

    torch.manual_seed(0)
    model = Block()
    for bn in (model.a[1], model.bn):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    if model.a[1].affine:
        model.a[1].weight.data.uniform_(0.5, 1.5)
    model.eval()
    x = torch.randn(2, 3, 9, 9)
    exp = export_torch.export(model, "block", (x,))
    program = parse(exp.ir)
    runtime = StaticRuntime(program, exp.weights)
    got = runtime(x.numpy())
    kinds = [pn.ref.name for pn in runtime.module.processed_nodes if pn.ref is not None]
    assert "aten::batch_norm" not in kinds
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_folded_linear_bn_module_matches_torch() -> None:
    """A scripted classifier head (Flatten, Linear, BatchNorm1d in eval, ReLU, Linear,
    BatchNorm1d) runs in the static runtime with both BatchNorms folded into the linears,
    and matches torch to float32 rounding."""
    torch = pytest.importorskip("torch")
    import sys

    sys.path.insert(0, str(TOOLS))
    import export_torch

    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(
        nn.Flatten(), nn.Linear(12, 8), nn.BatchNorm1d(8), nn.ReLU(), nn.Linear(8, 5), nn.BatchNorm1d(5, affine=False)
    )
    for bn in (model[2], model[5]):
        bn.running_mean.uniform_(-1, 1)
        bn.running_var.uniform_(0.5, 2)
    model.eval()
    x = torch.randn(4, 3, 2, 2)
    exp = export_torch.export(model, "head", (x,))
    runtime = StaticRuntime(parse(exp.ir), exp.weights)
    got = runtime(x.numpy())
    kinds = [pn.ref.name for pn in runtime.module.processed_nodes if pn.ref is not None]
    assert "aten::batch_norm" not in kinds
    with torch.no_grad():
        want = model(x).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def _dumps() -> list[Path]:
    from tests.static.test_differential import DUMPS

    return [p for p in DUMPS if "batch_norm" in p.read_text() and p.with_suffix(".weights.npz").exists()]


@pytest.mark.parametrize("path", _dumps(), ids=lambda p: p.stem)
def test_dumps_with_batch_norm_match_the_interpreter_with_folds_on(path: Path) -> None:
    """Every corpus/dump/nn_models program with a BatchNorm gives the interpreter's result,
    to float32 rounding, on the static runtime with its folds on (exact runs with them off
    are tests/static/test_differential.py's)."""
    import compiler
    from tests.static.test_differential import _load_case
    from vm.interpreter.machine import Interpreter

    text, inputs, weights = _load_case(path)
    if inputs is None:
        pytest.skip(f"{path.name} has no inputs file")
    program = compiler.compile_source(text, str(path))
    want = Interpreter(program, weights)(*inputs)
    got = StaticRuntime(program, weights)(*inputs)
    for g, w in zip(_leaves(got), _leaves(want)):
        np.testing.assert_allclose(np.asarray(g, np.float64), np.asarray(w, np.float64), rtol=1e-4, atol=1e-5)


def _leaves(value: object) -> list:
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    return [value]
