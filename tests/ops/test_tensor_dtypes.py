"""vm.ops._dtypes against PyTorch: promote_types over every dtype pair, and result_type
over dimensioned tensors, 0-dim tensors and Python scalars (the three priority groups)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from vm.ops import _dtypes as D

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

PAIRS = {torch.bool: D.BOOL, torch.uint8: D.UINT8, torch.int8: D.INT8, torch.int16: D.INT16, torch.int32: D.INT32,
         torch.int64: D.INT64, torch.float16: D.FLOAT16, torch.float32: D.FLOAT32, torch.float64: D.FLOAT64}


@pytest.mark.parametrize("a,b", list(itertools.product(PAIRS, PAIRS)))
def test_promote_types_and_result_type_match_torch(a, b) -> None:
    assert D.promote_types(PAIRS[a], PAIRS[b]) == PAIRS[torch.promote_types(a, b)]
    for sa, sb in [((2,), ()), ((), (2,)), ((2,), (2,)), ((), ())]:
        expected = torch.result_type(torch.zeros(sa, dtype=a), torch.zeros(sb, dtype=b))
        assert D.result_type(np.zeros(sa, PAIRS[a]), np.zeros(sb, PAIRS[b])) == PAIRS[expected], (sa, sb)


@pytest.mark.parametrize("a", list(PAIRS))
@pytest.mark.parametrize("scalar", [True, 3, 2.5])
@pytest.mark.parametrize("shape", [(2,), ()])
def test_wrapped_scalars_match_torch(a, scalar, shape) -> None:
    expected = torch.result_type(torch.zeros(shape, dtype=a), scalar)
    assert D.binary_result_type(np.zeros(shape, PAIRS[a]), scalar) == PAIRS[expected]


def test_codes_round_trip_and_unknown_codes_are_refused() -> None:
    for code in (0, 1, 2, 3, 4, 5, 6, 7, 11):
        assert D.to_code(D.to_dtype(code)) == code
    assert D.to_dtype(None) == D.FLOAT32
    with pytest.raises(TypeError, match="BFloat16"):
        D.to_dtype(15)


def test_as_array_wraps_integers_like_torch_casts() -> None:
    assert D.as_array(300, D.INT8).item() == torch.tensor(300).to(torch.int8).item()
    assert D.as_array(1.5).dtype == D.FLOAT32 and D.as_array(1.5).shape == ()
    assert type(D.wrap(np.float32(1))) is np.ndarray
