"""Reading a ``torch.jit.save`` archive: a zip with one top folder.

    model/version              the format version (a decimal number)
    model/byteorder            "little" or "big" (absent: little)
    model/data.pkl             the module object; tensors are persistent references
    model/data/<key>           the raw bytes of each storage of data.pkl
    model/constants.pkl        a tuple of the code's constants (CONSTANTS.c0, .c1...)
    model/constants/<key>      their storages
    model/code/__torch__/...py the TorchScript source of every class and function
    model/code/...py.debug_pkl source ranges (optional)

The pickles go through ``compiler.torchscript.unpickle`` (no code runs).  A storage
stored uncompressed in the zip -- ``torch.jit.save`` writes them so, aligned -- is
memory-mapped copy-on-write from the file when it is large, so an archive bigger than
memory still loads; small or compressed ones are read into memory.
"""

from __future__ import annotations

import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from compiler.torchscript.quantized import restore_modules
from compiler.torchscript.unpickle import ArchiveError, Record, safe_loads

MEMMAP_BYTES = 1 << 20  # storages at least this big are memory-mapped
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")  # a zip local file header (30 bytes)


def is_torchscript_archive(path: str | Path) -> bool:
    """True when ``path`` is a zip holding ``<top>/data.pkl`` and ``<top>/code/`` (a
    ``torch.jit.save`` file), whatever its extension."""
    try:
        if not zipfile.is_zipfile(path):
            return False
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except (OSError, zipfile.BadZipFile):
        return False
    tops = {n.split("/", 1)[0] for n in names}
    return len(tops) == 1 and any(n.endswith("/data.pkl") and n.count("/") == 1 for n in names) and any(
        "/code/" in n for n in names
    )


