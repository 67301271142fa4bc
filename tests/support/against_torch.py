"""The torch-comparison harness: values across the boundary, and whether irvm's agree.

Every differential test against PyTorch goes through here: ``to_torch`` and ``to_numpy``
carry values across (irvm's runtime representation is numpy arrays, Python scalars, lists,
tuples, dicts and device strings), ``assert_matches`` asserts that irvm's result is
torch's (same container kinds, arrays of torch's dtype and shape with close values,
anything else equal and of the same type), ``same`` is the exact comparison of the
TorchScript scalar and container tests (``-0.0`` differs from ``0.0``, nan equals nan),
and ``outcome`` lets a test require that both sides fail together.  torch is imported
lazily, so a helper module that imports this one does not need it.
"""

from __future__ import annotations

from typing import Any

import numpy as np


def to_torch(value: Any) -> Any:
    """irvm values -> torch: arrays as tensors (copies), containers element by element."""
    import torch

    if isinstance(value, np.ndarray):
        return torch.from_numpy(value.copy())
    if isinstance(value, list):
        return [to_torch(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_torch(v) for v in value)
    if isinstance(value, dict):
        return {k: to_torch(v) for k, v in value.items()}
    return value


def to_numpy(value: Any) -> Any:
    """torch values -> irvm's representation: tensors as arrays (copies), ``torch.Size`` as a
    list, devices as strings, containers element by element."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().numpy().copy()
    if isinstance(value, torch.Size):
        return list(value)
    if isinstance(value, torch.device):
        return str(value)
    if isinstance(value, list):
        return [to_numpy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(to_numpy(v) for v in value)
    if isinstance(value, dict):
        return {to_numpy(k): to_numpy(v) for k, v in value.items()}
    return value


def assert_matches(
    ours: Any, theirs: Any, where: str = "result", *, rtol: float | None = 1e-4, atol: float | None = 1e-5
) -> None:
    """irvm's ``ours`` is torch's ``theirs`` (torch values or already numpy).

    Arrays: an ``np.ndarray`` of torch's dtype and shape; floating values within
    ``rtol``/``atol`` (nan where torch has nan), others equal.  With ``rtol=None, atol=None``
    the tolerance follows the dtype, as the kernel tests use it: float32 to 1e-4, other
    floats to 1e-9.  Lists and tuples element by element; anything else equal and of the
    same type.  ``where`` names the place in the message (``result[1]``).
    """
    theirs = to_numpy(theirs)
    if isinstance(theirs, np.ndarray):
        assert type(ours) is np.ndarray, f"{where}: expected an ndarray, got {type(ours).__name__}"
        assert ours.dtype == theirs.dtype, f"{where}: dtype {ours.dtype} != torch {theirs.dtype}"
        assert ours.shape == theirs.shape, f"{where}: shape {ours.shape} != torch {theirs.shape}"
        if theirs.dtype.kind in "fc":
            by_dtype = 1e-4 if theirs.dtype == np.float32 else 1e-9
            np.testing.assert_allclose(
                ours, theirs, rtol=by_dtype if rtol is None else rtol, atol=by_dtype if atol is None else atol,
                equal_nan=True, err_msg=where,
            )  # fmt: skip
        else:
            np.testing.assert_array_equal(ours, theirs, err_msg=where)
    elif isinstance(theirs, (tuple, list)):
        assert isinstance(ours, (tuple, list)) and len(ours) == len(theirs), f"{where}: {ours!r} vs torch {theirs!r}"
        for i, (o, t) in enumerate(zip(ours, theirs)):
            assert_matches(o, t, f"{where}[{i}]", rtol=rtol, atol=atol)
    else:
        equal = ours == theirs or (isinstance(theirs, float) and theirs != theirs and ours != ours)  # nan == nan
        assert type(ours) is type(theirs) and equal, f"{where}: {ours!r} != torch {theirs!r}"


def assert_same(ours: Any, theirs: Any, where: str = "result") -> None:
    """``assert_matches`` with the tolerance of the dtype (the kernel tests' policy)."""
    assert_matches(ours, theirs, where, rtol=None, atol=None)


def same(a: Any, b: Any) -> bool:
    """Equal values of equal Python types (nan equal to nan, -0.0 distinct from 0.0)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, float):
        return (a != a and b != b) or (a == b and np.signbit(a) == np.signbit(b))
    if isinstance(a, (list, tuple)):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray):
        return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=a.dtype.kind == "f")
    return a == b


def outcome(fn: Any, *args: Any) -> tuple[str, Any]:
    """("ok", value) or ("error", None): both engines must agree on failing too."""
    try:
        return "ok", fn(*args)
    except Exception:  # noqa: BLE001 - any kernel error counts as "raised"
        return "error", None
