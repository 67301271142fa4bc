"""Prepared kernels (``vm.ops.prepared``) against the kernels they stand for.

Property: for every operator with a preparer, any constants (valid or not) and any input
the kernel is given, the prepared callable returns what the kernel returns -- the same
elements, shape, dtype, strides, memory shared with the input and writeability -- or
raises the kernel's own error, message included.  And the static runtime binds the
prepared form where the node's arguments are constants, giving the interpreter's result.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import vm.ops  # noqa: F401  (fills the registry)
from vm.ops import registry
from vm.ops.prepared import UNKNOWN, prepared

shapes = st.lists(st.integers(0, 3), min_size=0, max_size=4).map(tuple)
dims = st.integers(-5, 5)


def _tensor(shape: tuple[int, ...], layout: int) -> np.ndarray:
    """A float32 tensor of ``shape``: contiguous, transposed or strided by ``layout``."""
    if layout == 1 and len(shape) >= 2:
        return np.arange(np.prod(shape), dtype=np.float32).reshape(shape[::-1]).T
    if layout == 2 and shape:
        wide = (*shape[:-1], 2 * shape[-1])
        return np.arange(np.prod(wide), dtype=np.float32).reshape(wide)[..., ::2]
    return np.arange(np.prod(shape), dtype=np.float32).reshape(shape)


def _outcome(fn: Callable[..., Any], x: np.ndarray, args: tuple[Any, ...]) -> Any:
    try:
        r = fn(x, *args)
    except Exception as err:  # noqa: BLE001  (the error is the outcome compared)
        return ("raises", type(err), str(err))
    if not isinstance(r, np.ndarray):
        return ("value", r)
    return ("array", r.shape, r.dtype, r.strides, r.tolist(), np.shares_memory(r, x), r.flags.writeable)


def _same(name: str, x: np.ndarray, args: tuple[Any, ...], n_inputs: int | None = None) -> None:
    n = 1 + len(args) if n_inputs is None else n_inputs
    ref = registry.OpRef(name, n, 1, tuple(_defaults(name, n)))
    kernel = registry.bind(ref)
    known = [UNKNOWN, *(list(a) if isinstance(a, tuple) else a for a in args)][:n]
    forms = prepared(ref, known, kernel)
    fast = forms.kernel if forms is not None else None
    expected = _outcome(kernel, x, args[: n - 1])
    if fast is None:
        return  # declined: the kernel runs, trivially the same
    assert _outcome(fast, x, args[: n - 1]) == expected
    assert _outcome(fast, x, args[: n - 1]) == expected  # again: the per-rank memo answers now


def _defaults(name: str, n: int) -> list[Any]:
    info = registry._REGISTRY[name]
    return [a.default for a in info.schema.arguments[n:]]


@given(shapes, st.integers(0, 2), dims)
def test_size_int(shape, layout, d) -> None:
    _same("aten::size.int", _tensor(shape, layout), (d,))


@given(shapes, st.integers(0, 2), dims, dims, st.booleans())
def test_flatten(shape, layout, s, e, default_end) -> None:
    _same("aten::flatten.using_ints", _tensor(shape, layout), (s, e), 2 if default_end else None)


@given(shapes, st.integers(0, 2), dims)
def test_unsqueeze(shape, layout, d) -> None:
    _same("aten::unsqueeze", _tensor(shape, layout), (d,))


@given(shapes, st.integers(0, 2), dims, dims)
def test_transpose(shape, layout, a, b) -> None:
    _same("aten::transpose.int", _tensor(shape, layout), (a, b))


@given(shapes, st.integers(0, 2), dims, st.integers(-4, 4))
def test_select(shape, layout, d, i) -> None:
    _same("aten::select.int", _tensor(shape, layout), (d, i))


bounds = st.one_of(st.none(), st.integers(-5, 5), st.sampled_from([2**63 - 1, -(2**63)]))


@given(shapes, st.integers(0, 2), dims, bounds, bounds, st.integers(-1, 3))
def test_slice(shape, layout, d, start, end, step) -> None:
    _same("aten::slice.Tensor", _tensor(shape, layout), (d, start, end, step))


@given(shapes, st.integers(0, 2))
def test_contiguous(shape, layout) -> None:
    _same("aten::contiguous", _tensor(shape, layout), (0,))


sizes = st.lists(st.integers(-1, 6), min_size=0, max_size=4).map(tuple)


@given(shapes, st.integers(0, 2), sizes)
def test_view(shape, layout, size) -> None:
    _same("aten::view", _tensor(shape, layout), (size,))


@given(shapes, st.integers(0, 2), sizes)
def test_reshape(shape, layout, size) -> None:
    _same("aten::reshape", _tensor(shape, layout), (size,))


@given(shapes, st.integers(0, 2), st.lists(st.integers(-1, 3), min_size=0, max_size=5).map(tuple))
def test_expand(shape, layout, size) -> None:
    _same("aten::expand", _tensor(shape, layout), (size, False))


def test_an_expanded_view_is_read_only_and_shares_the_input() -> None:
    """The directly built broadcast view keeps what ``np.broadcast_to`` promises."""
    x = np.arange(4, dtype=np.float32).reshape(1, 4)
    ref = registry.OpRef("aten::expand", 3, 1)
    forms = prepared(ref, [UNKNOWN, [3, -1], False], registry.bind(ref))
    assert forms is not None
    y = forms.kernel(x, [3, -1], False)
    assert y.shape == (3, 4) and y.strides == (0, 4) and not y.flags.writeable
    x[0, 1] = 7
    assert (y[:, 1] == 7).all()


def test_tensor_and_run_time_arguments_keep_the_kernel() -> None:
    """A preparer sees only constants: a dim computed at run time leaves the kernel bound."""
    ref = registry.OpRef("aten::transpose.int", 3, 1)
    assert prepared(ref, [UNKNOWN, UNKNOWN, 1], registry.bind(ref)) is None


TEXT = """
graph(%x : Tensor):
  %0 : int = prim::Constant[value=0]()
  %1 : int = prim::Constant[value=1]()
  %m1 : int = prim::Constant[value=-1]()
  %2 : int = prim::Constant[value=2]()
  %t : Tensor = aten::transpose(%x, %1, %2)
  %f : Tensor = aten::flatten(%t, %1, %m1)
  %u : Tensor = aten::unsqueeze(%f, %0)
  %n : int = aten::size(%u, %m1)
  %s : Tensor = aten::slice(%u, %2, %0, %n, %2)
  %c : Tensor = aten::contiguous(%s, %0)
  %r : Tensor = aten::mul(%c, %n)
  return (%r)
