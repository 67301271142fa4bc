"""The pass manager's contract: order, records, printing, and never touching its input."""

from __future__ import annotations

import itertools

import pytest

from compiler import parse
from compiler.diagnostics import IRError
from compiler.pipeline import DEFAULT_PIPELINE, PassRecord, optimize
from vm.ir.last_uses import last_uses
from vm.ir.printer import print_module

PROGRAM = """graph(%x : Float(2, 3), %flag : bool):
  %a : int = prim::Constant[value=1]()
  %b : int = prim::Constant[value=1]()
  %dead : Float(2, 3) = aten::mul(%x, %x)
  %y : Float(2, 3) = aten::add(%x, %x, %a)
  %z : Float(2, 3) = aten::relu(%y)
  %w : Float(2, 3) = aten::sigmoid(%z)
  %v : Float(2, 3) = aten::add(%w, %y, %b)
  return (%v)
"""


# Every pass of the default pipeline has work here, and only the order makes the end
# result one fusion group: the callee must be inlined before grouping, peephole's
# `%opt is None` (False: a Tensor cannot be None) must be followed by a constant round
# that folds the If, and pooling, DCE and CSE must run before grouping.
ORDER_PROGRAM = """graph(%x : Float(2, 3), %opt : Tensor):
  %f : Function = prim::Constant[name="act"]()
  %one : int = prim::Constant[value=1]()
  %one.2 : int = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %dead : Float(2, 3) = aten::neg(%x)
  %m1 : Float(2, 3) = aten::mul(%x, %x)
  %m2 : Float(2, 3) = aten::mul(%x, %x)
  %isnone : bool = aten::__is__(%opt, %none)
  %r : Float(2, 3) = prim::If(%isnone)
    block0():
      -> (%m1)
    block1():
      %s : Float(2, 3) = aten::add(%m1, %m2, %one.2)
      -> (%s)
  %q : Float(2, 3) = prim::CallFunction(%f, %r)
  return (%q, %one)
with act = graph(%a : Float(2, 3)):
  %b : Float(2, 3) = aten::relu(%a)
  %c : Float(2, 3) = aten::sigmoid(%b)
  return (%c)
"""

# (pass, text in the main graph the pass removes or brings, whether it brings it)
EFFECTS = [
    ("inline_calls", "prim::CallFunction", False),
    ("pool_constants", "%one.2 :", False),
    ("eliminate_dead_code", "aten::neg", False),
    ("eliminate_common_subexpressions", "%m2 :", False),
    ("peephole", "aten::__is__", False),
    ("propagate_constants", "prim::If", False),
    ("group_fusions", "prim::FusionGroup", True),
]


def _main(text: str) -> str:
    return text.split("\nwith ")[0]


def test_each_pass_of_the_default_pipeline_shows_its_effect_in_order() -> None:
    """Each pass of the default pipeline changes this program (its record says so), and in
    the IR printed after it (``--print-after-all``) its effect appears exactly there: the
    dump before it still has what it removes.  The end result is one fusion group of the
    inlined, CSE'd, If-folded chain, with no dead node in it."""
    dumps: list[tuple[str, str]] = []
    optimized, records = optimize(
        parse(ORDER_PROGRAM), print_after=["all"], printer=lambda n, t: dumps.append((n, _main(t)))
    )
    assert [n for n, _ in dumps] == [r.name for r in records] == DEFAULT_PIPELINE
    # no module method is called here: attaching known bodies is tests/known/'s business
    assert {r.name for r in records if r.changed} == set(DEFAULT_PIPELINE) - {"add_known_methods"}
    before = [_main(ORDER_PROGRAM)] + [t for _, t in dumps]
    for name, marker, brings in EFFECTS:
        at = [i for i, (n, t) in enumerate(dumps) if n == name and (marker in t) != (marker in before[i])]
        assert at, f"{name} did not {'bring' if brings else 'remove'} {marker!r}"
        i = at[0]
        assert (marker in dumps[i][1]) is brings and (marker in before[i]) is not brings, name
    main = _main(print_module(optimized))
    assert main.count("prim::FusionGroup") == 1 and "prim::If" not in main and "aten::neg" not in main
    group = print_module(optimized).split("with prim::FusionGroup_0 = graph")[1].split("\nwith ")[0]
    assert [k for k in ("aten::mul", "aten::add", "aten::relu", "aten::sigmoid") if k in group] == [
        "aten::mul", "aten::add", "aten::relu", "aten::sigmoid"
    ]


def test_optimize_leaves_its_input_alone_and_records_each_pass() -> None:
    module = parse(PROGRAM)
    text = print_module(module)
    optimized, records = optimize(module)
    assert print_module(module) == text
    assert optimized is not module and optimized.main is not module.main
    assert [r.name for r in records] == DEFAULT_PIPELINE
    by_name: dict[str, PassRecord] = {}
    for r in records:  # the first run of each pass
        by_name.setdefault(r.name, r)
    assert dict(by_name["pool_constants"].counters)["constants pooled"] == 1
    assert dict(by_name["eliminate_dead_code"].counters)["nodes removed"] == 1
    assert dict(by_name["group_fusions"].counters)["groups formed"] == 1
    for before, after in itertools.pairwise(records):
        assert after.nodes_before == before.nodes_after
    assert str(by_name["pool_constants"]) == "pool_constants: 7 -> 6 nodes, constants pooled 1"


