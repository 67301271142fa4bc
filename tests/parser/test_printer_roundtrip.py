"""The printer writes what the parser reads: parse(print(m)) is m, over random well-formed
modules (tests/support/strategies.py), and printing is a fixed point after one parse."""

from __future__ import annotations

from hypothesis import given

from compiler.parser import parse
from compiler.verify import verify
from tests.support.strategies import ir_modules
from vm.ir.printer import print_module, structural_diff


@given(ir_modules())
def test_parse_of_print_is_structurally_equal(module) -> None:
    """Kinds, attributes (every payload kind), types, names, wiring, blocks, sub-graphs and
    functions all survive printing and parsing back; both sides verify."""
    verify(module)
    text = print_module(module)
    again = parse(text, "printed.ir")
    assert structural_diff(module, again) is None, text
    verify(again)
    assert print_module(again) == text
