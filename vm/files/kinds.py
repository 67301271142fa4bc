"""What a file on disk is, and whether irvm may write over it.

Every command that reads a program, inputs or weights asks ``sniff(path)`` first, so a
file of the wrong kind gets one sentence saying what it is and what to do with it,
instead of a parse error at a byte offset of a zip archive.  The kinds come from the
first bytes, never from the name:

    IRBC          a zip whose first member is ``irvm-bytecode`` (vm/program/irbc.py)
    NPZ           a zip of ``.npy`` members (numpy.savez)
    TORCHSCRIPT   a zip with ``<dir>/code/`` and ``<dir>/data.pkl`` (torch.jit.save)
    PACKAGE       a zip with ``<dir>/.data/extern_modules`` or ``<dir>/.data/ts_code/``
                  (torch.package.PackageExporter; its TorchScript modules run one by one)
    CHECKPOINT    a zip with ``data.pkl`` and no ``code/`` (torch.save), or a bare
                  pickle (torch.save with the legacy format, or pickle.dump)
    NPY           one numpy array (numpy.save)
    ONNX          an ONNX protobuf (``.onnx``)
    ZIP           any other zip
    DAMAGED_ZIP   starts as a zip but its directory cannot be read (truncated, corrupt)
    DIRECTORY, MISSING, TEXT (UTF-8), BINARY (anything else)

Files irvm writes carry a mark, and an existing file is replaced only when it has the
mark of the kind being written (or with ``--force``): an ``.npz`` of outputs or of a trace
has an entry ``__irvm__`` naming its role, a picture from ``irc viz`` has an ``irvm``
comment (SVG, DOT) or text chunk (PNG), bytecode has its magic member.
``check_writable`` is that rule; it checks the very path that will be written.
"""

from __future__ import annotations

import enum
import struct
import zipfile
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import BinaryIO

from vm.core.errors import IRError, RunError

MARK_KEY = "__irvm__"  # npz entry: a 0-d string naming what irvm wrote ("outputs", "trace")
PICTURE_MARK = "irvm viz"


class FileKind(enum.Enum):
    MISSING = "missing"
    DIRECTORY = "directory"
    IRBC = "irvm bytecode"
    NPZ = "numpy .npz archive"
    NPY = "numpy .npy array"
    TORCHSCRIPT = "TorchScript archive (torch.jit.save)"
    PACKAGE = "torch.package archive (torch.package.PackageExporter)"
    CHECKPOINT = "PyTorch checkpoint (torch.save)"
    ONNX = "ONNX model"
    ZIP = "zip archive"
    DAMAGED_ZIP = "damaged zip archive"
    TEXT = "text file"
    BINARY = "binary file"


def sniff(path: str | Path) -> FileKind:
    """The kind of ``path``, from its first bytes (see the module docstring)."""
    p = Path(path)
    if p.is_dir():
        return FileKind.DIRECTORY
    if not p.exists():
        return FileKind.MISSING
    with open(p, "rb") as f:
        head = f.read(4096)
    if head.startswith((b"PK\x03\x04", b"PK\x05\x06")):
        return _zip_kind(p)
    if head.startswith(b"\x93NUMPY"):
        return FileKind.NPY
    if len(head) >= 2 and head[0] == 0x80 and 2 <= head[1] <= 5:  # a pickle's PROTO opcode
        return FileKind.CHECKPOINT
    if head[:1] == b"\x08" and _onnx_fields(p):
        return FileKind.ONNX
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as err:
        if err.start < len(head) - 4:  # not merely a character cut at the 4096th byte
            return FileKind.BINARY
    return FileKind.TEXT if b"\x00" not in head else FileKind.BINARY


# ModelProto's field numbers (onnx.proto): ir_version 1, producer_name 2, producer_version 3,
# domain 4, model_version 5, doc_string 6, graph 7, opset_import 8, metadata_props 14,
# training_info 20, functions 25, configuration 26
_ONNX_FIELDS = {1, 2, 3, 4, 5, 6, 7, 8, 14, 20, 25, 26}


