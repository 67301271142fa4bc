"""Mutations of real inputs, for the fuzz campaign (tests/fuzz/test_mutations.py and
tools/fuzz_campaign.py).

A mutation is data: a list of ``(kind, a, b)`` edits, each applied in turn to IR text (or
to the bytes of an ``.irbc`` file), where ``a`` and ``b`` are non-negative integers that
the edit reduces modulo whatever it indexes (a token, a line, a byte, a JSON field).  So
hypothesis can draw and shrink edits as plain integers, and the long campaign can draw
the same edits from a seeded ``random.Random`` and replay any failure from its numbers.

IR edits work on tokens (``%names``, operator kinds, numbers, strings, punctuation), on
lines and on characters::

    delete / duplicate / swap a token, replace a number, a %name, a type or an operator
    by another one, drop / duplicate / swap a line, truncate the text, flip a character

``.irbc`` edits: flip a byte, truncate the file, and edit one field of ``program.json``
(a number, a string, a list entry) or one byte of an array member, then write the hash
again, as a careless editor would, so the loader's checks past the hash are reached.

``classify(fn)`` runs one attempt and says whether it ended well: a result, or one of
the project's own errors (``IRError`` and its families: ``IRSyntaxError``,
``IRValidationError``, ``CompileError``, ``BytecodeError``, ``RunError``).  Anything else
is an escape.
"""

from __future__ import annotations

import io
import json
import random
import re
import traceback
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from compiler.diagnostics import IRError
from tests.support.paths import CORPUS, DUMPS, EXAMPLES

__all__ = [
    "IRBC_EDITS",
    "IR_EDITS",
    "Escape",
    "apply_ir_edits",
    "apply_irbc_edits",
    "classify",
    "ir_seeds",
    "random_edits",
]


IR_EDITS = (
    "delete_token",
    "duplicate_token",
    "swap_tokens",
    "number",
    "name",
    "type_name",
    "kind",
    "drop_line",
    "duplicate_line",
    "swap_lines",
    "truncate",
    "flip_char",
)
IRBC_EDITS = ("flip_byte", "truncate", "json_field", "array_byte")

_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"'  # a string
    r"|%[A-Za-z0-9_.]+"  # a value
    r"|[A-Za-z_][A-Za-z0-9_]*::[A-Za-z_][A-Za-z0-9_]*"  # an operator kind
    r"|-?[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?"  # a number
    r"|[A-Za-z_][A-Za-z0-9_.]*"  # a name (types, keywords, attribute names)
    r"|->|\S"  # punctuation
)
_NUMBERS = ["0", "1", "-1", "2", "3", "-2", "1.5", "0.", "-0.5", "1e10", "9223372036854775807",
            "-9223372036854775808", "99999999999999999999", "1e400", "nan", "inf", "65536", "4:"]  # fmt: skip
_TYPES = ["Tensor", "int", "float", "bool", "str", "NoneType", "Device", "int[]", "Tensor[]", "float[]",
          "Tensor?", "int?", "(Tensor, int)", "Float(2, 3)", "Long()", "Float(*, *)", "Dict(str, Tensor)",
          "Tensr", "__torch__.M", "Scalar", "number", "Float(2, strides=[1], requires_grad=0, device=cpu)",
          "Float(0:)", "Long(1, requires_grad=0:)"]  # fmt: skip
_KINDS = ["aten::add", "aten::mul", "aten::relu", "prim::Constant", "prim::If", "prim::Loop",
          "prim::ListConstruct", "prim::TupleConstruct", "prim::TupleUnpack", "prim::ListUnpack",
          "prim::GetAttr", "prim::CallFunction", "prim::CallMethod", "prim::RaiseException",
          "aten::size", "aten::__getitem__", "prim::FusionGroup", "aten::linear", "prim::Uninitialized",
          "aten::append", "aten::add_", "prim::unchecked_cast", "aten::conv2d", "prim::DictConstruct"]  # fmt: skip


def _tokens(text: str) -> list[re.Match[str]]:
    return list(_TOKEN.finditer(text))


def _replace(text: str, m: re.Match[str], new: str) -> str:
    return text[: m.start()] + new + text[m.end() :]


