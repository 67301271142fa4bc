"""The type model of the textual IR, and the dtype tables.

It lives in the VM, which reads types without the compiler: ``compiler.types``
re-exports it.

Types are compared by content (``attrs.frozen``): two ``TensorType`` objects with the
same dtype and sizes are the same type.  ``str(t)`` prints a type exactly as PyTorch
prints it in a graph dump, so the printer never needs to know about types.

    >>> str(ListType(INT))
    'int[]'
    >>> str(TensorType(dtype="Float", sizes=(2, None)))
    'Float(2, *)'

Run-time values, as both backends hold them: a ``Tensor`` is a numpy array (a view shares
its base's memory), ``int``/``float``/``bool``/``str`` are Python scalars, ``T[]`` a Python
list, ``Dict(K, V)`` a dict (insertion-ordered, as TorchScript's), a tuple a Python tuple,
``NoneType`` None, an object of a class a record of its attributes, a module a
``vm.binding.weights.ModuleObject``.  As in TorchScript, lists, dicts, objects, modules and
tensors are *references*: ``d[k]``, ``l[i]``, ``t[0]`` (a tuple holding a list) and
``getattr`` return the stored object itself, so a tensor taken out of a dict and changed in
place (``add_``) is changed in the dict and for the caller who passed it, and a list taken
out of a dict and appended to grows in the dict; ``d.keys()``, ``d.values()``, ``l.copy()``,
``l[a:b]`` and ``l + m`` return new lists, ``append`` writes its list and returns None to
the program; tuples, strings and scalars are immutable values.  The compiler's alias
analysis (``vm.ir.effects``) follows these rules, so no pass removes or reorders
a write that one of those references can see.  Comparing containers compares their
elements as TorchScript does: tensors by ``eq`` and its truth, never by identity (``[t] ==
[t]`` with a multi-element ``t`` raises "Boolean value of Tensor with more than one value is
ambiguous").
"""

from __future__ import annotations

import attrs


class Type:
    """Base of every IR type."""

    __slots__ = ()


@attrs.frozen(cache_hash=True)
class NamedType(Type):
    """A leaf type known by its name alone: int, float, bool, str, NoneType, Device..."""

    name: str

    def __str__(self) -> str:
        return self.name


INT = NamedType("int")
FLOAT = NamedType("float")
BOOL = NamedType("bool")
STR = NamedType("str")
NONE = NamedType("NoneType")
DEVICE = NamedType("Device")
SCALAR = NamedType("Scalar")
NUMBER = NamedType("number")
ANY = NamedType("Any")
FUNCTION = NamedType("Function")
LAYOUT = NamedType("Layout")
SCALAR_TYPE = NamedType("ScalarType")
MEMORY_FORMAT = NamedType("MemoryFormat")
GENERATOR = NamedType("Generator")


# Every leaf type name PyTorch's type parser knows (SchemaTypeParser's table, plus the
# names graph dumps print: Function, Uninitialized...).  Any other capitalized bare name is
# an unknown type; a lowercase one is a type variable (``t``), as PyTorch reads it.
LEAF_TYPE_NAMES = frozenset({
    "int", "float", "bool", "str", "complex", "number", "NoneType", "None", "Device", "DeviceIndex",
    "Scalar", "Any", "Function", "Layout", "ScalarType", "MemoryFormat", "Generator", "Storage",
    "Stream", "QScheme", "ConstQuantizerPtr", "Quantizer", "Dimname", "DimnameList", "SymInt",
    "SymFloat", "SymBool", "Capsule", "AnyClassType", "AnyEnumType", "AnyListType", "AnyTupleType",
    "Uninitialized", "PyObject", "Type", "Tensor", "t",
})


def is_known_leaf_name(name: str) -> bool:
    """True for a bare type name PyTorch's parser accepts: a leaf type, a class or enum
    (a dotted qualified name), or a type variable (a lowercase identifier)."""
    return name in LEAF_TYPE_NAMES or "." in name or name[:1].islower() or name[:1] == "_"


