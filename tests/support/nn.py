"""Shared helpers for the nn operator tests: calling a registered kernel, comparing with
torch, and a modest example budget that still scales with the hypothesis profile."""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import settings

from vm.ops import registry

# a fraction of the active profile: ci 200 -> 25, long 10,000 -> 1,250, dev -> 10
FEW = settings(max_examples=max(10, settings.default.max_examples // 8), deadline=None)


def op(qualified: str):
    """The kernel registered under ``qualified`` (``aten::conv2d.padding``)."""
    return registry.lookup(qualified).kernel


def t2n(value: Any) -> Any:
    """torch values -> numpy (recursively through tuples and lists)."""
    import torch

    if isinstance(value, torch.Tensor):
        return value.detach().numpy()
    if isinstance(value, (tuple, list)):
        return type(value)(t2n(v) for v in value)
    return value


def close(got: Any, want: Any, rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """Assert ``got`` (numpy) matches ``want`` (torch or numpy): shape, dtype kind, values."""
    want = t2n(want)
    if isinstance(want, (tuple, list)):
        assert isinstance(got, (tuple, list)) and len(got) == len(want)
        for g, w in zip(got, want):
            close(g, w, rtol, atol)
        return
    assert isinstance(got, np.ndarray), type(got)
    assert got.shape == want.shape, (got.shape, want.shape)
    assert got.dtype == want.dtype, (got.dtype, want.dtype)
    np.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


def randn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return np.asarray(rng.standard_normal(shape), dtype=np.float32)