def _pick(items: list[Any], k: int) -> Any:
    return items[k % len(items)]


def _edit_ir(text: str, kind: str, a: int, b: int) -> str:
    if kind in ("drop_line", "duplicate_line", "swap_lines"):
        lines = text.split("\n")
        i, j = a % len(lines), b % len(lines)
        if kind == "drop_line":
            del lines[i]
        elif kind == "duplicate_line":
            lines.insert(i, lines[i])
        else:
            lines[i], lines[j] = lines[j], lines[i]
        return "\n".join(lines)
    if kind == "truncate":
        return text[: a % (len(text) + 1)]
    if kind == "flip_char":
        if not text:
            return text
        i = a % len(text)
        return text[:i] + chr(32 + b % 95) + text[i + 1 :]
    toks = _tokens(text)
    if not toks:
        return text
    m = _pick(toks, a)
    if kind == "delete_token":
        return _replace(text, m, "")
    if kind == "duplicate_token":
        return _replace(text, m, m.group() + " " + m.group())
    if kind == "swap_tokens":
        n = _pick(toks, b)
        if n.start() < m.start():
            m, n = n, m
        if n.start() < m.end():
            return text
        return text[: m.start()] + n.group() + text[m.end() : n.start()] + m.group() + text[n.end() :]
    if kind == "number":
        nums = [t for t in toks if t.group()[0].isdigit() or t.group()[:2].lstrip("-")[:1].isdigit()]
        return _replace(text, _pick(nums, a), _pick(_NUMBERS, b)) if nums else text
    if kind == "name":
        names = [t for t in toks if t.group().startswith("%")]
        if not names:
            return text
        pool = sorted({t.group() for t in names}) + ["%fresh", "%0", "%self"]
        return _replace(text, _pick(names, a), _pick(pool, b))
    if kind == "type_name":
        # a type after ` : ` (an annotation), or any type-looking name
        spots = [t for t in toks if text[max(0, t.start() - 3) : t.start()] == " : "]
        if not spots:
            return text
        spot = _pick(spots, a)
        end = text.find("\n", spot.start())
        stop = min(x for x in (text.find(",", spot.start()), text.find(" =", spot.start()),
                               text.find(")", spot.start()), end if end >= 0 else len(text)) if x >= 0)  # fmt: skip
        return text[: spot.start()] + _pick(_TYPES, b) + text[stop:]
    if kind == "kind":
        kinds = [t for t in toks if "::" in t.group()]
        if not kinds:
            return text
        pool = sorted({t.group() for t in kinds}) + _KINDS
        return _replace(text, _pick(kinds, a), _pick(pool, b))
    raise ValueError(f"unknown IR edit {kind!r}")


def apply_ir_edits(text: str, edits: list[tuple[str, int, int]]) -> str:
    """``text`` after each edit in turn."""
    for kind, a, b in edits:
        text = _edit_ir(text, kind, a, b)
    return text


# ----------------------------------------------------------------------------- .irbc


def _rehash(members: list[tuple[str, bytes]], header: dict[str, Any]) -> bytes:
    from vm.program.irbc import MAGIC_MEMBER, _digest

    header = dict(header, sha256=_digest(members))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(zipfile.ZipInfo(MAGIC_MEMBER), json.dumps(header), compress_type=zipfile.ZIP_STORED)
        for name, data in members:
            zf.writestr(zipfile.ZipInfo(name), data, compress_type=zipfile.ZIP_DEFLATED)
    return buf.getvalue()


