"""Random operators: ``bernoulli``, the dropouts, ``rrelu`` (and, in ``random_draws``,
``rand``/``randn``/``randint``, ``normal``, ``uniform_``, ``exponential_``,
``multinomial``, ``randperm``...).

Every draw comes from a numpy ``Generator`` owned by the runtime that runs the program:
``vm.Interpreter(program, seed=N)`` and ``vm.StaticRuntime(program, seed=N)`` each make
their own and install it (``using_generator``) for the length of a call, so two runtimes
never share a stream and a seeded runtime repeats itself call for call.  A kernel called
outside a runtime (a test, a tool) draws from a process-wide unseeded generator.  The
streams are numpy's (PCG64), not PyTorch's (Philox / mt19937): with the same seed irvm
and torch draw different numbers; distributions, shapes and dtypes are PyTorch's.

The ``Generator? generator`` argument of PyTorch's schemas is accepted when it is None
(the only value a printed graph can hold); anything else is refused with a clear error.

Dropout follows ATen's ``_dropout_impl``: ``p`` must lie in [0, 1]; with ``train``
false, ``p == 0`` or an empty input it returns the input itself; ``p == 1`` gives zeros;
otherwise the input is multiplied by a ``bernoulli(1 - p)`` mask scaled by ``1/(1-p)``
(``feature_`` forms draw one mask value per (batch, channel); ``alpha_`` forms keep the
mean and variance of SELU activations).  All these operators are registered impure, so
that DCE, CSE, constant folding and fusion leave them where the program put them.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

from vm.ops import facts, registry
from vm.ops._common import write_inplace
from vm.ops._dtypes import (
    dtype_name,
    is_floating,
    to_code,
)
from vm.ops.registry import Fact, kernel

Array = np.ndarray

_DEFAULT = np.random.default_rng()
_CURRENT: ContextVar[np.random.Generator | None] = ContextVar("irvm_generator", default=None)


def generator() -> np.random.Generator:
    """The generator of the runtime running now (or the process-wide one)."""
    return _CURRENT.get() or _DEFAULT


@contextmanager
def using_generator(rng: np.random.Generator) -> Iterator[None]:
    """Make ``rng`` the generator of the random kernels called inside the block."""
    token = _CURRENT.set(rng)
    try:
        yield
    finally:
        _CURRENT.reset(token)


def make_generator(seed: int | None) -> np.random.Generator:
    """A runtime's generator: seeded by ``seed``, or from the OS when it is None."""
    if seed is not None and (not isinstance(seed, (int, np.integer)) or isinstance(seed, bool) or seed < 0):
        raise ValueError(f"a seed is a non-negative int, got {seed!r}")
    return np.random.default_rng(seed)


# Every operator kind whose registration declares ``Fact.RANDOM`` (``_random`` here and in
# ``random_draws``; the fused dropouts of ``nn.attention`` and ``nn.rnn``): a runtime whose
# program uses one installs its generator for each call.  A live view of the registry.
RANDOM_KINDS = facts.RANDOM_KINDS


def conditional_draws() -> dict[str, tuple[tuple[str, Any], ...]]:
    """Kind -> the "off switches" of operators that draw only for some arguments
    (training-mode dropout inside a fused operator; ``draws_unless=`` at registration): a
    call draws nothing when one (argument name, value) pair holds.  The compiler treats a
    call as random unless a constant argument switches the draw off."""
    return {info.schema.name: info.draws_unless for info in registry.all_ops() if info.draws_unless}


def _random(schema: str, facts: Fact = Fact.NONE) -> Any:
    """``@kernel(schema, pure=False)``, declaring the operator random (and ``facts``)."""
    return kernel(schema, pure=False, facts=Fact.RANDOM | facts)


def _no_generator(gen: Any) -> None:
    if gen is not None:
        raise RuntimeError(
            "irvm draws random numbers from the runtime's generator (seed= / --seed); "
            "a torch.Generator argument is not supported"
        )




def _need_float(dt: np.dtype[Any], what: str) -> None:
    if not is_floating(dt):
        raise RuntimeError(f'"{what}" not implemented for \'{dtype_name(to_code(dt))}\'')


# ---------------------------------------------------------------------------------------
# Draws of a given shape and dtype


