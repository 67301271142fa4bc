"""Random factories and distributions: ``rand``, ``randn``, ``randint`` (and ``_like``),
``normal``, ``uniform``/``uniform_``, ``normal_``, ``exponential``/``exponential_``,
``random_``, ``multinomial``, ``randperm``.

They draw from the runtime's generator (``vm.ops.random``), take PyTorch's keyword tail
``ScalarType? dtype, Layout? layout, Device? device, bool? pin_memory`` with its
defaults (float32 for ``rand``/``randn``/``normal``; int64 for ``randint``/``randperm``;
the input's dtype for the ``_like`` forms), and refuse what PyTorch refuses with its
words (``rand`` of an integer dtype, ``randint`` with ``low >= high``, a negative
``std``...).  ``multinomial`` without replacement is PyTorch's exponential trick (the
``num_samples`` largest ``p / Exp(1)``), so it never fails on zero-probability classes
as long as ``num_samples`` does not exceed the number of classes.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.ops._common import write_inplace
from vm.ops._dtypes import DEFAULT_FLOAT, INT64, to_dtype
from vm.ops.factory import check_device, checked_shape
from vm.ops.random import (
    _need_float,
    _no_generator,
    _random,
    _write_out,
    generator,
    normal_array,
    randint_array,
    uniform_array,
)
from vm.ops.registry import Fact

Array = np.ndarray
_OPTS = "ScalarType? dtype=None, Layout? layout=None, Device? device=None, bool? pin_memory=None"
_INT_OPTS = "ScalarType? dtype=4, Layout? layout=None, Device? device=None, bool? pin_memory=None"
_LIKE_OPTS = _OPTS + ", MemoryFormat? memory_format=None"


def _register(base: str, args: str, opts: str, fn: Any) -> None:
    """``base`` and its ``.generator`` overload (``Generator? generator`` before the options);
    ``fn(*positional, dtype, device)`` makes the tensor."""
    name, _, overload = base.partition(".")
    gen_overload = f"{overload}_generator" if overload else "generator"
    if name.endswith("_like") and overload == "low_dtype":
        gen_overload = "low_generator_dtype"
    n = args.count(",") + 1

    def plain(*a: Any) -> Array:
        dtype, _layout, device = a[n], a[n + 1], a[n + 2]
        check_device(device)
        return fn(*a[:n], dtype)

    def with_generator(*a: Any) -> Array:
        _no_generator(a[n])
        return plain(*a[:n], *a[n + 1 :])

    _random(f"aten::{base}({args}, *, {opts}) -> Tensor")(plain)
    _random(f"aten::{name}.{gen_overload}({args}, *, Generator? generator, {opts}) -> Tensor")(with_generator)


def _float_dt(dtype: int | None) -> np.dtype[Any]:
    return to_dtype(dtype, DEFAULT_FLOAT)


def _int_dt(dtype: int | None) -> np.dtype[Any]:
    return to_dtype(dtype, INT64)


_register("rand", "SymInt[] size", _OPTS, lambda size, dt: uniform_array(checked_shape(size), _float_dt(dt)))
_register("randn", "SymInt[] size", _OPTS, lambda size, dt: normal_array(checked_shape(size), _float_dt(dt)))
_register(
    "randint", "SymInt high, SymInt[] size", _INT_OPTS,
    lambda high, size, dt: randint_array(0, high, checked_shape(size), _int_dt(dt)),
)
_register(
    "randint.low", "SymInt low, SymInt high, SymInt[] size", _INT_OPTS,
    lambda low, high, size, dt: randint_array(low, high, checked_shape(size), _int_dt(dt)),
)
_register("randperm", "SymInt n", _INT_OPTS, lambda n, dt: _randperm(n, _int_dt(dt)))
_register(
    "rand_like", "Tensor self", _LIKE_OPTS, lambda self, dt: uniform_array(self.shape, to_dtype(dt, self.dtype))
)
_register(
    "randn_like", "Tensor self", _LIKE_OPTS, lambda self, dt: normal_array(self.shape, to_dtype(dt, self.dtype))
)
_register(
    "randint_like", "Tensor self, SymInt high", _LIKE_OPTS,
    lambda self, high, dt: randint_array(0, high, self.shape, to_dtype(dt, self.dtype)),
)
_register(
    "randint_like.Tensor", "Tensor self, Tensor high", _LIKE_OPTS,
    lambda self, high, dt: randint_array(0, int(high.item()), self.shape, to_dtype(dt, self.dtype)),
)
_register(
    "randint_like.low_dtype", "Tensor self, SymInt low, SymInt high", _LIKE_OPTS,
    lambda self, low, high, dt: randint_array(low, high, self.shape, to_dtype(dt, self.dtype)),
)


def _randperm(n: int, dt: np.dtype[Any]) -> Array:
    if n < 0:
        raise RuntimeError(f"n must be non-negative, got{n}")
    return generator().permutation(n).astype(dt)


@_random("aten::rand.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)")
def rand_out(size: Sequence[int], out: Array) -> Array:
    return _write_out(out, uniform_array(checked_shape(size), out.dtype))


@_random("aten::randn.out(SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)")
def randn_out(size: Sequence[int], out: Array) -> Array:
    return _write_out(out, normal_array(checked_shape(size), out.dtype))


@_random("aten::randint.out(SymInt high, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)")
def randint_out(high: int, size: Sequence[int], out: Array) -> Array:
    return _write_out(out, randint_array(0, high, checked_shape(size), out.dtype))


@_random("aten::randint.low_out(SymInt low, SymInt high, SymInt[] size, *, Tensor(a!) out) -> Tensor(a!)")
def randint_low_out(low: int, high: int, size: Sequence[int], out: Array) -> Array:
    return _write_out(out, randint_array(low, high, checked_shape(size), out.dtype))


@_random("aten::randperm.out(SymInt n, *, Tensor(a!) out) -> Tensor(a!)")
def randperm_out(n: int, out: Array) -> Array:
    return _write_out(out, _randperm(n, out.dtype))


# ---------------------------------------------------------------------------------------
# normal


@_random("aten::normal.Tensor_float(Tensor mean, float std=1., *, Generator? generator=None) -> Tensor")
def normal_tensor_float(mean: Array, std: float, gen: Any) -> Array:
    _no_generator(gen)
    return normal_array(mean.shape, mean.dtype, mean, std)


@_random("aten::normal.float_Tensor(float mean, Tensor std, *, Generator? generator=None) -> Tensor")
def normal_float_tensor(mean: float, std: Array, gen: Any) -> Array:
    _no_generator(gen)
    return normal_array(std.shape, std.dtype, mean, std)


@_random("aten::normal.Tensor_Tensor(Tensor mean, Tensor std, *, Generator? generator=None) -> Tensor")
def normal_tensor_tensor(mean: Array, std: Array, gen: Any) -> Array:
    _no_generator(gen)
    shape = np.broadcast_shapes(mean.shape, std.shape)
    return normal_array(shape, np.result_type(mean, std), mean, std)


@_random(
    "aten::normal.float_float(float mean, float std, SymInt[] size, *, Generator? generator=None, "
    f"{_OPTS}) -> Tensor"
)
def normal_float_float(mean: float, std: float, size: Sequence[int], gen: Any, dtype: Any, *rest: Any) -> Array:
    _no_generator(gen)
    check_device(rest[1])
    return normal_array(checked_shape(size), _float_dt(dtype), mean, std)


@_random("aten::normal_(Tensor(a!) self, float mean=0., float std=1., *, Generator? generator=None) -> Tensor(a!)")
def normal_(self: Array, mean: float, std: float, gen: Any) -> Array:
    _no_generator(gen)
    return write_inplace(self, normal_array(self.shape, self.dtype, mean, std))


# ---------------------------------------------------------------------------------------
# uniform, exponential, random_


@_random("aten::uniform(Tensor self, float from=0., float to=1., *, Generator? generator=None) -> Tensor")
def uniform(self: Array, low: float, high: float, gen: Any) -> Array:
    _no_generator(gen)
    return uniform_array(self.shape, self.dtype, low, high)


@_random("aten::uniform_(Tensor(a!) self, float from=0., float to=1., *, Generator? generator=None) -> Tensor(a!)")
def uniform_(self: Array, low: float, high: float, gen: Any) -> Array:
    return write_inplace(self, uniform(self, low, high, gen))


def _exponential(self: Array, lambd: float, gen: Any) -> Array:
    _no_generator(gen)
    _need_float(self.dtype, "exponential_cpu")
    if not lambd > 0:
        raise RuntimeError(f"exponential_ expects lambda > 0.0, but found lambda={lambd:g}")
    return generator().exponential(1.0 / lambd, self.shape).astype(self.dtype, copy=False)


_random("aten::exponential(Tensor self, float lambd=1., *, Generator? generator=None) -> Tensor")(_exponential)


@_random("aten::exponential_(Tensor(a!) self, float lambd=1., *, Generator? generator=None) -> Tensor(a!)")
def exponential_(self: Array, lambd: float, gen: Any) -> Array:
    return write_inplace(self, _exponential(self, lambd, gen))


@_random("aten::random_.from(Tensor(a!) self, int from, int? to, *, Generator? generator=None) -> Tensor(a!)")
def random_from(self: Array, low: int, high: int | None, gen: Any) -> Array:
    _no_generator(gen)
    if high is None:
        high = 2**24 + 1 if self.dtype == np.float32 else 2**53 + 1 if self.dtype == np.float64 else None
        high = high if high is not None else int(np.iinfo(self.dtype).max) + 1
    return write_inplace(self, randint_array(low, high, self.shape, self.dtype))


@_random("aten::random_.to(Tensor(a!) self, int to, *, Generator? generator=None) -> Tensor(a!)")
def random_to(self: Array, high: int, gen: Any) -> Array:
    return random_from(self, 0, high, gen)


# ---------------------------------------------------------------------------------------
# multinomial


@_random(
    "aten::multinomial(Tensor self, SymInt num_samples, bool replacement=False, *, "
    "Generator? generator=None) -> Tensor",
    Fact.DATA_DEPENDENT_SHAPE,
)
def multinomial(probs: Array, num_samples: int, replacement: bool, gen: Any) -> Array:
    _no_generator(gen)
    if probs.ndim not in (1, 2):
        raise RuntimeError("prob_dist must be 1 or 2 dim")
    _need_float(probs.dtype, "multinomial")
    if num_samples <= 0:
        raise RuntimeError("cannot sample n_sample <= 0 samples")
    n = probs.shape[-1]
    if not replacement and num_samples > n:
        raise RuntimeError("cannot sample n_sample > prob_dist.size(-1) samples without replacement")
    rows = np.atleast_2d(probs).astype(np.float64)
    if not np.all(np.isfinite(rows)) or np.any(rows < 0):
        raise RuntimeError("probability tensor contains either `inf`, `nan` or element < 0")
    if np.any(rows.sum(axis=1) <= 0):
        raise RuntimeError("invalid multinomial distribution (sum of probabilities <= 0)")
    rng = generator()
    if replacement:
        cdf = np.cumsum(rows, axis=1)
        cdf /= cdf[:, -1:]
        draws = rng.random((rows.shape[0], num_samples))
        picked = np.stack([np.searchsorted(c, d, side="right") for c, d in zip(cdf, draws)])
        picked = np.minimum(picked, n - 1)
    else:
        keys = rows / rng.exponential(1.0, rows.shape)
        picked = np.argsort(-keys, axis=1, kind="stable")[:, :num_samples]
    picked = picked.astype(np.int64)
    return picked[0] if probs.ndim == 1 else picked


@_random(
    "aten::multinomial.out(Tensor self, SymInt num_samples, bool replacement=False, *, "
    "Generator? generator=None, Tensor(a!) out) -> Tensor(a!)"
)
def multinomial_out(probs: Array, num_samples: int, replacement: bool, gen: Any, out: Array) -> Array:
    return _write_out(out, multinomial(probs, num_samples, replacement, gen))
