"""Dicts as TorchScript's builtins have them: Python dicts, insertion-ordered, mutable.

PyTorch registers every dict method once per key type (``__getitem__.Dict_str``,
``get.default_int``...) because its schemas are typed; we register the same schemas
with one kernel each, so that overload resolution sees what PyTorch has.

A tensor key hashes by identity in TorchScript (two equal tensors are two keys).  numpy
arrays are unhashable, so a tensor key is stored wrapped in ``TensorKey``, which hashes
and compares by identity; ``keys``/``items``/``popitem`` unwrap it again, so kernels only
ever see the tensor.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from vm.ops.registry import register_op

_KEYS = ("str", "int", "bool", "float", "Tensor")
_MISSING = object()


class TensorKey:
    """A tensor as a dict key: hashed and compared by identity, as TorchScript does."""

    __slots__ = ("tensor",)

    def __init__(self, tensor: np.ndarray):
        self.tensor = tensor

    def __hash__(self) -> int:
        return id(self.tensor)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TensorKey) and other.tensor is self.tensor

    def __repr__(self) -> str:
        return f"TensorKey({self.tensor!r})"


def dict_key(key: Any) -> Any:
    return TensorKey(key) if isinstance(key, np.ndarray) else key


def unkey(key: Any) -> Any:
    return key.tensor if isinstance(key, TensorKey) else key


def getitem(d: dict[Any, Any], key: Any) -> Any:
    try:
        return d[dict_key(key)]
    except KeyError:
        raise KeyError(key) from None


def set_item(d: dict[Any, Any], key: Any, value: Any) -> None:
    d[dict_key(key)] = value


def get(d: dict[Any, Any], key: Any) -> Any:
    return d.get(dict_key(key))


def get_default(d: dict[Any, Any], key: Any, default: Any) -> Any:
    return d.get(dict_key(key), default)


def pop(d: dict[Any, Any], key: Any) -> Any:
    value = d.pop(dict_key(key), _MISSING)
    if value is _MISSING:
        raise KeyError(key)
    return value


def pop_default(d: dict[Any, Any], key: Any, default: Any) -> Any:
    return d.pop(dict_key(key), default)


def delete(d: dict[Any, Any], key: Any) -> None:
    pop(d, key)


def popitem(d: dict[Any, Any]) -> tuple[Any, Any]:
    if not d:
        raise KeyError("popitem(): dictionary is empty")
    key = next(iter(d))  # TorchScript pops the first (oldest) item, not the last
    return unkey(key), d.pop(key)


def setdefault(d: dict[Any, Any], key: Any, default: Any) -> Any:
    return d.setdefault(dict_key(key), default)


def update(d: dict[Any, Any], other: dict[Any, Any]) -> None:
    d.update(other)


def keys(d: dict[Any, Any]) -> list[Any]:
    return [unkey(k) for k in d]


def items(d: dict[Any, Any]) -> list[tuple[Any, Any]]:
    return [(unkey(k), v) for k, v in d.items()]


def from_pairs(pairs: list[tuple[Any, Any]]) -> dict[Any, Any]:
    return {dict_key(k): v for k, v in pairs}


def contains(d: dict[Any, Any], key: Any) -> bool:
    return dict_key(key) in d


for _k in _KEYS:
    _d = f"Dict({_k}, t)"
    _schemas: dict[str, Any] = {
        f"aten::__getitem__.Dict_{_k}({_d} self, {_k} key) -> t(*)": getitem,
        f"aten::_set_item.{_k}({_d}(a!) l, {_k}(b -> *) idx, t(c -> *) v) -> ()": set_item,
        f"aten::get.{_k}({_d} self, {_k} key) -> t(*)?": get,
        f"aten::get.default_{_k}({_d} self, {_k} key, t default_value) -> t(*)": get_default,
        f"aten::pop.Dict_{_k}({_d}(a!) self, {_k} key) -> t(*)": pop,
        f"aten::pop.Dict_default_{_k}({_d}(a!) self, {_k} key, t default_value) -> t(*)": pop_default,
        f"aten::popitem.{_k}({_d}(a!) self) -> (({_k}, t))": popitem,
        f"aten::setdefault.{_k}({_d}(a!) self, {_k}(b -> *) key, t(c -> *) default_value) -> t(*)": setdefault,
        f"aten::update.{_k}({_d}(a!) self, {_d}(a!) to_add) -> ()": update,
        f"aten::Delete.Dict_{_k}({_d}(a!) self, {_k} key) -> ()": delete,
        f"aten::clear.{_k}({_d}(a!) self) -> ()": dict.clear,
        f"aten::keys.{_k}({_d} self) -> {_k}[](*)": keys,
        f"aten::values.{_k}({_d} self) -> t[](*)": lambda d: list(d.values()),
        f"aten::items.{_k}({_d} self) -> (({_k}, t)[])": items,
        f"aten::len.Dict_{_k}({_d} self) -> int": len,
        f"aten::__contains__.{_k}({_d} dict, {_k} key) -> bool": contains,
        f"aten::copy.Dict_{_k}({_d}(a) self) -> {_d}": dict,
        f"aten::dict.Dict_{_k}({_d}(a) self) -> {_d}": dict,
        f"aten::dict.{_k}(({_k}, tVal)[] inputs) -> Dict({_k}, tVal)": from_pairs,
    }
    for _schema, _fn in _schemas.items():
        register_op(_schema, _fn)
register_op("aten::dict() -> Dict(str, Tensor)", dict)
