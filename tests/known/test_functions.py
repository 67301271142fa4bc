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
from compiler.diagnostics import CompileError, RunError
from compiler.passes.inline_calls import inline_calls
from compiler.verify import verify
from tests.support.against_torch import assert_matches, to_numpy, to_torch

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


def run_case(tmp_path: Any, source: str, *inputs: Any) -> None:
    """Script ``source``, compile its printed graph, compare both engines with torch."""
    fn = _script(tmp_path, source)
    text = str(fn.graph)
    assert "prim::CallFunction" in text, "the case must exercise a call without a body"
    want = to_numpy(fn(*[to_torch(x) for x in inputs]))
    inlined = inline_calls(compiler.parse(text, "case.ir"))
    verify(inlined)  # the bodies are well-formed IR once inlined (SSA, arity, types)
    assert "prim::CallFunction" not in str(inlined)
    program = compiler.compile_source(text, "case.ir")
    for engine in (vm.Interpreter(program), vm.StaticRuntime(program)):
        got = engine(*[x.copy() if isinstance(x, np.ndarray) else x for x in inputs])
        assert_matches(got, want)


RNG = np.random.default_rng(0)


def randn(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def _case_id(case: tuple[Any, ...]) -> str:
    return case[0].split("return ")[-1][:70]


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


@pytest.mark.parametrize("case", ACTIVATIONS, ids=_case_id)
def test_activation(tmp_path: Any, case: tuple[Any, ...]) -> None:
    """Activations, softmax family and eval-mode dropouts (inplace variants mutate) match torch."""
    run_case(tmp_path, *case)


_X, _Y = randn(4, 5), randn(4, 5)
_LABELS = np.array([0, 2, 1, 4])
_PROB = np.abs(randn(4, 5)) + 0.05
_PROB = (_PROB / _PROB.sum(1, keepdims=True)).astype(np.float32)
_SIG = (1 / (1 + np.exp(-_X))).astype(np.float32)
_BITS = (randn(4, 5) > 0).astype(np.float32)

NORMS_AND_SHAPES = [
    ("def f(x: Tensor): return F.layer_norm(x, [4])", randn(3, 4)),
    ("def f(x: Tensor, w: Tensor, b: Tensor): return F.layer_norm(x, [3, 4], w, b, 1e-3)", randn(2, 3, 4),
     randn(3, 4), randn(3, 4)),
    ("def f(x: Tensor): return F.group_norm(x, 2)", randn(3, 4, 5)),
    ("def f(x: Tensor, w: Tensor, b: Tensor): return F.group_norm(x, 4, w, b, 0.1)", randn(2, 4, 3, 3), randn(4),
     randn(4)),
    ("def f(x: Tensor, m: Tensor, v: Tensor): return F.batch_norm(x, m, v)", randn(3, 4, 5), randn(4),
     np.abs(randn(4))),
    ("def f(x: Tensor, w: Tensor, b: Tensor): return F.batch_norm(x, None, None, w, b, True, 0.1, 1e-3)",
     randn(3, 4, 5), randn(4), randn(4)),
    ("def f(x: Tensor): return F.instance_norm(x)", randn(3, 4, 5)),
    ("def f(x: Tensor, m: Tensor, v: Tensor): return F.instance_norm(x, m, v, use_input_stats=False)",
     randn(2, 4, 5, 3), randn(4), np.abs(randn(4))),
    ("def f(x: Tensor): return F.rms_norm(x, [4])", randn(3, 4)),
    ("def f(x: Tensor, w: Tensor): return F.rms_norm(x, [3, 4], w, 1e-2)", randn(2, 3, 4), randn(3, 4)),
    ("def f(x: Tensor): return F.normalize(x)", randn(3, 4)),
    ("def f(x: Tensor): return F.normalize(x, 1.0, 0, 0.5)", randn(3, 4)),
    ("def f(x: Tensor): return F.local_response_norm(x, 2)", randn(2, 5, 7)),
    ("def f(x: Tensor): return F.local_response_norm(x, 3, 1e-2, 0.5, 2.0)", randn(2, 5, 4, 3)),
    ("def f(x: Tensor): return F.pad(x, [1, 2])", randn(2, 3, 4)),
    ("def f(x: Tensor): return F.pad(x, [1, 1, 2, 0], value=-3.0)", randn(2, 3, 4)),
    ("def f(x: Tensor): return F.pad(x, [1, 2], 'reflect')", randn(2, 3, 4)),
    ("def f(x: Tensor): return F.pad(x, [2, 1, 1, 2], mode='replicate')", randn(1, 2, 3, 4)),
    ("def f(x: Tensor): return F.pad(x, [1, 2, 2, 1], mode='circular')", randn(1, 2, 3, 4)),
    ("def f(i: Tensor, w: Tensor): return F.embedding(i, w)", np.array([[0, 2], [1, 3]]), randn(5, 3)),
    ("def f(i: Tensor, w: Tensor): return F.embedding(i, w, padding_idx=-1)", np.array([4, 1, 0]), randn(5, 3)),
    ("def f(i: Tensor, w: Tensor): return F.embedding_bag(i, w)", np.array([[0, 2, 1], [5, 3, 3]]), randn(6, 3)),
    ("def f(i: Tensor, w: Tensor, o: Tensor): return F.embedding_bag(i, w, o, mode='sum')", np.array([0, 2, 1, 5, 3]),
     randn(6, 3), np.array([0, 2])),
    ("def f(i: Tensor, w: Tensor, o: Tensor): return F.embedding_bag(i, w, o, mode='max', include_last_offset=True)",
     np.array([0, 2, 1, 5, 3]), randn(6, 3), np.array([0, 2, 5])),
    (("def f(i: Tensor, w: Tensor, p: Tensor): return F.embedding_bag(i, w, mode='sum', per_sample_weights=p, "
     "padding_idx=2)"), np.array([[0, 2, 1], [5, 3, 3]]), randn(6, 3), randn(2, 3)),
    ("def f(x: Tensor): return F.adaptive_avg_pool2d(x, 2)", randn(2, 3, 5, 4)),
    ("def f(x: Tensor): return F.adaptive_avg_pool2d(x, [3, 1])", randn(2, 3, 5, 4)),
    ("def f(x: Tensor): return F.adaptive_avg_pool3d(x, [2, 1, 3])", randn(1, 2, 4, 3, 5)),
    ("def f(x: Tensor): return F.max_pool1d(x, 2)", randn(2, 3, 8)),
    ("def f(x: Tensor): return F.max_pool1d(x, 3, 2, 1, 2, ceil_mode=True)", randn(2, 3, 11)),
    ("def f(x: Tensor): return F.max_pool2d(x, 2)", randn(2, 3, 6, 4)),
    ("def f(x: Tensor): return F.max_pool2d(x, [3, 2], [1, 2], [1, 0], ceil_mode=True)", randn(2, 3, 6, 5)),
    ("def f(x: Tensor): return F.max_pool2d(x, 2, return_indices=True)", randn(2, 3, 6, 4)),
    ("def f(x: Tensor): return F.max_pool2d_with_indices(x, 3, 2, 1)", randn(1, 2, 7, 6)),
    ("def f(x: Tensor): return F.max_pool1d(x, 3, 2, 1, return_indices=True)", randn(2, 3, 9)),
    ("def f(x: Tensor): return F.max_pool1d_with_indices(x, 2)", randn(2, 3, 9)),
    ("def f(x: Tensor): return F.adaptive_max_pool2d(x, 2)", randn(2, 3, 6, 4)),
    ("def f(x: Tensor): return F.adaptive_max_pool2d(x, [3, 2], True)", randn(2, 3, 6, 4)),
    ("def f(x: Tensor): return F.adaptive_max_pool1d(x, 2, True)", randn(2, 3, 6)),
    ("def f(x: Tensor): return F.adaptive_max_pool1d(x, 4)", randn(2, 3, 9)),
    ("def f(x: Tensor): return torch.norm(x)", randn(3, 4)),
    ("def f(x: Tensor): return torch.norm(x, dim=1, keepdim=True)", randn(3, 4)),
    ("def f(x: Tensor): return torch.norm(x, 3.0, 1)", randn(3, 4)),
    ("def f(x: Tensor): return torch.norm(x, 'fro', [0, 1])", randn(3, 4)),
    ("def f(x: Tensor): return torch.norm(x, 'fro', 0, True)", randn(3, 4)),
    ("def f(x: Tensor): return torch.norm(x, 'fro', [2, 0], dtype=torch.float64)", randn(3, 4, 2)),
    ("def f(x: Tensor): return torch.norm(x, 1, [0])", randn(3, 4)),
    ("def f(x: Tensor): return torch.norm(x, float('inf'), dtype=torch.float64)", randn(3, 4)),
    ("def f(x: Tensor): return torch.norm(x, 0.5) + torch.norm(x, p=2, dim=[1, 0])", randn(3, 4)),
    ("def f(x: Tensor, y: Tensor): return torch.cdist(x, y)", randn(3, 4), randn(5, 4)),
    ("def f(x: Tensor, y: Tensor): return torch.cdist(x, y, 1.0)", randn(2, 3, 4), randn(2, 5, 4)),
    ("def f(x: Tensor, y: Tensor): return torch.cdist(x, y, 0.0, 'donot_use_mm_for_euclid_dist')", randn(3, 2),
     np.round(randn(4, 2))),
]

LOSSES = [
    ("def f(x: Tensor, y: Tensor): return F.mse_loss(x, y)", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.mse_loss(x, y, reduction='none')", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.mse_loss(x, y, reduction='sum', weight=y.abs())", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.mse_loss(x, y, reduce=False)", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.mse_loss(x, y[0])", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.l1_loss(x, y, size_average=False)", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.l1_loss(x, y, weight=y.abs())", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.smooth_l1_loss(x, y) + F.smooth_l1_loss(x, y, beta=0.0)", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.smooth_l1_loss(x, y, reduction='none', beta=0.5)", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.huber_loss(x, y)", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.huber_loss(x, y, 'sum', 0.5)", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.huber_loss(x, y, weight=y.abs())", _X, _Y),
    ("def f(x: Tensor, y: Tensor): return F.cross_entropy(x, y)", _X, _LABELS),
    ("def f(x: Tensor, y: Tensor): return F.cross_entropy(x, y, reduction='none', label_smoothing=0.1)", _X,
     _LABELS),
    ("def f(x: Tensor, y: Tensor): return F.cross_entropy(x, y, weight=torch.arange(1.0, 6.0), ignore_index=1)",
     _X, _LABELS),
    ("def f(x: Tensor, y: Tensor): return F.cross_entropy(x, y)", _X, _PROB),
    ("def f(x: Tensor, y: Tensor): return F.nll_loss(F.log_softmax(x, 1), y, ignore_index=2)", _X, _LABELS),
    ("def f(x: Tensor, y: Tensor): return F.nll_loss(x, y, weight=torch.arange(5.0), reduction='sum')", _X,
     _LABELS),
    ("def f(x: Tensor, y: Tensor): return F.binary_cross_entropy(x, y)", _SIG, _BITS),
    ("def f(x: Tensor, y: Tensor): return F.binary_cross_entropy(x, y, torch.arange(5.0), reduction='none')",
     _SIG, _BITS),
    ("def f(x: Tensor, y: Tensor): return F.binary_cross_entropy_with_logits(x, y)", _X, _BITS),
    (("def f(x: Tensor, y: Tensor): return F.binary_cross_entropy_with_logits(x, y, y + 1.0, "
     "pos_weight=torch.arange(5.0), reduction='sum')"), _X, _BITS),
    ("def f(x: Tensor, y: Tensor): return F.binary_cross_entropy_with_logits(x, y, reduce=False)", _X, _BITS),
    ("def f(x: Tensor, y: Tensor): return F.kl_div(x, y)", np.log(_PROB), _PROB),
    ("def f(x: Tensor, y: Tensor): return F.kl_div(x, y, reduction='batchmean', log_target=True)",
     np.log(_PROB), np.log(_PROB)),
    ("def f(x: Tensor, y: Tensor): return F.kl_div(x, y, reduction='none')", np.log(_PROB),
     (_PROB * (_PROB > 0.2)).astype(np.float32)),
    ("def f(x: Tensor, y: Tensor): return F.kl_div(x, y, size_average=False)", np.log(_PROB), _PROB),
]


_SIGNS = np.sign(randn(4, 5)).astype(np.float32)
_SIGNS_1D = np.sign(randn(4)).astype(np.float32)
_MULTI_TARGETS = np.array([[3, 0, -1, 1, 2], [1, 2, 4, -1, -1], [-1, 0, 0, 0, 0], [0, 1, 2, 3, 4]])

MARGIN_LOSSES = [
    ("def f(x: Tensor): return F.rrelu(x) + F.rrelu(x, 0.1, 0.2)", _X),
    ("def f(x: Tensor):\n    y = x.clone()\n    F.rrelu(y, inplace=True)\n    return y", _X),
    ("def f(x: Tensor, y: Tensor, t: Tensor): return F.margin_ranking_loss(x, y, t)", _X, _Y, _SIGNS),
    ("def f(x: Tensor, y: Tensor, t: Tensor): return F.margin_ranking_loss(x, y, t, 0.5, reduction='none')", _X, _Y,
     _SIGNS),
    ("def f(x: Tensor, t: Tensor): return F.hinge_embedding_loss(x, t)", _X, _SIGNS),
    ("def f(x: Tensor, t: Tensor): return F.hinge_embedding_loss(x, t, 0.3, reduction='sum')", _X, _SIGNS),
    ("def f(x: Tensor, t: Tensor): return F.soft_margin_loss(x, t)", _X, _SIGNS),
    ("def f(x: Tensor, t: Tensor): return F.soft_margin_loss(x, t, reduce=False)", _X, _SIGNS),
    ("def f(x: Tensor, t: Tensor): return F.multilabel_soft_margin_loss(x, t)", _X, _BITS),
    ("def f(x: Tensor, t: Tensor): return F.multilabel_soft_margin_loss(x, t, torch.arange(5.0), reduction='none')",
     _X, _BITS),
    ("def f(x: Tensor, y: Tensor, t: Tensor): return F.cosine_embedding_loss(x, y, t)", _X, _Y, _SIGNS_1D),
    ("def f(x: Tensor, y: Tensor, t: Tensor): return F.cosine_embedding_loss(x, y, t, 0.2, reduction='none')", _X,
     _Y, _SIGNS_1D),
    ("def f(x: Tensor, t: Tensor): return F.poisson_nll_loss(x, t)", _X, np.abs(_Y) * 3),
    ("def f(x: Tensor, t: Tensor): return F.poisson_nll_loss(x.abs(), t, False, True, reduction='sum')", _X,
     np.abs(_Y) * 3),
    ("def f(a: Tensor, p: Tensor, n: Tensor): return F.triplet_margin_loss(a, p, n)", _X, _Y, randn(4, 5)),
    (("def f(a: Tensor, p: Tensor, n: Tensor): return F.triplet_margin_loss(a, p, n, 0.5, 1.0, swap=True, "
     "reduction='none')"), _X, _Y, randn(4, 5)),
    ("def f(x: Tensor, t: Tensor): return F.multi_margin_loss(x, t)", _X, _LABELS),
    (("def f(x: Tensor, t: Tensor): return F.multi_margin_loss(x, t, 2, 0.7, torch.arange(1.0, 6.0), "
     "reduction='none')"), _X, _LABELS),
    ("def f(x: Tensor, t: Tensor): return F.multi_margin_loss(x, t, reduction='none')", _X[0], _LABELS[:1]),
    ("def f(x: Tensor, t: Tensor): return F.multilabel_margin_loss(x, t)", _X, _MULTI_TARGETS),
    ("def f(x: Tensor, t: Tensor): return F.multilabel_margin_loss(x, t, reduction='none')", _X, _MULTI_TARGETS),
    ("def f(x: Tensor, t: Tensor): return F.multilabel_margin_loss(x, t, reduction='none')", _X[0],
     _MULTI_TARGETS[0]),
    ("def f(x: Tensor, t: Tensor): return F.multilabel_margin_loss(x, t, reduction='sum')", _X,
     np.array([[2, 2, -1, 0, 0]] * 4)),
]


@pytest.mark.parametrize("case", NORMS_AND_SHAPES, ids=_case_id)
def test_norm_pad_pool(tmp_path: Any, case: tuple[Any, ...]) -> None:
    """Normalizations, pads, embeddings, pools, torch.norm and cdist match torch."""
    run_case(tmp_path, *case)


@pytest.mark.parametrize("case", LOSSES, ids=_case_id)
def test_loss(tmp_path: Any, case: tuple[Any, ...]) -> None:
    """The losses match torch for each reduction, legacy flag and weighting."""
    run_case(tmp_path, *case)


RESAMPLING = [
    ("def f(x: Tensor): return F.interpolate(x, scale_factor=2.0)", randn(1, 2, 3, 4)),
    ("def f(x: Tensor): return F.interpolate(x, size=5)", randn(1, 2, 3)),
    ("def f(x: Tensor): return F.interpolate(x, size=[5, 7], mode='bilinear')", randn(1, 2, 3, 4)),
    ("def f(x: Tensor): return F.interpolate(x, scale_factor=[2.0, 1.5], mode='bilinear', align_corners=True)",
     randn(1, 2, 3, 4)),
    ("def f(x: Tensor): return F.interpolate(x, size=[5, 7], mode='bicubic')", randn(1, 2, 3, 4)),
    ("def f(x: Tensor): return F.interpolate(x, size=[5, 4], mode='bilinear', antialias=True)", randn(1, 2, 8, 9)),
    ("def f(x: Tensor): return F.interpolate(x, scale_factor=0.5, mode='area')", randn(1, 2, 8, 6)),
    ("def f(x: Tensor): return F.interpolate(x, size=[3, 2, 2], mode='area')", randn(1, 2, 6, 4, 5)),
    ("def f(x: Tensor): return F.interpolate(x, scale_factor=1.7, mode='linear', recompute_scale_factor=True)",
     randn(1, 2, 5)),
    ("def f(x: Tensor): return F.interpolate(x, scale_factor=1.7, mode='linear')", randn(1, 2, 5)),
    ("def f(x: Tensor): return F.interpolate(x, size=[3, 4, 5], mode='trilinear')", randn(1, 2, 2, 3, 2)),
    ("def f(x: Tensor): return F.interpolate(x, scale_factor=2.0, mode='nearest-exact')", randn(1, 2, 3, 4)),
    ("def f(x: Tensor): return F.interpolate(x, size=4, mode='nearest-exact')", randn(1, 2, 3, 3, 3)),
    ("def f(x: Tensor): return F.interpolate(x, scale_factor=[3.0], mode='nearest')", randn(1, 2, 3)),
    ("def f(x: Tensor, y: Tensor): return torch.tensordot(x, y, 1)", randn(3, 4), randn(4, 5)),
    ("def f(x: Tensor, y: Tensor): return torch.tensordot(x, y)", randn(2, 3, 4), randn(3, 4, 5)),
    ("def f(x: Tensor, y: Tensor): return torch.tensordot(x, y, 0)", randn(2, 3), randn(4)),
    ("def f(x: Tensor, y: Tensor): return torch.tensordot(x, y, [[1], [0]])", randn(3, 4), randn(4, 5)),
    ("def f(x: Tensor, y: Tensor): return torch.tensordot(x, y, ([0, 2], [2, 1]))", randn(3, 4, 5), randn(2, 5, 3)),
    ("def f(x: Tensor, y: Tensor): return torch.tensordot(x, y, [[-1, 0], [0, -1]])", randn(3, 4, 1),
     randn(5, 2, 3)),
    # two overloads of one name in one dump: each call gets its own body
    ("def f(x: Tensor): return torch.norm(x, 'fro') + torch.norm(x, 2.0, 1).sum() + torch.norm(x, 1, [0]).sum()",
     randn(3, 4)),
]


POOLS_PATCHES_UPSAMPLE = [
    ("def f(x: Tensor): return F.max_pool3d(x, 2)", randn(2, 3, 4, 6, 5)),
    ("def f(x: Tensor): return F.max_pool3d(x, [3, 2, 2], [2, 1, 2], [1, 1, 0], [1, 2, 1], ceil_mode=True)",
     randn(2, 3, 7, 6, 5)),
    ("def f(x: Tensor): return F.max_pool3d(x, 2, return_indices=True)", randn(2, 3, 4, 6, 5)),
    ("def f(x: Tensor): return F.max_pool3d_with_indices(x, 3, 2, 1)", randn(3, 5, 6, 7)),
    ("def f(x: Tensor): return F.adaptive_max_pool3d(x, [2, 3, 2])", randn(2, 3, 5, 6, 5)),
    ("def f(x: Tensor): return F.adaptive_max_pool3d(x, 3, True)", randn(3, 5, 7, 4)),
    ("def f(x: Tensor): return F.lp_pool2d(x, 2.0, 2)", randn(2, 3, 6, 5)),
    ("def f(x: Tensor): return F.lp_pool2d(x, 3, [2, 3], [1, 2], True)", randn(2, 3, 6, 5)),
    ("def f(x: Tensor): return F.lp_pool1d(x, 1.5, 3)", np.abs(randn(2, 3, 7))),
    ("def f(x: Tensor): return F.lp_pool1d(x, float('inf'), 2) + F.lp_pool1d(x, float('-inf'), 2)", randn(2, 3, 8)),
    ("def f(x: Tensor): return F.lp_pool3d(x, 2.0, 2)", randn(2, 3, 4, 6, 5)),
    ("def f(x: Tensor): return F.lp_pool3d(x, 3, [2, 3, 2], [1, 2, 2], True)", randn(2, 3, 5, 6, 5)),
    ("def f(x: Tensor): return F.lp_pool3d(x, 1.5, 2)", np.abs(randn(3, 4, 6, 5))),
    ("def f(x: Tensor): return F.lp_pool3d(x, float('inf'), 2) + F.lp_pool3d(x, float('-inf'), 2)",
     randn(2, 3, 4, 4, 4)),
    ("def f(x: Tensor):\n    v, i = F.max_pool2d(x, 2, return_indices=True)\n    return F.max_unpool2d(v, i, 2)",
     randn(2, 3, 4, 6)),
    (("def f(x: Tensor):\n    v, i = F.max_pool2d(x, 2, return_indices=True)\n"
     "    return F.max_unpool2d(v, i, 2, output_size=[5, 7])"), randn(2, 3, 5, 7)),
    (("def f(x: Tensor):\n    v, i = F.max_pool1d(x, 3, 2, 1, return_indices=True)\n"
     "    return F.max_unpool1d(v, i, 3, 2, 1)"), randn(2, 3, 9)),
    (("def f(x: Tensor):\n    v, i = F.max_pool3d(x, 2, return_indices=True)\n"
     "    return F.max_unpool3d(v, i, 2, output_size=[1, 2, 4, 6, 4])"), randn(1, 2, 4, 6, 4)),
    ("def f(x: Tensor): return F.unfold(x, 2)", randn(2, 3, 4, 5)),
    ("def f(x: Tensor): return F.unfold(x, [3, 2], [1, 2], [1, 0], [2, 1])", randn(2, 3, 7, 6)),
    ("def f(x: Tensor): return F.unfold(x, 3, padding=1)", randn(3, 5, 4)),
    ("def f(x: Tensor): return F.fold(x, [4, 5], 2)", randn(2, 12, 12)),
    ("def f(x: Tensor): return F.fold(x, [7, 6], [3, 2], [1, 2], [1, 0], [2, 1])", randn(2, 18, 16)),
    ("def f(x: Tensor): return F.fold(F.unfold(x, 3, padding=1), [4, 5], 3, padding=1)", randn(1, 2, 4, 5)),
    ("def f(x: Tensor): return F.fold(x, [4, 5], 2)", randn(12, 12)),
    ("def f(x: Tensor): return F.upsample(x, scale_factor=2.0)", randn(1, 2, 3, 4)),
    ("def f(x: Tensor): return F.upsample(x, size=[5, 6], mode='bilinear')", randn(1, 2, 3, 4)),
    ("def f(x: Tensor): return F.upsample_nearest(x, 5)", randn(1, 2, 3)),
    ("def f(x: Tensor): return F.upsample_bilinear(x, size=[4, 5])", randn(1, 2, 3, 4)),
    ("def f(x: Tensor): return F.upsample_bilinear(x, scale_factor=2.0)", randn(1, 2, 3, 4)),
]


@pytest.mark.parametrize("case", POOLS_PATCHES_UPSAMPLE, ids=_case_id)
def test_pools_patches_upsample(tmp_path: Any, case: tuple[Any, ...]) -> None:
    """3-d max pools, lp pools, max unpools, unfold/fold and the upsample helpers match torch."""
    run_case(tmp_path, *case)


@pytest.mark.parametrize("case", RESAMPLING, ids=_case_id)
def test_interpolate_tensordot(tmp_path: Any, case: tuple[Any, ...]) -> None:
    """interpolate (each overload and mode), tensordot and mixed overloads match torch."""
    run_case(tmp_path, *case)


# ---------------------------------------------------------------------------------------
# Errors, own bodies, spans


def test_wrong_arity_names_the_line_and_the_known_signature() -> None:
    text = (
        "graph(%x : Tensor):\n"
        '  %f : Function = prim::Constant[name="relu"]()\n'
        "  %y : Tensor = prim::CallFunction(%f, %x)\n"
        "  return (%y)\n"
    )
    with pytest.raises(CompileError) as info:
        compiler.compile_source(text, "case.ir")
    message = str(info.value)
    assert "case.ir:3:" in message
    assert "relu(Tensor input, bool inplace) -> Tensor" in message


def test_known_call_without_the_inliner_says_so() -> None:
    """A pipeline without inline_calls leaves a fitting call: the error names the pass."""
    text = (
        "graph(%x : Tensor):\n"
        '  %f : Function = prim::Constant[name="relu"]()\n'
        "  %b : bool = prim::Constant[value=0]()\n"
        "  %y : Tensor = prim::CallFunction(%f, %x, %b)\n"
        "  return (%y)\n"
    )
    with pytest.raises(CompileError, match="inline_calls pass") as info:
        compiler.compile_source(text, "case.ir", passes=["propagate_constants"])
    assert "case.ir:4:" in str(info.value)


def test_wrong_argument_type_keeps_the_error() -> None:
    text = (
        "graph(%x : Tensor):\n"
        '  %f : Function = prim::Constant[name="leaky_relu"]()\n'
        '  %s : str = prim::Constant[value="steep"]()\n'
        "  %b : bool = prim::Constant[value=0]()\n"
        "  %y : Tensor = prim::CallFunction(%f, %x, %s, %b)\n"
        "  return (%y)\n"
    )
    with pytest.raises(CompileError, match=r"leaky_relu\(Tensor input, float negative_slope, bool inplace\)") as info:
        compiler.compile_source(text, "case.ir")
    assert "case.ir:5:" in str(info.value)


def test_a_body_in_the_dump_wins_over_the_known_one() -> None:
    """A dump that carries ``with relu = graph(...)`` runs that body, not irvm's."""
    text = (
        "graph(%x : Tensor):\n"
        '  %f : Function = prim::Constant[name="relu"]()\n'
        "  %b : bool = prim::Constant[value=0]()\n"
        "  %y : Tensor = prim::CallFunction(%f, %x, %b)\n"
        "  return (%y)\n"
        "with relu = graph(%input : Tensor, %inplace : bool):\n"
        "  %r : Tensor = aten::neg(%input)\n"
        "  return (%r)\n"
    )
    x = randn(3, 4)
    program = compiler.compile_source(text, "case.ir")
    for engine in (vm.Interpreter(program), vm.StaticRuntime(program)):
        np.testing.assert_array_equal(engine(x.copy()), -x)


def test_inlined_nodes_point_at_the_call() -> None:
    """The nodes copied from a known body carry the span of the call they replace, and
    the optimized module keeps no known body once every call is inlined."""
    from compiler.pipeline import optimize

    text = (
        "graph(%x : Tensor):\n"
        '  %f : Function = prim::Constant[name="relu"]()\n'
        "  %b : bool = prim::Constant[value=0]()\n"
        "  %y : Tensor = prim::CallFunction(%f, %x, %b) # model.py:7:4\n"
        "  return (%y)\n"
    )
    optimized, _ = optimize(compiler.parse(text, "case.ir"), fusion=False)
    (relu,) = [n for n in optimized.main.walk() if n.kind == "aten::relu"]
    assert relu.span is not None and (relu.span.file, relu.span.line) == ("case.ir", 4)
    assert relu.source == "model.py:7:4"
    assert "relu" not in optimized.functions


def test_training_dropout_draws_a_mask_from_the_runtime_generator(tmp_path: Any) -> None:
    """F.dropout with training=True keeps each element with probability 1 - p, scaled by
    1 / (1 - p), on both backends, and repeats itself under the same seed."""
    fn = _script(tmp_path, "def f(x: Tensor): return F.dropout(x, 0.25, True)")
    program = compiler.compile_source(str(fn.graph), "case.ir")
    x = np.ones(4000, np.float32)
    for make in (vm.Interpreter, vm.StaticRuntime):
        out = make(program, seed=3)(x)
        assert set(np.unique(out).tolist()) <= {0.0, np.float32(1 / 0.75)}
        assert abs((out != 0).mean() - 0.75) < 0.05
        assert np.array_equal(out, make(program, seed=3)(x))


@pytest.mark.parametrize(
    ("source", "shape", "channels"),
    [
        ("def f(x: Tensor): return F.dropout1d(x, 0.5, True)", (40, 30), 40),  # unbatched (C, L)
        ("def f(x: Tensor): return F.dropout2d(x, 0.5, True, True)", (2, 40, 3, 3), 80),
        ("def f(x: Tensor): return F.dropout3d(x, 0.5, True)", (40, 2, 3, 3), 40),  # unbatched (C, D, H, W)
    ],
)
def test_training_channel_dropout_drops_whole_channels_as_torch(
    tmp_path: Any, source: str, shape: Any, channels: int
) -> None:
    """dropout1d/2d/3d in training zero whole channels (for unbatched input, the channels
    of the batch of one torch makes) and scale the rest by 2: torch's output and ours have
    that structure, with the same shape."""
    fn = _script(tmp_path, source)
    program = compiler.compile_source(str(fn.graph), "case.ir")
    theirs = fn(torch.ones(shape)).numpy()
    for out in [theirs] + [make(program, seed=1)(np.ones(shape, np.float32)) for make in (vm.Interpreter, vm.StaticRuntime)]:
        assert out.shape == shape
        rows = out.reshape(channels, -1)
        assert ((rows == 0) | (rows == 2)).all() and (rows == rows[:, :1]).all()
        assert 0 < (rows[:, 0] == 0).sum() < channels


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("def f(x: Tensor): return F.mse_loss(x, x, reduction='average')", "average is not a valid value"),
        ("def f(x: Tensor): return F.hardtanh(x, 1.0, -1.0)", "min_val cannot be greater than max_val"),
        ("def f(x: Tensor): return F.dropout(x, 1.5, False)", "dropout probability has to be between 0 and 1"),
        ("def f(x: Tensor): return F.interpolate(x, size=4, scale_factor=2.0)", "only one of size or scale_factor"),
        ("def f(x: Tensor): return F.interpolate(x, size=[4, 4], mode='nearest', align_corners=True)",
         "align_corners option can only be set"),
        ("def f(x: Tensor): return F.interpolate(x, size=[4, 4, 4], mode='bilinear')", "same number of spatial"),
        ("def f(x: Tensor): return torch.norm(x, 'max')", "Order .*not supported"),
        ("def f(x: Tensor): return torch.cdist(x, x, -1.0)", "non-negative p values"),
        ("def f(x: Tensor): return F.group_norm(x[0, 0, 0], 1)", "Expected at least 2 dimensions"),
    ],
)
def test_invalid_arguments_raise_like_torch(tmp_path: Any, source: str, message: str) -> None:
    """Argument values torch refuses make the body raise too (at run time), with torch's
    message."""
    fn = _script(tmp_path, source)
    x = randn(1, 2, 3, 3)
    with pytest.raises((torch.jit.Error, RuntimeError, ValueError), match=message):
        fn(torch.from_numpy(x))
    program = compiler.compile_source(str(fn.graph), "case.ir")
    for engine in (vm.Interpreter(program), vm.StaticRuntime(program)):
        with pytest.raises(RunError, match=message):
            engine(x.copy())


