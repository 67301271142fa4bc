"""``aten::im2col`` and ``aten::col2im``, the kernels behind ``F.unfold`` / ``F.fold``
(and ``nn.Unfold`` / ``nn.Fold``) as traced and scripted graphs call them directly.

``im2col`` takes every ``kh x kw`` window (with dilation, zero padding and stride) of a
``(N, C, H, W)`` or ``(C, H, W)`` input as one column: the result is
``(N, C * kh * kw, L)``, rows ordered channel-major then kernel row then kernel column, as
ATen orders them.  It is one strided window view of the padded input and one copy.
``col2im`` is its adjoint: each column's values are added back at their window positions
(one ``np.add.at`` over flat indices built from broadcast aranges), then the padding is cut.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from vm.ops.nn._util import copying_out, expand
from vm.ops.registry import kernel

Ints = int | Sequence[int]


def _blocks(size: tuple[int, int], k: tuple[int, ...], d: tuple[int, ...], p: tuple[int, ...],
            s: tuple[int, ...]) -> tuple[int, int]:
    """The number of window positions along H and W; torch's checks on the geometry."""
    if min(k) <= 0 or min(d) <= 0 or min(s) <= 0 or min(p) < 0:
        raise ValueError(f"kernel_size {list(k)}, dilation {list(d)} and stride {list(s)} must be positive "
                         f"and padding {list(p)} non-negative")
    outs = tuple((size[i] + 2 * p[i] - d[i] * (k[i] - 1) - 1) // s[i] + 1 for i in range(2))
    if min(outs) < 1:
        raise ValueError(f"given input with spatial size {list(size)}, kernel_size {list(k)}, dilation {list(d)} "
                         f"and padding {list(p)}, the calculated shape of the array of sliding blocks is "
                         f"{list(outs)}, but its components must be at least one")
    return outs[0], outs[1]


@copying_out
@kernel("aten::im2col(Tensor self, int[2] kernel_size, int[2] dilation, int[2] padding, int[2] stride) -> Tensor")
def im2col(x: np.ndarray, kernel_size: Ints, dilation: Ints, padding: Ints, stride: Ints) -> np.ndarray:
    if x.ndim not in (3, 4):
        raise ValueError(f"Expected 3D or 4D (batch mode) tensor for input with possibly 0 batch size, got {x.ndim}D")
    batched = x.ndim == 4
    x4 = x if batched else x[None]
    k, d, p, s = (expand(v, 2, name) for v, name in
                  ((kernel_size, "kernel_size"), (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    n, c, h, w = x4.shape
    oh, ow = _blocks((h, w), k, d, p, s)
    xp = np.pad(x4, ((0, 0), (0, 0), (p[0], p[0]), (p[1], p[1])))
    rows = (np.arange(k[0]) * d[0])[:, None, None, None] + (np.arange(oh) * s[0])[None, None, :, None]
    cols = (np.arange(k[1]) * d[1])[None, :, None, None] + (np.arange(ow) * s[1])[None, None, None, :]
    windows = xp[:, :, rows, cols]  # (N, C, kh, kw, oh, ow)
    out = np.ascontiguousarray(windows.reshape(n, c * k[0] * k[1], oh * ow))
    return out if batched else out[0]


@copying_out
@kernel("aten::col2im(Tensor self, SymInt[2] output_size, int[2] kernel_size, int[2] dilation, int[2] padding, "
        "int[2] stride) -> Tensor")
def col2im(cols: np.ndarray, output_size: Ints, kernel_size: Ints, dilation: Ints, padding: Ints,
           stride: Ints) -> np.ndarray:
    if cols.ndim not in (2, 3):
        raise ValueError(f"Expected 2D or 3D (batch mode) tensor for input with possibly 0 batch size, got {cols.ndim}D")
    batched = cols.ndim == 3
    c3 = cols if batched else cols[None]
    size, k, d, p, s = (expand(v, 2, name) for v, name in ((output_size, "output_size"), (kernel_size, "kernel_size"),
                                                           (dilation, "dilation"), (padding, "padding"), (stride, "stride")))
    n, ckk, length = c3.shape
    if ckk % (k[0] * k[1]):
        raise ValueError(f"Expected size of input's dimension 1 to be divisible by the product of kernel_size, "
                         f"but got input.size(1)={ckk} and kernel_size={list(k)}")
    oh, ow = _blocks((size[0], size[1]), k, d, p, s)
    if oh * ow != length:
        raise ValueError(f"Given output_size={list(size)}, kernel_size={list(k)}, dilation={list(d)}, "
                         f"padding={list(p)}, stride={list(s)}, expected size of input's dimension 2 to match the "
                         f"calculated number of sliding blocks {oh} * {ow} = {oh * ow}, but got input.size(2)={length}.")
    c = ckk // (k[0] * k[1])
    hp, wp = size[0] + 2 * p[0], size[1] + 2 * p[1]
    rows = (np.arange(k[0]) * d[0])[:, None, None, None] + (np.arange(oh) * s[0])[None, None, :, None]
    cols_ = (np.arange(k[1]) * d[1])[None, :, None, None] + (np.arange(ow) * s[1])[None, None, None, :]
    flat = (rows * wp + cols_).reshape(-1)  # (kh * kw * oh * ow,) positions in a padded plane
    acc = np.zeros((n, c, hp * wp), np.result_type(c3.dtype, np.float32) if c3.dtype.kind != "f" else c3.dtype)
    values = c3.reshape(n, c, k[0] * k[1] * length)
    # numpy's stubs allow only an int array as ufunc.at's index; a tuple index is valid numpy
    np.add.at(acc, (slice(None), slice(None), flat), values)  # pyright: ignore[reportArgumentType]
    out = acc.reshape(n, c, hp, wp)[:, :, p[0]:p[0] + size[0], p[1]:p[1] + size[1]].astype(c3.dtype, copy=False)
    out = np.ascontiguousarray(out)
    return out if batched else out[0]
