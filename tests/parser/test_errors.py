"""Bad input never escapes as anything but the project's own error, and each error points
at its own file:line:col with the offending line and a caret."""

from __future__ import annotations

import random
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.diagnostics import IRError, IRSyntaxError, IRValidationError
from compiler.parser import parse
from compiler.verify import verify
from tests.support import paths
from vm.ir.printer import print_module, structurally_equal

DUMPS = sorted(paths.DUMPS.glob("*.ir"))

# (name, text, error class, line, column, words the message must contain)
CASES = [
    ("syntax", "graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x\n  return (%y)\n",
     IRSyntaxError, 3, 3, ["unexpected 'return'", "')'"]),
    ("bad_char", "graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x) $\n  return (%y)\n",
     IRSyntaxError, 2, 32, ["unexpected character '$'"]),
    ("undefined", "graph(%x : Tensor):\n  %y : Tensor = aten::relu(%z)\n  return (%y)\n",
     IRValidationError, 2, 28, ["undefined value %z"]),
    ("undefined_return", "graph(%x : Tensor):\n  return (%x, %w.1)\n",
     IRValidationError, 2, 15, ["undefined value %w.1"]),
    ("sibling_block", "graph(%c : bool):\n   = prim::If(%c)\n    block0():\n      %a : int = prim::Constant[value=1]()\n      -> ()\n"
     "    block1():\n      %b : int = aten::neg(%a)\n      -> ()\n  return (%c)\n",
     IRValidationError, 7, 28, ["%a is not in scope"]),
    ("inner_block", "graph(%c : bool):\n   = prim::If(%c)\n    block0():\n      %a : int = prim::Constant[value=1]()\n      -> ()\n"
     "    block1():\n      -> ()\n  return (%a)\n",
     IRValidationError, 8, 11, ["%a is not in scope"]),
    # a block without its `-> (...)` is reported where it ends (the next block's header,
    # or the dedent to the graph), not at the `return` two lines later (issue #29)
    ("block_without_arrow", "graph(%x : Tensor, %c : bool):\n  %y : Tensor = prim::If(%c)\n    block0():\n"
     "      %a : Tensor = aten::relu(%x)\n    block1():\n      -> (%x)\n  %z : Tensor = aten::relu(%y)\n  return (%z)\n",
     IRSyntaxError, 5, 5, ["block0 (opened on line 3) ends here without its `-> (...)`"]),
    ("last_block_without_arrow", "graph(%x : Tensor, %c : bool):\n  %y : Tensor = prim::If(%c)\n    block0():\n"
     "      -> (%x)\n    block1():\n      %a : Tensor = aten::relu(%x)\n  return (%y)\n",
     IRSyntaxError, 7, 3, ["block1 (opened on line 5) ends here"]),
    ("unterminated_string", 'graph():\n  %s : str = prim::Constant[value="abc]()\n  return (%s)\n',
     IRSyntaxError, 2, 35, ["unterminated string"]),
    ("bad_escape", 'graph():\n  %s : str = prim::Constant[value="a\\qb"]()\n  return (%s)\n',
     IRSyntaxError, 2, 35, ["bad escape"]),
    ("unknown_type", "graph(%x : Frob(int)):\n  return (%x)\n",
     IRSyntaxError, 1, 12, ["unknown type Frob"]),
    ("bad_strides", "graph(%a : Float(4, strides=[5], 5)):\n  return (%a)\n",
     IRSyntaxError, 1, 12, ["size after"]),
    ("eof", "graph(%c : bool):\n  %y : int = prim::Constant[value=1]()\n",
     IRSyntaxError, 2, 39, ["unexpected end of input"]),
    ("missing_section", "graph(%x : Tensor):\n  %y : Tensor = prim::FusionGroup_0(%x)\n  return (%y)\n"
     "with prim::FusionGroup_1 = graph(%a : Tensor):\n  return (%a)\n",
     IRValidationError, 4, 6, ["no node refers to sub-graph prim::FusionGroup_1"]),
    ("tensor_count", "graph():\n  %t : Tensor = prim::Constant[value= 1  2 [ CPULongType{3} ]]()\n  return (%t)\n",
     IRSyntaxError, 2, 44, ["2 values but shape [3]"]),
]  # fmt: skip


@pytest.mark.parametrize("name,text,cls,line,col,words", CASES, ids=[c[0] for c in CASES])
def test_error_names_its_own_place(name: str, text: str, cls: type, line: int, col: int, words: list[str]) -> None:
    """Each bad input raises its error class at its own line:col, with the line and caret."""
    with pytest.raises(cls) as info:
        parse(text, f"{name}.ir")
    err = info.value
    assert err.span is not None and (err.span.line, err.span.col) == (line, col), str(err)
    for word in words:
        assert word in err.message, str(err)
    rendered = str(err)
    head, source, caret = rendered.split("\n")
    assert head.startswith(f"{name}.ir:{line}:{col}: ")
    assert source == "  " + text.split("\n")[line - 1]
    assert caret == "  " + " " * (col - 1) + "^"


