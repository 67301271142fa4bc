"""Grad mode: ``torch.no_grad()``, ``torch.set_grad_enabled(b)``, ``torch.is_grad_enabled()``.

irvm computes no gradients, so grad mode changes no result; but a model may ask for it
(``nn.MultiheadAttention`` takes its fused path only without gradients), and a scripted
``with torch.no_grad():`` compiles to ``no_grad.__enter__``, which saves
``torch.is_grad_enabled()`` and calls ``torch.set_grad_enabled(False)``, and ``__exit__``,
which restores it.  So irvm keeps the mode as torch does, per thread: it starts off
(irvm runs as torch's inference mode, where ``is_grad_enabled()`` is False),
``aten::set_grad_enabled`` sets it and ``aten::is_grad_enabled`` reads it: inside a
``no_grad`` block it is False, after ``set_grad_enabled(True)`` True, as torch answers.
Both are effects (``pure=False``): no pass removes, merges, moves or folds them.
"""

from __future__ import annotations

import threading

from vm.ops.registry import kernel


class _Mode(threading.local):
    enabled = False  # a thread starts in inference mode


_MODE = _Mode()


@kernel("aten::set_grad_enabled(bool enabled) -> ()", pure=False)
def set_grad_enabled(enabled: bool) -> None:
    """Switch this thread's grad mode (nothing else changes: irvm keeps no gradients)."""
    _MODE.enabled = bool(enabled)


@kernel("aten::is_grad_enabled() -> bool", pure=False)
def is_grad_enabled() -> bool:
    """This thread's grad mode: False unless ``set_grad_enabled(True)`` switched it on."""
    return _MODE.enabled
