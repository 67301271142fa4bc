"""Factory kernels: tensors made from sizes, fill values, ranges and literal data.

They all take PyTorch's tail of keyword arguments ``ScalarType? dtype, Layout? layout,
Device? device, bool? pin_memory`` (and ``MemoryFormat?`` for the ``_like`` forms).
Only ``dtype`` matters on numpy; a device other than the CPU is refused with a clear
error rather than ignored.  When ``dtype`` is None the dtype is PyTorch's:

- ``zeros``/``ones``/``empty``/``eye``/``linspace``/``scalar_tensor``: float32;
- ``full``: from the fill value (bool, int64, or float32 for a Python float);
- ``arange``: int64 when start, end and step are all ints, else float32;
- ``tensor``: from the data (any float makes it float32);
- ``*_like`` and ``new_*``: the dtype of the tensor given.

``arange`` computes ``start + i * step`` in float64 and casts once, as PyTorch's CPU
kernel does in its accumulation type, so float32 ranges agree bit for bit.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.ops._common import copy_out
from vm.ops._dtypes import (
    DEFAULT_FLOAT,
    INT64,
    as_array,
    scalar_dtype,
    scalar_for,
    to_dtype,
    to_python,
)
from vm.ops.registry import kernel

Array = np.ndarray
_OPTS = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"
_LIKE_OPTS = _OPTS + ", MemoryFormat? memory_format=None"


def check_device(device: Any) -> None:
    if device is not None and not str(device).startswith("cpu"):
        raise RuntimeError(f"irvm runs on the CPU only; cannot create a tensor on {device!r}")


def checked_shape(size: Sequence[int]) -> tuple[int, ...]:
    """``size`` as a tuple of ints; a negative size is refused with torch's message."""
    for s in size:
        if s < 0:
            raise RuntimeError(f"Trying to create tensor with negative dimension {s}: {list(size)}")
    return tuple(int(s) for s in size)


def _filled(size: Sequence[int], value: Any, dtype: Any, device: Any) -> Array:
    check_device(device)
    dt = to_dtype(dtype, default=scalar_dtype(value) if value is not None else DEFAULT_FLOAT)
    if value is None:
        return np.empty(checked_shape(size), dt)
    return np.full(checked_shape(size), scalar_for(value, dt), dt)


kernel(f"aten::zeros(SymInt[] size, *, {_OPTS}) -> Tensor")(
    lambda size, dtype, layout, device, pin: _filled(size, 0.0, dtype, device)
)
kernel(f"aten::ones(SymInt[] size, *, {_OPTS}) -> Tensor")(
    lambda size, dtype, layout, device, pin: _filled(size, 1.0, dtype, device)
)
kernel(f"aten::full(SymInt[] size, Scalar fill_value, *, {_OPTS}) -> Tensor")(
    lambda size, value, dtype, layout, device, pin: _filled(size, value, dtype, device)
)
kernel(f"aten::empty.memory_format(SymInt[] size, *, {_LIKE_OPTS}) -> Tensor")(
    lambda size, dtype, layout, device, pin, mf: _filled(size, None, dtype, device)
)


def _filled_dt(shape: Sequence[int], value: Any, dt: np.dtype[Any], device: Any) -> Array:
    check_device(device)
    if value is None:
        return np.empty(checked_shape(shape), dt)
    return np.full(checked_shape(shape), scalar_for(value, dt), dt)


kernel(f"aten::zeros_like(Tensor self, *, {_LIKE_OPTS}) -> Tensor")(
    lambda self, dtype, layout, device, pin, mf: _filled_dt(self.shape, 0, _dt(self, dtype), device)
)
kernel(f"aten::ones_like(Tensor self, *, {_LIKE_OPTS}) -> Tensor")(
    lambda self, dtype, layout, device, pin, mf: _filled_dt(self.shape, 1, _dt(self, dtype), device)
)
kernel(f"aten::full_like(Tensor self, Scalar fill_value, *, {_LIKE_OPTS}) -> Tensor")(
    lambda self, value, dtype, layout, device, pin, mf: _filled_dt(self.shape, value, _dt(self, dtype), device)
)
kernel(f"aten::empty_like(Tensor self, *, {_LIKE_OPTS}) -> Tensor")(
    lambda self, dtype, layout, device, pin, mf: _filled_dt(self.shape, None, _dt(self, dtype), device)
)
kernel(f"aten::new_zeros(Tensor self, SymInt[] size, *, {_OPTS}) -> Tensor")(
    lambda self, size, dtype, layout, device, pin: _filled_dt(size, 0, _dt(self, dtype), device)
)
kernel(f"aten::new_ones(Tensor self, SymInt[] size, *, {_OPTS}) -> Tensor")(
    lambda self, size, dtype, layout, device, pin: _filled_dt(size, 1, _dt(self, dtype), device)
)
kernel(f"aten::new_full(Tensor self, SymInt[] size, Scalar fill_value, *, {_OPTS}) -> Tensor")(
    lambda self, size, value, dtype, layout, device, pin: _filled_dt(size, value, _dt(self, dtype), device)
)
kernel(f"aten::new_empty(Tensor self, SymInt[] size, *, {_OPTS}) -> Tensor")(
    lambda self, size, dtype, layout, device, pin: _filled_dt(size, None, _dt(self, dtype), device)
)


