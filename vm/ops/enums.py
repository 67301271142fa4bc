"""Operators on TorchScript enum members (``vm.core.enum_values.EnumValue``): comparison,
the member's name, and its value (known when the weights or inputs give it as
``NAME=VALUE``).  Schemas are PyTorch's; ``AnyEnumType`` accepts any ``Enum<...>``."""

from __future__ import annotations

from typing import Any

from vm.core.enum_values import EnumValue
from vm.ops.registry import kernel


@kernel("aten::eq.enum(AnyEnumType a, AnyEnumType b) -> bool")
def eq_enum(a: EnumValue, b: EnumValue) -> bool:
    return a == b


@kernel("aten::ne.enum(AnyEnumType a, AnyEnumType b) -> bool")
def ne_enum(a: EnumValue, b: EnumValue) -> bool:
    return a != b


@kernel("prim::EnumName(AnyEnumType enum) -> str")
def enum_name(enum: EnumValue) -> str:
    return enum.name


def _value(enum: EnumValue, kind: type | tuple[type, ...]) -> Any:
    if enum.value is None:
        raise ValueError(f"prim::EnumValue: the value of {enum} is not known: a graph names enum members only, so "
                       f"give the member as NAME=VALUE in the weights or inputs (or run the model's torch.jit.save archive, `irvm run model.pt`, which carries it)")
    if not isinstance(enum.value, kind) or (kind is int and isinstance(enum.value, bool)):
        raise ValueError(f"prim::EnumValue: {enum} has value {enum.value!r} of another type than the graph declares")
    return enum.value


@kernel("prim::EnumValue.int(AnyEnumType enum) -> int")
def enum_value_int(enum: EnumValue) -> int:
    return _value(enum, int)


@kernel("prim::EnumValue.float(AnyEnumType enum) -> float")
def enum_value_float(enum: EnumValue) -> float:
    return float(_value(enum, (int, float)))


@kernel("prim::EnumValue.str(AnyEnumType enum) -> str")
def enum_value_str(enum: EnumValue) -> str:
    return _value(enum, str)