"""


@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 5, 2), (3, 1, 1, 2)])
def test_static_runtime_binds_prepared_forms_with_the_interpreters_result(shape) -> None:
    """Nodes with constant dims get their prepared kernels (``module.processed_nodes``),
    and the program gives the interpreter's numbers, a 4-d input included."""
    import compiler
    import vm
    from vm import StaticModule, StaticRuntime

    program = compiler.compile_source(TEXT)
    module = StaticModule(program)
    kinds = {pn.node.kind: pn.kernel for pn in module.entry.pnodes}
    assert kinds["aten::transpose"].__name__ == "transpose" and kinds["aten::transpose"].__qualname__.startswith("_transpose")
    x = np.arange(np.prod(shape), dtype=np.float32).reshape(shape)
    expected = vm.Interpreter(program)(x)
    got = StaticRuntime(module)(x)
    np.testing.assert_array_equal(got, expected)
    assert got.shape == expected.shape


@given(
    st.lists(st.integers(1, 7), min_size=3, max_size=4).map(tuple), st.integers(1, 3), st.integers(0, 3),
    st.integers(1, 2), st.integers(0, 1), st.booleans(), st.sampled_from([np.float32, np.float64, np.int32, np.bool_]),
    st.integers(0, 2**16),
)
def test_max_pool2d_is_the_kernel(shape, k, stride, dilation, padding, ceil, dtype, seed) -> None:
    """Any max_pool2d: the prepared form and its out variant give the kernel's bits (NaN
    and signed zeros included) or its error."""
    rng = np.random.default_rng(seed)
    values = [0.0, -0.0, 1.0, -2.0, np.nan, 3.5] if np.dtype(dtype).kind == "f" else [0, 1, -2, 3]
    x = rng.choice(np.array(values), size=shape).astype(dtype)
    strides = [] if stride == 0 else [stride, stride]
    args = ([k, k], strides, [padding, padding], [dilation, dilation], ceil)
    ref = registry.OpRef("aten::max_pool2d", 6, 1)
    kernel, out_variant = registry.bind(ref), registry.bind_out(ref)
    forms = prepared(ref, [UNKNOWN, *args], kernel, out_variant)
    expected = _outcome(kernel, x, args)
    if forms is None:
        return
    got = _outcome(forms.kernel, x, args)
    assert got[:4] == expected[:4] and got[0:1] == expected[0:1]
    if got[0] == "array":
        e, g = np.array(expected[4], dtype), np.array(got[4], dtype)
        assert e.tobytes() == g.tobytes()
        buf = np.zeros(got[1], dtype)
        assert forms.out is not None and forms.out(buf, x, *args) is buf
        assert buf.tobytes() == e.tobytes()


@given(shapes, st.integers(0, 2), st.lists(st.integers(0, 3), min_size=0, max_size=5).map(tuple))
def test_broadcast_view_is_numpys(shape, layout, target) -> None:
    """``shape.broadcast_view`` (what ``expand`` returns) is ``np.broadcast_to``'s view:
    elements, strides, sharing, read-only, or its error."""
    from vm.ops.shape import broadcast_view

    x = _tensor(shape, layout)
    assert _outcome(lambda a: broadcast_view(a, target), x, ()) == _outcome(lambda a: np.broadcast_to(a, target), x, ())