def _dt(self: Array, dtype: int | None) -> np.dtype[Any]:
    return self.dtype if dtype is None else to_dtype(dtype)


# ---------------------------------------------------------------------------------------
# ranges


def _arange(start: Any, end: Any, step: Any, dtype: int | None, device: Any) -> Array:
    check_device(device)
    start, end, step = to_python(start), to_python(end), to_python(step)
    if step == 0:
        raise RuntimeError("step must be nonzero")
    all_int = all(type(v) in (int, bool) for v in (start, end, step))
    dt = to_dtype(dtype, default=INT64 if all_int else DEFAULT_FLOAT)
    if dt.kind in "iu" and not all_int:  # PyTorch computes an integer range in integers
        start, end, step = int(start), int(end), int(step)
        all_int = True
    n = max(math.ceil((end - start) / step), 0)
    if (step > 0 and start > end) or (step < 0 and start < end):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if all_int and dt.kind in "iu":
        return np.arange(start, start + n * step, step, dtype=np.int64)[:n].astype(dt, copy=False)
    return (start + np.arange(n, dtype=np.float64) * step).astype(dt)


kernel(f"aten::arange(Scalar end, *, {_OPTS}) -> Tensor")(
    lambda end, dtype, layout, device, pin: _arange(0, end, 1, dtype, device)
)
kernel(f"aten::arange.start(Scalar start, Scalar end, *, {_OPTS}) -> Tensor")(
    lambda start, end, dtype, layout, device, pin: _arange(start, end, 1, dtype, device)
)
kernel(f"aten::arange.start_step(Scalar start, Scalar end, Scalar step=1, *, {_OPTS}) -> Tensor")(
    lambda start, end, step, dtype, layout, device, pin: _arange(start, end, step, dtype, device)
)


def _linspace(start: Any, end: Any, steps: int, dtype: int | None, device: Any) -> Array:
    check_device(device)
    if steps < 0:
        raise RuntimeError("number of steps must be non-negative")
    start, end = to_python(start), to_python(end)
    return np.linspace(start, end, steps, dtype=np.float64).astype(to_dtype(dtype))


for _sig in ("(Scalar start, Scalar end", ".Tensor_Tensor(Tensor start, Tensor end",
             ".Tensor_Scalar(Tensor start, Scalar end", ".Scalar_Tensor(Scalar start, Tensor end"):
    kernel(f"aten::linspace{_sig}, int steps, *, {_OPTS}) -> Tensor")(
        lambda start, end, steps, dtype, layout, device, pin: _linspace(start, end, steps, dtype, device)
    )


kernel(f"aten::eye(SymInt n, *, {_OPTS}) -> Tensor")(
    lambda n, dtype, layout, device, pin: (check_device(device), np.eye(n, dtype=to_dtype(dtype)))[1]
)
kernel(f"aten::eye.m(SymInt n, SymInt m, *, {_OPTS}) -> Tensor")(
    lambda n, m, dtype, layout, device, pin: (check_device(device), np.eye(n, m, dtype=to_dtype(dtype)))[1]
)


# ---------------------------------------------------------------------------------------
# literal data: torch.tensor([...]) is aten::tensor(%list, %dtype, %device, %requires_grad)


def _tensor(data: Any, dtype: int | None, device: Any, requires_grad: bool) -> Array:
    check_device(device)
    arr = np.array(data)
    if arr.dtype == np.float64 and dtype is None and not _has_float64_tensor(data):
        arr = arr.astype(DEFAULT_FLOAT)
    if arr.size == 0 and dtype is None:
        arr = arr.astype(DEFAULT_FLOAT)
    return arr if dtype is None else as_array(arr, to_dtype(dtype))


def _has_float64_tensor(data: Any) -> bool:
    return isinstance(data, np.ndarray) and data.dtype == np.float64


kernel("aten::tensor(t[] data, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor")(
    _tensor
).out(copy_out(_tensor))
for _t in ("float", "int", "bool"):
    kernel(f"aten::tensor.{_t}({_t} t, *, ScalarType? dtype=None, Device? device=None, bool requires_grad=False) -> Tensor")(
        lambda t, dtype, device, rg: as_array(t, to_dtype(dtype, default=scalar_dtype(t)))
    )
kernel(f"aten::scalar_tensor(Scalar s, *, {_OPTS}) -> Tensor")(
    lambda s, dtype, layout, device, pin: (check_device(device), as_array(s, to_dtype(dtype)))[1]
)
