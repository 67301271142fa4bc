"""The optimized IR as tables (``vm.ir.tables``), the form a ``.irbc`` carries it in:
written from a module and read back to the same module, with no parser; anything
malformed refused with a ``BytecodeError``."""

from __future__ import annotations

import copy
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import compiler
from compiler.parser import parse
from tests.parser.test_errors import nested_ifs
from tests.support.paths import EXAMPLES
from vm.core.errors import BytecodeError
from vm.ir.graph import all_nodes
from vm.ir.printer import structural_diff
from vm.ir.tables import module_from_table, module_table

EXAMPLE_FILES = sorted(EXAMPLES.glob("*.ir"))


def _round_trip(module: Any) -> Any:
    return module_from_table(json.loads(json.dumps(module_table(module))), filename=module.filename)


@pytest.mark.parametrize("path", EXAMPLE_FILES, ids=[p.stem for p in EXAMPLE_FILES])
def test_an_optimized_module_reads_back_the_same(path: Path) -> None:
    """Every example's optimized module (fusion groups' sub-graphs, functions, loops, list
    and tensor constants) comes back structurally equal, printing the same, with every
    node's span and source comment."""
    module = compiler.compile_file(path).module
    back = _round_trip(module)
    assert structural_diff(module, back) is None
    assert str(back) == str(module)
    pairs = list(zip(all_nodes(module), all_nodes(back), strict=True))
    assert [(a.span, a.source, a.scope) for a, _ in pairs] == [(b.span, b.source, b.scope) for _, b in pairs]
    assert all(len(a.outputs[0].uses) == len(b.outputs[0].uses) for a, b in pairs if a.outputs)


def test_attribute_payloads_keep_their_kinds() -> None:
    """Ints stay ints, floats floats (``-0.``, ``inf``), strings strings, tuples tuples,
    annotated empty lists and dicts their annotations, types types."""
    text = """graph(%x : Tensor):
  %a : int = prim::Constant[value=3]()
  %b : float = prim::Constant[value=-0.]()
  %c : float = prim::Constant[value=inf]()
  %d : str = prim::Constant[value="h\\"i"]()
  %e : int[] = prim::Constant[value=annotate(List[int], [])]()
  %f : Dict(str, int) = prim::Constant[value=annotate(Dict[str, int], {})]()
  %g : bool = prim::Constant[value=0]()
  %h : Tensor = prim::Constant[value={2}]()
  %i : Tensor = prim::Constant[value=<Tensor>]()
  return (%x, %a, %b, %c, %d, %e, %f, %g, %h, %i)
"""
    module = parse(text, "payloads.ir")
    back = _round_trip(module)
    assert structural_diff(module, back) is None and str(back) == str(module)
    for a, b in zip(module.main.nodes, back.main.nodes, strict=True):
        va, vb = a.attrs["value"], b.attrs["value"]
        assert type(va) is type(vb) and repr(va) == repr(vb)
        assert getattr(va, "annotation", None) == getattr(vb, "annotation", None)
    assert np.signbit(back.main.nodes[1].attrs["value"])


def test_blocks_nested_500_deep_read_back_without_recursion() -> None:
    """The tables are flat: 500 nested blocks are written, dumped as JSON and read back
    under a recursion limit far below that depth."""
    module = parse(nested_ifs(500), "deep.ir")
    old = sys.getrecursionlimit()
    sys.setrecursionlimit(250)
    try:
        back = _round_trip(module)
    finally:
        sys.setrecursionlimit(old)
    assert structural_diff(module, back) is None


def _table() -> dict[str, Any]:
    return module_table(compiler.compile_file(EXAMPLES / "control_flow.ir").module)


BREAKAGES = {
    "version": lambda t: t.update(version=99),
    "not a table": lambda t: t.clear(),
    "input out of range": lambda t: t["main"][3][-1][2].append(10**6),
    "negative input": lambda t: t["main"][3][-1][2].append(-1),
    "type out of range": lambda t: t["main"][2][0][1][0].__setitem__(1, 10**6),
    "bad type text": lambda t: t["types"].__setitem__(0, "Float(("),
    "unknown payload": lambda t: t["main"][3][0][4].append(["value", ["pickle", "x"]]),
    "block owned by a later node": lambda t: t["main"][2][1].__setitem__(0, len(t["main"][3]) - 1),
    "second own block": lambda t: t["main"][2][1].__setitem__(0, -1),
    "node in no block": lambda t: t["main"][3][0].__setitem__(0, 10**6),
}


@pytest.mark.parametrize("name", list(BREAKAGES))
def test_a_malformed_table_is_refused(name: str) -> None:
    table = copy.deepcopy(_table())
    BREAKAGES[name](table)
    with pytest.raises(BytecodeError, match="malformed optimized IR table"):
        module_from_table(json.loads(json.dumps(table)), "m.irbc")


def test_a_block_cannot_own_itself() -> None:
    """A block whose owner is a node inside it (which would make the walk endless) is refused."""
    table = copy.deepcopy(_table())
    nodes, blocks = table["main"][3], table["main"][2]
    inner = next(k for k, n in enumerate(nodes) if n[0] == 1)  # a node of block 1
    blocks[1][0] = inner
    with pytest.raises(BytecodeError, match="malformed optimized IR table"):
        module_from_table(table, "m.irbc")
