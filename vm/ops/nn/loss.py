"""The loss functions of ``torch.nn.functional`` as the ATen operators TorchScript calls.

``mse_loss``, ``l1_loss``, ``smooth_l1_loss``, ``huber_loss``, ``binary_cross_entropy``,
``nll_loss`` / ``nll_loss_nd`` and ``cross_entropy_loss``.  The ``reduction`` argument is
PyTorch's integer code (``at::Reduction``): 0 none, 1 mean, 2 sum; the functional Python
wrapper turns ``reduction="mean"`` into 1 before the graph sees it.

Each loss first computes the per-element loss in the input's floating dtype, then
``_reduce`` applies the code.  The class-index losses (nll, cross entropy) take the class
dimension at 1 (0 for an unbatched input), gather the target class's log-probability,
weight it by ``weight[target]`` and drop positions equal to ``ignore_index``; their mean
divides by the summed weights of the kept positions, as PyTorch does (so an all-ignored
batch gives nan).  ``cross_entropy_loss`` is ``log_softmax`` then nll, with label
smoothing mixing in the mean over classes, and also accepts class probabilities as a
floating target of the input's shape.  ``binary_cross_entropy`` clamps its logs at -100
as PyTorch does, so a probability of exactly 0 or 1 gives a finite loss.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vm.ops._common import copy_out
from vm.ops.registry import kernel

Array = np.ndarray


def _float(x: Array) -> Array:
    return x if x.dtype.kind == "f" else x.astype(np.float32)


def _reduce(loss: Array, reduction: int, dtype: np.dtype[Any]) -> Array:
    if reduction == 0:
        return np.asarray(loss, dtype=dtype)
    if reduction == 1:
        return np.asarray(np.mean(loss) if loss.size else np.nan, dtype=dtype)
    if reduction == 2:
        return np.asarray(np.sum(loss), dtype=dtype)
    raise ValueError(f"{reduction} is not a valid value for reduction")


def _pairwise(name: str, params: str, per_element: Any) -> None:
    @np.errstate(all="ignore")
    def run(self: Array, target: Array, reduction: int, *args: Any) -> Array:
        x = _float(self)
        d = x - np.asarray(target, dtype=x.dtype)
        return _reduce(per_element(d, *args), reduction, x.dtype)

    run.__name__ = name
    kernel(f"aten::{name}(Tensor self, Tensor target, int reduction=1{params}) -> Tensor")(run).out(copy_out(run))


def _smooth_l1(d: Array, beta: float) -> Array:
    a = np.abs(d)
    if beta == 0:
        return a
    return np.where(a < beta, 0.5 * d * d / beta, a - 0.5 * beta)


def _huber(d: Array, delta: float) -> Array:
    a = np.abs(d)
    return np.where(a < delta, 0.5 * d * d, delta * (a - 0.5 * delta))


_pairwise("mse_loss", "", lambda d: d * d)
_pairwise("l1_loss", "", np.abs)
_pairwise("smooth_l1_loss", ", float beta=1.", _smooth_l1)
_pairwise("huber_loss", ", float delta=1.", _huber)


@kernel(
    "aten::binary_cross_entropy(Tensor self, Tensor target, Tensor? weight=None, int reduction=1) -> Tensor"
)
@np.errstate(all="ignore")
def binary_cross_entropy(self: Array, target: Array, weight: Array | None, reduction: int) -> Array:
    x = _float(self)
    if np.any((x < 0) | (x > 1)):
        raise RuntimeError("all elements of input should be between 0 and 1")
    t = np.asarray(target, dtype=x.dtype)
    one = x.dtype.type(1)
    loss = -(t * np.maximum(np.log(x), -100) + (one - t) * np.maximum(np.log(one - x), -100))
    if weight is not None:
        loss = loss * weight
    return _reduce(loss.astype(x.dtype, copy=False), reduction, x.dtype)


binary_cross_entropy.out(copy_out(binary_cross_entropy))


def _nll(logp: Array, target: Array, weight: Array | None, reduction: int, ignore_index: int) -> Array:
    """nll over log-probabilities ``logp`` with classes at dim 1 (dim 0 when unbatched)."""
    batched = logp.ndim >= 2
    c_dim = 1 if batched else 0
    n_classes = logp.shape[c_dim]
    t = np.asarray(target).astype(np.int64)
    keep = t != ignore_index
    safe = np.where(keep, t, 0)
    if np.any(keep & ((t < 0) | (t >= n_classes))):
        raise IndexError(f"Target {int(t[keep & ((t < 0) | (t >= n_classes))].flat[0])} is out of bounds.")
    picked = np.take_along_axis(logp, np.expand_dims(safe, c_dim), axis=c_dim).squeeze(c_dim)
    w = np.ones(n_classes, logp.dtype) if weight is None else np.asarray(weight, dtype=logp.dtype)
    wt = np.where(keep, w[safe], 0).astype(logp.dtype)
    loss = -picked * wt
    if reduction == 1:
        with np.errstate(all="ignore"):
            return np.asarray(np.sum(loss) / np.sum(wt), dtype=logp.dtype)
    return _reduce(loss, reduction, logp.dtype)


_NLL_ARGS = "Tensor self, Tensor target, Tensor? weight=None, int reduction=1, SymInt ignore_index=-100"


@kernel(f"aten::nll_loss({_NLL_ARGS}) -> Tensor")
def nll_loss(self: Array, target: Array, weight: Array | None, reduction: int, ignore_index: int) -> Array:
    return _nll(_float(self), target, weight, reduction, ignore_index)


nll_loss.out(copy_out(nll_loss))
kernel(f"aten::nll_loss_nd({_NLL_ARGS}) -> Tensor")(nll_loss)


def _log_softmax(x: Array, axis: int) -> Array:
    shifted = x - np.max(x, axis=axis, keepdims=True)
    return shifted - np.log(np.sum(np.exp(shifted), axis=axis, keepdims=True))


@kernel(f"aten::cross_entropy_loss({_NLL_ARGS}, float label_smoothing=0.) -> Tensor")
@np.errstate(all="ignore")
def cross_entropy_loss(
    self: Array, target: Array, weight: Array | None, reduction: int, ignore_index: int, label_smoothing: float
) -> Array:
    x = _float(self)
    c_dim = 1 if x.ndim >= 2 else 0
    logp = _log_softmax(x, c_dim)
    n_classes = x.shape[c_dim]
    shape = [1] * x.ndim
    shape[c_dim] = n_classes
    w = None if weight is None else np.asarray(weight, dtype=x.dtype).reshape(shape)
    if target.dtype.kind == "f":  # class probabilities
        t = target.astype(x.dtype) * (1 - label_smoothing) + label_smoothing / n_classes
        loss = -np.sum(logp * t * (1 if w is None else w), axis=c_dim)
        if reduction == 1:
            return np.asarray(np.sum(loss) / max(loss.size, 1) if loss.size else np.nan, dtype=x.dtype)
        return _reduce(loss, reduction, x.dtype)
    nll = _nll(logp, target, weight, reduction, ignore_index)
    if label_smoothing <= 0:
        return nll
    keep = np.asarray(target) != ignore_index
    smooth = -np.sum(logp * (1 if w is None else w), axis=c_dim) * keep
    if reduction == 1:
        wsum = np.sum(keep) if weight is None else np.sum(np.where(keep, weight[np.where(keep, target, 0)], 0))
        smooth_r = np.sum(smooth) / wsum
    else:
        smooth_r = _reduce(smooth, reduction, x.dtype)
    mixed = (1 - label_smoothing) * nll + (label_smoothing / n_classes) * smooth_r
    return np.asarray(mixed, dtype=x.dtype)
