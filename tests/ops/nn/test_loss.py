"""The loss operators (vm/ops/nn/loss.py) match torch.nn.functional for every reduction
code, weights, ignore_index, label smoothing, class-probability targets, and BCE's clamp."""

import numpy as np
import pytest

from vm.ops.registry import lookup

torch = pytest.importorskip("torch")
F = torch.nn.functional


def K(name: str):
    return lookup("aten::" + name).kernel


def _close(ours: np.ndarray, theirs: torch.Tensor, what: object) -> None:
    b = theirs.numpy()
    assert ours.dtype == b.dtype and ours.shape == b.shape, (what, ours, b)
    assert np.allclose(ours, b, rtol=1e-5, atol=1e-6, equal_nan=True), (what, ours, b)


def test_losses_match_torch() -> None:
    """Each loss kernel equals torch.nn.functional's loss for reductions none/mean/sum, with and
    without class weights, ignore_index -100, label smoothing, and class-probability targets."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((4, 5)).astype(np.float32)
    t = rng.standard_normal((4, 5)).astype(np.float32)
    T = torch.from_numpy
    for r, rn in ((0, "none"), (1, "mean"), (2, "sum")):
        _close(K("mse_loss")(x, t, r), F.mse_loss(T(x), T(t), reduction=rn), "mse")
        _close(K("l1_loss")(x, t, r), F.l1_loss(T(x), T(t), reduction=rn), "l1")
        for b in (0.0, 0.5, 1.0):
            _close(K("smooth_l1_loss")(x, t, r, b), F.smooth_l1_loss(T(x), T(t), reduction=rn, beta=b), "sl1")
            if b:
                _close(K("huber_loss")(x, t, r, b), F.huber_loss(T(x), T(t), reduction=rn, delta=b), "hub")
        p = 1 / (1 + np.exp(-x))
        p[0, 0] = 0
        p[1, 1] = 1
        q = (t > 0).astype(np.float32)
        w = rng.random(5).astype(np.float32)
        _close(K("binary_cross_entropy")(p, q, None, r), F.binary_cross_entropy(T(p), T(q), reduction=rn), "bce")
        _close(K("binary_cross_entropy")(p, q, w, r),
               F.binary_cross_entropy(T(p), T(q), weight=T(w), reduction=rn), "bcew")
        for shape, tshape in (((4, 5), (4,)), ((5,), ()), ((2, 5, 3, 2), (2, 3, 2))):
            xx = rng.standard_normal(shape).astype(np.float32)
            tt = rng.integers(0, 5, tshape)
            if tt.ndim:
                tt.flat[0] = -100
            target = torch.from_numpy(np.asarray(tt))
            for ww in (None, w):
                weight = None if ww is None else T(ww)
                for ls in (0.0, 0.2):
                    _close(K("cross_entropy_loss")(xx, tt, ww, r, -100, ls),
                           F.cross_entropy(T(xx), target, weight=weight, reduction=rn, label_smoothing=ls),
                           ("ce", shape, ls, ww is None))
                _close(K("nll_loss_nd")(xx, tt, ww, r, -100),
                       F.nll_loss(T(xx), target, weight=weight, reduction=rn), "nll")
            pt = np.abs(rng.standard_normal(shape)).astype(np.float32)
            pt /= pt.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)
            for ls in (0.0, 0.2):
                _close(K("cross_entropy_loss")(xx, pt, None, r, -100, ls),
                       F.cross_entropy(T(xx), T(pt), reduction=rn, label_smoothing=ls), "ceprob")
                _close(K("cross_entropy_loss")(xx, pt, w, r, -100, ls),
                       F.cross_entropy(T(xx), T(pt), weight=T(w), reduction=rn, label_smoothing=ls), "ceprobw")


def test_mse_loss_out_overload_writes_the_buffer() -> None:
    """TorchScript's aten::mse_loss.out writes into ``out`` when it fits, returning it."""
    x = np.arange(4, dtype=np.float32)
    buf = np.empty((), np.float32)
    got = lookup("aten::mse_loss.out").kernel(x, x + 1, 1, buf)
    assert got is buf and float(buf) == 1.0


def test_bad_reduction_code_raises() -> None:
    with pytest.raises(ValueError):
        K("mse_loss")(np.zeros(2), np.zeros(2), 3)
