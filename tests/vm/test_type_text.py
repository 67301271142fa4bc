"""``vm.core.type_text`` reads a printed type back without the IR parser, exactly as the parser
reads the same text: a program read from a ``.irbc`` names its types as text, and the VM
must understand them with no compiler."""

from __future__ import annotations

import pytest
from hypothesis import given

from compiler.parser import parse
from tests.support.paths import EXAMPLES
from tests.support.strategies import ir_types
from vm.core import types as T
from vm.core.errors import BytecodeError
from vm.core.type_text import parse_type_text


def _parsed(text: str) -> T.Type:
    return parse(f"graph(%x : {text}):\n  return (%x)\n", "<type>").main.inputs[0].type


@given(ir_types())
def test_a_printed_type_reads_back_as_the_parser_reads_it(t: T.Type) -> None:
    """Property: for every type, ``parse_type_text(str(t))`` is the type the IR parser
    makes of ``str(t)``, and printing it again gives the same text."""
    text = str(t)
    assert parse_type_text(text) == _parsed(text)
    assert str(parse_type_text(text)) == text


def test_every_type_of_the_examples_reads_back() -> None:
    """Every value type of every example graph reads back as the parser read it."""
    seen: set[str] = set()
    for path in sorted(EXAMPLES.glob("*.ir")):
        module = parse(path.read_text(), str(path))
        for graph in (module.main, *module.functions.values()):
            values = [*graph.inputs, *(v for node in graph.walk() for v in node.outputs)]
            seen.update(str(v.type) for v in values if v.type is not None)
    assert len(seen) > 20
    for text in seen:
        assert parse_type_text(text) == _parsed(text), text


@pytest.mark.parametrize("text", ["", "Float(2", "int[", "Dict(int)", "Union()", "(int,", "Float(x=1)", "3", "int]"])
def test_malformed_text_is_a_bytecode_error(text: str) -> None:
    """A type text that no printer writes (an edited file) is a BytecodeError naming it."""
    with pytest.raises(BytecodeError, match="malformed type"):
        parse_type_text(text)
