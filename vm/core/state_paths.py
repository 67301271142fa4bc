"""Module state as dotted attribute paths: the one rule both the compiler and the runtimes read.

``vm.ir.module_state`` finds the attributes of ``%self`` that some method
writes and a program carries them (``Program.state``): dotted paths from ``%self``
(``"_context"``, ``"acc.total"``), ``"*.NAME"`` for attribute ``NAME`` of any object,
``"*"`` for anything.  ``is_written`` answers whether an attribute read is state; it lives
here, on the ground floor, so that a runtime's checks (``vm.binding.preflight``) ask the
same question as the passes without importing the compiler.
"""

from __future__ import annotations

from collections.abc import Iterable

ANYTHING = "*"


def is_written(path: str, written: Iterable[str]) -> bool:
    """Is the attribute at dotted ``path`` (from ``%self``) state, by ``written``?  It is
    when it, or a prefix of it (a submodule assigned whole), or any attribute of its name
    (``*.NAME``), is written."""
    names = written if isinstance(written, (set, frozenset)) else set(written)
    if not names:
        return False
    if ANYTHING in names:
        return True
    parts = path.split(".")
    return any(".".join(parts[: i + 1]) in names or f"*.{parts[i]}" in names for i in range(len(parts)))


__all__ = ["ANYTHING", "is_written"]
