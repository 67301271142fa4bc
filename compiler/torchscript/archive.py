"""Reading a ``torch.jit.save`` archive: a zip with one top folder.

    model/version              the format version (a decimal number; .data/version first)
    model/byteorder            "little" or "big": ignored, as torch.jit.load ignores it
    model/data.pkl             the module object; tensors are persistent references
    model/data/<key>           the raw bytes of each storage of data.pkl
    model/constants.pkl        a tuple of the code's constants (CONSTANTS.c0, .c1...)
    model/constants/<key>      their storages
    model/code/__torch__/...py the TorchScript source of every class and function
    model/code/...py.debug_pkl source ranges (optional)

A torch.package archive holding TorchScript modules is read one module at a time, its
members seen as those above (``compiler.torchscript.package``).

The pickles go through ``compiler.torchscript.unpickle`` (no code runs).  A storage
stored uncompressed in the zip -- ``torch.jit.save`` writes them so, aligned -- is
memory-mapped copy-on-write from the file when it is large, so an archive bigger than
memory still loads; small or compressed ones are read into memory.

The records are read as torch's ``PyTorchStreamReader`` reads them: the version from
``.data/version`` when present, else ``version``, parsed as C's ``stoull`` does (leading
blanks, the leading digits), and refused outside 2..10 (torch 2.x reads at most 10); the
``byteorder`` record is not read by ``torch.jit.load`` (its storages are taken in the
machine's order, little-endian here), so it is not read here either, and irvm's answer is
torch's.

Bounds (``compiler.torchscript.limits``, ``docs/bounds.md``), each checked from the zip's
directory before a byte is inflated: the number of members, a member's inflated size
(pickles, code, records), its compression ratio (a member inflating past 1 MiB at more
than ``ratio`` to 1 is a zip bomb), the total source; a storage must fit its member and a
memory-mapped one the file.  Whatever zipfile or zlib raise on a damaged member (a bad
CRC, a truncated stream, a bad header) becomes one ``ArchiveError``: "damaged archive",
naming the member.
"""

from __future__ import annotations

import re
import struct
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

from compiler.torchscript.limits import RATIO_FLOOR, ReadLimits, current, over
from compiler.torchscript.package import Packaged, contents, is_package, select
from compiler.torchscript.quantized import restore_modules
from compiler.torchscript.unpickle import ArchiveError, Record, safe_loads

MAX_FORMAT_VERSION = 10  # torch's kMaxSupportedFileFormatVersion (caffe2/serialize/versions.h)
MIN_FORMAT_VERSION = 2  # older archives keep attributes.pkl, which irvm does not read
MEMMAP_BYTES = 1 << 20  # storages at least this big are memory-mapped
_LOCAL_HEADER = struct.Struct("<4s5H3I2H")  # a zip local file header (30 bytes)


def is_torchscript_archive(path: str | Path) -> bool:
    """True when ``path`` is a zip holding ``<top>/data.pkl`` and ``<top>/code/`` (a
    ``torch.jit.save`` file), or a torch.package holding TorchScript code
    (``<top>/.data/ts_code/code/``), whatever its extension."""
    try:
        if not zipfile.is_zipfile(path):
            return False
        with zipfile.ZipFile(path) as zf:
            names = zf.namelist()
    except Exception:  # noqa: BLE001 - a damaged zip of any kind is not an archive to compile (kinds.sniff names it)
        return False
    tops = {n.split("/", 1)[0] for n in names}
    if len(tops) == 1 and any(n.split("/", 1)[-1].startswith(".data/ts_code/code/") for n in names):
        return True
    return len(tops) == 1 and any(n.endswith("/data.pkl") and n.count("/") == 1 for n in names) and any(
        "/code/" in n for n in names
    )


