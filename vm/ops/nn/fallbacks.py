"""Operators outside the nn family that scripted and traced nn modules call, registered
as fallbacks (``priority=FALLBACK``): a family's registration of the same overload, made
before or after this module is imported, replaces them.

A scripted ``nn.MultiheadAttention`` or ``nn.TransformerEncoderLayer`` decides between
its fused fast path and the decomposed one with ``aten::is_grad_enabled()`` (grad mode:
``vm/ops/grad_mode.py``), ``aten::is_autocast_enabled()``, ``prim::is_nested`` and ``aten::is_floating_point``; a
traced ``nn.LSTMCell`` splits its gates with ``aten::unsafe_chunk``.  These belong to the
prim and tensor families; until those register them, the nn end-to-end models would not
compile.  The owning family can add its own at any time and this file then stands aside.

At inference, irvm answers the mode queries as PyTorch's inference mode does: autocast is
off, and numpy arrays are never nested tensors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from vm.ops import registry


def _fallback(schema: str, fn: Callable[..., Any], facts: registry.Fact = registry.Fact.NONE) -> None:
    registry.register_op(schema, fn, priority=registry.FALLBACK, facts=facts)


def _unsafe_chunk(x: np.ndarray, chunks: int, dim: int) -> list[np.ndarray]:
    """``torch.chunk``: pieces of ``ceil(size / chunks)`` along ``dim``, the last one shorter."""
    if chunks <= 0:
        raise ValueError(f"chunk expects `chunks` to be greater than 0, got {chunks}")
    size = x.shape[dim]
    step = max(-(-size // chunks), 1)
    return [x[(slice(None),) * (dim % x.ndim) + (slice(i, i + step),)] for i in range(0, max(size, 1), step)]


_fallback("aten::is_floating_point(Tensor self) -> bool", lambda x: bool(x.dtype.kind in "fc"))
_fallback("aten::unsafe_chunk(Tensor self, int chunks, int dim=0) -> Tensor[]", _unsafe_chunk, registry.Fact.SHAPE_ONLY_LIST)
_fallback("prim::is_nested(Tensor a) -> bool", lambda x: False)
_fallback("aten::is_autocast_enabled() -> bool", lambda: False)
_fallback("aten::is_autocast_cpu_enabled() -> bool", lambda: False)
