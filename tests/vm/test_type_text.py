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


def test_the_grammar_and_the_ground_floor_agree_on_what_a_tensor_type_token_is() -> None:
    """A refined tensor type is one token in the IR grammar and in ``vm.core.type_text``,
    and both read it with the one reader (``read_tensor_type``)."""
    import re

    from tests.support.paths import ROOT
    from vm.core.type_text import TENSOR_TYPE

    grammar = (ROOT / "grammar" / "ir.lark").read_text()
    token = re.search(r"^TENSOR_TYPE\.2: /(.*)/$", grammar, re.MULTILINE)
    assert token is not None and token.group(1) == TENSOR_TYPE.pattern.replace("(?:", "(", 1)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("Float(2, x)", "bad tensor type item 'x' in Float(2, x)"),
        ("Float(2, requires_grad)", "requires_grad needs a value in Float(2, requires_grad)"),
        ("Float(2, strides=[a])", "bad strides in Float(2, strides=[a])"),
        ("Float(2, 3, strides=[1])", "Float(...) has 2 sizes but 1 strides"),
        ("Float(2, requires_grad=2)", "requires_grad must be 0 or 1 in Float(...)"),
        ("Float(2, device=cpu, 3)", "size after the options of Float(...)"),
    ],
)
def test_a_bad_tensor_type_is_refused_alike_by_the_parser_and_the_file_reader(text: str, message: str) -> None:
    """The parser reports the reader's message at the token; the file reader refuses the
    same text as a malformed type."""
    import re

    from compiler.diagnostics import IRSyntaxError

    with pytest.raises(IRSyntaxError, match=re.escape(message)):
        _parsed(text)
    with pytest.raises(BytecodeError, match="malformed type"):
        parse_type_text(text)


def test_an_interface_type_reads_back() -> None:
    assert parse_type_text("InterfaceType<__torch__.Iface>") == _parsed("InterfaceType<__torch__.Iface>")
