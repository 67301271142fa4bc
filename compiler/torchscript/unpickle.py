"""A restricted unpickler for the pickles of a TorchScript archive.

A pickle is a program: its GLOBAL opcode names any importable callable and REDUCE calls
it, so loading an untrusted ``.pt`` with the stock ``pickle`` module runs whatever the
file says.  This unpickler resolves globals itself (``find_class``) from a closed table
of what ``torch.jit.save`` writes -- the same table PyTorch's C++ ``Unpickler::readGlobal``
accepts -- and refuses every other name with an ``ArchiveError`` naming it.  Nothing is
imported, and the only callables a pickle can reach are the small functions below:

- ``torch._utils._rebuild_tensor_v2(storage, offset, size, stride, ...)``: a numpy view of
  a storage, bounds-checked against the storage's length;
- ``torch.<Name>Storage``: a storage type, i.e. a numpy dtype;
- ``torch.jit._pickle.build_{int,double,bool,tensor}list`` and ``restore_type_tag``:
  identity on their first argument (they only tag a container's element type);
- ``collections.OrderedDict`` (a tensor's unused backward hooks), ``builtins.complex``,
  ``torch.device`` (a device string);
- ``__torch__.<qualified name>``: a module or class object, built as a ``Record`` (its
  qualified name and attribute dict), never as the class itself;
- quantized tensors (``torch._utils._rebuild_qtensor``, the ``QInt8``/``QUInt8``/``QInt32``
  storages, the qschemes) and torch's packed-parameter classes, which
  ``compiler.torchscript.quantized`` adds to the table (``allow_globals``).

Persistent ids ``('storage', dtype, key, location, numel)`` become numpy arrays through
the ``storage`` callback the archive reader supplies (memory-mapped where it can).

Bounds (``compiler.torchscript.limits``, ``docs/bounds.md``): the unpickler is Python's
opcode loop, never recursive; every opcode consumes at least one byte, so the stack and
the memo grow at most linearly in the member's size, which the archive reader bounds.
MARK nesting is bounded while reading, and the finished object graph is walked once,
iteratively (``check_graph``): a cycle, a depth over ``depth`` or more than ``entries``
leaf paths is refused before anything flattens or compiles it.  Any failure of the opcode
loop on damaged bytes (``struct.error`` of a truncated opcode, EOF, an unknown opcode, a
bad memo index) is one ``ArchiveError`` naming the member.

The table of globals, ``_GLOBALS``, maps ``(module, name)`` to the function that rebuilds
the value (and ``STORAGE_DTYPES`` the storage types): to read a new kind of value, add its
entry there; nothing else decides what a pickle may call.
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from compiler.diagnostics import IRError
from compiler.torchscript.limits import ReadLimits, current, over

if TYPE_CHECKING:
    from typing_extensions import Self  # typing.Self is Python 3.11+


class ArchiveError(IRError):
    """A ``.pt`` archive is malformed, unsafe, or uses a feature irvm does not read."""


class Record:
    """A TorchScript object from a pickle: its class's qualified name and its attributes.

    Module objects (``__torch__.M``) pickle as ``NEWOBJ`` of the class, then ``BUILD``
    with a dict of attribute values; a class with a custom ``__getstate__`` builds with
    any value, kept in ``state``.  An enum pickles as ``REDUCE`` with its value.
    """

    qualname = "__torch__.?"

    def __init__(self, *args: Any) -> None:  # REDUCE: an enum value, or a class built from args
        self.attributes: dict[str, Any] = {}
        self.state: Any = args[0] if len(args) == 1 else args or None

    def __new__(cls, *args: Any) -> Self:
        obj = super().__new__(cls)
        obj.attributes = {}
        obj.state = None
        return obj

    def __setstate__(self, state: Any) -> None:
        if isinstance(state, dict) and all(isinstance(k, str) for k in state):
            self.attributes = dict(state)
        else:
            self.state = state

    def __repr__(self) -> str:
        return f"<Record {self.qualname}: {sorted(self.attributes)}>"


_RECORD_TYPES: dict[str, type[Record]] = {}


def record_type(qualname: str) -> type[Record]:
    """The (cached) Record subclass standing for TorchScript class ``qualname``."""
    cls = _RECORD_TYPES.get(qualname)
    if cls is None:
        cls = type("Record", (Record,), {"qualname": qualname, "__slots__": ()})
        _RECORD_TYPES[qualname] = cls
    return cls


# Storage class names as torch.jit.save writes them, and their numpy dtypes.
# BFloat16 has no numpy dtype: it is read as uint16 and widened to float32.
STORAGE_DTYPES: dict[str, str] = {
    "FloatStorage": "float32",
    "DoubleStorage": "float64",
    "HalfStorage": "float16",
    "BFloat16Storage": "bfloat16",
    "LongStorage": "int64",
    "IntStorage": "int32",
    "ShortStorage": "int16",
    "CharStorage": "int8",
    "ByteStorage": "uint8",
    "BoolStorage": "bool",
    "ComplexFloatStorage": "complex64",
    "ComplexDoubleStorage": "complex128",
}


class StorageType:
    """What ``torch.FloatStorage`` unpickles to: the storage's element type."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.dtype = STORAGE_DTYPES[name]

    def __repr__(self) -> str:
        return f"torch.{self.name}"


