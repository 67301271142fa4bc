"""``both(f)``: f() with the compiled kernels, then with the numpy kernels, the switch restored."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from vm.ops import compiled


def both(f: Callable[[], Any]) -> tuple[Any, Any]:
    before = compiled.mode()
    try:
        compiled.use("compiled")
        fast = f()
        compiled.use("numpy")
        slow = f()
    finally:
        compiled.use(before)
    return fast, slow
