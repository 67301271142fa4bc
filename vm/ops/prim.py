"""Prim operators: packing and unpacking, module attributes, checks, exceptions, printing.

Two kinds of registration live here.  Nodes whose behaviour depends on their attributes
or arity (``prim::ListUnpack`` with three outputs, ``prim::GetAttr[name="weight"]``)
register a ``prim_factory``: the compiler resolves them to an ``OpRef`` carrying the
node's attributes and the VM asks the factory for a callable once, at load time.  Every
other operator has PyTorch's schema, taken from ``torch._C._jit_get_schemas_for_operator``,
and a kernel, so that overload resolution treats it like any ``aten::`` operator.

Values follow the runtime conventions of ``vm.ops.registry``: a node with several
outputs returns a tuple, a node with none returns None.  A script ``raise`` becomes
``ScriptException(message, python_class)``; ``prim::Print`` writes what TorchScript's
``print`` writes (see ``vm.ops.strings.to_str`` for how values render).
"""

from __future__ import annotations

import math
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vm.binding.weights import ModuleObject
from vm.core import types as T
from vm.ops import _dtypes
from vm.ops.dicts import dict_key
from vm.ops.registry import Fact, kernel, prim_factory
from vm.ops.strings import to_str


class ScriptException(Exception):
    """A TorchScript ``raise``: the message, and the Python class PyTorch names.

    ``str(e)`` is what PyTorch prints: ``builtins.ValueError: bad input``.
    """

    def __init__(self, message: str, python_class: str | None = None):
        super().__init__(message)
        self.message = message
        self.python_class = python_class

    def __str__(self) -> str:
        return f"{self.python_class}: {self.message}" if self.python_class else self.message


def _results(n_outputs: int, values: Sequence[Any]) -> Any:
    """The calling convention: None for no output, the value for one, else a tuple."""
    if n_outputs == 0:
        return None
    if n_outputs == 1:
        return values[0]
    return tuple(values)


# ---------------------------------------------------------------------------------------
# Packing and unpacking