def test_fusion_off_skips_grouping() -> None:
    optimized, records = optimize(parse(PROGRAM), fusion=False)
    assert "group_fusions" not in [r.name for r in records]
    assert "FusionGroup" not in print_module(optimized)


def test_print_after_named_passes_and_all() -> None:
    seen: list[tuple[str, str]] = []
    optimize(parse(PROGRAM), print_after=["pool_constants"], printer=lambda n, t: seen.append((n, t)))
    assert [n for n, _ in seen] == ["pool_constants", "pool_constants"]  # both rounds
    assert "%b" not in seen[0][1] and "aten::mul" in seen[0][1]  # pooled, DCE not yet run
    seen.clear()
    optimize(parse(PROGRAM), print_after=["all"], printer=lambda n, t: seen.append((n, t)))
    assert [n for n, _ in seen] == DEFAULT_PIPELINE


def test_explicit_pass_list_and_unknown_names() -> None:
    _, records = optimize(parse(PROGRAM), ["eliminate_dead_code", "insert_drops"])
    assert [r.name for r in records] == ["eliminate_dead_code", "insert_drops"]
    _, none = optimize(parse(PROGRAM), [])
    assert none == []
    with pytest.raises(IRError, match="unknown pass 'dce'"):
        optimize(parse(PROGRAM), ["dce"])
    with pytest.raises(IRError, match="unknown pass"):
        optimize(parse(PROGRAM), print_after=["nope"])


def test_pass_record_reports_change() -> None:
    assert not PassRecord("p", 3, 3).changed
    assert PassRecord("p", 3, 3, (("constants hoisted", 1),)).changed


def test_last_uses_scan_backwards_through_blocks() -> None:
    """The last use is the first one met scanning backwards: the Loop use of %x is in the body."""
    module = parse(
        """graph(%x : Tensor, %n : int):
  %t : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %x, %one)
  %y : Tensor = prim::Loop(%n, %t, %a)
    block0(%i : int, %y.1 : Tensor):
      %y.2 : Tensor = aten::add(%y.1, %x, %one)
      -> (%t, %y.2)
  return (%y)
"""
    )
    graph = module.main
    last = last_uses(graph)
    loop = graph.nodes[3]
    body = loop.blocks[0]
    assert last[graph.inputs[0]] is body.nodes[0]  # nested: insert_drops must add a Drop
    assert last[graph.nodes[2].output] is loop
    assert last[loop.output] is graph.block
    assert last[body.params[1]] is body.nodes[0]


def test_last_use_in_block_counts_nested_reads_at_their_loop() -> None:
    """One level up, a value read inside a Loop body is last used at the Loop node (live for
    the whole loop), ``reads`` lists what a node takes from outside its blocks, and
    ``final_reads`` marks an operand's last position in a node."""
    from vm.ir.last_uses import final_reads, last_use_in_block, reads

    module = parse(
        """graph(%x : Tensor, %n : int):
  %t : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::add(%x, %x, %one)
  %y : Tensor = prim::Loop(%n, %t, %a)
    block0(%i : int, %y.1 : Tensor):
      %y.2 : Tensor = aten::add(%y.1, %x, %one)
      -> (%t, %y.2)
  %z : Tensor = aten::mul(%y, %a)
  return (%z)
"""
    )
    graph = module.main
    x, n = graph.inputs
    add, loop, mul = graph.nodes[2], graph.nodes[3], graph.nodes[4]
    t, one = graph.nodes[0].output, graph.nodes[1].output
    assert reads(loop) == [n, t, add.output, x, one]  # not %y.1 / %y.2: defined inside
    block_last = last_use_in_block(graph.block)
    assert block_last[x] is loop
    assert block_last[add.output] is mul
    assert block_last[mul.output] is graph.block
    assert final_reads(add.inputs) == [False, True, True]


def test_the_input_is_verified_once(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """optimize verifies its input unless told the caller just did (``verified=True``), and
    ``irc compile`` (which verifies after parsing) has the verifier run once, not twice."""
    import compiler.verify
    from compiler import cli

    calls: list[object] = []
    real = compiler.verify.verify

    def counted(target, *args, **kwargs):
        calls.append(target)
        return real(target, *args, **kwargs)

    monkeypatch.setattr(compiler.verify, "verify", counted)
    optimize(parse(PROGRAM))
    assert len(calls) == 1
    optimize(parse(PROGRAM), verified=True)
    assert len(calls) == 1
    path = tmp_path / "p.ir"
    path.write_text(PROGRAM)
    assert cli.main(["compile", str(path), "-o", str(tmp_path / "p.irbc")]) == 0
    assert len(calls) == 2
