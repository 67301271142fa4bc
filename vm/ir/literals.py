"""Literal syntax shared by the parser and the printer: floats, strings, tensor literals.

PyTorch prints attribute payloads with C++ conventions, and irvm must read and write them
back identically:

- a float is printed like ``IValue::repr``: an integral value below 1e10 as ``1.``,
  ``-0.``, ``100.``; anything else with 17 significant digits (``0.10000000000000001``,
  ``1e+20``, ``inf``, ``nan``);
- a string is printed by ``c10::printQuotedString``: C escapes for quotes, backslash and
  control characters, and every other non-printable byte of its UTF-8 encoding as a
  backslash and three characters computed from a *signed* char in base 8 (so ``é`` prints
  as ``\\0)+\\/.)``).  :func:`unquote` inverts that arithmetic exactly;
- a tensor constant is ``{2}`` (one element, printed with 6 significant digits),
  ``<Tensor>`` (too large to print), or the long form PyTorch's tensor printer gives with
  its newlines turned into spaces: `` 0.1000  0.2000 [ CPUFloatType{2} ]``.

``AnnotatedList``/``AnnotatedDict`` are a list/dict that remember the ``annotate(T, ...)``
wrapper they were printed with; they compare as plain lists/dicts.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from vm.core.types import SCALAR_TYPE_CODES
from vm.ir.graph import TensorLiteral

__all__ = [
    "AnnotatedDict",
    "AnnotatedList",
    "Opaque",
    "format_float",
    "format_tensor_literal",
    "quote",
    "unquote",
    "tensor_tag",
]


class AnnotatedList(list[Any]):
    """A list constant printed as ``annotate(List[int], [])``; ``annotation`` is ``List[int]``."""

    annotation: str

    def __init__(self, items: Iterable[Any] = (), annotation: str = "List[Any]") -> None:
        super().__init__(items)
        self.annotation = annotation


class AnnotatedDict(dict[Any, Any]):
    """A dict constant printed as ``annotate(Dict[str, int], {})``."""

    annotation: str

    def __init__(
        self, items: Mapping[Any, Any] | Iterable[tuple[Any, Any]] = (), annotation: str = "Dict[Any, Any]"
    ) -> None:
        super().__init__(items)
        self.annotation = annotation


class Opaque(str):
    """An attribute PyTorch prints without its content, such as ``<Graph>``."""


def format_float(value: float) -> str:
    """``value`` as PyTorch's IValue repr prints a double: ``1.``, ``-0.``, ``0.10000000000000001``."""
    if math.isfinite(value) and abs(value) < 1e10 and value == int(value):
        if value == 0 and math.copysign(1.0, value) < 0:
            return "-0."
        return f"{int(value)}."
    if math.isnan(value):
        return "nan"
    return format(value, ".17g")


_ESCAPES = {"\\": "\\\\", "'": "\\'", '"': '\\"', "\a": "\\a", "\b": "\\b", "\f": "\\f",
            "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}  # fmt: skip
_UNESCAPES = {v[1]: k for k, v in _ESCAPES.items()}
_PLAIN = re.compile(r"[\x20-\x7e]*")


def _signed_octal(byte: int) -> str:
    c = byte - 256 if byte > 127 else byte  # C++ char is signed
    digits = []
    for _ in range(2):
        digits.append(chr(48 + int(math.fmod(c, 8))))
        c = int(c / 8)  # C++ division truncates toward zero
    digits.append(chr(48 + c))
    return "\\" + "".join(reversed(digits))


def quote(text: str) -> str:
    """``text`` in double quotes, escaped exactly as ``c10::printQuotedString`` does."""
    if _PLAIN.fullmatch(text) and "\\" not in text and '"' not in text and "'" not in text:
        return f'"{text}"'
    out = []
    for byte in text.encode("utf-8", "surrogateescape"):
        ch = chr(byte)
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif 0x20 <= byte < 0x7F:
            out.append(ch)
        else:
            out.append(_signed_octal(byte))
    return '"' + "".join(out) + '"'


def unquote(literal: str) -> str:
    """The string a quoted literal denotes (the inverse of :func:`quote`).

    Raises ``ValueError`` naming the offset of a malformed escape.
    """
    body = literal[1:-1]
    if "\\" not in body:
        return body
    data = bytearray()
    i, n = 0, len(body)
    while i < n:
        ch = body[i]
        if ch != "\\":
            data += ch.encode("utf-8", "surrogateescape")
            i += 1
            continue
        nxt = body[i + 1] if i + 1 < n else ""
        if nxt in _UNESCAPES:
            data += _UNESCAPES[nxt].encode()
            i += 2
        elif len(body) >= i + 4 and all("(" <= c <= "7" for c in body[i + 1 : i + 4]):
            a, b, c = (ord(x) - 48 for x in body[i + 1 : i + 4])
            data.append((a * 64 + b * 8 + c) & 0xFF)
            i += 4
        else:
            raise ValueError(f"bad escape sequence \\{nxt} at offset {i + 1}")
    return data.decode("utf-8", "surrogateescape")


_TAG = re.compile(r"\[ *([A-Za-z0-9]+?)Type\{([0-9,]*)\}")
# longest first, so that "ComplexFloat" wins over "Float"
_DTYPES = sorted(SCALAR_TYPE_CODES, key=len, reverse=True)


def tensor_tag(tag: str) -> tuple[str | None, tuple[int, ...]]:
    """The dtype name and shape of ``[ CPUFloatType{2,3} ]``: ``("Float", (2, 3))``."""
    m = _TAG.match(tag)
    if m is None:
        return None, ()
    name, dims = m.group(1), m.group(2)
    dtype = next((d for d in _DTYPES if name.endswith(d)), None)
    shape = tuple(int(d) for d in dims.split(",") if d)
    return dtype, shape


def format_tensor_literal(lit: TensorLiteral) -> str:
    """The text of a tensor literal: its original text when parsed, else a synthesized form."""
    if lit.printed is not None:
        return lit.printed
    if lit.values is None:
        return "<Tensor>"
    if lit.shape is None and len(lit.values) == 1:
        v = lit.values[0]
        return "{" + (_short_number(v) if isinstance(v, float) else str(int(v))) + "}"
    shape = lit.shape if lit.shape is not None else (len(lit.values),)
    items = " ".join(_short_number(v) if isinstance(v, float) else str(int(v)) for v in lit.values)
    tag = f"[ CPU{lit.dtype or 'Float'}Type{{{','.join(str(d) for d in shape)}}} ]"
    return f"{items} {tag}" if items else tag


def _short_number(v: float) -> str:
    if math.isnan(v):
        return "nan"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:g}"
