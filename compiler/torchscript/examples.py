"""The example inputs a traced ``torch.jit.save`` archive records.

``torch.jit.trace`` keeps the inputs it ran the function on, and ``torch.jit.save``
writes them as ``traced_inputs.pkl``: a dict from method name to the list of example
arguments.  torch 2.13 writes their storages empty (``traced_inputs/0`` holds 0 bytes),
so what the file tells is each tensor's dtype and shape, not its values: exactly what a
model's ``inputs`` list needs.  The pickle goes through the archive's restricted
unpickler, its storages stand-ins that occupy no memory whatever length they claim.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np


def traced_examples(path: str | Path, method: str = "forward", module: str | None = None) -> list[Any] | None:
    """The example arguments of ``method`` (arrays of the right dtype and shape, values
    not kept; other values as they are), or None when the archive records none or they
    cannot be read (they only describe the inputs: nothing depends on them)."""
    from compiler.torchscript.archive import Archive
    from compiler.torchscript.unpickle import ArchiveError, safe_loads

    try:
        archive = Archive(path, module=module)
    except (ArchiveError, OSError):
        return None
    try:
        if "traced_inputs.pkl" not in archive.members:
            return None
        table = safe_loads(archive.read("traced_inputs.pkl"), _no_data, f"{path}:traced_inputs.pkl")
    except (ArchiveError, OSError, MemoryError):
        return None
    finally:
        archive.close()
    examples = table.get(method) if isinstance(table, dict) else None
    return list(examples) if isinstance(examples, (list, tuple)) else None


def _no_data(dtype: str, key: str, numel: int) -> np.ndarray:
    """A storage of ``numel`` elements that holds none (a broadcast zero)."""
    native = np.dtype("float32" if dtype == "bfloat16" else dtype)
    return np.broadcast_to(np.zeros(1, native), (max(int(numel), 0),))


__all__ = ["traced_examples"]
