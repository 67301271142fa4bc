"""Out variants and in-place forms of the tensor kernels.

For every case of the differential tables that has an out variant: ``out(buf, *args)``
with a buffer of the result's shape and dtype writes the kernel's result into that very
buffer and returns it; with a buffer that does not fit, it returns a fresh correct result
and leaves the buffer alone.  Every op of the tensor families whose schema returns a
fresh tensor must have an out variant (the static runtime's memory planner relies on it),
and every ``Tensor(a!)`` op must return its first argument itself.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings

from tests.ops import test_tensor_linalg as test_ops_tensor_linalg
from tests.ops import test_tensor_more as test_ops_tensor_more
from tests.ops import test_tensor_pointwise as test_ops_tensor_pointwise
from tests.ops import test_tensor_reduction as test_ops_tensor_reduction
from tests.ops import test_tensor_shape as test_ops_tensor_shape
from tests.ops import test_tensor_zoo as test_ops_tensor_zoo
from tests.support.against_torch import assert_same
from tests.support.tensor_ops import EXAMPLES, copy_args
from vm.ops.registry import all_ops, lookup

TENSOR_MODULES = {"vm.ops.pointwise", "vm.ops.unary", "vm.ops.reduction", "vm.ops.shape", "vm.ops.linalg",
                  "vm.ops.factory", "vm.ops.indexing", "vm.ops.predicates", "vm.ops.rearrange",
                  "vm.ops.pointwise_math", "vm.ops.order_stats"}

ALL_CASES = (test_ops_tensor_pointwise.CASES + test_ops_tensor_reduction.CASES + test_ops_tensor_shape.CASES
             + test_ops_tensor_linalg.CASES + test_ops_tensor_more.CASES
             + [c for c in test_ops_tensor_zoo.CASES if getattr(lookup(c[0]).kernel, "__module__", "") in TENSOR_MODULES])
OUT_CASES = [c for c in ALL_CASES if lookup(c[0]).out is not None]


def _module_of(info) -> str:
    fn = info.kernel
    return getattr(fn, "__module__", "") or ""


def _fresh_result(info) -> bool:
    returns = info.schema.returns
    return len(returns) == 1 and returns[0].type == "Tensor" and not returns[0].alias


@pytest.mark.parametrize("name,strategy", OUT_CASES, ids=[f"{c[0]}-{i}" for i, c in enumerate(OUT_CASES)])
def test_out_variant_writes_into_buffer(name, strategy) -> None:
    info = lookup(name)

    @settings(max_examples=max(10, EXAMPLES // 2))
    @given(strategy)
    def check(values):
        try:
            expected = info.kernel(*copy_args(values))
        except Exception:
            return
        buf = np.empty_like(expected)
        got = info.out(buf, *copy_args(values))
        assert got is buf, f"{name}: out variant did not return the buffer it was given"
        assert_same(got, expected)
        wrong = np.zeros(expected.shape + (2,), expected.dtype)
        fresh = info.out(wrong, *copy_args(values))
        assert fresh is not wrong and not wrong.any()
        assert_same(fresh, expected)

    check()


def test_every_fresh_tensor_op_has_an_out_variant() -> None:
    missing = [i.name for i in all_ops()
               if _module_of(i) in TENSOR_MODULES and _fresh_result(i) and not i.schema.mutates and i.out is None
               and not i.name.startswith(("aten::empty", "aten::new_", "aten::zeros", "aten::ones", "aten::full",
                                          "aten::arange", "aten::linspace", "aten::eye", "aten::scalar_tensor",
                                          "aten::tensor."))]
    # factories make their result from sizes alone; everything else must be plannable
    assert not missing, f"fresh-result ops without an out variant: {missing}"


# Ops with no row in the differential tables, and why.
NOT_IN_TABLES = {
    "aten::empty.memory_format": "uninitialised values", "aten::empty_like": "uninitialised values",
    "aten::new_empty": "uninitialised values",
    "aten::alias": "a view: test_views_share_memory", "aten::detach": "a view: test_views_share_memory",
    "aten::is_contiguous": "memory layout", "aten::stride": "memory layout", "aten::view.dtype": "reinterprets bytes",
    "aten::einsum": "test_einsum_matches_torch", "aten::topk": "test_topk_matches_torch",
    "aten::tensor": "test_tensor_literal_dtype_like_torch_tensor (torch.ops cannot take a Python list)",
    "aten::tensor.bool": "as aten::tensor", "aten::tensor.float": "as aten::tensor", "aten::tensor.int": "as aten::tensor",
    "aten::index.Tensor_hacked_twin": "the kernel of aten::index.Tensor",
    "aten::index_put.hacked_twin": "the kernel of aten::index_put", "aten::narrow.Tensor": "the kernel of aten::narrow",
    "aten::to.prim_Device": "TorchScript-only overload", "aten::to.prim_dtype": "TorchScript-only overload",
    "aten::to.prim_other": "TorchScript-only overload", "aten::numpy_T": "the kernel of aten::t for <= 2 dims",
    "aten::linspace.Scalar_Tensor": "the kernel of aten::linspace", "aten::linspace.Tensor_Scalar": "as linspace",
    "aten::linspace.Tensor_Tensor": "as linspace", "aten::__lshift__.Tensor": "the kernel of __lshift__.Scalar",
    "aten::__rshift__.Tensor": "the kernel of bitwise_right_shift.Tensor",
    "aten::bitwise_left_shift.Tensor": "the shift kernel", "aten::bitwise_left_shift.Scalar_Tensor": "the shift kernel",
    "aten::bitwise_right_shift.Scalar_Tensor": "the shift kernel",
    "aten::bitwise_right_shift.Tensor_Scalar": "the shift kernel", "aten::scatter.value_reduce": "as scatter.reduce",
}


def test_every_tensor_op_has_a_differential_case() -> None:
    """Every functional tensor overload is compared with torch by some table (in-place
    forms share their functional kernel plus write_inplace), or is listed above with why."""
    covered = {c[0] for c in ALL_CASES}
    mine = [i for i in all_ops() if _module_of(i) in TENSOR_MODULES]
    uncovered = sorted(i.name for i in mine
                       if i.name not in covered and not i.schema.mutates and i.name not in NOT_IN_TABLES)
    assert not uncovered, f"ops without a differential case: {uncovered}"


@pytest.mark.parametrize("name,args", [
    ("aten::add_.Tensor", (np.ones(3, np.float32), np.ones(3, np.float32), 1)),
    ("aten::relu_", (np.array([-1.0, 2.0], np.float32),)),
    ("aten::copy_", (np.zeros(2, np.float32), np.ones(2, np.float32), False)),
    ("aten::index_put_", (np.zeros(3, np.float32), [np.array([1])], np.array(5.0, np.float32), False)),
    ("aten::clamp_", (np.array([-3.0, 3.0], np.float32), -1, 1)),
    ("aten::masked_fill_.Scalar", (np.zeros(2, np.int64), np.array([True, False]), 4)),
])
def test_inplace_ops_mutate_and_return_self(name, args) -> None:
    before = args[0].copy()
    result = lookup(name).kernel(*args)
    assert result is args[0] and not np.array_equal(before, args[0])


def test_inplace_refuses_to_narrow_the_dtype() -> None:
    """int_tensor.add_(float) is an error in PyTorch: the result type Float can't be cast to Long."""
    with pytest.raises(RuntimeError, match="can't be cast"):
        lookup("aten::add_.Scalar").kernel(np.ones(2, np.int64), 0.5, 1)