@pytest.mark.parametrize("text", ["", "   \n\n", "# only a comment\n"])
def test_empty_file(text: str) -> None:
    """An empty (or comment-only) file is a syntax error at 1:1, not a lark exception."""
    with pytest.raises(IRSyntaxError, match="empty file") as info:
        parse(text, "empty.ir")
    assert str(info.value).startswith("empty.ir:1:1: ")


def test_binary_garbage_is_a_syntax_error_with_printable_excerpt() -> None:
    """Random bytes give a syntax error whose excerpt has no control characters."""
    rng = random.Random(7)
    data = bytes(rng.randrange(256) for _ in range(2000)).decode("latin-1")
    for text in (data, "graph(%x : Tensor):\n  \x00\x01\x02\n  return (%x)\n", "\x7fELF\x02\x01\x01"):
        with pytest.raises(IRSyntaxError) as info:
            parse(text, "bin.ir")
        excerpt = str(info.value).split("\n", 1)[1]
        assert all(ch.isprintable() or ch == "\n" for ch in excerpt)


def test_one_megabyte_line() -> None:
    """A 1 MB line parses when valid (a long string constant) and, when broken, the error
    names its line and shows a bounded excerpt around the column."""
    big = "x" * 1_000_000
    module = parse(f'graph():\n  %s : str = prim::Constant[value="{big}"]()\n  return (%s)\n')
    assert module.main.nodes[0].attrs["value"] == big
    line = f'  %s : str[] = prim::Constant[value=["{big}", $, "{big}"]]()'
    with pytest.raises(IRSyntaxError) as info:
        parse(f"graph():\n{line}\n  return (%s)\n", "big.ir")
    err = info.value
    assert err.span is not None and (err.span.line, err.span.col) == (2, line.index("$") + 1)
    assert len(str(err)) < 600 and "^" in str(err)


def nested_ifs(depth: int, bad: bool = False) -> str:
    lines = ["graph(%c : bool):"]
    for d in range(depth):
        lines.append("  " * (2 * d + 1) + " = prim::If(%c)")
        lines.append("  " * (2 * d + 2) + "block0():")
    use = "%nope" if bad else "%c"
    lines.append("  " * (2 * depth + 1) + f"%z : bool = aten::__not__({use})")
    for d in reversed(range(depth)):
        lines += ["  " * (2 * d + 3) + "-> ()", "  " * (2 * d + 2) + "block1():", "  " * (2 * d + 3) + "-> ()"]
    lines.append("  return (%c)")
    return "\n".join(lines) + "\n"


def test_blocks_nested_500_deep_without_recursion_error() -> None:
    """Parse, verify, print, clone, walk and compare 500 nested blocks under a recursion
    limit far below that depth (nothing recurses per block)."""
    text = nested_ifs(500)
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(250)
    try:
        module = parse(text, "deep.ir")
        verify(module)
        printed = print_module(module)
        clone = module.clone()
        count = sum(1 for _ in module.main.walk())
        equal = structurally_equal(clone, parse(printed, "deep.ir"))
        with pytest.raises(IRValidationError) as info:
            parse(nested_ifs(500, bad=True), "deep.ir")
    finally:
        sys.setrecursionlimit(old)
    assert printed == text and count == 501 and equal
    assert info.value.span is not None and info.value.span.line == 1002


@settings(max_examples=150, deadline=None)
@given(st.sampled_from(DUMPS), st.data())
def test_mutated_dumps_raise_only_ir_errors(path: Path, data: st.DataObject) -> None:
    """Deleting, inserting, swapping or duplicating characters of a real dump gives either a
    module or an IRError; never a lark exception, KeyError, RecursionError..."""
    text = path.read_text()
    for _ in range(data.draw(st.integers(1, 4))):
        if not text:
            break
        i = data.draw(st.integers(0, len(text) - 1))
        op = data.draw(st.sampled_from(["delete", "insert", "swap", "duplicate", "cut"]))
        if op == "delete":
            text = text[:i] + text[i + 1 :]
        elif op == "insert":
            ch = data.draw(st.sampled_from(list('%()[]{},:=#"\\\n -.0123456789<>^?*') + ["\x00", "é", "block0", "->"]))
            text = text[:i] + ch + text[i:]
        elif op == "swap" and i + 1 < len(text):
            text = text[:i] + text[i + 1] + text[i] + text[i + 2 :]
        elif op == "duplicate":
            j = data.draw(st.integers(i, min(len(text), i + 80)))
            text = text[:j] + text[i:j] + text[j:]
        else:
            text = text[:i]
    try:
        module = parse(text, "mutated.ir")
    except IRError as err:
        assert err.span is not None and err.span.line >= 0
        str(err)
        return
    try:
        verify(module)
    except IRError:
        return
    print_module(module)