INT64 = 1 << 63  # torch's sizes, strides and offsets are int64


def _rebuild_tensor(storage: Any, offset: Any, size: Any, stride: Any, *_rest: Any) -> np.ndarray:
    """A tensor as torch keeps it: a view of ``storage`` (a 1-d array), never a copy.
    ``size``/``stride``/``offset`` count elements; each is checked (exact Python integers,
    before numpy sees them) to be an int64 and to keep every element inside the storage,
    so a crafted archive can neither read past it nor make numpy overflow.  A view whose
    elements overlap (a stride of 0) is read-only, as torch refuses to write through one."""
    if not isinstance(storage, np.ndarray) or storage.ndim != 1:
        raise ArchiveError(f"a tensor refers to {type(storage).__name__}, not a storage")
    if not (_is_int_tuple(size) and _is_int_tuple(stride) and _is_int(offset)) or len(size) != len(stride):
        raise ArchiveError(f"malformed tensor: size {_brief(size)}, stride {_brief(stride)}, offset {_brief(offset)}")
    if any(not 0 <= v < INT64 for v in (offset, *size, *stride)):
        raise ArchiveError(
            f"malformed tensor: a size, stride or offset outside 0..2^63-1 ({_brief(size)}, {_brief(stride)}, {_brief(offset)})"
        )
    if len(size) > 64:  # numpy's (and torch's practical) bound on dimensions
        raise ArchiveError(f"malformed tensor: {len(size)} dimensions (at most 64)")
    numel = 0 if 0 in size else 1
    for n in size if numel else ():
        numel *= n
        if numel >= INT64:  # stop before the product grows: it is checked once per factor
            raise ArchiveError(f"malformed tensor: {_brief(size)} has 2^63 or more elements")
    if numel * storage.itemsize >= INT64:
        raise ArchiveError(f"malformed tensor: {_brief(size)} spans 2^63 or more bytes")
    if numel == 0:
        try:
            return storage[:0].reshape(size)
        except ValueError:  # numpy bounds even an empty array's other dimensions
            raise ArchiveError(f"malformed tensor: an empty tensor of size {_brief(size)}, too large for numpy") from None
    stride = tuple(s if n > 1 else 0 for n, s in zip(size, stride))  # a size-1 dimension's stride is never used
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= storage.shape[0]:
        raise ArchiveError(
            f"a tensor of size {list(size)} (stride {list(stride)}, offset {offset}) reaches element {last} "
            f"of a storage of {storage.shape[0]}"
        )
    if stride == _contiguous_strides(size) or not size:
        return storage[offset : offset + numel].reshape(size)
    item = storage.itemsize
    return np.lib.stride_tricks.as_strided(
        storage[offset : last + 1], shape=tuple(size), strides=tuple(s * item for s in stride),
        writeable=_non_overlapping(size, stride) and storage.flags.writeable,
    )