@pytest.mark.parametrize("case", MARGIN_LOSSES, ids=_case_id)
def test_margin_loss_and_rrelu(tmp_path: Any, case: tuple[Any, ...]) -> None:
    """Margin / embedding losses and eval-mode rrelu match torch."""
    run_case(tmp_path, *case)


# float64 inputs keep their dtype through the bodies (eps defaults, constants, reductions)
FLOAT64 = [
    ("def f(x: Tensor): return F.rms_norm(x, [4])", randn(3, 4).astype(np.float64)),
    ("def f(x: Tensor): return F.layer_norm(x, [4]) + F.softmin(x, 1) + F.silu(x)", randn(3, 4).astype(np.float64)),
    ("def f(x: Tensor): return F.interpolate(x, scale_factor=1.5, mode='bicubic', align_corners=True)",
     randn(1, 2, 3, 4).astype(np.float64)),
    ("def f(x: Tensor, y: Tensor): return F.cross_entropy(x, y, label_smoothing=0.2)", _X.astype(np.float64),
     _LABELS),
    ("def f(x: Tensor, t: Tensor): return F.binary_cross_entropy_with_logits(x, t)", _X.astype(np.float64),
     _BITS.astype(np.float64)),
    ("def f(x: Tensor): return F.normalize(x, 3.0, 0) + torch.norm(x, dim=0)", randn(3, 4).astype(np.float64)),
    ("def f(x: Tensor): return F.unfold(x, 2)", randn(1, 2, 3, 3).astype(np.float64)),
]