class Archive:
    """An opened TorchScript archive: its pickles (safely loaded) and its code files."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        try:
            self.zip = zipfile.ZipFile(self.path)
        except zipfile.BadZipFile as err:
            raise ArchiveError(f"{self.path}: not a TorchScript archive (not a zip file: {err})") from None
        names = self.zip.namelist()
        tops = {n.split("/", 1)[0] for n in names}
        if len(tops) != 1:
            raise ArchiveError(f"{self.path}: not a TorchScript archive (expected one top folder, found {sorted(tops)[:5]})")
        self.top = tops.pop()
        self.members = {n[len(self.top) + 1 :]: n for n in names}
        has_code = any(m.startswith("code/") for m in self.members)
        if "data.pkl" not in self.members or not has_code:
            if "attributes.pkl" in self.members:
                what = "a TorchScript archive of an old format (attributes.pkl) irvm does not read"
            elif not has_code:
                what = "a torch.save checkpoint (weights, no TorchScript code), not a TorchScript archive"
            else:
                what = "a TorchScript archive without data.pkl"
            raise ArchiveError(f"{self.path}: {what}; save the model with torch.jit.save")
        self.version = self._read_version()
        order = self.members.get("byteorder")
        self.big_endian = order is not None and self.zip.read(order).strip() == b"big"
        self._file = open(self.path, "rb")  # noqa: SIM115 - kept for the memory maps' lifetime

    def close(self) -> None:
        self._file.close()
        self.zip.close()

    def _read_version(self) -> int:
        name = self.members.get("version") or self.members.get(".data/version")
        if name is None:
            raise ArchiveError(f"{self.path}: the archive has no version record")
        text = self.zip.read(name).decode("ascii", "replace").strip()
        if not text.isdigit():
            raise ArchiveError(f"{self.path}: unreadable version record {text!r:.20}")
        version = int(text)
        if version < 2:
            raise ArchiveError(f"{self.path}: archive format version {version} is too old (irvm reads 2 and later)")
        return version

    # ------------------------------------------------------------------ members

    def read(self, member: str) -> bytes:
        name = self.members.get(member)
        if name is None:
            raise ArchiveError(f"{self.path}: the archive has no {member}")
        return self.zip.read(name)

    def code_files(self) -> dict[str, str]:
        """``code/__torch__/....py`` members (relative paths) -> their source text."""
        files: dict[str, str] = {}
        for member in sorted(self.members):
            if member.startswith("code/") and member.endswith(".py"):
                try:
                    files[member] = self.read(member).decode("utf-8")
                except UnicodeDecodeError:
                    raise ArchiveError(f"{self.path}: {member} is not UTF-8 text") from None
        return files

    def debug_tables(self) -> dict[str, Any]:
        """``code/...py`` -> its ``.debug_pkl`` contents (source ranges), where present and
        readable; a broken one is left out (it only improves error messages)."""
        tables: dict[str, Any] = {}
        for member in self.members:
            if member.startswith("code/") and member.endswith(".py.debug_pkl"):
                try:
                    tables[member[: -len(".debug_pkl")]] = safe_loads(self.read(member), _no_storage, member)
                except ArchiveError:
                    continue
        return tables

    def load_pickle(self, name: str) -> Any:
        """``data`` or ``constants``: the pickle ``name.pkl`` with storages from ``name/``."""
        member = f"{name}.pkl"
        if member not in self.members:
            return () if name == "constants" else None
        cache: dict[str, np.ndarray] = {}

        def storage(dtype: str, key: str, numel: int) -> np.ndarray:
            if key not in cache:
                cache[key] = self._storage(f"{name}/{key}", dtype, numel)
            return cache[key]

        loaded = safe_loads(self.read(member), storage, f"{self.path}:{member}")
        restore_modules(loaded)  # the __setstate__ of torch.ao's quantized conv modules
        return loaded

    def module(self) -> Record:
        root = self.load_pickle("data")
        if not isinstance(root, Record):
            raise ArchiveError(f"{self.path}: data.pkl holds {type(root).__name__}, not a module object")
        return root

    def constants(self) -> tuple[Any, ...]:
        table = self.load_pickle("constants")
        if not isinstance(table, tuple):
            raise ArchiveError(f"{self.path}: constants.pkl holds {type(table).__name__}, not a tuple")
        return table

    # ------------------------------------------------------------------ storages

    def _storage(self, member: str, dtype: str, numel: int) -> np.ndarray:
        """The 1-d array of ``numel`` elements stored in ``member``."""
        stored = "uint16" if dtype == "bfloat16" else dtype
        np_dtype = np.dtype(stored).newbyteorder(">" if self.big_endian else "<")
        if numel < 0:
            raise ArchiveError(f"{self.path}: storage {member} has a negative length")
        if numel == 0:
            return np.zeros(0, dtype=_native(dtype))
        name = self.members.get(member)
        if name is None:
            raise ArchiveError(f"{self.path}: the archive lacks storage {member}")
        info = self.zip.getinfo(name)
        need = numel * np_dtype.itemsize
        if info.file_size < need:
            raise ArchiveError(f"{self.path}: storage {member} holds {info.file_size} bytes, {need} needed")
        if info.compress_type == zipfile.ZIP_STORED and need >= MEMMAP_BYTES and not self.big_endian:
            offset = self._data_offset(info)
            array = np.memmap(self._file, dtype=np_dtype, mode="c", offset=offset, shape=(numel,))
        else:
            array = np.frombuffer(self.zip.read(name)[:need], dtype=np_dtype).copy()
        if dtype == "bfloat16":
            return (array.astype(np.uint32) << 16).view(np.float32)
        return array.astype(array.dtype.newbyteorder("=")) if self.big_endian else array

    def _data_offset(self, info: zipfile.ZipInfo) -> int:
        """Where a member's bytes start: after its local header, name and extra field."""
        self._file.seek(info.header_offset)
        header = self._file.read(_LOCAL_HEADER.size)
        fields = _LOCAL_HEADER.unpack(header)
        if fields[0] != b"PK\x03\x04":
            raise ArchiveError(f"{self.path}: corrupt zip header for {info.filename}")
        name_len, extra_len = fields[-2], fields[-1]
        return info.header_offset + _LOCAL_HEADER.size + name_len + extra_len


def _no_storage(dtype: str, key: str, numel: int) -> np.ndarray:
    raise ArchiveError(f"a debug pickle refers to storage {key}")


def _native(dtype: str) -> str:
    return "float32" if dtype == "bfloat16" else dtype