def _non_overlapping(size: Any, stride: Any) -> bool:
    """True when no two elements of the view share a storage element (each stride, taken
    in increasing order, steps past everything the smaller ones reach)."""
    reach = 0
    for s, n in sorted((s, n) for n, s in zip(size, stride) if n > 1):
        if s <= reach:
            return False
        reach += (n - 1) * s
    return True


def _brief(value: Any) -> str:
    """``repr(value)`` cut to 80 characters, also for an int beyond Python's digit limit
    or a container nested past the recursion limit."""
    try:
        text = repr(value)
    except (ValueError, RecursionError):
        text = f"<{type(value).__name__} too large to print>"
    return text if len(text) <= 80 else text[:77] + "..."


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _contiguous_strides(size: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(size):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def _is_int_tuple(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(_is_int(v) for v in value)


def _first(arg: Any, *_rest: Any) -> Any:
    return arg


def _empty_dict(*_args: Any) -> dict[Any, Any]:
    return {}


def _refuse_tensor_table(*_args: Any) -> Any:
    raise ArchiveError("this archive refers to a tensor table (an old TorchScript format irvm does not read)")


def _device(name: Any, *_rest: Any) -> str:
    if not isinstance(name, str):
        raise ArchiveError(f"torch.device of {type(name).__name__}, not a device name")
    return name


def _complex(real: Any, imag: Any = 0.0) -> complex:
    return complex(float(real), float(imag))


_GLOBALS: dict[tuple[str, str], Any] = {
    ("torch._utils", "_rebuild_tensor_v2"): _rebuild_tensor,
    ("torch.jit._pickle", "build_intlist"): _first,
    ("torch.jit._pickle", "build_doublelist"): _first,
    ("torch.jit._pickle", "build_boollist"): _first,
    ("torch.jit._pickle", "build_tensorlist"): _first,
    ("torch.jit._pickle", "restore_type_tag"): _first,
    ("torch.jit._pickle", "build_tensor_from_id"): _refuse_tensor_table,
    ("collections", "OrderedDict"): _empty_dict,
    ("builtins", "complex"): _complex,
    ("torch", "device"): _device,
}


def allow_globals(
    table: dict[tuple[str, str], Any], storages: dict[str, str], buildable: tuple[type, ...] = ()
) -> None:
    """Add ``(module, name) -> callable`` entries and storage types to the table, and classes a
    pickle may build and give a state (each defines ``__setstate__``); the quantized ones of
    ``compiler.torchscript.quantized`` register themselves so."""
    global BUILDABLE
    _GLOBALS.update(table)
    STORAGE_DTYPES.update(storages)
    BUILDABLE = BUILDABLE + tuple(c for c in buildable if c not in BUILDABLE)


_PY_UNPICKLER: Any = pickle._Unpickler  # whose opcode readers the overrides below call


def _allowed_call(func: Any) -> bool:
    """What REDUCE may call: a rebuild function of the table above, or a ``__torch__``
    class (an enum built from its value)."""
    return _is_record_type(func) or any(func is known for known in _GLOBALS.values())


# The classes whose objects a pickle may build (NEWOBJ/OBJ/INST) and give a state (BUILD):
# ``__torch__`` objects, including TorchScript custom classes (``__torch__.torch.classes.*``).
# A reader of a new kind of object adds its class here (it must define ``__setstate__``).
BUILDABLE: tuple[type, ...] = (Record,)


def _is_record_type(cls: Any) -> bool:
    return isinstance(cls, type) and issubclass(cls, BUILDABLE)


class SafeUnpickler(pickle._Unpickler):  # the Python one: iterative, and its opcodes are ours to restrict
    """``pickle.Unpickler`` whose globals come only from the table above (see the module
    docstring); ``storage(dtype, key, numel)`` supplies the arrays of persistent ids.

    Python's unpickler is a loop over opcodes (no recursion, whatever the nesting); on top
    of it: MARK nesting is bounded by ``limits.depth``; REDUCE calls only the table's
    functions and ``__torch__`` classes; NEWOBJ/OBJ/INST build only ``__torch__`` objects;
    BUILD gives a state only to a ``__torch__`` object (never to a storage type, an array,
    a dict...).  TorchScript pickles an enum value as ``GLOBAL cls; value; REDUCE`` with
    the bare value where Python's pickle wants an argument tuple, so REDUCE calls with a
    non-tuple argument as one argument (the C unpickler refuses it)."""

    dispatch: ClassVar[dict[int, Callable[..., None]]] = dict(pickle._Unpickler.dispatch)
    stack: list[Any]  # the working stack, which load() sets up
    metastack: list[list[Any]]
    append: Callable[[Any], None]

    def load_reduce(self) -> None:
        stack = self.stack
        args = stack.pop()
        func = stack[-1]
        if not _allowed_call(func):
            raise ArchiveError(f"{self._what}: REDUCE of {_brief(func)}, which is no rebuild function")
        try:
            stack[-1] = func(*args) if isinstance(args, tuple) else func(args)
        except ArchiveError as err:
            raise ArchiveError(f"{self._what}: {err.message}") from None

    def load_mark(self) -> None:
        if len(self.metastack) >= self._limits.depth:
            raise ArchiveError(f"{self._what}: {over('the nesting of MARKs', len(self.metastack) + 1, 'depth', self._limits.depth)}")
        _PY_UNPICKLER.load_mark(self)

    def load_build(self) -> None:
        state = self.stack.pop()
        inst = self.stack[-1]
        if not isinstance(inst, BUILDABLE):
            raise ArchiveError(f"{self._what}: BUILD of a {type(inst).__name__}: only __torch__ objects take a state")
        inst.__setstate__(state)

    def load_newobj(self) -> None:
        args = self.stack.pop()
        cls = self.stack.pop()
        if not _is_record_type(cls) or not isinstance(args, tuple):
            raise ArchiveError(f"{self._what}: NEWOBJ of {_brief(cls)}: only __torch__ classes are built")
        self.append(cls.__new__(cls, *args))

    def load_newobj_ex(self) -> None:
        kwargs = self.stack.pop()
        args = self.stack.pop()
        cls = self.stack.pop()
        if not _is_record_type(cls) or not isinstance(args, tuple) or kwargs:
            raise ArchiveError(f"{self._what}: NEWOBJ_EX of {_brief(cls)}: only __torch__ classes are built")
        self.append(cls.__new__(cls, *args))

    def _instantiate(self, klass: Any, args: Any) -> None:  # INST and OBJ
        if not _is_record_type(klass):
            raise ArchiveError(f"{self._what}: INST/OBJ of {_brief(klass)}: only __torch__ classes are built")
        self.append(klass(*args))

    def _int64_top(self, opcode: bytes) -> None:
        """Run ``opcode``'s own reader, then refuse an integer outside int64 (TorchScript's
        int; torch's unpickler reads at most 8 bytes of a LONG1)."""
        _PY_UNPICKLER.dispatch[opcode[0]](self)
        value = self.stack[-1]
        if isinstance(value, int) and not isinstance(value, bool) and not -INT64 <= value < INT64:
            raise ArchiveError(f"{self._what}: an integer outside int64 ({value.bit_length()} bits)")

    for _op in (pickle.INT, pickle.LONG, pickle.LONG1, pickle.LONG4):
        dispatch[_op[0]] = lambda self, _op=_op: self._int64_top(_op)
    del _op

    dispatch[pickle.REDUCE[0]] = load_reduce
    dispatch[pickle.MARK[0]] = load_mark
    dispatch[pickle.BUILD[0]] = load_build
    dispatch[pickle.NEWOBJ[0]] = load_newobj
    dispatch[pickle.NEWOBJ_EX[0]] = load_newobj_ex

    def __init__(
        self, data: bytes, storage: Callable[[str, str, int], np.ndarray], what: str, limits: ReadLimits | None = None
    ) -> None:
        super().__init__(io.BytesIO(data))
        self._storage = storage
        self._what = what
        self._limits = limits or current()

    def find_class(self, module: str, name: str) -> Any:
        known = _GLOBALS.get((module, name))
        if known is not None:
            return known
        if module == "torch" and name in STORAGE_DTYPES:
            return StorageType(name)
        if module == "__torch__" or module.startswith("__torch__."):
            return record_type(f"{module}.{name}")
        raise ArchiveError(
            f"{self._what}: refusing to load global '{_brief(module)[1:-1]}.{_brief(name)[1:-1]}': a TorchScript archive "
            "holds only tensors, containers, primitive values and __torch__ objects (this pickle would import or call "
            "something else; irvm never runs code from a model file)"
        )

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise ArchiveError(f"{self._what}: unknown persistent id {_brief(pid)}")
        _, kind, key, _location, numel = pid
        if not isinstance(kind, StorageType) or not isinstance(key, str) or not _is_int(numel):
            raise ArchiveError(f"{self._what}: malformed storage reference {_brief(pid)}")
        return self._storage(kind.dtype, key, numel)


def safe_loads(
    data: bytes, storage: Callable[[str, str, int], np.ndarray], what: str, limits: ReadLimits | None = None
) -> Any:
    """Unpickle ``data`` (a member of an archive, named ``what`` in errors) safely, then
    check its object graph (``check_graph``).  Whatever a damaged pickle makes the
    unpickler raise (a truncated opcode's ``struct.error``, EOF, a bad memo index, an
    unknown opcode...) is one ``ArchiveError``: "damaged archive member"."""
    limits = limits or current()
    try:
        root = SafeUnpickler(data, storage, what, limits).load()
    except ArchiveError:
        raise
    except Exception as err:  # noqa: BLE001 - the bytes are untrusted: any failure of the opcode loop is damage
        raise ArchiveError(f"{what}: damaged archive member: not a readable pickle ({type(err).__name__}: {_brief(str(err))[1:-1]})") from None
    check_graph(root, what, limits)
    return root


def _children(value: Any) -> list[Any] | None:
    """The values ``value`` holds (None for a leaf: a tensor, a number, a string...)."""
    if isinstance(value, (list, tuple)):
        return list(value)
    if isinstance(value, dict):
        return [*value.keys(), *value.values()]
    if isinstance(value, Record):
        return [*value.attributes.values(), value.state]
    return None


def check_graph(root: Any, what: str, limits: ReadLimits) -> None:
    """Refuse an object graph irvm cannot walk in bounded time: a cycle (a list holding
    itself, a module that is its own attribute), a depth over ``limits.depth``, or more
    than ``limits.entries`` paths from the root to the leaves (a DAG of shared lists that
    flattening would expand exponentially).  One iterative depth-first walk, linear in
    the graph: each container's height and path count is computed once, post-order."""
    height: dict[int, int] = {}  # finished containers: longest path below, and leaf paths
    paths: dict[int, int] = {}
    on_path: set[int] = set()
    work: list[tuple[Any, int, bool]] = [(root, 0, False)]
    while work:
        value, depth, leaving = work.pop()
        key = id(value)
        kids = _children(value)
        if leaving:
            assert kids is not None
            on_path.discard(key)
            height[key] = 1 + max((height.get(id(k), 0) for k in kids), default=0)
            paths[key] = min(sum(paths.get(id(k), 1) for k in kids) or 1, limits.entries + 1)
            continue
        if kids is None:
            continue
        if key in on_path:
            kind = value.qualname if isinstance(value, Record) else type(value).__name__
            raise ArchiveError(f"{what}: the object graph has a cycle (a {kind} that contains itself); irvm refuses it")
        if key in height:
            if depth + height[key] > limits.depth:
                raise ArchiveError(f"{what}: {over('the nesting depth', depth + height[key], 'depth', limits.depth)}")
            continue
        if depth + 1 > limits.depth:
            raise ArchiveError(f"{what}: {over('the nesting depth', depth + 1, 'depth', limits.depth)}")
        on_path.add(key)
        work.append((value, depth, True))
        work.extend((k, depth + 1, False) for k in kids)
    if paths.get(id(root), 1) > limits.entries:
        raise ArchiveError(f"{what}: {over('the number of values reachable by distinct paths', paths[id(root)], 'entries', limits.entries)}")
