"""An archive's weights written beside the program compiled from it (``irc compile model.pt``,
``vm.Model.save``): ``model.weights.npz``, every check made before anything is written.

``weights_path`` says where; ``prepare_archive_weights`` reads and checks them (the target may
be written, no stride-0 view expands past the read limits) into a ``PendingWeights``, whose
``write`` is the only step that touches the disk; ``save_archive_weights`` does both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compiler.torchscript.archive import Archive, is_torchscript_archive
from compiler.torchscript.unpickle import ArchiveError


def weights_path(program_path: str | Path) -> Path:
    """Where ``irc compile model.pt -o model.irbc`` puts the archive's weights:
    ``model.weights.npz`` beside the ``.irbc``."""
    out = Path(program_path)
    return out.with_name(out.stem + ".weights.npz")


class PendingWeights:
    """The weights of an archive, checked and ready to write beside a program
    (``prepare_archive_weights``): every check is done, nothing is written yet."""

    def __init__(self, out: Path, arrays: dict[str, Any], program_path: str | Path) -> None:
        self.out, self.arrays, self.program_path = out, arrays, program_path

    def write(self, announce: bool = True) -> Path:
        import sys

        from vm.files.npz import save_marked

        save_marked(self.out, self.arrays, "weights")
        if announce:
            print(f"wrote {self.out} (the archive's weights: irvm run {self.program_path} --weights {self.out})", file=sys.stderr)
        return self.out


def prepare_archive_weights(
    source: str | Path, program_path: str | Path, force: bool = False, limits: Any = None, module: str | None = None
) -> PendingWeights | None:
    """The weights of archive ``source`` to write beside ``program_path`` (see
    ``weights_path``), after every check: the target may be written (``check_writable``)
    and no tensor that repeats its storage's elements (a stride-0 view) expands past
    ``limits.expanded_bytes`` (an ``.npz`` holds whole arrays: a 32768x32768 view of one
    float would be a 4 GiB file).  None when ``source`` is not an archive."""
    import numpy as np

    from compiler.torchscript.limits import current, over
    from vm.files.kinds import check_writable

    if not is_torchscript_archive(source):
        return None
    from compiler.torchscript.weights import flatten

    limits = limits or current()
    out = weights_path(program_path)
    check_writable(out, inputs=[Path(source), Path(program_path)], force=force, kind="weights")
    archive = Archive(source, limits, module=module)
    try:
        weights = flatten(archive.module(), archive.constants(), arrays_only=True)
    finally:
        archive.close()  # memory maps keep their own handle
    from vm.core.quantized import PACKED_TYPES, QTensor
    from vm.files.quantized import encode

    arrays: dict[str, np.ndarray] = {}
    for key, value in weights.items():
        if isinstance(value, (QTensor, *PACKED_TYPES)):
            encode(key, value, arrays)  # quantized entries (vm/files/quantized.py)
        else:
            arrays[key] = np.asarray(value)
    for key, array in arrays.items():
        extra = array.nbytes - _footprint(array)
        if extra > 0 and array.nbytes > limits.expanded_bytes:
            raise ArchiveError(
                f"{source}: weight {key} (shape {list(array.shape)}) repeats elements of its storage; written out, "
                f"{over('it', array.nbytes, 'expanded_bytes', limits.expanded_bytes)} bytes"
            )
    return PendingWeights(out, arrays, program_path)


def _footprint(array: Any) -> int:
    """The bytes of memory a (possibly strided) array spans."""
    if array.size == 0:
        return 0
    return sum((n - 1) * abs(s) for n, s in zip(array.shape, array.strides)) + array.itemsize


def save_archive_weights(
    source: str | Path, program_path: str | Path, force: bool = False, announce: bool = True, module: str | None = None
) -> Path | None:
    """Write the weights of archive ``source`` beside ``program_path`` (see ``weights_path``);
    nothing when ``source`` is not an archive.  Entries are arrays, as ``--weights`` reads.
    ``announce``: say so on stderr (the command line does; ``vm.Model.save`` does not)."""
    pending = prepare_archive_weights(source, program_path, force, module=module)
    return None if pending is None else pending.write(announce)


__all__ = ["PendingWeights", "prepare_archive_weights", "save_archive_weights", "weights_path"]