class Archive:
    """An opened TorchScript archive: its pickles (safely loaded) and its code files."""

    def __init__(
        self, path: str | Path, limits: ReadLimits | None = None, module: str | None = None, listing: bool = False
    ) -> None:
        """``module``: in a torch.package archive, the TorchScript module to read
        (``compiler.torchscript.package``); an archive of ``torch.jit.save`` takes none.
        ``listing``: of a torch.package archive, only list what it holds (``self.contents``)."""
        self.path = Path(path)
        self.limits = limits or current()
        try:
            self.zip = zipfile.ZipFile(self.path)
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, ValueError, struct.error) as err:
            raise ArchiveError(f"{self.path}: damaged archive: not a readable zip file ({err})") from None
        infos = self.zip.infolist()
        if len(infos) > self.limits.members:
            raise ArchiveError(f"{self.path}: {over('the number of zip members', len(infos), 'members', self.limits.members)}")
        names = [i.filename for i in infos]
        tops = {n.split("/", 1)[0] for n in names}
        if len(tops) != 1:
            raise ArchiveError(f"{self.path}: not a TorchScript archive (expected one top folder, found {sorted(tops)[:5]})")
        self.top = tops.pop()
        self.members = {n[len(self.top) + 1 :]: n for n in names}
        self.contents: list[Packaged] | None = None
        if is_package(self.members) and listing:
            self.contents = contents(self.members, self.read)
            return
        if is_package(self.members):  # one TorchScript module of a torch.package, seen as an archive
            self.members = select(self.members, self.read, module, str(self.path))
        elif module is not None:
            raise ArchiveError(f"{self.path} is no torch.package archive: module={module!r} applies to those only")
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
        self._file = open(self.path, "rb")  # noqa: SIM115 - kept for the memory maps' lifetime
        self._size = self.path.stat().st_size

    def close(self) -> None:
        self._file.close()
        self.zip.close()

    def _read_version(self) -> int:
        """The format version as torch reads it (see the module docstring)."""
        member = ".data/version" if ".data/version" in self.members else "version"
        if member not in self.members:
            raise ArchiveError(f"{self.path}: the archive has no version record")
        if self.zip.getinfo(self.members[member]).file_size > 64:
            raise ArchiveError(f"{self.path}: {member}: the version record is longer than 64 bytes")
        raw = self.read(member)
        digits = re.match(rb"[ \t\n\v\f\r]*\+?(\d{1,20})", raw)
        if digits is None:
            raise ArchiveError(f"{self.path}: {member}: unreadable version record {raw[:20]!r}")
        version = int(digits.group(1))
        if version < MIN_FORMAT_VERSION:
            raise ArchiveError(f"{self.path}: archive format version {version} is too old (irvm reads 2 and later)")
        if version > MAX_FORMAT_VERSION:
            raise ArchiveError(
                f"{self.path}: archive format version {version} is newer than any torch writes "
                f"(torch reads at most {MAX_FORMAT_VERSION}, and so does irvm)"
            )
        return version

    # ------------------------------------------------------------------ members

    def read(self, member: str, limit: int | None = None) -> bytes:
        """The inflated bytes of ``member``, after checking its size (at most ``limit``,
        by default ``member_bytes``) and compression ratio from the zip's directory."""
        name = self.members.get(member)
        if name is None:
            raise ArchiveError(f"{self.path}: the archive has no {member}")
        info = self.zip.getinfo(name)
        limit = self.limits.member_bytes if limit is None else limit
        if info.file_size > limit:
            raise ArchiveError(f"{self.path}: {member}: {over('its inflated size', info.file_size, 'member_bytes', limit)}")
        if info.compress_type != zipfile.ZIP_STORED and info.file_size > RATIO_FLOOR:
            ratio = info.file_size // max(info.compress_size, 1)
            if ratio > self.limits.ratio:
                raise ArchiveError(
                    f"{self.path}: {member}: a zip bomb? {over('its compression ratio', ratio, 'ratio', self.limits.ratio)}"
                )
        try:
            return self.zip.read(name)
        except Exception as err:  # noqa: BLE001 - zipfile and zlib raise many kinds on damaged bytes
            raise ArchiveError(f"{self.path}: damaged archive: member {member}: {type(err).__name__}: {err}") from None

    def code_files(self) -> dict[str, str]:
        """``code/__torch__/....py`` members (relative paths) -> their source text."""
        files: dict[str, str] = {}
        code = [m for m in sorted(self.members) if m.startswith("code/") and m.endswith(".py")]
        infos = [self.zip.getinfo(self.members[m]) for m in code]
        total = sum(i.file_size for i in infos)
        if total > self.limits.source_bytes:
            raise ArchiveError(f"{self.path}: {over('the size of its source (code/)', total, 'source_bytes', self.limits.source_bytes)}")
        squeezed = sum(i.compress_size for i in infos)
        if total > RATIO_FLOOR and total // max(squeezed, 1) > self.limits.ratio:  # many small bombs make a big one
            ratio = total // max(squeezed, 1)
            raise ArchiveError(f"{self.path}: code/: a zip bomb? {over('its compression ratio', ratio, 'ratio', self.limits.ratio)}")
        for member in code:
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
                data = self.read(member)  # a damaged zip member is a damaged archive
                try:
                    tables[member[: -len(".debug_pkl")]] = safe_loads(data, _no_storage, member, self.limits)
                except ArchiveError:
                    continue
        return tables

    def load_pickle(self, name: str) -> Any:
        """``data`` or ``constants``: the pickle ``name.pkl`` with storages from ``name/``."""
        member = f"{name}.pkl"
        if member not in self.members:
            if name == "constants":  # torch's stream reader needs it even when the code uses none
                raise ArchiveError(f"{self.path}: the archive has no constants.pkl (torch.jit.load refuses it: "
                                   "'PytorchStreamReader failed locating file constants.pkl')")
            return None
        cache: dict[str, np.ndarray] = {}

        def storage(dtype: str, key: str, numel: int) -> np.ndarray:
            if key not in cache:
                cache[key] = self._storage(f"{name}/{key}", dtype, numel)
            return cache[key]

        loaded = safe_loads(self.read(member), storage, f"{self.path}:{member}", self.limits)
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
        """The 1-d array of ``numel`` elements stored in ``member`` (little-endian, as
        torch.jit.load reads it), checked against the member's size before any read."""
        np_dtype = np.dtype("uint16" if dtype == "bfloat16" else dtype).newbyteorder("<")
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
        if info.compress_type == zipfile.ZIP_STORED and need >= MEMMAP_BYTES:
            offset = self._data_offset(info, member)
            if offset + need > self._size:
                raise ArchiveError(f"{self.path}: damaged archive: storage {member} runs past the end of the file")
            array = np.memmap(self._file, dtype=np_dtype, mode="c", offset=offset, shape=(numel,))
        else:  # a stored member is bounded by the file; a compressed one by the ratio
            array = np.frombuffer(self.read(member, limit=max(info.file_size, 1)), dtype=np_dtype, count=numel).copy()
        if dtype == "bfloat16":
            return (array.astype(np.uint32) << 16).view(np.float32)
        return array

    def _data_offset(self, info: zipfile.ZipInfo, member: str) -> int:
        """Where a member's bytes start: after its local header, name and extra field."""
        self._file.seek(info.header_offset)
        header = self._file.read(_LOCAL_HEADER.size)
        if len(header) < _LOCAL_HEADER.size or not header.startswith(b"PK\x03\x04"):
            raise ArchiveError(f"{self.path}: damaged archive: corrupt zip header for {member}")
        fields = _LOCAL_HEADER.unpack(header)
        name_len, extra_len = fields[-2], fields[-1]
        return info.header_offset + _LOCAL_HEADER.size + name_len + extra_len


def _no_storage(dtype: str, key: str, numel: int) -> np.ndarray:
    raise ArchiveError(f"a debug pickle refers to storage {key}")


def _native(dtype: str) -> str:
    return "float32" if dtype == "bfloat16" else dtype
