"""Checking an ``.npy`` or ``.npz`` against its own size before numpy allocates for it.

``numpy.load`` trusts an array's header: it allocates ``prod(shape) * itemsize`` bytes and
only then reads, so a 200-byte ``.npy`` whose header claims a shape of 2^45 elements is a
32 TiB allocation (a ``MemoryError``, or the machine swapping).  ``check_npy`` and
``check_npz`` read each header first and refuse an array that claims more bytes than the
file can hold: for an ``.npy``, the bytes after its header; for a member of an ``.npz``,
the member's inflated size, which itself must be possible (a stored member's size is its
stored size, and deflate inflates at most ~1032 to 1, so a member claiming more than
``MAX_RATIO`` times its compressed size is a lie).  Reading is then ``numpy.load``'s, with
every allocation bounded by the file.  Failures are ``RunError``s naming the file and entry.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from typing import IO

import numpy as np

from vm.core.errors import RunError

MAX_RATIO = 1100  # deflate's best is 1032:1; a member claiming more inflated bytes is damaged


def _header_bytes(f: IO[bytes], where: str) -> tuple[tuple[int, ...], np.dtype, int]:
    """``(shape, dtype, header length)`` of the array starting at ``f``'s position."""
    fmt = np.lib.format
    start = f.tell()
    try:
        version = fmt.read_magic(f)
        reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
        shape, _fortran, dtype = reader(f)
    except (ValueError, EOFError, OSError, SyntaxError, TypeError, zipfile.BadZipFile) as err:
        raise RunError(f"{where}: not a readable .npy array ({err})") from None
    return tuple(shape), np.dtype(dtype), f.tell() - start


def _check(shape: tuple[int, ...], dtype: np.dtype, available: int, where: str) -> None:
    count = 1
    for n in shape:
        count *= n
    need = count * dtype.itemsize
    if need > available:
        raise RunError(
            f"{where}: the header claims an array of shape {list(shape)} ({dtype}, {need:,} bytes), "
            f"but the file holds {max(available, 0):,} bytes of data: the file is damaged or hostile"
        )


def check_npy(path: str | Path) -> None:
    """Refuse the ``.npy`` at ``path`` when its header claims more bytes than follow it."""
    size = Path(path).stat().st_size
    with open(path, "rb") as f:
        shape, dtype, header = _header_bytes(f, str(path))
    _check(shape, dtype, size - header, str(path))


def check_npz(path: str | Path) -> None:
    """Refuse the ``.npz`` at ``path`` when a member's header claims more bytes than the
    member holds, or the member claims an impossible inflated size."""
    size = Path(path).stat().st_size
    try:
        with zipfile.ZipFile(path) as zf:
            for info in zf.infolist():
                where = f"{path}: entry {info.filename}"
                stored = info.compress_type == zipfile.ZIP_STORED
                if (stored and info.file_size > size) or info.file_size > MAX_RATIO * max(info.compress_size, 1):
                    raise RunError(f"{where}: claims {info.file_size:,} bytes, more than its {info.compress_size:,} "
                                   "stored bytes can hold: the file is damaged or hostile")
                if not info.filename.endswith(".npy"):
                    continue
                with zf.open(info) as f:
                    shape, dtype, header = _header_bytes(f, where)
                _check(shape, dtype, info.file_size - header, where)
    except RunError:
        raise
    except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, NotImplementedError, RuntimeError) as err:
        raise RunError(f"{path}: damaged .npz archive ({type(err).__name__}: {err})") from None


MAP_FROM = 1 << 20  # bytes: a stored member at least this large is memory-mapped, not read


def mapped_npz(path: str | Path) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` at ``path`` (checked first, ``check_npz``), each large
    member stored uncompressed (what ``numpy.savez`` writes) memory-mapped copy-on-write
    instead of read: loading a model's weights then costs what its headers cost, the pages
    come in as the first call touches them, and a write (a state updated in place) stays
    the process's own, never the file's.  Small, compressed or object members are read.
    A mapped member is held to what its entry says, as reading it would: its array inside
    the member's bytes, and the member's CRC-32 over those bytes (one pass, no copy), so a
    damaged file is refused, never a silent wrong weight."""
    check_npz(path)
    size = Path(path).stat().st_size
    arrays: dict[str, np.ndarray] = {}
    mapped: dict[str, tuple[int, tuple[int, ...], np.dtype, bool]] = {}
    with open(path, "rb") as raw, zipfile.ZipFile(raw) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".npy"):
                continue
            name = info.filename[:-4]
            if info.compress_type == zipfile.ZIP_STORED and info.file_size >= MAP_FROM and not info.flag_bits & 1:
                raw.seek(info.header_offset)
                local = raw.read(30)
                if local[:4] == b"PK\x03\x04":
                    start = info.header_offset + 30 + int.from_bytes(local[26:28], "little") + int.from_bytes(
                        local[28:30], "little")
                    raw.seek(start)
                    fmt = np.lib.format
                    try:
                        version = fmt.read_magic(raw)
                        reader = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
                        shape, fortran, dtype = reader(raw)
                    except (ValueError, EOFError, OSError, SyntaxError, TypeError):
                        shape, fortran, dtype = None, False, None
                    end = start + info.file_size
                    if shape is not None and dtype is not None and not dtype.hasobject and end <= size and (
                            raw.tell() + np.dtype(dtype).itemsize * int(np.prod(shape, dtype=np.int64)) <= end):
                        _check_crc(path, start, info, f"{path}: entry {info.filename}")
                        mapped[name] = (raw.tell(), tuple(shape), np.dtype(dtype), bool(fortran))
                        continue
            with zf.open(info) as f:
                arrays[name] = np.lib.format.read_array(f, allow_pickle=False)
    for name, (offset, shape, dtype, fortran) in mapped.items():
        count = int(np.prod(shape, dtype=np.int64))
        if count == 0:
            arrays[name] = np.zeros(shape, dtype, order="F" if fortran else "C")
            continue
        mm = np.memmap(path, dtype=dtype, mode="c", offset=offset, shape=shape, order="F" if fortran else "C")
        arrays[name] = mm.view(np.ndarray)  # a plain array over the map (numpy's subclass would spread to results)
    return arrays


def _check_crc(path: str | Path, start: int, info: zipfile.ZipInfo, where: str) -> None:
    import mmap
    import zlib

    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as view:
        crc = zlib.crc32(memoryview(view)[start : start + info.file_size])
    if crc != info.CRC:
        raise RunError(f"{where}: its bytes do not match the archive's checksum: the file is damaged")


def check_npy_bytes(data: bytes, where: str) -> None:
    """Refuse the ``.npy`` held in ``data`` (a member already read, as an ``.irbc``'s tensor
    constants are) when its header claims more bytes than follow it."""
    import io

    shape, dtype, header = _header_bytes(io.BytesIO(data), where)
    _check(shape, dtype, len(data) - header, where)
