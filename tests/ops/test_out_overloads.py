"""The out= overloads registered with their functional overloads (vm/ops/registry.py):
every one is PyTorch's own schema, and its kernel writes into ``out`` (returning it) when
the result fits, else returns a new array (numpy cannot resize ``out`` in place as
PyTorch does: the documented limit)."""

import numpy as np
import pytest

from vm.ops._out_schemas import OUT_SCHEMAS
from vm.ops.registry import lookup, parse_schema


def test_every_out_schema_is_pytorchs() -> None:
    torch = pytest.importorskip("torch")
    for text in OUT_SCHEMAS.values():
        name = parse_schema(text).name
        assert text in {str(s) for s in torch._C._jit_get_schemas_for_operator(name)}, text


def test_div_out_writes_into_out() -> None:
    buf = np.empty(3)
    got = lookup("aten::div.out").kernel(np.ones(3), np.full(3, 4.0), buf)
    assert got is buf and list(buf) == [0.25, 0.25, 0.25]


def test_norm_dtype_out_and_a_shape_mismatch_returns_a_new_tensor() -> None:
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    wrong = np.zeros(5, np.float64)
    got = lookup("aten::norm.dtype_out").kernel(x, 2, [1], False, 7, wrong)
    assert got is not wrong and got.shape == (2,) and got.dtype == np.float64
    np.testing.assert_allclose(got, np.sqrt((x.astype(np.float64) ** 2).sum(1)))


def test_integer_floor_divide_by_zero_raises_like_pytorch() -> None:
    """PyTorch raises ZeroDivisionError for integer floor_divide/remainder/div(mode) by 0."""
    a, z = np.arange(3), np.array([1, 0, 2])
    for name, args in (("aten::floor_divide", (a, z)), ("aten::remainder.Tensor", (a, z)),
                       ("aten::div.Tensor_mode", (a, z, "trunc")), ("aten::div.Tensor_mode", (a, z, "floor"))):
        with pytest.raises(ZeroDivisionError):
            lookup(name).kernel(*args)