def _onnx_fields(p: Path) -> bool:
    """True when ``p`` reads as a protobuf ModelProto: every top-level field (up to 64 of
    them) is one of ModelProto's, with the right wire type, and one of them is the graph."""
    size = p.stat().st_size
    seen: set[int] = set()
    with open(p, "rb") as f:
        while f.tell() < size and len(seen) < 64:
            tag = _varint(f)
            if tag is None:
                return False
            field, wire = tag >> 3, tag & 7
            if field not in _ONNX_FIELDS or wire != (0 if field in (1, 5) else 2):
                return False
            value = _varint(f)
            if value is None:
                return False
            if wire == 2:
                if f.tell() + value > size:
                    return False
                f.seek(value, 1)
            seen.add(field)
    return 7 in seen and 1 in seen


def _varint(f: BinaryIO) -> int | None:
    result = shift = 0
    for _ in range(10):
        byte = f.read(1)
        if not byte:
            return None
        result |= (byte[0] & 0x7F) << shift
        if byte[0] < 0x80:
            return result
        shift += 7
    return None


MAGIC_MEMBER = "irvm-bytecode"  # the first member of every .irbc (vm/program/irbc.py), stored uncompressed
_MAGIC_PREFIX = b"PK\x03\x04"


def is_irbc(path: Path | str) -> bool:
    """True when ``path`` starts like an irvm bytecode file (whatever its name)."""
    try:
        with open(path, "rb") as f:
            return has_magic(f.read(30 + len(MAGIC_MEMBER)))
    except OSError:
        return False


def has_magic(data: bytes) -> bool:
    """True when ``data`` starts as an ``.irbc`` does: a zip whose first member, at byte 30,
    is named ``irvm-bytecode``."""
    return data.startswith(_MAGIC_PREFIX) and data[30 : 30 + len(MAGIC_MEMBER)] == MAGIC_MEMBER.encode()


def _zip_kind(p: Path) -> FileKind:
    if is_irbc(p):
        return FileKind.IRBC
    try:
        with zipfile.ZipFile(p) as zf:
            names = zf.namelist()
    except Exception:  # noqa: BLE001  (a damaged zip, whatever zipfile raises)
        return FileKind.DAMAGED_ZIP
    if any(n.split("/", 1)[-1] == ".data/extern_modules" or "/.data/ts_code/" in n for n in names):
        return FileKind.PACKAGE
    if any(n == "data.pkl" or n.endswith("/data.pkl") for n in names):
        code = any("/code/" in f"/{n}" for n in names)
        return FileKind.TORCHSCRIPT if code else FileKind.CHECKPOINT
    if names and all(n.endswith(".npy") for n in names):
        return FileKind.NPZ
    return FileKind.ZIP


SAVE_HINT = "torch.jit.save(torch.jit.script(model), 'model.pt')"  # what a user with torch runs; irvm runs the .pt

_ACCEPTED = {
    "program": {FileKind.TEXT, FileKind.BINARY, FileKind.IRBC, FileKind.TORCHSCRIPT, FileKind.PACKAGE, FileKind.MISSING},
    "inputs": {FileKind.NPZ, FileKind.NPY, FileKind.MISSING},
    "weights": {FileKind.NPZ, FileKind.MISSING},
}


def expect(path: str | Path, role: str) -> FileKind:
    """``sniff(path)`` when a file of that kind can serve as ``role`` (``program``,
    ``inputs``, ``weights``); else the error of ``refuse``.  A missing file passes, so that
    opening it reports it as unreadable (exit 66).  The one place where every command
    decides what a file given to it is."""
    kind = sniff(path)
    if kind not in _ACCEPTED[role]:
        raise refuse(path, kind, role)
    return kind