@prim_factory("prim::ListConstruct")
def _list_construct(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
    return lambda *xs: list(xs)


@prim_factory("prim::TupleConstruct")
def _tuple_construct(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
    return lambda *xs: xs


def _unpacker(what: str) -> Callable[[dict[str, Any], int, int], Callable[..., Any]]:
    def factory(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
        def unpack(seq: Sequence[Any]) -> Any:
            if len(seq) != n_out:
                raise ValueError(f"Expected {n_out} elements in a {what} but found {len(seq)}")
            return _results(n_out, seq)

        return unpack

    return factory


prim_factory("prim::ListUnpack")(_unpacker("list"))
prim_factory("prim::TupleUnpack")(_unpacker("tuple"))


@prim_factory("prim::TupleSlice")
def _tuple_slice(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
    beg, end = int(attrs.get("beg", 0)), attrs.get("end")
    return lambda tup: tuple(tup[beg:end])


@kernel("prim::TupleIndex(Any tup, int i) -> Any")
def tuple_index(tup: tuple[Any, ...], i: int) -> Any:
    if not -len(tup) <= i < len(tup):
        raise IndexError(f"Index {i} out of range for a tuple of length {len(tup)}")
    return tup[i]


@prim_factory("prim::DictConstruct")
def _dict_construct(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
    def construct(*kv: Any) -> dict[Any, Any]:
        return {dict_key(kv[i]): kv[i + 1] for i in range(0, len(kv), 2)}

    return construct


# ---------------------------------------------------------------------------------------
# Objects: %self, attributes, TorchScript class instances


@prim_factory("prim::GetAttr")
def _get_attr(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
    name = str(attrs["name"])
    return lambda obj: obj.get(name)


@prim_factory("prim::SetAttr")
def _set_attr(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
    name = str(attrs["name"])
    return lambda obj, value: obj.set(name, value)


@kernel("prim::ModuleContainerIndex.list(Any self, int ind) -> Any")
def module_container_index_list(container: ModuleObject, ind: int) -> ModuleObject:
    """``self.layers[i]`` on a ``ModuleList`` with a run-time index.  A negative index is
    refused: the weights hold the list's modules by position, not its length."""
    if ind < 0:
        raise IndexError(f"negative index {ind} into ModuleList {container.path or 'self'}: irvm needs the "
                         "list's length, which the weights do not carry")
    return container.get(str(ind))


@kernel("prim::ModuleContainerIndex.dict(Any self, str ind) -> Any")
def module_container_index_dict(container: ModuleObject, ind: str) -> ModuleObject:
    """``self.blocks[key]`` on a ``ModuleDict``."""
    return container.get(ind)


@prim_factory("prim::CreateObject")
def _create_object(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
    return lambda: ModuleObject()


# ---------------------------------------------------------------------------------------
# Identities and checks the profiling executor leaves in graphs


def _identity_factory(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
    return lambda *xs: _results(n_out, xs[:n_out])


for _kind in ("prim::profile", "prim::profile_ivalue", "prim::BailOut", "prim::Guard", "prim::unchecked_cast"):
    prim_factory(_kind)(_identity_factory)


@prim_factory("prim::TypeCheck")
def _type_check(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
    """Returns its inputs and whether each matches its profiled type (dtype and sizes)."""
    types = list(attrs.get("types", ()))

    def check(*xs: Any) -> Any:
        ok = all(is_instance(x, t) for x, t in zip(xs, types) if isinstance(t, T.Type))
        return _results(n_out, [*xs, ok])

    return check


@prim_factory("prim::isinstance")
def _isinstance(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
    types = [_as_type(t) for t in attrs.get("types", ())]
    return lambda x: any(is_instance(x, t) for t in types)


_TYPE_NAMES: dict[str, T.Type] = {
    "int": T.INT, "float": T.FLOAT, "bool": T.BOOL, "str": T.STR, "NoneType": T.NONE,
    "Tensor": T.TENSOR, "Device": T.DEVICE, "Any": T.ANY, "list": T.ListType(T.ANY),
    "dict": T.DictType(T.ANY, T.ANY),
}  # fmt: skip  (a bare ``tuple`` stays a name: any tuple, whatever its length)


def _as_type(t: Any) -> T.Type:
    """A ``types=[...]`` entry as a type: ``list`` (the parser's bare name) is a list of anything."""
    if isinstance(t, T.NamedType):
        return _TYPE_NAMES.get(t.name, t)
    if isinstance(t, T.Type):
        return t
    from vm.core.schema_types import parse_schema_type

    return _TYPE_NAMES.get(str(t)) or parse_schema_type(str(t))


def is_instance(value: Any, t: T.Type) -> bool:
    """Does a runtime value have IR type ``t``?  Tensor types check dtype and sizes."""
    if t == T.ANY:
        return True
    if isinstance(t, T.TensorType):
        return isinstance(value, np.ndarray) and _tensor_matches(value, t)
    if isinstance(t, T.OptionalType):
        return value is None or is_instance(value, t.elem)
    if isinstance(t, T.ListType):
        return isinstance(value, list) and all(is_instance(v, t.elem) for v in value)
    if isinstance(t, T.TupleType):
        return isinstance(value, tuple) and len(value) == len(t.elems) and all(map(is_instance, value, t.elems))
    if isinstance(t, T.DictType):
        return isinstance(value, dict)
    if isinstance(t, T.UnionType):
        return any(is_instance(value, m) for m in t.elems)
    if isinstance(t, T.ClassType):
        return isinstance(value, ModuleObject)
    python = {"int": int, "float": float, "bool": bool, "str": str, "NoneType": type(None), "Device": str,
              "tuple": tuple}
    cls = python.get(str(t))
    if cls is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return cls is not None and isinstance(value, cls)


def _tensor_matches(value: np.ndarray, t: T.TensorType) -> bool:
    if t.dtype is not None and value.dtype != _dtypes.to_dtype(T.SCALAR_TYPE_CODES[t.dtype]):
        return False
    if t.sizes is not None:
        if len(t.sizes) != value.ndim:
            return False
        return all(s is None or s == n for s, n in zip(t.sizes, value.shape))
    return True


# ---------------------------------------------------------------------------------------
# Effects: raise, print, warn


@kernel("prim::RaiseException(str msg, str? cls=None) -> ()", pure=False)
def raise_exception(msg: str, cls: str | None) -> None:
    if not isinstance(msg, str) or not (cls is None or isinstance(cls, str)):  # only a damaged .irbc gets here
        raise TypeError(f"prim::RaiseException needs a str message, got {type(msg).__name__}")
    raise ScriptException(msg, cls)


@kernel("prim::Print(...) -> ()", pure=False)
def print_values(*values: Any) -> None:
    """TorchScript's ``print``: values rendered as ``str()`` renders them, space-separated."""
    sys.stdout.write(" ".join(to_str(v) for v in values) + "\n")


@kernel("aten::warn(str message, int stacklevel=2) -> ()", pure=False, facts=Fact.EFFECT)
def warn(message: str, stacklevel: int) -> None:
    warnings.warn(message, UserWarning, stacklevel=2)


@kernel("prim::Uninitialized() -> Any")
def uninitialized() -> None:
    """The placeholder of a value only defined on paths that exit early; never read."""
    return None


# ---------------------------------------------------------------------------------------
# Optionals and identity


@kernel("prim::unchecked_unwrap_optional(t(a)? optional) -> t(a)")
def unchecked_unwrap_optional(x: Any) -> Any:
    return x


@kernel("aten::_unwrap_optional(t(a)? optional) -> t(a)")
def unwrap_optional(x: Any) -> Any:
    if x is None:
        raise RuntimeError("Unwrapping null optional")
    return x


def same_identity(a: Any, b: Any) -> bool:
    """TorchScript's ``is``: None, bools, ints and floats by value, everything else by identity."""
    if a is None or b is None:
        return a is b
    for cls in (bool, int, float):
        if type(a) is cls and type(b) is cls:
            return a == b
    return a is b


@kernel("aten::__is__(t1 self, t2 obj) -> bool", facts=Fact.PURE)
def is_(a: Any, b: Any) -> bool:
    return same_identity(a, b)


@kernel("aten::__isnot__(t1 self, t2 obj) -> bool", facts=Fact.PURE)
def isnot(a: Any, b: Any) -> bool:
    return not same_identity(a, b)


@kernel("aten::__not__(bool self) -> bool")
def not_(a: bool) -> bool:
    return not a


@kernel("aten::is_scripting() -> bool")
def is_scripting() -> bool:
    return True


# ---------------------------------------------------------------------------------------
# Tensor metadata a graph reads as scalars (irvm tensors live on the CPU, no autograd)


@kernel("prim::dtype(Tensor a) -> int")
def dtype(a: np.ndarray) -> int:
    return _dtypes.to_code(a.dtype)


@kernel("prim::device(Tensor a) -> Device")
def device(a: np.ndarray) -> str:
    return "cpu"


@kernel("prim::layout(Tensor a) -> Layout")
def layout(a: np.ndarray) -> int:
    return 0  # torch.strided


@kernel("prim::requires_grad(Tensor a) -> bool")
def requires_grad(a: np.ndarray) -> bool:
    return False


@kernel("prim::is_cuda(Tensor a) -> bool")
def is_cuda(a: np.ndarray) -> bool:
    return False


@kernel("prim::data(Tensor(a) a) -> Tensor(a)")
def data(a: np.ndarray) -> np.ndarray:
    return a


@kernel("prim::type(Device self) -> str")
def device_type(d: str) -> str:
    return d.split(":")[0]


@kernel("aten::device(str a) -> Device")
def device_from_str(a: str) -> str:
    if a.split(":")[0] not in ("cpu", "cuda", "mps", "meta", "xpu"):
        raise RuntimeError(f"Expected one of cpu, cuda, ... device type at start of device string: {a}")
    return a


@kernel("aten::eq.device(Device a, Device b) -> bool")
def eq_device(a: str, b: str) -> bool:
    return a == b


@kernel("aten::ne.device(Device a, Device b) -> bool")
def ne_device(a: str, b: str) -> bool:
    return a != b


# ---------------------------------------------------------------------------------------
# Scalars <-> tensors


@kernel("prim::NumToTensor.Scalar(Scalar a) -> Tensor")
def num_to_tensor(a: int | float) -> np.ndarray:
    """A Python int becomes an int64 0-dim tensor, a float a float64 one (PyTorch's rule)."""
    if isinstance(a, bool):
        return np.array(a, dtype=np.bool_)
    return np.array(a, dtype=np.int64 if isinstance(a, int) else np.float64)


@kernel("prim::NumToTensor.bool(bool a) -> Tensor")
def num_to_tensor_bool(a: bool) -> np.ndarray:
    return np.array(a, dtype=np.bool_)


def item(a: np.ndarray) -> int | float | bool | complex:
    """The Python scalar of a one-element tensor, as ``Tensor.item()`` gives it."""
    if a.size != 1:
        raise RuntimeError(f"a Tensor with {a.size} elements cannot be converted to Scalar")
    value = a.reshape(()).item()
    if isinstance(value, complex):
        return value
    if a.dtype == np.bool_:
        return bool(value)
    return int(value) if _dtypes.is_integral(a.dtype) else float(value)


def real_item(a: np.ndarray, c_type: str) -> int | float | bool:
    """``item(a)``, a complex value as its real part when its imaginary part is 0; otherwise
    PyTorch's checked conversion error (``c_type`` is ``int64_t`` or ``double``)."""
    value = item(a)
    if isinstance(value, complex):
        if value.imag != 0:
            raise RuntimeError(f"value cannot be converted to type {c_type} without overflow")
        return value.real
    return value


@kernel("aten::Int.Tensor(Tensor a) -> int")
def int_tensor(a: np.ndarray) -> int:
    return int(real_item(a, "int64_t"))


@kernel("aten::Float.Tensor(Tensor a) -> float")
def float_tensor(a: np.ndarray) -> float:
    return float(real_item(a, "double"))


@kernel("aten::Bool.Tensor(Tensor a) -> bool")
def bool_tensor(a: np.ndarray) -> bool:
    if a.size != 1:
        raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
    return bool(item(a))


@kernel("aten::ScalarImplicit(Tensor a) -> Scalar")
def scalar_implicit(a: np.ndarray) -> int | float | bool | complex:
    if a.ndim != 0:
        raise RuntimeError("Cannot input a tensor of dimension other than 0 as a scalar argument")
    return item(a)


@kernel("aten::IntImplicit(Tensor a) -> int")
def int_implicit(a: np.ndarray) -> int:
    if a.ndim != 0:
        raise RuntimeError("Cannot input a tensor of dimension other than 0 as a scalar argument")
    if not _dtypes.is_integral(a.dtype, include_bool=True):
        raise RuntimeError(f"Cannot input a tensor of type {a.dtype} as an integral argument")
    return int(real_item(a, "int64_t"))


@kernel("aten::FloatImplicit(Tensor a) -> float")
def float_implicit(a: np.ndarray) -> float:
    if a.ndim != 0:
        raise RuntimeError("Cannot input a tensor of dimension other than 0 as a scalar argument")
    return float(real_item(a, "double"))


@kernel("aten::Int.bool(bool a) -> int")
def int_bool(a: bool) -> int:
    return int(a)


@kernel("aten::Int.float(float a) -> int")
def int_float(a: float) -> int:
    """Truncation toward zero, as a C++ cast; out of int64 range (inf, nan) the x86 result."""
    if math.isfinite(a) and -(2.0**63) <= a < 2.0**63:
        return int(a)
    return -(2**63)


@kernel("aten::Int.Scalar(Scalar a) -> int")
def int_scalar(a: int | float) -> int:
    return int(a)


@kernel("aten::Int.str(str a) -> int")
def int_str(a: str) -> int:
    return int(a.strip())


@kernel("aten::Float.Scalar(Scalar a) -> float")
def float_scalar(a: int | float) -> float:
    return float(a)


@kernel("aten::Float.int(int a) -> float")
def float_int(a: int) -> float:
    return float(a)


@kernel("aten::Float.bool(bool a) -> float")
def float_bool(a: bool) -> float:
    return float(a)


@kernel("aten::Float.str(str a) -> float")
def float_str(a: str) -> float:
    return float(a)


@kernel("aten::Bool.int(int a) -> bool")
def bool_int(a: int) -> bool:
    return a != 0


@kernel("aten::Bool.float(float a) -> bool")
def bool_float(a: float) -> bool:
    return a != 0.0


@kernel("aten::len.Tensor(Tensor t) -> int", facts=Fact.SHAPE_QUERY)
def len_tensor(t: np.ndarray) -> int:
    if t.ndim == 0:
        raise RuntimeError("len() of a 0-d tensor")
    return int(t.shape[0])


@prim_factory("prim::tolist")
def _tolist(attrs: dict[str, Any], n_in: int, n_out: int) -> Callable[..., Any]:
    """``t.tolist()`` under a ``List[List[float]]`` annotation: inputs are the tensor, the
    annotated nesting depth and the element kind (0 int, 1 float, 2 bool), both checked."""
    kinds = {0: ("int", _dtypes.is_integral), 1: ("float", _dtypes.is_floating), 2: ("bool", _dtypes.is_bool)}

    def tolist(t: np.ndarray, dim: int, elem: int) -> Any:
        if t.ndim != dim:
            raise RuntimeError(
                f"Output annotation list dimension and runtime tensor dimension must match for tolist() "
                f"(got {dim} and {t.ndim})"
            )
        name, ok = kinds[elem]
        if not ok(t.dtype):
            raise RuntimeError(
                f"Output annotation element type and runtime tensor element type must match for tolist() "
                f"(got {name} and {t.dtype})"
            )
        return t.tolist()

    return tolist
