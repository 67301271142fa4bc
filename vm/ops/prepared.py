"""Prepared kernels: the part of a kernel's prologue that its node's constants decide, done once.

A kernel must accept any argument the schema allows, so every call re-reads its
non-tensor arguments: it wraps dims into range, turns lists into shapes, checks a step is
positive, picks an indexing tuple.  When the static runtime builds a node whose such
arguments are constants (``flatten(x, 1, -1)``, ``transpose(x, 1, 2)``, ``size(x, -1)``),
that work has one answer per input rank, so it can be done at construction and the call
can be one numpy operation.  On BERT-tiny's 16x64 tensors the kernel's prologue is most
of a view op's time (``transpose`` 1.3 us against 0.16 us for the bare ``swapaxes``;
``flatten`` 8 us against 0.1 us).

An operator offers a *preparer* (``@prepares("aten::flatten.using_ints")``): given the
node's arguments as known at construction (``Known``: one entry per schema argument,
``UNKNOWN`` for a value computed at run time; tensors are always ``UNKNOWN``, lists arrive
as tuples), it returns a callable with the bound kernel's calling convention (the node's
inputs, positionally) or None to keep the kernel.  Rules a preparer keeps:

- it never raises and never decides an error: when the constants (or, at run time, the
  input's rank or shape) lead to an error, the prepared callable calls the kernel itself,
  which raises its own message; a node that never runs never fails;
- it returns what the kernel returns, aliasing included (the same view or the same copy),
  for every input the kernel accepts: ``tests/ops/test_prepared.py`` holds each one to
  its kernel over random shapes and constants;
- what depends on the input's rank is decided on the first call with that rank and kept
  (``per_rank``): a dict write of an immutable answer, safe under threads.

A preparer registered with ``tensors=True`` sees the node's constant arrays too (the
static runtime's bound weights: batch norm's running statistics, ``vm.ops.prepared_norm``);
they are the arrays the node reads on every call, which the runtime treats as constants
once weights are bound, so a form may derive data from them at construction.

A preparer may also make an out variant (``Forms(kernel, out)``: the convolution's writes
its product straight into the planned buffer).  ``prepared(ref, known, kernel, out)`` is
what the static runtime's code generator calls.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import numpy as np

from vm.ops import registry
from vm.ops.registry import OpRef

UNKNOWN: Any = object()  # an argument whose value only a run knows

Known = tuple[Any, ...]


class Forms(NamedTuple):
    """A prepared kernel and, when the preparer made one, its prepared out variant."""

    kernel: Callable[..., Any]
    out: Callable[..., Any] | None = None


def first_argument_forms(
    fast: Callable[[np.ndarray | None, Any], np.ndarray | None],
    kernel: Callable[..., Any],
    out_variant: Callable[..., Any] | None,
) -> Forms:
    """Forms that try ``fast(out, x)`` on the first argument (``out`` None for the plain
    form) and, where it declines (None), call the kernel or out variant with every
    argument, so its results and errors are the kernel's."""

    def call(x: Any, *args: Any) -> Any:
        r = fast(None, x)
        return r if r is not None else kernel(x, *args)

    def call_out(out: Any, x: Any, *args: Any) -> Any:
        r = fast(out, x) if type(out) is np.ndarray else None
        if r is not None:
            return r
        assert out_variant is not None  # codegen keeps an out form only where the node had one
        return out_variant(out, x, *args)

    return Forms(call, call_out if out_variant is not None else None)


# fn(known, kernel, out) -> a prepared kernel, Forms, or None (keep the kernel)
Preparer = Callable[[Known, Callable[..., Any], "Callable[..., Any] | None"], "Callable[..., Any] | Forms | None"]

def prepares(qualified: str, tensors: bool = False) -> Callable[[Preparer], Preparer]:
    """Declare ``fn(known, kernel, out) -> callable | Forms | None`` the preparer of an
    overload (the registry's ``prepare``; ``@k.prepare`` on a ``@kernel`` says the same);
    ``kernel`` and ``out`` are the bound kernel and out variant (or None), which the
    prepared forms fall back to.  ``tensors``: constant ``np.ndarray`` arguments reach
    ``known`` as themselves (else ``UNKNOWN``)."""

    def wrap(fn: Preparer) -> Preparer:
        registry.declare(qualified, prepare=fn, prepare_tensors=tensors)
        return fn

    return wrap


def has_preparer(qualified: str) -> bool:
    try:
        return registry.lookup(qualified).prepare is not None
    except KeyError:
        return False


def known_value(value: Any) -> Any:
    """``value`` as a preparer may see it: scalars, strings and None as they are, lists and
    tuples of them as tuples (a snapshot), anything else (tensors) ``UNKNOWN``."""
    if value is None or type(value) in (int, float, bool, str):
        return value
    if type(value) in (list, tuple):
        items = tuple(known_value(v) for v in value)
        return UNKNOWN if any(v is UNKNOWN for v in items) else items
    return UNKNOWN


def prepared(
    ref: OpRef, known: Sequence[Any], kernel: Callable[..., Any], out: Callable[..., Any] | None = None
) -> Forms | None:
    """The prepared forms of ``ref``'s kernel (and out variant) for a node whose inputs are
    ``known`` (one entry per node input, ``UNKNOWN`` where a run decides; the defaults the
    node leaves out are appended here), or None when the operator offers none or declines.
    A form the preparer does not make is the bound one."""
    info = registry.find(ref.name)
    preparer = None if info is None else info.prepare
    if info is None or preparer is None:
        return None
    args = tuple(known_value(v) for v in known) + tuple(known_value(v) for v in ref.defaults)
    if info.prepare_tensors:
        args = tuple(
            v if type(v) is np.ndarray else a for v, a in zip((*known, *ref.defaults), args, strict=True)
        )
    try:
        made = preparer(args, kernel, out)
    except Exception:  # noqa: BLE001  (a preparer that trips keeps the kernel, which is always right)
        return None
    if made is None or isinstance(made, Forms):
        return None if made is None else Forms(made.kernel, made.out or out)
    return Forms(made, out)


def const_int(known: Known, index: int) -> int | None:
    """Argument ``index`` when it is a known int (not a bool), else None."""
    value = known[index] if index < len(known) else UNKNOWN
    return value if type(value) is int else None


def per_rank(decide: Callable[[int], Any]) -> Callable[[int], Any]:
    """``decide(ndim)`` memoized by rank (its answer, or None for "call the kernel")."""
    memo: dict[int, Any] = {}

    def lookup(ndim: int) -> Any:
        try:
            return memo[ndim]
        except KeyError:
            answer = memo[ndim] = decide(ndim)
            return answer

    return lookup


def wrap_dim(d: int, ndim: int) -> int | None:
    """``d`` wrapped into ``range(ndim)`` as ``norm_dim`` does, or None where it raises."""
    n = ndim if ndim > 0 else 1
    if d < -n or d >= n:
        return None
    return d + n if d < 0 else d
