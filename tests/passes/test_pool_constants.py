"""pool_constants merges equal constants, but never a list that some node writes (the
alias classes are asked only when equal mutable twins exist)."""

from __future__ import annotations

from compiler import parse
from compiler.passes.pool_constants import pool_constants


def _constants(text: str) -> int:
    module = pool_constants(parse(text))
    return sum(1 for n in module.main.walk() if n.kind == "prim::Constant")


def test_equal_lists_merge_unless_one_is_written() -> None:
    """Two equal unwritten int lists become one; when one is appended to, both stay; the
    int constants merge either way."""
    plain = """graph(%x : int):
  %a : int[] = prim::Constant[value=[1, 2]]()
  %b : int[] = prim::Constant[value=[1, 2]]()
  %one : int = prim::Constant[value=1]()
  %two : int = prim::Constant[value=1]()
  %t : (int[], int[], int, int) = prim::TupleConstruct(%a, %b, %one, %two)
  return (%t)
"""
    assert _constants(plain) == 2
    written = plain.replace("  %t :", "  %r : int[] = aten::append(%b, %x)\n  %t :")
    assert _constants(written) == 3


def test_a_written_list_without_twin_is_kept() -> None:
    """A lone written list constant stays as it is (nothing to merge it with)."""
    text = """graph(%x : int):
  %a : int[] = prim::Constant[value=[1, 2]]()
  %r : int[] = aten::append(%a, %x)
  return (%a)
"""
    assert _constants(text) == 1
