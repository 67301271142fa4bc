"""Lists as TorchScript's builtins have them: Python lists, mutated in place.

A TorchScript list is a reference: ``aten::append(%l, %x)`` mutates the list every alias
of ``%l`` sees, so these kernels mutate their argument and never copy it, and their
schemas carry PyTorch's ``(a!)`` annotations so that passes know.  Methods that PyTorch
types per element (``remove.int``, ``sort.str``) are registered once per element type,
as PyTorch does, because overload resolution needs each schema.

Errors say what TorchScript says (``list index out of range``); tensors inside lists
compare as TorchScript compares them, by a one-element ``==`` (``Tensor.eq(...).item()``).
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from vm.ops.registry import Fact, register_op

_ELEMS = ("int", "float", "bool", "Tensor", "str")


def _norm(lst: list[Any], idx: int) -> int:
    i = idx + len(lst) if idx < 0 else idx
    if not 0 <= i < len(lst):
        raise IndexError("list index out of range")
    return i


def equal(a: Any, b: Any) -> bool:
    """TorchScript's element equality: tensors by ``eq`` then their truth, never by identity
    (``[t] == [t]`` of a multi-element ``t`` raises, of a nan is False, as in torch)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        result = np.equal(a, b)
        if result.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(result.reshape(()))
    return bool(a == b)


def less(a: Any, b: Any) -> bool:
    if isinstance(a, np.ndarray):
        result = np.less(a, b)
        if result.size != 1:
            raise RuntimeError("Boolean value of Tensor with more than one value is ambiguous")
        return bool(result.reshape(()))
    return bool(a < b)


def getitem(lst: list[Any], idx: int) -> Any:
    return lst[_norm(lst, idx)]


def set_item(lst: list[Any], idx: int, el: Any) -> list[Any]:
    lst[_norm(lst, idx)] = el
    return lst


def append(lst: list[Any], el: Any) -> list[Any]:
    lst.append(el)
    return lst


def extend(lst: list[Any], other: list[Any]) -> None:
    lst.extend(list(other))


def insert(lst: list[Any], idx: int, el: Any) -> None:
    lst.insert(idx, el)


def pop(lst: list[Any], idx: int) -> Any:
    if not lst:
        raise IndexError("pop from empty list")
    return lst.pop(_norm(lst, idx))


def remove(lst: list[Any], el: Any) -> None:
    for i, v in enumerate(lst):
        if equal(v, el):
            del lst[i]
            return
    raise ValueError("list.remove(x): x not in list")


def index(lst: list[Any], el: Any) -> int:
    for i, v in enumerate(lst):
        if equal(v, el):
            return i
    raise ValueError(f"'{el}' is not in list")


def count(lst: list[Any], el: Any) -> int:
    return sum(1 for v in lst if equal(v, el))


def contains(lst: list[Any], el: Any) -> bool:
    return any(equal(v, el) for v in lst)


def list_eq(a: list[Any], b: list[Any]) -> bool:
    return len(a) == len(b) and all(equal(x, y) for x, y in zip(a, b))


def _key() -> Any:
    return functools.cmp_to_key(lambda x, y: -1 if less(x, y) else (1 if less(y, x) else 0))


def sort(lst: list[Any], reverse: bool) -> None:
    lst.sort(key=_key(), reverse=reverse)


def sorted_(lst: list[Any]) -> list[Any]:
    return sorted(lst, key=_key())


def delete(lst: list[Any], idx: int) -> None:
    del lst[_norm(lst, idx)]


def reverse(lst: list[Any]) -> None:
    lst.reverse()


def clear(lst: list[Any]) -> None:
    lst.clear()


def slice_(lst: list[Any], start: int | None, end: int | None, step: int) -> list[Any]:
    if step == 0:
        raise ValueError("slice step cannot be zero")
    return lst[start:end:step]


def repeat(lst: list[Any], n: int) -> list[Any]:
    if n < 0 and lst:
        raise RuntimeError("vector::reserve")  # what TorchScript raises for [1] * -1
    return lst * n


_MUTATING = {
    "aten::_set_item.t(t[](a!) l, int idx, t(b -> *) el) -> t[](a!)": set_item,
    "aten::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)": append,
    "aten::extend.t(t[](a!) self, t[] other) -> ()": extend,
    "aten::insert.t(t[](a!) self, int idx, t(b -> *) el) -> ()": insert,
    "aten::pop.t(t[](a!) self, int idx=-1) -> t(*)": pop,
    "aten::reverse.t(t[](a!) self) -> ()": reverse,
    "aten::Delete.t(t[](a!) self, int idx) -> ()": delete,
    "aten::clear.t(t[](a!) self) -> ()": clear,
    "aten::sort.any(t[](a!) self, bool reverse=False) -> ()": sort,
    "aten::add_.t(t[](a!) self, t[] b) -> t[]": lambda a, b: (a.extend(list(b)), a)[1],  # l += other
}
_PURE = {
    "aten::len.t(t[] a) -> int": len,
    "aten::len.any(Any[] a) -> int": len,
    "aten::__getitem__.t(t[](a) list, int idx) -> t(*)": getitem,
    "aten::slice.t(t[] l, int? start=None, int? end=None, int step=1) -> t[]": slice_,
    "aten::add.t(t[] a, t[] b) -> t[]": lambda a, b: a + b,
    "aten::mul.left_t(t[] l, int n) -> t[]": repeat,
    "aten::mul.right_(int n, t[] l) -> t[]": lambda n, lst: repeat(lst, n),
    "aten::list.t(t[] l) -> t[]": list,
    "aten::copy.t(t[](a) self) -> t[]": list,
    "aten::sorted.any(t[](a) self) -> t[]": sorted_,
}
_CONTAINER = ("aten::__getitem__.t", "aten::list.t")  # pick an element, copy: compute no data
for _schema, _fn in {**_MUTATING, **_PURE}.items():
    register_op(_schema, _fn, facts=Fact.CONTAINER if _schema.split("(")[0] in _CONTAINER else Fact.NONE)

for _elem in _ELEMS:
    register_op(f"aten::remove.{_elem}({_elem}[](a!) self, {_elem} el) -> ()", remove)
    register_op(f"aten::index.list_{_elem}({_elem}[] self, {_elem} el) -> int", index)
    register_op(f"aten::count.{_elem}({_elem}[] self, {_elem} el) -> int", count)
    register_op(f"aten::sort.{_elem}({_elem}[](a!) self, bool reverse=False) -> ()", sort)
    register_op(f"aten::sorted.{_elem}({_elem}[](a) input) -> {_elem}[]", sorted_)
    register_op(f"aten::eq.{_elem}_list({_elem}[] a, {_elem}[] b) -> bool", list_eq)
    register_op(f"aten::ne.{_elem}_list({_elem}[] a, {_elem}[] b) -> bool", lambda a, b: not list_eq(a, b))
for _elem in ("int", "str", "float"):
    register_op(f"aten::__contains__.{_elem}_list({_elem}[] l, {_elem} item) -> bool", contains)