def refuse(path: str | Path, kind: FileKind, role: str) -> IRError:
    """The error for ``path`` of ``kind`` given where ``role`` (program, inputs, weights) was
    expected: an ``IRError`` for a program (exit 65), a ``RunError`` for inputs or weights."""
    name = str(path)
    what = f"{name} is {'an' if kind.value[0] in 'aeiouAEIOU' else 'a'} {kind.value}"
    if kind is FileKind.PACKAGE:
        todo = f"give it as the program with the module to run (`irvm info {name}` lists them)"
    elif kind is FileKind.TORCHSCRIPT:
        todo = f"it carries its own weights: give it as the program (`irvm run {name} --inputs IN.npz`, `vm.load({name!r})`)"
    elif kind is FileKind.CHECKPOINT:
        todo = ("it holds pickled tensors, which irvm does not read: save the weights with "
                "`numpy.savez('w.npz', **{k: v.numpy() for k, v in model.state_dict().items()})`, "
                f"or save the whole model with `{SAVE_HINT}` and run that .pt")
        if role == "program":
            todo = "a program is graph IR text, .irbc or a torch.jit.save archive; " + todo
    elif kind is FileKind.ONNX:
        todo = f"irvm runs TorchScript: save the PyTorch model with `{SAVE_HINT}` and run that .pt"
    elif kind is FileKind.DIRECTORY:
        todo = f"give a file as the {role}"
    elif kind is FileKind.DAMAGED_ZIP:
        todo = ("it starts as a zip (a .pt, .irbc or .npz) but its directory cannot be read: the file is "
                "truncated or corrupt; copy or save it again")
    elif kind is FileKind.NPY and role == "weights":
        todo = "weights are an .npz of dotted state_dict keys (numpy.savez)"
    elif role == "program":
        todo = "a program is graph IR text (.ir), irvm bytecode (.irbc) or a torch.jit.save archive (.pt)"
    else:
        todo = f"{role} are an .npz file (numpy.savez)"
    message = f"{what}, not {_article(role)}: {todo}"
    return IRError(message) if role == "program" else RunError(message)


def read_program_text(path: str | Path) -> str:
    """The IR text at ``path``; a file that is no program text (a TorchScript archive, an
    .npz, bytecode...) is refused with what it is, and text that is not UTF-8 is an
    ``IRSyntaxError`` at the first bad byte."""
    from vm.core.errors import IRSyntaxError, Span

    kind = expect(path, "program")
    if kind is FileKind.IRBC:
        raise IRError(f"{path} is irvm bytecode, not IR text: run it with `irvm run {path}`")
    if kind in (FileKind.TORCHSCRIPT, FileKind.PACKAGE):
        raise IRError(f"{path} is a TorchScript archive, not IR text: read it with "
                      f"`compiler.load_torchscript({str(path)!r})`, or run it with `irvm run {path}`")
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise IRSyntaxError("the file is not UTF-8 text (binary data?)", Span(str(path), line, col)) from None


def _article(role: str) -> str:
    return {"program": "a program", "inputs": "an inputs file", "weights": "a weights file"}.get(role, role)


# -- never destroying what the user made ----------------------------------------------------


def npz_target(path: str | Path) -> Path:
    """The path an .npz write really goes to: irvm writes exactly the name given (it opens
    the file itself, so numpy adds no ``.npz``)."""
    return Path(path)


def check_writable(out: Path, inputs: Sequence[Path], force: bool, kind: str) -> None:
    """Refuse to write ``out`` when it is one of ``inputs`` (even with ``force``), or when it
    exists and is not a file irvm made of ``kind`` (``irbc``; ``outputs``, ``trace``,
    ``weights``: an .npz with that ``__irvm__`` role, ``npz``: any role; ``viz``;
    ``chrome-trace``: the JSON ``irvm profile`` writes), unless ``force``.  Raises ``RunError`` with a one-line message."""
    for given in inputs:
        if given.exists() and out.exists() and out.resolve() == given.resolve():
            raise RunError(f"refusing to write {out}: it is an input of this command")
    if not out.exists() and not out.is_symlink():
        return
    if out.is_dir():
        raise RunError(f"refusing to write {out}: it is a directory")
    if force or is_ours(out, kind):
        return
    raise RunError(f"refusing to overwrite {out}: it exists and irvm did not write it as {kind} (use --force)")


