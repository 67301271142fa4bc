"""Operators on TorchScript enum members (``vm.enum_values.EnumValue``): comparison and
the member's name.  Schemas are PyTorch's; ``AnyEnumType`` accepts any ``Enum<...>``."""

from __future__ import annotations

from vm.enum_values import EnumValue
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
