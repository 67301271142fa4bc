"""Strings as TorchScript's builtins have them, and how every value renders as text.

``to_str`` is TorchScript's ``str()``, ``"{}".format()`` and ``print``: it writes a value
as PyTorch's C++ ``operator<<(ostream, IValue)`` does, which is not Python's ``repr``.
Strings inside containers print without quotes (``(1, a)``); a float that holds an
integer prints with a trailing dot (``2.``), any other float with 17 significant digits
(``0.10000000000000001``); tensors print in the C++ layout (``" 1.5000\\n[ CPUFloatType{1} ]"``,
see ``format_tensor``).

The string methods follow their C++ implementations where those differ from Python's:
``startswith``/``find``/``count`` take ``end=-1`` to mean the end of the string, not its
last character; ``rsplit`` splits on ``" "`` by default.  Where they agree, the kernel is
the Python method itself.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from vm.core.enum_values import EnumValue
from vm.ops.registry import kernel, register_op

# ---------------------------------------------------------------------------------------
# Rendering values


def format_float(d: float) -> str:
    """A double as IValue printing writes it: ``2.``, ``1.5``, ``1e+20``, ``0.10000000000000001``."""
    if math.isfinite(d) and d == math.floor(d) and abs(d) < 2.0**63:
        return f"{int(d)}."  # -0.0 prints as 0. too
    if math.isnan(d) and math.copysign(1.0, d) < 0:
        return "-nan"  # glibc's printf
    return f"{d:.17g}"


def to_str(value: Any) -> str:
    """TorchScript's ``str(value)``."""
    if value is None:
        return "None"
    if isinstance(value, bool):
        return "True" if value else "False"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return format_float(value)
    if isinstance(value, str):
        return value
    if isinstance(value, np.ndarray):
        return format_tensor(value)
    if isinstance(value, list):
        return "[" + ", ".join(to_str(v) for v in value) + "]"
    if isinstance(value, tuple):
        return "(" + ", ".join(to_str(v) for v in value) + (",)" if len(value) == 1 else ")")
    if isinstance(value, dict):
        return "{" + ", ".join(f"{to_str(_unkey(k))}: {to_str(v)}" for k, v in value.items()) + "}"
    if isinstance(value, EnumValue):
        return f"Enum<{value.qualname.rsplit('.', 1)[-1]}.{value.name}>"  # the class's unqualified name
    return str(value)


def _unkey(k: Any) -> Any:
    return getattr(k, "tensor", k)


# ---------------------------------------------------------------------------------------
# Tensors, as at::print (ATen/core/Formatting.cpp) lays them out

_TYPE_NAMES = {
    "bool": "Bool", "uint8": "Byte", "int8": "Char", "int16": "Short", "int32": "Int",
    "int64": "Long", "float16": "Half", "float32": "Float", "float64": "Double",
    "complex64": "ComplexFloat", "complex128": "ComplexDouble",
}  # fmt: skip


def _print_format(values: np.ndarray) -> tuple[float, int, str]:
    """(scale, field width, printf style) for a block of values, as ``__printFormat``."""
    finite = values[np.isfinite(values)]
    int_mode = bool(np.all(finite == np.ceil(finite)))
    exp_min = exp_max = 1.0
    if finite.size:
        magnitudes = np.abs(finite)
        lo, hi = float(magnitudes.min()), float(magnitudes.max())
        exp_min = math.floor(math.log10(lo)) + 1 if lo != 0 else 1
        exp_max = math.floor(math.log10(hi)) + 1 if hi != 0 else 1
    if int_mode:
        return (1.0, 11, "%.4e") if exp_max > 9 else (1.0, int(exp_max) + 1, "%g")
    if exp_max - exp_min > 4:
        return 1.0, (12 if abs(exp_max) > 99 or abs(exp_min) > 99 else 11), "%.4e"
    if exp_max > 5 or exp_max < 0:
        return 10.0 ** (exp_max - 1), 7, "%.4f"
    return 1.0, (7 if exp_max == 0 else int(exp_max) + 6), "%.4f"


def _shortest(v: float) -> str:
    """The shortest round-trip form, without a trailing ``.0``: ``0.1``, ``1e-05``, ``123456789``."""
    text = repr(float(v))
    return text[:-2] if text.endswith(".0") else text


def _scale_line(scale: float) -> str:
    return f"{_shortest(scale)} *\n"


def _cell(style: str, width: int, v: float) -> str:
    return (style % v).rjust(width)