@pytest.mark.parametrize("case", FLOAT64, ids=_case_id)
def test_float64(tmp_path: Any, case: tuple[Any, ...]) -> None:
    """float64 inputs stay float64 and match torch."""
    run_case(tmp_path, *case)


_THETA = (np.eye(2, 3)[None] + 0.2 * randn(2, 2, 3)).astype(np.float32)
_THETA_3D = (np.eye(3, 4)[None] + 0.2 * randn(2, 3, 4)).astype(np.float32)
_GRID = (randn(2, 3, 4, 2) * 1.7).astype(np.float32)  # partly outside [-1, 1]: padding modes matter

GRIDS = [
    ("def f(t: Tensor): return F.affine_grid(t, [2, 3, 4, 5], False)", _THETA),
    ("def f(t: Tensor): return F.affine_grid(t, [2, 3, 1, 5], True)", _THETA),
    ("def f(t: Tensor): return F.affine_grid(t, [2, 1, 3, 4, 5], False)", _THETA_3D),
    ("def f(x: Tensor, g: Tensor): return F.grid_sample(x, g, align_corners=False)", randn(2, 3, 5, 6), _GRID),
    ("def f(x: Tensor, g: Tensor): return F.grid_sample(x, g, align_corners=True)", randn(2, 3, 5, 6), _GRID),
    ("def f(x: Tensor, g: Tensor): return F.grid_sample(x, g, 'nearest', 'zeros', False)", randn(2, 3, 5, 6), _GRID),
    ("def f(x: Tensor, g: Tensor): return F.grid_sample(x, g, 'bilinear', 'border', False)", randn(2, 3, 5, 6),
     _GRID),
    ("def f(x: Tensor, g: Tensor): return F.grid_sample(x, g, 'bilinear', 'reflection', False)", randn(2, 3, 5, 6),
     _GRID),
    ("def f(x: Tensor, g: Tensor): return F.grid_sample(x, g, 'bilinear', 'reflection', True)", randn(2, 3, 5, 6),
     _GRID),
    ("def f(x: Tensor, g: Tensor): return F.grid_sample(x, g, 'nearest', 'border', True)", randn(2, 3, 5, 6), _GRID),
    (("def f(x: Tensor, t: Tensor): return F.grid_sample(x, F.affine_grid(t, [2, 3, 4, 4], False), "
     "align_corners=False)"), randn(2, 3, 5, 6), _THETA),
]