def uniform_array(shape: tuple[int, ...], dt: np.dtype[Any], low: float = 0.0, high: float = 1.0) -> Array:
    """Uniform in [low, high) as ``dt`` (float64 draws cast once, as ATen rounds)."""
    _need_float(dt, "check_uniform_bounds")
    if low > high:
        raise RuntimeError(f"uniform_ expects to return a [from, to) range, but found from={low:g} > to={high:g}")
    draws = generator().random(shape)
    return np.asarray(low + (high - low) * draws).astype(dt, copy=False)


def normal_array(shape: tuple[int, ...], dt: np.dtype[Any], mean: Any = 0.0, std: Any = 1.0) -> Array:
    _need_float(dt, "normal_kernel_cpu")
    if np.any(np.asarray(std) < 0):
        raise RuntimeError(f"normal expects std >= 0.0, but found std {np.min(std):g}")
    return np.asarray(mean + std * generator().standard_normal(shape)).astype(dt, copy=False)


def bernoulli_array(shape: tuple[int, ...], dt: np.dtype[Any], p: Any, op: str = "bernoulli_") -> Array:
    """0/1 of dtype ``dt``, each 1 with probability ``p`` (a float or an array)."""
    if isinstance(p, np.ndarray):
        if p.size and (np.any(p < 0) or np.any(p > 1) or np.any(np.isnan(p))):
            raise RuntimeError(f"{op} expects all probabilities to be in [0, 1]")
    elif not 0 <= p <= 1:
        raise RuntimeError(f"{op} expects p to be in [0, 1], but got p={p}")
    return (generator().random(shape) < p).astype(dt)


def randint_array(low: int, high: int, shape: tuple[int, ...], dt: np.dtype[Any]) -> Array:
    if low >= high:
        raise RuntimeError(f"random_ expects 'from' to be less than 'to', but got from={low} >= to={high}")
    return generator().integers(low, high, shape, dtype=np.int64).astype(dt, copy=False)


# ---------------------------------------------------------------------------------------
# bernoulli


@_random("aten::bernoulli(Tensor self, *, Generator? generator=None) -> Tensor")
def bernoulli(self: Array, gen: Any) -> Array:
    _no_generator(gen)
    _need_float(self.dtype, "bernoulli_tensor_cpu_p_")
    return bernoulli_array(self.shape, self.dtype, self)


@_random("aten::bernoulli.p(Tensor self, float p, *, Generator? generator=None) -> Tensor")
def bernoulli_p(self: Array, p: float, gen: Any) -> Array:
    _no_generator(gen)
    return bernoulli_array(self.shape, self.dtype, p)


@_random("aten::bernoulli.Tensor(Tensor self, Tensor p, *, Generator? generator=None) -> Tensor")
def bernoulli_tensor(self: Array, p: Array, gen: Any) -> Array:
    _no_generator(gen)
    return bernoulli_array(self.shape, self.dtype, np.broadcast_to(p, self.shape))


@_random("aten::bernoulli_.float(Tensor(a!) self, float p=0.5, *, Generator? generator=None) -> Tensor(a!)")
def bernoulli__float(self: Array, p: float, gen: Any) -> Array:
    return write_inplace(self, bernoulli_p(self, p, gen))


@_random("aten::bernoulli_.Tensor(Tensor(a!) self, Tensor p, *, Generator? generator=None) -> Tensor(a!)")
def bernoulli__tensor(self: Array, p: Array, gen: Any) -> Array:
    return write_inplace(self, bernoulli_tensor(self, p, gen))


def _write_out(out: Array, result: Array) -> Array:
    """An ``out=`` overload's write: into ``out`` when the result fits, else the result."""
    if out.shape == result.shape:
        np.copyto(out, result, casting="unsafe")
        return out
    return result


@_random("aten::bernoulli.out(Tensor self, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)")
def bernoulli_out(self: Array, gen: Any, out: Array) -> Array:
    return _write_out(out, bernoulli(self, gen))


@_random(
    "aten::bernoulli.float_out(Tensor self, float p=0.5, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)"
)
def bernoulli_float_out(self: Array, p: float, gen: Any, out: Array) -> Array:
    return _write_out(out, bernoulli_p(self, p, gen))


@_random(
    "aten::bernoulli.Tensor_out(Tensor self, Tensor p, *, Generator? generator=None, Tensor(a!) out) -> Tensor(a!)"
)
def bernoulli_tensor_out(self: Array, p: Array, gen: Any, out: Array) -> Array:
    return _write_out(out, bernoulli_tensor(self, p, gen))