def is_ours(path: Path, kind: str) -> bool:
    """True when ``path`` carries irvm's mark for ``kind``."""
    try:
        if kind == "irbc":
            return sniff(path) is FileKind.IRBC
        if kind in ("outputs", "trace", "weights"):
            return npz_mark(path) == kind
        if kind == "npz":  # any .npz irvm wrote, whatever its role
            return npz_mark(path) is not None
        if kind == "chrome-trace":
            return _chrome_trace_marked(path)
        if kind == "viz":
            return _picture_marked(path)
    except OSError:
        return False
    raise ValueError(f"unknown output kind {kind!r}")


def npz_mark(path: Path) -> str | None:
    """The role in an .npz's ``__irvm__`` entry, or None (no mark, or not an npz)."""
    if sniff(path) is not FileKind.NPZ:
        return None
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            if MARK_KEY not in data.files:
                return None
            return str(data[MARK_KEY])
    except Exception:  # noqa: BLE001  (a damaged archive, whatever numpy or zlib raise): not ours
        return None


def _chrome_trace_marked(path: Path) -> bool:
    """A Chrome trace ``irvm profile`` wrote: ``{"otherData": {"producer": "irvm profile"}, ...}``."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, UnicodeDecodeError):
        return False
    other = data.get("otherData") if isinstance(data, dict) else None
    return isinstance(other, dict) and other.get("producer") == "irvm profile"


# -- marking pictures -------------------------------------------------------------------


def mark_picture(path: Path) -> None:
    """Put irvm's mark into a picture just written (.svg, .dot, .png; others unchanged)."""
    from vm.files.atomic import atomic_write_bytes

    data = path.read_bytes()
    marked = marked_picture(data, path.suffix)
    if marked != data:
        atomic_write_bytes(path, marked)


def marked_picture(data: bytes, suffix: str) -> bytes:
    """``data`` (a picture: .svg, .dot, .png) with irvm's mark in it; others unchanged.
    Marking in memory lets a writer put the marked picture in place in one atomic write."""
    comment = f"<!-- {PICTURE_MARK} -->\n".encode()
    if data.startswith(b"\x89PNG\r\n\x1a\n"):
        return _png_with_text(data, "Software", PICTURE_MARK)
    if data.lstrip().startswith(b"<?xml"):
        end = data.index(b"?>") + 2
        return data[:end] + b"\n" + comment + data[end:].lstrip(b"\n")
    if data.lstrip().startswith(b"<"):
        return comment + data
    if suffix.lower() == ".dot" or data.lstrip().startswith((b"digraph", b"graph", b"strict")):
        return f"// {PICTURE_MARK}\n".encode() + data
    return data


def _picture_marked(path: Path) -> bool:
    with open(path, "rb") as f:
        head = f.read(512)
    if head.startswith(b"\x89PNG\r\n\x1a\n"):
        return b"tEXtSoftware\x00" + PICTURE_MARK.encode() in head
    return f"<!-- {PICTURE_MARK} -->".encode() in head or head.startswith(f"// {PICTURE_MARK}\n".encode())


def _png_with_text(data: bytes, key: str, text: str) -> bytes:
    """``data`` with a tEXt chunk after the IHDR chunk (PNG: 8-byte signature, then chunks
    of length, type, body, CRC of type+body)."""
    ihdr_end = 8 + 4 + 4 + struct.unpack(">I", data[8:12])[0] + 4
    body = key.encode("latin-1") + b"\x00" + text.encode("latin-1")
    chunk = struct.pack(">I", len(body)) + b"tEXt" + body + struct.pack(">I", zlib.crc32(b"tEXt" + body))
    return data[:ihdr_end] + chunk + data[ihdr_end:]


__all__ = ["MARK_KEY", "FileKind", "check_writable", "expect", "is_ours", "mark_picture", "marked_picture", "npz_mark", "refuse", "sniff"]
