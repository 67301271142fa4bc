"""The fast line parser (compiler/line_parser.py) reads exactly what lark reads: on every
.ir file of the tests and examples, on random modules and on mutated (mostly malformed)
texts, ``parse(text)`` and ``parse(text, fast=False)`` (lark alone) give the same printed
module, the same spans on every node and block, and the same error (message and span)."""

from __future__ import annotations

import random
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from compiler.diagnostics import IRError
from compiler.parser import parse
from tests.support.mutations import IR_EDITS, apply_ir_edits, ir_seeds
from tests.support.paths import DATA, EXAMPLES
from tests.support.strategies import ir_modules
from vm.ir.graph import Graph, Module
from vm.ir.printer import print_module

FILES = sorted({*DATA.rglob("*.ir"), *EXAMPLES.rglob("*.ir")})


def _graphs(module: Module) -> list[Graph]:
    found = [module.main, *module.functions.values()]
    for graph in list(found):
        found.extend(n.attrs["Subgraph"] for n in graph.walk() if isinstance(n.attrs.get("Subgraph"), Graph))
    return found


def _positions(module: Module) -> list[Any]:
    """Every span the parser sets, with its source line, in walk order."""
    out: list[Any] = []
    for graph in _graphs(module):
        out.append((graph.name, graph.span, graph.block.return_span))
        for node in graph.walk():
            out.append((node.kind, node.span, node.span and node.span.source_line, node.source, node.scope))
            out.extend((b.span, b.return_span, [p.name for p in b.params]) for b in node.blocks)
    return out


def _outcome(text: str, fast: bool) -> tuple[str, Any]:
    try:
        module = parse(text, "t.ir", fast=fast)
    except IRError as err:
        return "error", (type(err).__name__, str(err), err.span, err.span and err.span.source_line)
    return print_module(module), _positions(module)


def _same(text: str) -> None:
    assert _outcome(text, True) == _outcome(text, False)


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(p.parents[1])))
def test_every_ir_file_reads_the_same(path: Path) -> None:
    """Each .ir under tests/data and examples: same printed module, spans and errors."""
    _same(path.read_text())


def _whole_file_reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files that ``compiler.parser`` hands whole to lark from now on."""
    from compiler import parser

    calls: list[str] = []
    run = parser._run_lark

    def counted(text: str, ctx: Any) -> Any:
        calls.append(ctx.file)
        return run(text, ctx)

    monkeypatch.setattr(parser, "_run_lark", counted)
    return calls


def test_well_formed_files_never_go_whole_to_lark(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every .ir file of the tests and examples that parses is read by the fast path (lark
    reads at most some of its lines), so the speed holds on real dumps."""
    assert len(FILES) > 100
    calls = _whole_file_reads(monkeypatch)
    for path in FILES:
        try:
            parse(path.read_text(), str(path))
        except IRError:
            calls = [c for c in calls if c != str(path)]
    assert calls == []


@settings(max_examples=60, deadline=None)
@given(ir_modules())
def test_random_modules_read_the_same(module: Module) -> None:
    """A printed random module (every attribute payload, type and block form) reads the same."""
    _same(print_module(module))


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_mutated_texts_read_the_same(data: st.DataObject) -> None:
    """A real input after random token, line and character edits: the same module or the
    same error with the same line and column."""
    seeds = ir_seeds()
    text = data.draw(st.sampled_from(seeds)).read_text()
    edits = data.draw(
        st.lists(st.tuples(st.sampled_from(IR_EDITS), st.integers(0, 10**6), st.integers(0, 10**6)), min_size=1, max_size=3)
    )
    _same(apply_ir_edits(text, edits))


def test_forms_left_to_lark_read_the_same(monkeypatch: pytest.MonkeyPatch) -> None:
    """Lines the fast path leaves to lark (tensor literals, types as values, nodes without
    ``=``, odd spacing) mixed with lines it reads, and a type spelled with extra spaces."""
    text = (
        "graph(%x : Tensor,\n"
        "      %n : int):\n"
        "  %t : Tensor = prim::Constant[value={0.5}]()\n"
        "  %u : Tensor = prim::Constant[value= 1  2 [ CPULongType{2} ]]()\n"
        "  %ty : Float(2, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value=Float(2)]()\n"
        "  %a : Tensor=aten::mul(%x,%t) # a.py:1:2\n"
        "  %b : Tensor = aten::add(%a, %u, %n), scope: m.layer # b.py:3:4\n"
        "  %l : int[] = prim::Constant[value=[1, -2, 3]]()\n"
        "  %s : str = prim::Constant[value=\"q\\\"uote\"]()\n"
        "  prim::If(%n)\n"
        "    block0():\n"
        "      -> ()\n"
        "    block1():\n"
        "      -> ()\n"
        "  return (%b)\n"
    )
    calls = _whole_file_reads(monkeypatch)
    fast = _outcome(text, True)
    assert calls == []  # lark read some lines, never the whole text
    assert fast[0] != "error" and fast == _outcome(text, False)


def test_a_node_line_left_to_lark_keeps_its_line_in_errors() -> None:
    """An undefined name on a line that lark reads alone is reported at that line."""
    text = "graph(%x : Tensor):\n  %t : Tensor = prim::Constant[value={0.5}]()\n  %a : Tensor = aten::mul(%t, %zz)\n  %b : Tensor = aten::mul(%x,%nope)\n  return (%b)\n"
    kind, (_, message, span, _) = _outcome(text, True)
    assert kind == "error" and span.line == 3 and "%zz" in message
    _same(text)


def test_seeded_mutations_read_the_same() -> None:
    """A fixed sample of 300 mutated texts (random.Random(15)), as the fuzz campaign draws them."""
    rng = random.Random(15)
    seeds = ir_seeds()
    for _ in range(300):
        text = rng.choice(seeds).read_text()
        edits = [(rng.choice(IR_EDITS), rng.randrange(10**6), rng.randrange(10**6)) for _ in range(rng.randint(1, 3))]
        _same(apply_ir_edits(text, edits))
