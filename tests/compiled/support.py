"""``both(f)``: f() with the compiled kernels, then with the numpy kernels, the switch restored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vm.ops import compiled


def both(f: Callable[[], Any]) -> tuple[Any, Any]:
    before, loading = compiled.mode(), compiled.loading("eager")  # the compiled kernels now, not later
    try:
        compiled.use("compiled")
        fast = f()
        compiled.use("numpy")
        slow = f()
    finally:
        compiled.use(before)
        compiled.loading(loading)
    return fast, slow