def _leaves(node: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Paths to every scalar (and every list, as a whole) inside a JSON document."""
    out: list[tuple[Any, ...]] = []
    stack = [(node, path)]
    while stack:
        value, where = stack.pop()
        if isinstance(value, dict):
            stack.extend((v, (*where, k)) for k, v in value.items())
        elif isinstance(value, list):
            out.append(where)
            stack.extend((v, (*where, i)) for i, v in enumerate(value))
        else:
            out.append(where)
    return out


_JSON_VALUES: list[Any] = [0, 1, -1, 2, 7, 1000, 2**40, -(2**63), 0.5, None, True, "", "x", "aten::add", [], [0],
                           [0, 0, 0], {}, {"npy": "arrays/0.npy"}, {"unbound": "w"}, {"irtype": "Tensr"}]  # fmt: skip


def _edit_json(doc: Any, a: int, b: int) -> Any:
    paths = _leaves(doc)
    if not paths:
        return doc
    path = _pick(paths, a)
    if not path:
        return _pick(_JSON_VALUES, b)
    parent = doc
    for key in path[:-1]:
        parent = parent[key]
    old = parent[path[-1]]
    if isinstance(old, int) and not isinstance(old, bool) and b % 3 == 0:
        new: Any = old + (b // 3) % 5 - 2  # off by a little: the hardest case for a checker
    elif isinstance(old, list) and old and b % 3 == 1:
        new = old[:-1]  # one entry short
    else:
        new = _pick(_JSON_VALUES, b)
    parent[path[-1]] = new
    return doc


def _edit_irbc(data: bytes, kind: str, a: int, b: int) -> bytes:
    if kind == "flip_byte":
        if not data:
            return data
        i = a % len(data)
        return data[:i] + bytes([data[i] ^ (1 + b % 255)]) + data[i + 1 :]
    if kind == "truncate":
        return data[: a % (len(data) + 1)]
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            names = zf.namelist()
            header = json.loads(zf.read(names[0]))
            members = [(n, zf.read(n)) for n in names[1:]]
    except Exception:
        return data
    if not isinstance(header, dict):
        return data
    if kind == "json_field":
        targets = [i for i, (n, _) in enumerate(members) if n.endswith(".json") or n == "source.ir"]
        if not targets:
            return data
        k = _pick(targets, b)
        name, raw = members[k]
        try:
            doc = json.loads(raw)
        except ValueError:
            return data
        members[k] = (name, json.dumps(_edit_json(doc, a, b // 7)).encode())
    elif kind == "array_byte":
        targets = [i for i, (n, _) in enumerate(members) if n.endswith(".npy")]
        if not targets:
            return data
        name, raw = members[_pick(targets, b)]
        i = a % max(len(raw), 1)
        edited = raw[:i] + bytes([raw[i] ^ (1 + b % 255)]) + raw[i + 1 :] if raw else raw
        members[_pick(targets, b)] = (name, edited)
    else:
        raise ValueError(f"unknown .irbc edit {kind!r}")
    return _rehash(members, header)


def apply_irbc_edits(data: bytes, edits: list[tuple[str, int, int]]) -> bytes:
    """The bytes of an ``.irbc`` file after each edit in turn."""
    for kind, a, b in edits:
        data = _edit_irbc(data, kind, a, b)
    return data


# ----------------------------------------------------------------------------- seeds and runs


def ir_seeds() -> list[Path]:
    """The real dumps the campaign mutates: the corpus, the parser's dumps, the examples."""
    files = [*sorted(CORPUS.glob("*.ir")), *sorted(DUMPS.glob("*.ir")), *sorted(EXAMPLES.glob("*.ir"))]
    return [f for f in files if f.stat().st_size < 200_000]


def random_edits(rng: random.Random, kinds: tuple[str, ...], most: int = 3) -> list[tuple[str, int, int]]:
    """1..``most`` edits drawn from ``rng``, in the form hypothesis draws them."""
    return [(rng.choice(kinds), rng.randrange(1 << 20), rng.randrange(1 << 20)) for _ in range(rng.randint(1, most))]


class Escape(Exception):
    """An attempt ended in an exception that is not one of the project's own errors."""

    def __init__(self, error: BaseException):
        super().__init__(f"{type(error).__name__}: {error}")
        self.error = error
        self.trace = "".join(traceback.format_exception(type(error), error, error.__traceback__))


def classify(fn: Callable[[], Any]) -> str:
    """``"ok"`` or ``"error"`` (an ``IRError``); raises ``Escape`` for anything else."""
    try:
        fn()
    except IRError:
        return "error"
    except RecursionError as err:  # a Python recursion limit is an internal failure too
        raise Escape(err) from err
    except Exception as err:
        raise Escape(err) from err
    return "ok"
