"""Shared helpers for the nn operator tests: calling a registered kernel, seeded float32
arrays, and a modest example budget that still scales with the hypothesis profile (the
comparison with torch is tests/support/against_torch.py's)."""

from __future__ import annotations

import numpy as np
from hypothesis import settings

from vm.ops import registry

# a fraction of the active profile: ci 200 -> 25, long 10,000 -> 1,250, dev -> 10
FEW = settings(max_examples=max(10, settings.default.max_examples // 8), deadline=None)


def op(qualified: str):
    """The kernel registered under ``qualified`` (``aten::conv2d.padding``)."""
    return registry.lookup(qualified).kernel


def randn(rng: np.random.Generator, *shape: int) -> np.ndarray:
    return np.asarray(rng.standard_normal(shape), dtype=np.float32)
