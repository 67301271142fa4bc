"""Embeddings: ``embedding``, ``embedding_bag`` and ``one_hot``.

``embedding`` is a row gather (``np.take`` along axis 0, with an out variant that gathers
straight into the buffer).  ``padding_idx`` only matters for gradients, so the forward
ignores it, as PyTorch's does.

``embedding_bag`` reduces the rows of each bag: bag ``b`` holds the indices from
``offsets[b]`` up to the next offset (or the end).  Each index is tagged with its bag
(``offset2bag``, from a cumulative count of offset positions) and the rows are
scatter-reduced with ``np.add.at`` / ``np.maximum.at``.  Modes are PyTorch's: 0 sum, 1
mean, 2 max; ``per_sample_weights`` scales rows (sum mode only); indices equal to
``padding_idx`` are left out of their bag (and of its count); an empty bag is zeros.  Of
the four results, the first is the one models use; the others (``offset2bag``,
``bag_size``, ``max_indices``) follow the same definitions but are not guaranteed to
match PyTorch's undocumented layouts in every mode.
"""

from __future__ import annotations

import numpy as np

from vm.ops.nn._util import check_out, copying_out
from vm.ops.registry import DtypeRule, WeightShapes, kernel


def _check_indices(indices: np.ndarray, rows: int) -> np.ndarray:
    if indices.dtype.kind not in "iu":
        raise TypeError(f"embedding indices must be an integer tensor, got {indices.dtype}")
    if indices.size and (indices.min() < 0 or indices.max() >= rows):
        raise IndexError(f"embedding index out of range: indices span [{indices.min()}, {indices.max()}], table has {rows} rows")
    return indices


@kernel(
    "aten::embedding(Tensor weight, Tensor indices, SymInt padding_idx=-1, bool scale_grad_by_freq=False, "
    "bool sparse=False) -> Tensor",
    dtypes=DtypeRule((0,), indices=1),  # integer indices; the result is the weight's dtype
    weight_shapes=WeightShapes(0, (("out", -1, 1),)),
)
def embedding(
    weight: np.ndarray,
    indices: np.ndarray,
    padding_idx: int | None,
    scale_grad_by_freq: bool,
    sparse: bool,
) -> np.ndarray:
    return np.take(weight, _check_indices(indices, weight.shape[0]), axis=0)


@embedding.out
def embedding_out(
    out: np.ndarray,
    weight: np.ndarray,
    indices: np.ndarray,
    padding_idx: int | None,
    scale_grad_by_freq: bool,
    sparse: bool,
) -> np.ndarray:
    check_out(out, indices.shape + weight.shape[1:], weight.dtype)
    return np.take(weight, _check_indices(indices, weight.shape[0]), axis=0, out=out)


def embedding_bag_impl(
    weight: np.ndarray,
    indices: np.ndarray,
    offsets: np.ndarray,
    mode: str,
    per_sample_weights: np.ndarray | None,
    include_last_offset: bool,
    padding_idx: int | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    if indices.ndim == 2:  # (B, L): fixed-size bags, offsets ignored
        bags, length = indices.shape
        offsets = np.arange(0, bags * length, length, dtype=np.int64)
        indices = indices.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
        include_last_offset = False
    _check_indices(indices, weight.shape[0])
    n_bags = len(offsets) - 1 if include_last_offset else len(offsets)
    n = indices.shape[0]
    starts = np.zeros(n + 1, np.int64)
    np.add.at(starts, np.minimum(offsets[:n_bags], n), 1)
    offset2bag = np.cumsum(starts[:n]) - 1
    keep = np.ones(n, bool) if padding_idx is None or padding_idx < 0 else indices != padding_idx
    keep &= offset2bag >= 0
    bag, rows = offset2bag[keep], weight[indices[keep]]
    bag_size = np.bincount(bag, minlength=n_bags).astype(np.int64)
    dim = weight.shape[1]
    max_indices = np.zeros((n_bags, dim) if mode == 2 else (n_bags,), np.int64)
    if mode == 2:
        out = np.full((n_bags, dim), -np.inf, weight.dtype)
        np.maximum.at(out, bag, rows)
        out[bag_size == 0] = 0
        max_indices = _argmax_rows(out, bag, rows, indices[keep], n_bags)
        return out, offset2bag, bag_size, max_indices
    if per_sample_weights is not None:
        if mode != 0:
            raise ValueError("embedding_bag: per_sample_weights is only supported with mode='sum'")
        rows = rows * per_sample_weights[keep][:, None]
    out = np.zeros((n_bags, dim), weight.dtype)
    np.add.at(out, bag, rows)
    if mode == 1:
        out /= np.maximum(bag_size, 1)[:, None].astype(weight.dtype)
    elif mode != 0:
        raise ValueError(f"embedding_bag: unknown mode {mode} (0 sum, 1 mean, 2 max)")
    return out, offset2bag, bag_size, max_indices


def _argmax_rows(
    out: np.ndarray,
    bag: np.ndarray,
    rows: np.ndarray,
    kept_indices: np.ndarray,
    n_bags: int,
) -> np.ndarray:
    """Per (bag, feature), the table row that first reached the maximum."""
    never = len(kept_indices)
    position = np.where(rows == out[bag], np.arange(never)[:, None], never)
    first = np.full(out.shape, never, np.int64)
    np.minimum.at(first, bag, position)
    table = np.append(kept_indices, 0).astype(np.int64)
    return table[first]


@kernel(
    "aten::embedding_bag(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq=False, "
    "int mode=0, bool sparse=False, Tensor? per_sample_weights=None, bool include_last_offset=False) "
    "-> (Tensor, Tensor, Tensor, Tensor)",
    "aten::embedding_bag.padding_idx(Tensor weight, Tensor indices, Tensor offsets, bool scale_grad_by_freq, "
    "int mode, bool sparse, Tensor? per_sample_weights, bool include_last_offset, int? padding_idx) "
    "-> (Tensor, Tensor, Tensor, Tensor)",
)
def embedding_bag(
    weight: np.ndarray,
    indices: np.ndarray,
    offsets: np.ndarray,
    scale_grad_by_freq: bool,
    mode: str,
    sparse: bool,
    per_sample_weights: np.ndarray | None,
    include_last_offset: bool,
    padding_idx: int | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Both overloads (the first has no ``padding_idx``); the gradient flags change nothing."""
    return embedding_bag_impl(weight, indices, offsets, mode, per_sample_weights, include_last_offset, padding_idx)


@copying_out
@kernel("aten::one_hot(Tensor self, int num_classes=-1) -> Tensor")
def one_hot(x: np.ndarray, num_classes: int) -> np.ndarray:
    if x.dtype.kind not in "iu":
        raise TypeError(f"one_hot is only applicable to index tensors, got {x.dtype}")
    if x.size and x.min() < 0:
        raise ValueError("one_hot: class values must be non-negative")
    if num_classes < 0:
        num_classes = int(x.max()) + 1 if x.size else 0
    elif x.size and x.max() >= num_classes:
        raise ValueError(f"one_hot: class values must be smaller than num_classes={num_classes}")
    return (x[..., None] == np.arange(num_classes)).astype(np.int64)