# ---------------------------------------------------------------------------------------
# dropout and its feature / alpha variants

_ALPHA = 1.7580993408473766  # SELU's -scale * alpha: where alpha dropout sends a dropped unit


def dropout_impl(x: Array, p: float, train: bool, feature: bool, alpha: bool) -> Array:
    """ATen's ``_dropout_impl`` (out of place): the input itself when nothing is dropped."""
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    if p == 0 or not train or x.size == 0:
        return x
    if p == 1:
        return x * np.zeros((), x.dtype)
    if feature:
        if x.ndim < 2:
            raise RuntimeError("Feature dropout requires at least 2 dimensions in the input")
        noise_shape = x.shape[:2] + (1,) * (x.ndim - 2)
    else:
        noise_shape = x.shape
    noise = bernoulli_array(noise_shape, x.dtype, 1 - p)
    if not alpha:
        return x * (noise / np.asarray(1 - p, x.dtype))
    a = 1.0 / np.sqrt((_ALPHA * _ALPHA * p + 1) * (1 - p))
    b = (noise - 1) * (_ALPHA * a) + _ALPHA * a * p
    return (x * (noise * a) + b).astype(x.dtype, copy=False)


def _register_dropout(name: str, feature: bool, alpha: bool) -> None:
    @_random(f"aten::{name}(Tensor input, float p, bool train) -> Tensor")
    def dropout(x: Array, p: float, train: bool) -> Array:
        return dropout_impl(x, p, train, feature, alpha)

    @_random(f"aten::{name}_(Tensor(a!) self, float p, bool train) -> Tensor(a!)")
    def dropout_(x: Array, p: float, train: bool) -> Array:
        result = dropout_impl(x, p, train, feature, alpha)
        return x if result is x else write_inplace(x, result)


for _name, _feature, _alpha in (
    ("dropout", False, False),
    ("feature_dropout", True, False),
    ("alpha_dropout", False, True),
    ("feature_alpha_dropout", True, True),
):
    _register_dropout(_name, _feature, _alpha)


@_random("aten::native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)")
def native_dropout(x: Array, p: float, train: bool | None) -> tuple[Array, Array]:
    """(output, keep mask): a fresh copy and an all-True mask when ``train`` is False;
    otherwise (``train`` True or None) the mask is ``bernoulli(1 - p)`` and the kept values
    are scaled by ``1 / (1 - p)`` (zeros and an all-False mask for ``p == 1``)."""
    if train is False:
        return x.copy(), np.ones(x.shape, np.bool_)
    if not 0 <= p <= 1:
        raise RuntimeError(f"dropout probability has to be between 0 and 1, but got {p}")
    mask = bernoulli_array(x.shape, np.dtype(np.bool_), 1 - p)
    scale = np.asarray(0.0 if p == 1 else 1 / (1 - p), x.dtype)
    return x * mask * scale, mask


# ---------------------------------------------------------------------------------------
# rrelu: a random negative slope per element in training


_RRELU = "Scalar lower=0.125, Scalar upper=0.33333333333333331, bool training=False, Generator? generator=None"


def rrelu_impl(x: Array, lower: float, upper: float, training: bool, gen: Any) -> Array:
    """ATen's ``rrelu_with_noise``: elements <= 0 are scaled by a slope drawn from
    U(lower, upper) in training, by the mean slope ``(lower + upper) / 2`` otherwise."""
    _no_generator(gen)
    if not training:
        return np.where(x >= 0, x, x * np.asarray((lower + upper) / 2, x.dtype)).astype(x.dtype, copy=False)
    _need_float(x.dtype, "rrelu_with_noise_out_cpu")
    slopes = uniform_array(x.shape, x.dtype, float(lower), float(upper))
    return np.where(x <= 0, x * slopes, x).astype(x.dtype, copy=False)


@_random(f"aten::rrelu(Tensor self, {_RRELU}) -> Tensor")
def rrelu(x: Array, lower: float, upper: float, training: bool, gen: Any) -> Array:
    return rrelu_impl(x, lower, upper, training, gen)


@_random(f"aten::rrelu_(Tensor(a!) self, {_RRELU}) -> Tensor(a!)")
def rrelu_(x: Array, lower: float, upper: float, training: bool, gen: Any) -> Array:
    return write_inplace(x, rrelu_impl(x, lower, upper, training, gen))