@pytest.mark.parametrize("case", GRIDS, ids=_case_id)
def test_affine_grid_and_grid_sample(tmp_path: Any, case: tuple[Any, ...]) -> None:
    """affine_grid and grid_sample (modes, padding modes, align_corners) match torch."""
    run_case(tmp_path, *case)


_INTS = np.array([[3, 1, 3], [2, 1, 5]])
_REPEATS = np.array([0.5, -1.0, 0.5, 2.0, 2.0, -1.0], dtype=np.float32)

UNIQUE = [
    ("def f(x: Tensor): return torch.unique(x)", _INTS),
    ("def f(x: Tensor): return torch.unique(x, return_inverse=True)", _INTS),
    ("def f(x: Tensor): return torch.unique(x, return_counts=True)", _REPEATS),
    ("def f(x: Tensor): return torch.unique(x, return_inverse=True, return_counts=True)", _INTS),
    ("def f(x: Tensor): return torch.unique(x, return_counts=True)", np.zeros(0, np.float32)),
    ("def f(x: Tensor): return torch.unique_consecutive(x)", _REPEATS),
    ("def f(x: Tensor): return torch.unique_consecutive(x, return_inverse=True, return_counts=True)", _INTS),
]


@pytest.mark.parametrize("case", UNIQUE, ids=_case_id)
def test_unique(tmp_path: Any, case: tuple[Any, ...]) -> None:
    """unique / unique_consecutive (values, inverse, counts) match torch."""
    run_case(tmp_path, *case)
