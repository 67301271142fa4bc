"""Hostile and damaged ``.pt`` archives, built by hand (no torch): the reproducers of issue
#25's table, and the seeds and mutations of the archive fuzz campaign.

An archive is the zip ``torch.jit.save`` writes (``compiler/torchscript/archive.py``):
``top/version``, ``top/data.pkl`` (a module object, pickled with the opcodes torch's C++
pickler uses), ``top/data/<key>`` (storages), ``top/code/__torch__.py`` (the source).  The
pickle is spelled opcode by opcode (``P``) so that a test can write what Python's pickler
never would: a list holding itself, 100,000 nested lists, a stride of 2^70.
"""

from __future__ import annotations

import io
import random
import struct
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

SOURCE = """class M(Module):
  __parameters__ = ["w", ]
  __buffers__ = []
  training : bool
  w : Tensor
  def forward(self: __torch__.M,
    x: Tensor) -> Tensor:
    w = self.w
    return torch.add(x, w)
"""


class P:
    """Pickle opcodes as bytes (protocol 2, as torch writes)."""

    @staticmethod
    def glob(module: str, name: str) -> bytes:
        return b"c" + module.encode() + b"\n" + name.encode() + b"\n"

    @staticmethod
    def str_(text: str) -> bytes:
        data = text.encode()
        return b"X" + struct.pack("<I", len(data)) + data

    @staticmethod
    def int_(n: int) -> bytes:
        if -(1 << 31) <= n < 1 << 31:
            return b"J" + struct.pack("<i", n)
        data = n.to_bytes((n.bit_length() + 8) // 8, "little", signed=True)
        return b"\x8b" + struct.pack("<I", len(data)) + data  # LONG4

    @staticmethod
    def tuple_(*items: bytes) -> bytes:
        return b"(" + b"".join(items) + b"t"

    @staticmethod
    def list_(*items: bytes) -> bytes:
        return b"]" + (b"(" + b"".join(items) + b"e" if items else b"")

    @staticmethod
    def tensor(key: str, numel: int, size: Iterable[int], stride: Iterable[int], offset: int = 0,
               storage: str = "FloatStorage") -> bytes:
        pid = P.tuple_(P.str_("storage"), P.glob("torch", storage), P.str_(key), P.str_("cpu"), P.int_(numel))
        args = P.tuple_(
            pid + b"Q", P.int_(offset), P.tuple_(*map(P.int_, size)), P.tuple_(*map(P.int_, stride)),
            b"\x89", P.glob("collections", "OrderedDict") + b")R",
        )
        return P.glob("torch._utils", "_rebuild_tensor_v2") + args + b"R"

    @staticmethod
    def module(qualname: str, attributes: dict[str, bytes], put: int | None = None) -> bytes:
        module, _, name = qualname.rpartition(".")
        head = P.glob(module, name) + b")\x81" + (b"r" + struct.pack("<I", put) if put is not None else b"")
        items = b"".join(P.str_(k) + v for k, v in attributes.items())
        return head + b"}(" + items + b"ub"

    @staticmethod
    def whole(body: bytes) -> bytes:
        return b"\x80\x02" + body + b"."


def weight(numel: int = 3, size: Iterable[int] = (3,), stride: Iterable[int] = (1,), offset: int = 0) -> bytes:
    return P.tensor("0", numel, size, stride, offset)


def data_pkl(w: bytes | None = None, extra: dict[str, bytes] | None = None, put: int | None = None) -> bytes:
    attributes = {"training": b"\x89", "w": weight() if w is None else w, **(extra or {})}
    return P.whole(P.module("__torch__.M", attributes, put))


def build(
    path: Path,
    pkl: bytes | None = None,
    *,
    source: str = SOURCE,
    storages: dict[str, bytes] | None = None,
    records: dict[str, bytes] | None = None,
    compressed: Iterable[str] = (),
) -> Path:
    """Write an archive ``m/...`` to ``path``: ``pkl`` as data.pkl (default: a module
    with a 3-float weight ``w`` of 1, 2, 3), the storages, the source, and any extra or
    replaced records (``version``, ``byteorder``...).  Members named in ``compressed``
    are deflated (torch stores them all)."""
    members: dict[str, bytes] = {
        "version": b"3\n",
        "data.pkl": data_pkl() if pkl is None else pkl,
        "code/__torch__.py": source.encode(),
        "constants.pkl": P.whole(b")"),
        "byteorder": b"little",
    }
    for key, raw in (storages if storages is not None else {"0": np.arange(1, 4, dtype="<f4").tobytes()}).items():
        members[f"data/{key}"] = raw
    members.update(records or {})
    squeeze = set(compressed)
    with zipfile.ZipFile(path, "w") as zf:
        for name, raw in members.items():
            kind = zipfile.ZIP_DEFLATED if name in squeeze else zipfile.ZIP_STORED
            zf.writestr(f"m/{name}", raw, compress_type=kind)
    return path


def self_list() -> bytes:
    """A list attribute that contains itself: ``l = []; l.append(l)``."""
    return data_pkl(extra={"l": b"]r\x07\x00\x00\x00h\x07a"})


def self_module() -> bytes:
    """A module that is its own attribute (memo 9 is the module being built)."""
    return data_pkl(extra={"me": b"j\x09\x00\x00\x00"}, put=9)


def deep_list(depth: int = 100_000) -> bytes:
    """A list nested ``depth`` deep: ``[[[...]]]``."""
    return data_pkl(extra={"deep": b"]" * depth + b"a" * (depth - 1)})


def shared_lists(levels: int = 60) -> bytes:
    """``levels`` lists, each holding the previous one twice: 2^levels paths, 60 lists."""
    body = b"]r\x00\x00\x00\x00"
    for i in range(1, levels):
        body += b"0](j" + struct.pack("<I", i - 1) + b"j" + struct.pack("<I", i - 1) + b"er" + struct.pack("<I", i)
    return data_pkl(extra={"fan": body})


def build_storage_type() -> bytes:
    """BUILD on a storage type, changing its dtype to a datetime."""
    evil = P.glob("torch", "FloatStorage") + b"}(" + P.str_("dtype") + P.str_("M8[s]") + b"ub"
    return data_pkl(extra={"evil": evil})


def long_expression(terms: int = 50_000) -> str:
    return SOURCE.replace("torch.add(x, w)", " + ".join(["x"] * terms))


def big_list_literal(n: int = 300_000) -> str:
    body = ", ".join(["1"] * n)
    return SOURCE.replace("    return torch.add(x, w)", f"    a = [{body}]\n    return torch.add(x, w)")


def truncate(data: bytes, keep: int) -> bytes:
    return data[:keep]


def flip_crc(path: Path, member: str) -> None:
    """Corrupt one byte inside ``member``'s stored data (so its CRC no longer matches)."""
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(member)
    raw = bytearray(path.read_bytes())
    start = info.header_offset + 30 + len(info.filename.encode()) + len(info.extra)
    raw[start + info.compress_size // 2] ^= 0xFF
    path.write_bytes(bytes(raw))


# -- the campaign's mutations ------------------------------------------------------------------

Mutation = Callable[[random.Random, dict[str, bytes]], None]


def _flip_bytes(rng: random.Random, members: dict[str, bytes]) -> None:
    name = rng.choice(sorted(members))
    data = bytearray(members[name])
    for _ in range(rng.randint(1, 4)):
        if data:
            data[rng.randrange(len(data))] = rng.randrange(256)
    members[name] = bytes(data)


def _cut(rng: random.Random, members: dict[str, bytes]) -> None:
    name = rng.choice(sorted(members))
    members[name] = members[name][: rng.randrange(len(members[name]) + 1)]


def _pickle_opcode(rng: random.Random, members: dict[str, bytes]) -> None:
    """Insert, delete or replace one opcode-sized run of data.pkl with a pickle opcode."""
    data = members.get("data.pkl", b"")
    at = rng.randrange(len(data) + 1)
    op = bytes([rng.choice(b"()]}aeltubRQhjqrN\x81\x85\x86\x87\x88\x89\x8a\x8b\x8c\x94\x95K")])
    arg = bytes(rng.randrange(256) for _ in range(rng.choice((0, 1, 4))))
    span = rng.choice((0, 1, 2, 5))
    members["data.pkl"] = data[:at] + op + arg + data[at + span :]


def _storage_numbers(rng: random.Random, members: dict[str, bytes]) -> None:
    """Replace one integer of data.pkl (a size, stride, offset or numel) by a hostile one."""
    data = members.get("data.pkl", b"")
    spots = [i for i in range(len(data) - 4) if data[i] == ord("J")]
    if not spots:
        return
    at = rng.choice(spots)
    value = rng.choice((0, -1, 2**31 - 1, 32768, 3, 2**70, -(2**63)))
    members["data.pkl"] = data[:at] + P.int_(value) + data[at + 5 :]


def _storage_bytes(rng: random.Random, members: dict[str, bytes]) -> None:
    keys = [k for k in members if k.startswith("data/")]
    if keys:
        key = rng.choice(keys)
        members[key] = members[key][: rng.randrange(len(members[key]) + 1)]


def _source_edit(rng: random.Random, members: dict[str, bytes]) -> None:
    text = members.get("code/__torch__.py", b"").decode("utf-8", "replace")
    pieces = ["(", ")", ":", "\n", "    ", "x", " + ", "[1, 2]", "self.w", "torch.add(", "def ", "return "]
    at = rng.randrange(len(text) + 1)
    members["code/__torch__.py"] = (text[:at] + rng.choice(pieces) + text[at + rng.randrange(3) :]).encode()


def _record(rng: random.Random, members: dict[str, bytes]) -> None:
    name = rng.choice(("version", "byteorder", "constants.pkl"))
    members[name] = rng.choice((b"", b"big", b"99", b"1" * 5000, b"\x80\x02.", b"-3", b"3abc", b"\x00"))


def _drop_member(rng: random.Random, members: dict[str, bytes]) -> None:
    members.pop(rng.choice(sorted(members)), None)


MEMBER_EDITS: tuple[Mutation, ...] = (
    _flip_bytes, _cut, _pickle_opcode, _pickle_opcode, _storage_numbers, _storage_bytes, _source_edit, _record,
    _drop_member,
)


def seed_members() -> list[dict[str, bytes]]:
    """The archives the campaign mutates, as member dicts (a plain module, a 2x3 weight
    seen transposed, a nested module with a list)."""
    plain = _members(data_pkl())
    transposed = _members(data_pkl(w=weight(6, (2, 3), (1, 2))), {"0": np.arange(6, dtype="<f4").tobytes()})
    inner = P.module("__torch__.N", {"training": b"\x89", "v": P.list_(P.int_(1), P.int_(2))})
    nested = _members(data_pkl(extra={"n": inner}))
    return [plain, transposed, nested]


def _members(pkl: bytes, storages: dict[str, bytes] | None = None) -> dict[str, bytes]:
    members = {"version": b"3\n", "data.pkl": pkl, "code/__torch__.py": SOURCE.encode(),
               "constants.pkl": P.whole(b")"), "byteorder": b"little"}
    for key, raw in (storages or {"0": np.arange(1, 4, dtype="<f4").tobytes()}).items():
        members[f"data/{key}"] = raw
    return members


def zip_bytes(members: dict[str, bytes], rng: random.Random | None = None) -> bytes:
    """The archive of ``members``; with ``rng``, some members deflated and, one time in
    six, the zip's own bytes damaged (a flipped byte in the directory, or cut short)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, raw in members.items():
            deflate = rng is not None and rng.random() < 0.3
            zf.writestr(f"m/{name}", raw, compress_type=zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED)
    data = buf.getvalue()
    if rng is not None and rng.random() < 1 / 6:
        raw = bytearray(data)
        if rng.random() < 0.5:
            raw[rng.randrange(len(raw))] ^= 1 << rng.randrange(8)
        else:
            del raw[rng.randrange(len(raw)) :]
        data = bytes(raw)
    return data


def mutant(rng: random.Random) -> bytes:
    """One archive mutant: a seed, 1-3 member edits, then maybe damage to the zip."""
    members = dict(rng.choice(seed_members()))
    for _ in range(rng.randint(1, 3)):
        rng.choice(MEMBER_EDITS)(rng, members)
    return zip_bytes(members, rng)


def attempt(data: bytes, scratch: Path) -> str:
    """Read, compile and run one archive as ``irvm run`` does: ``"ok"`` or ``"error"`` (one of
    irvm's errors); anything else raises ``tests.support.mutations.Escape``."""
    from tests.support.mutations import classify

    scratch.write_bytes(data)

    def run() -> None:
        import compiler.torchscript as ts
        from vm.files.kinds import expect
        from vm.interpreter.machine import Interpreter

        expect(scratch, "program")
        program, weights = ts.compile_archive(scratch)
        Interpreter(program, weights)(np.ones(3, np.float32))

    return classify(run)
