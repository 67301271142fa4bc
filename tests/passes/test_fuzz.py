"""Hypothesis properties of every pass, on random valid programs (tests/support/strategies.py).

For each pass alone and for the whole pipeline: the IR stays well formed (the verifier
and our use-list checks accept it), the input module is left untouched, running the
result gives the same outputs (values, dtypes, shapes) as running the input, and a second
run of the pass changes nothing.  Each pass also keeps its own promise (no duplicate
constants after pooling, no dead pure node after DCE, last uses at the defining depth
after drop insertion, only fusible operators inside fusion groups).

The ``ci`` profile (default) runs 200 examples per property; for 10,000 run
``pytest --hypothesis-profile long tests/passes/test_fuzz.py``.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
from hypothesis import given, note

from compiler.passes import ancestor_in, graphs_of
from compiler.passes.group_fusions import GROUP, is_fusible
from compiler.passes.inline_calls import _recursive_functions, callee_name
from compiler.passes.pool_constants import constant_key
from compiler.pipeline import DEFAULT_PIPELINE, get_pass, optimize
from compiler.verify import verify
from tests.support.ir_checks import check_wellformed, dump, structure
from tests.support.reference import FreedValueError, run_reference, same_value
from tests.support.strategies import graphs
from vm.ir.effects import is_pure
from vm.ir.graph import Block, Graph, Module, Node, Value
from vm.ir.last_uses import last_uses

ALL_PASSES = [*DEFAULT_PIPELINE, "insert_drops"]

def _verify(module: Module) -> None:
    check_wellformed(module)
    verify(module)


def _run(module: Module, inputs: list[Any], free_dead: bool = False) -> Any:
    """("ok", (outputs, printed text)) or ("raised", error class name)."""
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out):
            result = run_reference(module, inputs, free_dead=free_dead)
        return ("ok", (result, out.getvalue()))
    except FreedValueError:
        raise
    except Exception as err:  # noqa: BLE001 -- a program may fail at run time; the pass must keep that
        return ("raised", type(err).__name__)


def _same(a: Any, b: Any) -> bool:
    if a[0] != b[0]:
        return False
    if a[0] == "raised":
        return bool(a[1] == b[1])
    return same_value(a[1][0], b[1][0]) and a[1][1] == b[1][1]


def check_pass(name: str, module: Module, inputs: list[Any]) -> Module:
    note(f"input:\n{dump(module)}")
    before = structure(module)
    expected = _run(module, inputs)
    result = get_pass(name)(module)
    note(f"after {name}:\n{dump(result)}")
    assert structure(module) == before, f"{name} modified its input"
    _verify(result)
    got = _run(result, inputs)
    assert _same(got, expected), f"{name} changed the outputs: {got} != {expected}"
    again = get_pass(name)(result)
    assert structure(again) == structure(result), f"{name} is not idempotent:\n{dump(again)}"
    return result


@pytest.mark.parametrize("name", ALL_PASSES)
@given(case=graphs())
def test_pass_keeps_outputs_and_is_idempotent(name: str, case: tuple[Module, list[Any]]) -> None:
    """Each pass alone: well formed, outputs unchanged, input untouched, idempotent, and its
    own invariant holds."""
    module, inputs = case
    result = check_pass(name, module, inputs)
    INVARIANTS.get(name, lambda m: None)(result)


@given(case=graphs())
def test_pipeline_keeps_outputs(case: tuple[Module, list[Any]]) -> None:
    """The whole default pipeline (fusion on), verified after every pass, keeps the outputs,
    and running it again on its own result changes nothing."""
    module, inputs = case
    expected = _run(module, inputs)
    note(f"input:\n{dump(module)}")
    result, records = optimize(module, verify_each=True)
    note(f"optimized:\n{dump(result)}")
    check_wellformed(result)
    assert [r.name for r in records] == DEFAULT_PIPELINE
    assert _same(_run(result, inputs), expected)
    again, _ = optimize(result)
    assert structure(again) == structure(result), f"a second pipeline run changed:\n{dump(again)}"
    dropped = get_pass("insert_drops")(result)
    _last_uses_at_defining_depth(dropped)
    assert _same(_run(dropped, inputs, free_dead=True), expected)


@given(case=graphs())
def test_freeing_at_last_use_is_safe_after_insert_drops(case: tuple[Module, list[Any]]) -> None:
    """Deleting each value right after its last use (what MOVE and DROPR do) never loses a
    value that is read later, once drops are inserted; without them it can."""
    module, inputs = case
    expected = _run(module, inputs)
    dropped = get_pass("insert_drops")(module)
    assert _same(_run(dropped, inputs, free_dead=True), expected)


# ---------------------------------------------------------------------------------------
# Pass-specific invariants


def _constants_pooled(module: Module) -> None:
    for graph in graphs_of(module):
        keys = [constant_key(n) for n in graph.walk() if n.kind == "prim::Constant"]
        assert len(keys) == len(set(keys)), "two equal constants after pooling"
        head = graph.nodes[: len(keys)]
        assert all(n.kind == "prim::Constant" for n in head), "constants not hoisted to the start"


def _deep_pure(node: Node) -> bool:
    return is_pure(node) and all(_deep_pure(n) for n in node.walk())


def _no_dead_pure_nodes(module: Module) -> None:
    for graph in graphs_of(module):
        for node in graph.walk():
            if _deep_pure(node) and all(not out.uses for out in node.outputs):
                raise AssertionError(f"dead pure node left: {node!r}")


def _calls_inlined(module: Module) -> None:
    recursive = _recursive_functions(module.functions)
    for graph in graphs_of(module):
        for node in graph.walk():
            name = callee_name(node, module.functions)
            assert name is None or name in recursive, f"call of {name} not inlined"


def _groups_fusible(module: Module) -> None:
    for graph in graphs_of(module):
        for node in graph.walk():
            if node.kind != GROUP:
                continue
            sub = node.attrs["Subgraph"]
            assert isinstance(sub, Graph)
            ops = [n for n in sub.walk() if n.kind != "prim::Constant"]
            assert len(ops) >= 2, "a fusion group of a single operator"
            assert all(is_fusible(n) for n in ops), f"non-fusible node in a group: {ops}"


def _last_uses_at_defining_depth(module: Module) -> None:
    """Every non-constant value is used, and its last use (the use the emitter turns into a
    MOVE or DROPR) is in its defining block, after every other use on every path."""
    for graph in graphs_of(module):
        last = last_uses(graph)
        for value in _values(graph):
            if value.node is not None and value.node.kind == "prim::Constant":
                continue
            assert value in last, f"%{value.name} is never used (no Drop)"
            home = value.defining_block
            user = last[value]
            user_block = user if isinstance(user, Block) else user.owner
            assert user_block is home, f"last use of %{value.name} is nested: {user!r}"
            if isinstance(user, Node):
                where = home.index_of(user)
                for use in value.uses:
                    holder = ancestor_in(use.user if isinstance(use.user, Node) else use.user.owner, home)
                    assert holder is None or home.index_of(holder) <= where, f"%{value.name} used after its last use"


def _values(graph: Graph) -> list[Value]:
    values = list(graph.inputs)
    for node in graph.walk():
        values.extend(node.outputs)
        for block in node.blocks:
            values.extend(block.params)
    return values


INVARIANTS = {
    "pool_constants": _constants_pooled,
    "eliminate_dead_code": _no_dead_pure_nodes,
    "inline_calls": _calls_inlined,
    "group_fusions": _groups_fusible,
    "insert_drops": _last_uses_at_defining_depth,
}


def test_freeing_check_catches_a_move_inside_a_loop() -> None:
    """The free-at-last-use evaluator is a real check: without drops, %x is freed at its
    use in the loop body and the second iteration reads a dead value."""
    import numpy as np

    from compiler import parse

    module = parse(
        """graph(%x : Tensor, %n : int):
  %t : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %y : Tensor = prim::Loop(%n, %t, %x)
    block0(%i : int, %y.1 : Tensor):
      %y.2 : Tensor = aten::add(%y.1, %x, %one)
      -> (%t, %y.2)
  return (%y)
"""
    )
    inputs = [np.ones(2, np.float32), 2]
    with pytest.raises(FreedValueError):
        run_reference(module, inputs, free_dead=True)
    dropped = get_pass("insert_drops")(module)
    assert same_value(run_reference(dropped, inputs, free_dead=True), np.full(2, 3, np.float32))
