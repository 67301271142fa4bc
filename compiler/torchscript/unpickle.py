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
"""

from __future__ import annotations

import io
import pickle
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from compiler.diagnostics import IRError

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


def _rebuild_tensor(storage: Any, offset: Any, size: Any, stride: Any, *_rest: Any) -> np.ndarray:
    """A tensor over ``storage`` (a 1-d array): ``size``/``stride`` in elements, checked to
    stay inside the storage, so a crafted archive cannot read past it."""
    if not isinstance(storage, np.ndarray) or storage.ndim != 1:
        raise ArchiveError(f"a tensor refers to {type(storage).__name__}, not a storage")
    if not (_is_int_tuple(size) and _is_int_tuple(stride) and isinstance(offset, int)) or len(size) != len(stride):
        raise ArchiveError(f"malformed tensor: size {size!r}, stride {stride!r}, offset {offset!r}")
    if offset < 0 or any(s < 0 for s in size) or any(s < 0 for s in stride):
        raise ArchiveError(f"malformed tensor: negative size, stride or offset ({size}, {stride}, {offset})")
    if 0 in size:
        return np.zeros(size, dtype=storage.dtype)
    last = offset + sum((n - 1) * s for n, s in zip(size, stride))
    if last >= storage.shape[0]:
        raise ArchiveError(
            f"a tensor of size {list(size)} (stride {list(stride)}, offset {offset}) reaches element {last} "
            f"of a storage of {storage.shape[0]}"
        )
    contiguous = _contiguous_strides(size)
    if tuple(stride) == contiguous or not size:
        count = int(np.prod(size)) if size else 1
        return storage[offset : offset + count].reshape(size)
    item = storage.itemsize
    view = np.lib.stride_tricks.as_strided(
        storage[offset:], shape=tuple(size), strides=tuple(s * item for s in stride), writeable=False
    )
    return np.array(view)  # a copy: the runtime's kernels expect ordinary arrays


def _contiguous_strides(size: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(size):
        strides.append(acc)
        acc *= max(n, 1)
    return tuple(reversed(strides))


def _is_int_tuple(value: Any) -> bool:
    return isinstance(value, (tuple, list)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)


def _first(arg: Any, *_rest: Any) -> Any:
    return arg


def _empty_dict(*_args: Any) -> dict[Any, Any]:
    return {}


def _refuse_tensor_table(*_args: Any) -> Any:
    raise ArchiveError("this archive refers to a tensor table (an old TorchScript format irvm does not read)")


def _device(name: Any, *_rest: Any) -> str:
    return str(name)


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


def allow_globals(table: dict[tuple[str, str], Any], storages: dict[str, str]) -> None:
    """Add ``(module, name) -> callable`` entries and storage types to the table (the
    quantized ones of ``compiler.torchscript.quantized`` register themselves so)."""
    _GLOBALS.update(table)
    STORAGE_DTYPES.update(storages)


class SafeUnpickler(pickle._Unpickler):  # the Python one: REDUCE is ours
    """``pickle.Unpickler`` whose globals come only from the table above (see the module
    docstring); ``storage(dtype, key, numel)`` supplies the arrays of persistent ids.

    TorchScript pickles an enum value as ``GLOBAL cls; value; REDUCE`` with the bare value
    where Python's pickle wants an argument tuple, so REDUCE calls with a non-tuple
    argument as one argument (the C unpickler refuses it)."""

    dispatch: ClassVar[dict[int, Callable[..., None]]] = dict(pickle._Unpickler.dispatch)
    stack: list[Any]  # the working stack, which load() sets up

    def load_reduce(self) -> None:
        stack = self.stack
        args = stack.pop()
        func = stack[-1]
        stack[-1] = func(*args) if isinstance(args, tuple) else func(args)

    dispatch[pickle.REDUCE[0]] = load_reduce

    def __init__(self, data: bytes, storage: Callable[[str, str, int], np.ndarray], what: str) -> None:
        super().__init__(io.BytesIO(data))
        self._storage = storage
        self._what = what

    def find_class(self, module: str, name: str) -> Any:
        known = _GLOBALS.get((module, name))
        if known is not None:
            return known
        if module == "torch" and name in STORAGE_DTYPES:
            return StorageType(name)
        if module == "__torch__" or module.startswith("__torch__."):
            return record_type(f"{module}.{name}")
        raise ArchiveError(
            f"{self._what}: refusing to load global '{module}.{name}': a TorchScript archive holds only "
            "tensors, containers, primitive values and __torch__ objects (this pickle would import or call "
            "something else; irvm never runs code from a model file)"
        )

    def persistent_load(self, pid: Any) -> Any:
        if not (isinstance(pid, tuple) and len(pid) == 5 and pid[0] == "storage"):
            raise ArchiveError(f"{self._what}: unknown persistent id {pid!r:.80}")
        _, kind, key, _location, numel = pid
        if not isinstance(kind, StorageType) or not isinstance(key, str) or not isinstance(numel, int):
            raise ArchiveError(f"{self._what}: malformed storage reference {pid!r:.80}")
        return self._storage(kind.dtype, key, numel)


def safe_loads(data: bytes, storage: Callable[[str, str, int], np.ndarray], what: str) -> Any:
    """Unpickle ``data`` (a member of an archive, named ``what`` in errors) safely."""
    try:
        return SafeUnpickler(data, storage, what).load()
    except ArchiveError:
        raise
    except (pickle.UnpicklingError, EOFError, ValueError, TypeError, AttributeError, IndexError, KeyError) as err:
        raise ArchiveError(f"{what}: not a readable TorchScript pickle ({type(err).__name__}: {err})") from None