@attrs.frozen(cache_hash=True)
class TensorType(Type):
    """``Tensor`` or a refined tensor type such as ``Float(2, 3, strides=[3, 1], device=cpu)``.

    ``dtype`` is PyTorch's scalar-type name (``Float``, ``Long``, ``Bool``...) or None for a
    plain ``Tensor``.  ``sizes`` is None when the rank is unknown; a None entry is a ``*``
    (unknown extent).  ``refined`` is True when the type was printed in the refined form
    (``Float(...)``), so ``Tensor`` and ``Float()`` stay distinct.
    """

    dtype: str | None = None
    sizes: tuple[int | None, ...] | None = None
    strides: tuple[int | None, ...] | None = None
    requires_grad: bool | None = None
    device: str | None = None

    @property
    def refined(self) -> bool:
        return self.dtype is not None or self.sizes is not None or self.device is not None

    def __str__(self) -> str:
        if not self.refined and self.requires_grad is None and self.strides is None:
            return "Tensor"
        parts: list[str] = []
        if self.sizes is not None:
            parts.extend("*" if s is None else str(s) for s in self.sizes)
        if self.strides is not None:
            parts.append("strides=[" + ", ".join("*" if s is None else str(s) for s in self.strides) + "]")
        if self.requires_grad is not None:
            parts.append(f"requires_grad={int(self.requires_grad)}")
        if self.device is not None:
            parts.append(f"device={self.device}")
        return f"{self.dtype or 'Tensor'}({', '.join(parts)})"


TENSOR = TensorType()


@attrs.frozen(cache_hash=True)
class ListType(Type):
    elem: Type

    def __str__(self) -> str:
        return f"{_postfix_operand(self.elem)}[]"


@attrs.frozen(cache_hash=True)
class OptionalType(Type):
    elem: Type

    def __str__(self) -> str:
        return f"{_postfix_operand(self.elem)}?"


@attrs.frozen(cache_hash=True)
class TupleType(Type):
    """``(Tensor, int)``; a named tuple keeps its field ``names`` and prints as PyTorch
    prints it: ``NamedTuple(a : Tensor, b : int)``."""

    elems: tuple[Type, ...]
    names: tuple[str, ...] | None = None

    def __str__(self) -> str:
        if self.names is not None:
            fields = ", ".join(f"{n} : {e}" for n, e in zip(self.names, self.elems))
            return f"NamedTuple({fields})"
        return "(" + ", ".join(str(e) for e in self.elems) + ")"


@attrs.frozen(cache_hash=True)
class DictType(Type):
    key: Type
    value: Type

    def __str__(self) -> str:
        return f"Dict({self.key}, {self.value})"


@attrs.frozen(cache_hash=True)
class FutureType(Type):
    elem: Type

    def __str__(self) -> str:
        return f"Future[{self.elem}]"  # as PyTorch 2.x prints it


@attrs.frozen(cache_hash=True)
class UnionType(Type):
    elems: tuple[Type, ...]

    def __str__(self) -> str:
        return "Union(" + ", ".join(str(e) for e in self.elems) + ")"


@attrs.frozen(cache_hash=True)
class ClassType(Type):
    """A TorchScript class or module type: ``__torch__.m.___torch_mangle_3.Net``."""

    qualname: str

    def __str__(self) -> str:
        return self.qualname


@attrs.frozen(cache_hash=True)
class EnumType(Type):
    """A TorchScript enum class, printed ``Enum<__torch__.timm.layers.format.Format>``."""

    qualname: str

    def __str__(self) -> str:
        return f"Enum<{self.qualname}>"


@attrs.frozen(cache_hash=True)
class InterfaceType(Type):
    """A module interface (``@torch.jit.interface``), printed ``InterfaceType<Iface>``: the
    type of a ``ModuleList`` / ``ModuleDict`` element picked by ``prim::ModuleContainerIndex``."""

    name: str

    def __str__(self) -> str:
        return f"InterfaceType<{self.name}>"


def _postfix_operand(t: Type) -> str:
    # Optional[List[int]] prints as int[]?, List[Optional[int]] as int?[]; a Union or
    # tuple element needs no parentheses because its own form is already closed.
    return str(t)


def is_tensor(t: Type) -> bool:
    return isinstance(t, TensorType)


def unwrap_optional(t: Type) -> Type:
    return t.elem if isinstance(t, OptionalType) else t


# PyTorch's ScalarType names (as printed in refined tensor types) and their enum codes,
# which is what a `prim::dtype` returns and what `dtype=6` attributes mean.
SCALAR_TYPE_CODES: dict[str, int] = {
    "Byte": 0,
    "Char": 1,
    "Short": 2,
    "Int": 3,
    "Long": 4,
    "Half": 5,
    "Float": 6,
    "Double": 7,
    "ComplexHalf": 8,
    "ComplexFloat": 9,
    "ComplexDouble": 10,
    "Bool": 11,
    "QInt8": 12,
    "QUInt8": 13,
    "QInt32": 14,
    "BFloat16": 15,
}


# PyTorch scalar-type name -> numpy dtype name
NUMPY_DTYPES: dict[str, str] = {
    "Byte": "uint8",
    "Char": "int8",
    "Short": "int16",
    "Int": "int32",
    "Long": "int64",
    "Half": "float16",
    "Float": "float32",
    "Double": "float64",
    "ComplexFloat": "complex64",
    "ComplexDouble": "complex128",
    "Bool": "bool",
}