def _print_matrix(m: np.ndarray, indent: int, linesize: int = 80) -> str:
    scale, width, style = _print_format(m)
    out: list[str] = []
    per_line = max((linesize - indent) // (width + 1), 1)
    rows, cols = m.shape
    first = 0
    while first < cols:
        last = min(first + per_line, cols) - 1
        if per_line < cols:
            if first != 0:
                out.append("\n")
            out.append(f"Columns {first + 1} to {last + 1}" + " " * indent)
        if scale != 1:
            out.append(_scale_line(scale) + " " * indent)
        for r in range(rows):
            for c in range(first, last + 1):
                out.append(_cell(style, width, m[r, c] / scale))
                if c == last:
                    out.append("\n")
                    if r != rows - 1:
                        out.append(" " * indent + (" " if scale != 1 else ""))
                else:
                    out.append(" ")
        first = last + 1
    return "".join(out)


def format_tensor(t: np.ndarray) -> str:
    """A tensor as TorchScript's print writes it, ending in ``[ CPUFloatType{2,3} ]``."""
    dtype_name: str = t.dtype.name
    name = "CPU" + _TYPE_NAMES.get(dtype_name, dtype_name) + "Type"
    values = t.astype(np.float64) if t.dtype.kind != "c" else t
    dims = ",".join(str(s) for s in t.shape)
    if t.ndim == 0:
        return f"{_shortest(float(values))}\n[ {name}{{}} ]"
    body = ""
    if t.size and t.ndim == 1:
        scale, width, style = _print_format(values)
        body = _scale_line(scale) if scale != 1 else ""
        body += "".join(_cell(style, width, v / scale) + "\n" for v in values)
    elif t.size and t.ndim == 2:
        body = _print_matrix(values, 0)
    elif t.size:
        blocks = []
        lead = t.shape[:-2]
        for flat in range(int(np.prod(lead))):
            index, rest = [], flat
            for size in lead:  # the first index varies fastest, as PyTorch counts
                index.append(rest % size)
                rest //= size
            head = "(" + "".join(f"{i + 1}," for i in index) + ".,.) = \n"
            blocks.append(head + _print_matrix(values[tuple(index)], 1))
        body = "\n".join(blocks)
    return f"{body}[ {name}{{{dims}}} ]"


# ---------------------------------------------------------------------------------------
# str, format, and the string methods


@kernel("aten::str(t elem) -> str")
def str_(elem: Any) -> str:
    return to_str(elem)


@kernel("aten::format(str self, ...) -> str")
def format_(fmt: str, *args: Any) -> str:
    """``"{} and {}".format(a, b)``: each ``{}`` takes the next argument; extras are ignored."""
    out, begin, used = [], 0, 0
    while True:
        loc = fmt.find("{}", begin)
        if loc < 0:
            out.append(fmt[begin:])
            return "".join(out)
        out.append(fmt[begin:loc])
        if used >= len(args):
            raise RuntimeError(f"Too few arguments for format string: {fmt}")
        out.append(to_str(args[used]))
        used += 1
        begin = loc + 2


@kernel("aten::percentFormat(str self, ...) -> str")
def percent_format(fmt: str, *args: Any) -> str:
    """``"%d of %s" % (n, name)``, as TorchScript's ``percentFormat`` does it: the operand is
    one value or a tuple of them; ``%s`` is ``str()``, ``%d``/``%i`` a number truncated
    (a float through a C ``int``: beyond int32, or nan, gives -2147483648), ``%f``/``%e``/``%E``
    a number printed as a float32 is, ``%c`` an int's byte or a one-character string, ``%%``
    a percent; any other specifier, a missing or an extra argument raise torch's errors."""
    values = list(args[0]) if len(args) == 1 and isinstance(args[0], tuple) else list(args)
    out, used, i = [], 0, 0
    while i < len(fmt):
        loc = fmt.find("%", i)
        if loc < 0:
            out.append(fmt[i:])
            break
        out.append(fmt[i:loc])
        if loc + 1 >= len(fmt):
            raise RuntimeError("Incomplete format specifier")
        spec = fmt[loc + 1]
        i = loc + 2
        if spec == "%":
            out.append("%")
            continue
        if spec not in "dis" + "feE" + "c":
            raise RuntimeError(f"The specifier %{spec} is not supported in TorchScript format strings")
        if used >= len(values):
            raise RuntimeError("Too few arguments for format string")
        out.append(_percent_one(spec, values[used]))
        used += 1
    if used < len(values):
        raise RuntimeError("Too many arguments for format string")
    return "".join(out)


_KIND_NAMES = {str: "String", float: "Double", bool: "Bool", list: "List", tuple: "Tuple", dict: "GenericDict"}


def _percent_one(spec: str, value: Any) -> str:
    if spec == "s":
        return to_str(value)
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    if spec in "di":
        if not number:
            raise RuntimeError(f"%{spec} requires a number for formatting, but got {_kind_name(value)}")
        if isinstance(value, float):
            return str(int(value) if math.isfinite(value) and -(2**31) <= int(value) < 2**31 else -(2**31))
        return str(value)
    if spec in "feE":
        if not number:
            raise RuntimeError(f"%{spec} requires a number for formatting, but got {_kind_name(value)}")
        return ("%" + spec) % float(np.float32(value))
    if isinstance(value, int) and not isinstance(value, bool):
        if value & 0xFF >= 0x80:  # torch makes a one-byte string that is no UTF-8 text
            raise RuntimeError(f"%c of {value} gives the byte {value & 0xFF:#x}, which is not UTF-8 text")
        return chr(value & 0xFF)
    if isinstance(value, str) and len(value) == 1:
        return value
    raise RuntimeError(f"%c requires an int or char for formatting, but got {_kind_name(value)}")


def _kind_name(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return "Tensor"
    return _KIND_NAMES.get(type(value), type(value).__name__)


@kernel("aten::add.str(str a, str b) -> str")
def add_str(a: str, b: str) -> str:
    return a + b


@kernel("aten::len.str(str s) -> int")
def len_str(s: str) -> int:
    return len(s)


@kernel("aten::list(str t) -> str[]")
def list_str(t: str) -> list[str]:
    return list(t)


@kernel("aten::__getitem__.str(str s, int index) -> str")
def getitem_str(s: str, index: int) -> str:
    if not -len(s) <= index < len(s):
        raise IndexError("string index out of range")
    return s[index]


@kernel("prim::StringIndex(str string, int index) -> str")
def string_index(s: str, index: int) -> str:
    return getitem_str(s, index)


@kernel("aten::slice.str(str string, int? start=None, int? end=None, int step=1) -> str")
def slice_str(s: str, start: int | None, end: int | None, step: int) -> str:
    if step == 0:
        raise ValueError("slice step cannot be zero")
    return s[start:end:step]


@kernel("aten::join(str self, str[] values) -> str")
def join(sep: str, values: list[str]) -> str:
    return sep.join(values)


@kernel("aten::split.str(str self, str? separator=None, int max=-1) -> str[]")
def split_str(s: str, separator: str | None, max: int) -> list[str]:
    if separator == "":
        raise ValueError("empty separator")
    return s.split(separator, max)


@kernel('aten::rsplit(str self, str separator=" ", int max=-1) -> str[]')
def rsplit(s: str, separator: str, max: int) -> list[str]:
    return s.rsplit(separator, max)


@kernel('aten::replace(str self, str old, str new, int max=-1) -> str')
def replace(s: str, old: str, new: str, max: int) -> str:
    return s.replace(old, new, max)


def _window(s: str, start: int, end: int, empty_if_reversed: bool = False) -> tuple[str, int]:
    """The part of ``s`` the C++ string methods look at: negative bounds count from the end
    (``end=-1`` is the end itself), a start past the end raises as ``std::string::substr``
    does, and an end before the start means "to the end" (a negative ``size_t`` count), or
    nothing at all for find/count, which test ``end > start`` first."""
    n = len(s)
    if start < 0:
        start = max(0, start + n)
    if end < 0:
        end = max(0, end + n + 1)
    if empty_if_reversed and end <= start:
        return "", start
    if start > n:
        raise IndexError(f"basic_string::substr: __pos (which is {start}) > this->size() (which is {n})")
    return (s[start:end] if end >= start else s[start:]), start


@kernel("aten::startswith(str self, str substr, int start=0, int end=-1) -> bool")
def startswith(s: str, substr: str, start: int, end: int) -> bool:
    return _window(s, start, end)[0].startswith(substr)


@kernel("aten::endswith(str self, str substr, int start=0, int end=-1) -> bool")
def endswith(s: str, substr: str, start: int, end: int) -> bool:
    return _window(s, start, end)[0].endswith(substr)


def _find(s: str, substr: str, start: int, end: int, reverse: bool) -> int:
    window, offset = _window(s, start, end, empty_if_reversed=True)
    pos = window.rfind(substr) if reverse else window.find(substr)
    return -1 if pos < 0 else pos + offset


@kernel("aten::find(str self, str substr, int start=0, int end=-1) -> int")
def find(s: str, substr: str, start: int, end: int) -> int:
    return _find(s, substr, start, end, False)


@kernel("aten::rfind(str self, str substr, int start=0, int end=-1) -> int")
def rfind(s: str, substr: str, start: int, end: int) -> int:
    return _find(s, substr, start, end, True)


@kernel("aten::index.str(str self, str substr, int start=0, int end=-1) -> int")
def index_str(s: str, substr: str, start: int, end: int) -> int:
    pos = _find(s, substr, start, end, False)
    if pos < 0:
        raise ValueError("substring not found")
    return pos


@kernel("aten::rindex(str self, str substr, int start=0, int end=-1) -> int")
def rindex_str(s: str, substr: str, start: int, end: int) -> int:
    pos = _find(s, substr, start, end, True)
    if pos < 0:
        raise ValueError("substring not found")
    return pos


@kernel("aten::count(str self, str substr, int start=0, int end=-1) -> int")
def count_str(s: str, substr: str, start: int, end: int) -> int:
    """Non-overlapping matches that *begin* in [start, end) (a match may run past ``end``)."""
    n = len(s)
    start = max(0, start + n) if start < 0 else start
    end = max(0, end + n + 1) if end < 0 else end
    if start > n:
        return 0
    found, pos = 0, start
    while (pos := s.find(substr, pos)) >= 0 and pos < end:
        found += 1
        pos += max(len(substr), 1)
    return found


for _name in ("strip", "lstrip", "rstrip"):  # the default is written as PyTorch prints it
    register_op(f'aten::{_name}(str self, str chars=" \\n\\t\\f\\v") -> str', getattr(str, _name))

# Methods whose C++ implementation agrees with Python's for these arguments.
_SAME_AS_PYTHON = {
    "aten::lower(str self) -> str": str.lower,
    "aten::upper(str self) -> str": str.upper,
    "aten::title(str self) -> str": str.title,
    "aten::capitalize(str self) -> str": str.capitalize,
    "aten::swapcase(str self) -> str": str.swapcase,
    "aten::isdigit(str self) -> bool": str.isdigit,
    "aten::isspace(str self) -> bool": str.isspace,
    "aten::isalpha(str self) -> bool": str.isalpha,
    "aten::isalnum(str self) -> bool": str.isalnum,
    "aten::islower(str self) -> bool": str.islower,
    "aten::isupper(str self) -> bool": str.isupper,
    "aten::istitle(str self) -> bool": str.istitle,
    "aten::isdecimal(str self) -> bool": str.isdecimal,
    "aten::isnumeric(str self) -> bool": str.isnumeric,
    "aten::isidentifier(str self) -> bool": str.isidentifier,
    "aten::isprintable(str self) -> bool": str.isprintable,
    'aten::center(str self, int width, str fillchar=" ") -> str': str.center,
    'aten::ljust(str self, int width, str fillchar=" ") -> str': str.ljust,
    'aten::rjust(str self, int width, str fillchar=" ") -> str': str.rjust,
    "aten::zfill(str self, int width) -> str": str.zfill,
    "aten::splitlines(str self, bool keepends=False) -> str[]": str.splitlines,
    "aten::partition(str self, str separator) -> (str, str, str)": str.partition,
    "aten::rpartition(str self, str separator) -> (str, str, str)": str.rpartition,
    "aten::expandtabs(str self, int tabsize=8) -> str": str.expandtabs,
    "aten::ord(str string) -> int": ord,
    "aten::chr(int i) -> str": chr,
    "aten::hex(int i) -> str": hex,
    "aten::oct(int i) -> str": oct,
    "aten::bin(int i) -> str": bin,
}
for _schema, _fn in _SAME_AS_PYTHON.items():
    register_op(_schema, _fn)


def _compare(name: str, op: Any) -> None:
    register_op(f"aten::{name}.str(str a, str b) -> bool", op)


_compare("eq", lambda a, b: a == b)
_compare("ne", lambda a, b: a != b)
_compare("lt", lambda a, b: a < b)
_compare("le", lambda a, b: a <= b)
_compare("gt", lambda a, b: a > b)
_compare("ge", lambda a, b: a >= b)
