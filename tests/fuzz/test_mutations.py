"""The standing fuzz campaign: mutated real inputs end in a result or in irvm's own error.

Properties (tests/support/mutations.py draws the edits):

- a real dump (the corpus, tests/data/dumps, the examples) after 1-3 token, line or character
  edits, fed to ``compiler.compile_source``, compiles or raises an ``IRError``;
- a compiled ``.irbc`` after byte flips, truncation or a field edit with the hash written
  again, fed to ``vm.program.irbc.load`` and run on its inputs, runs or raises an ``IRError``
  (``BytecodeError`` / ``RunError``...).

The ``ci`` profile runs 200 examples of each; ``--hypothesis-profile long`` 10,000; the
long campaign (100,000 of each, with hang detection and a folder of failing inputs) is
``python3 tools/fuzz_campaign.py --n 100000``.

Below them, one regression test per escape the campaign found, each fixed where the
bad input first becomes representable (the parser or the verifier), so no pass sees it.
"""

from __future__ import annotations

import copy
from functools import lru_cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import compiler
from compiler.diagnostics import IRError, IRSyntaxError, IRValidationError
from tests.support.mutations import (
    IR_EDITS,
    IRBC_EDITS,
    apply_ir_edits,
    apply_irbc_edits,
    classify,
    ir_seeds,
)
from tests.support.paths import ROOT
from vm.program import irbc

SEEDS = ir_seeds()


def _edits(kinds: tuple[str, ...]) -> st.SearchStrategy[list[tuple[str, int, int]]]:
    edit = st.tuples(st.sampled_from(kinds), st.integers(0, 1 << 20), st.integers(0, 1 << 20))
    return st.lists(edit, min_size=1, max_size=3)


@given(st.sampled_from(SEEDS), _edits(IR_EDITS))
def test_mutated_dumps_compile_or_raise_ir_errors(seed: Path, edits: list[tuple[str, int, int]]) -> None:
    """Property: compile_source of a mutated real dump returns a program or raises an
    IRError; any other exception escapes (classify raises it) and fails the test."""
    text = apply_ir_edits(seed.read_text(), edits)
    note(f"{seed.name} {edits}\n{text}")
    classify(lambda: compiler.compile_source(text, "mutant.ir"))


@lru_cache(maxsize=1)
def _irbc_seeds() -> list[tuple[str, bytes, list[Any]]]:
    """Small corpus programs without weights, compiled to .irbc bytes, with their inputs."""
    import tempfile

    import vm.program.irbc as irbc
    from vm.files.npz import load_inputs

    names = ["control_flow", "fib", "list_ops", "dict_ops", "int_math", "reductions", "tuple_ops", "x2"]
    seeds = []
    with tempfile.TemporaryDirectory() as tmp:
        for path in SEEDS:
            inputs_file = path.with_name(path.stem + ".inputs.npz")
            if path.stem not in names or not inputs_file.exists():
                continue
            program = compiler.compile_source(path.read_text(), str(path))
            out = Path(tmp) / f"{path.stem}.irbc"
            irbc.save(program, out)
            seeds.append((path.stem, out.read_bytes(), load_inputs(inputs_file, program)))
    return seeds


@given(data=st.data(), edits=_edits(IRBC_EDITS))
def test_mutated_irbc_loads_and_runs_or_raises_ir_errors(
    tmp_path_factory: pytest.TempPathFactory, data: st.DataObject, edits: list[tuple[str, int, int]]
) -> None:
    """Property: a damaged .irbc (the hash rewritten after a field edit, so the checks past
    it are reached) is refused by vm.program.irbc.load with a BytecodeError, or loads and then runs or
    fails with an IRError; never another exception."""
    from vm.interpreter.machine import Interpreter

    seeds = _irbc_seeds()
    assert len(seeds) >= 6
    name, raw, inputs = data.draw(st.sampled_from(seeds))
    note(f"{name} {edits}")
    path = tmp_path_factory.mktemp("irbc") / "mutant.irbc"
    path.write_bytes(apply_irbc_edits(raw, edits))

    def attempt() -> None:
        Interpreter(irbc.load(path))(*copy.deepcopy(inputs))

    classify(attempt)


def test_unmutated_seeds_mostly_compile() -> None:
    """The campaign starts from inputs that compile (a few dumps call graphs they do not
    contain and are refused as they are), so a mutant fails because of its edits."""
    assert len(SEEDS) > 100
    sample = SEEDS[::8]
    ok = [s for s in sample if classify(lambda s=s: compiler.compile_source(s.read_text(), str(s))) == "ok"]
    assert len(ok) >= 0.9 * len(sample), sorted(set(sample) - set(ok))


# ----------------------------------------------------------------------------- regressions


def _error(text: str, cls: type[IRError] = IRValidationError) -> IRError:
    with pytest.raises(cls) as info:
        compiler.compile_source(text, "m.ir")
    return info.value


def _at(err: IRError, line: int, col: int, words: str) -> None:
    assert err.span is not None and (err.span.line, err.span.col) == (line, col), str(err)
    assert words in err.message, str(err)


@pytest.mark.parametrize("decl", ["Long(1, requires_grad=0:)", "Float(2, requires_grad=cpu)", "Float(2, device=0)"])
def test_bad_tensor_type_option_is_a_syntax_error(decl: str) -> None:
    """Was `ValueError: invalid literal for int() with base 10: '0:'` (parse_tree.py):
    requires_grad must be 0 or 1, a device a name with an optional index."""
    err = _error(f"graph(%x : Tensor):\n  %y : {decl} = aten::relu(%x)\n  return (%y)\n", IRSyntaxError)
    _at(err, 2, 8, "in ")


def test_operator_with_a_loop_body_is_refused_before_the_passes() -> None:
    """Was `AssertionError: dead %result.2 still used` (eliminate_dead_code.py): a
    prim::Loop renamed to aten::mul kept its body, which no pass expects."""
    text = """graph(%n : int, %c : bool, %x : Tensor):
  %r : Tensor = aten::mul(%n, %c, %x)
    block0(%i : int, %acc : Tensor):
      %result.2 : Tensor = aten::relu(%acc)
      -> (%c, %result.2)
  return (%r)
"""
    _at(_error(text), 2, 3, "aten::mul cannot have blocks")


def test_if_output_used_in_a_block_of_another_operator() -> None:
    """Was `AssertionError: output ... still used` / `dead %w still used`: DCE marks what
    If/Loop blocks use, not what a block under any other node uses."""
    text = """graph(%c : bool, %x : Tensor):
  %y : Tensor = prim::If(%c)
    block0():
      %a : Tensor = aten::relu(%x)
      -> (%a)
    block1():
      -> (%x)
  %z : Tensor = aten::neg(%x)
    block0():
      %w : Tensor = aten::relu(%y)
      -> (%w)
  return (%z)
"""
    _at(_error(text), 8, 3, "aten::neg cannot have blocks")


def test_constant_with_inputs_is_refused() -> None:
    """Was `AssertionError: %33 used outside its scope` (insert_drops.py): pooling hoists
    constants, and a 'constant' with an input then came before that input."""
    text = """graph(%n : int, %c : bool):
  %r : int = prim::Loop(%n, %c, %n)
    block0(%i : int, %acc : int):
      %k : int = prim::Constant[value=1](%acc)
      %s : int = aten::add(%acc, %k)
      -> (%c, %s)
  return (%r)
"""
    _at(_error(text), 4, 7, "prim::Constant takes no inputs, given 1")


def test_if_without_condition_and_loop_without_body() -> None:
    """Were `IndexError` in propagate_constants.py and effects.py."""
    no_cond = "graph(%x : int):\n  %y : int = prim::If()\n    block0():\n      -> (%x)\n    block1():\n      -> (%x)\n  return (%y)\n"
    _at(_error(no_cond), 2, 3, "prim::If takes one condition, given 0")
    no_body = "graph(%n : int, %c : bool):\n  %b : bool = prim::Loop(%n, %c)\n  return (%b)\n"
    _at(_error(no_body), 2, 3, "prim::Loop must have 1 block, found 0")


def test_fusion_group_and_calls_missing_their_parts() -> None:
    """Were `KeyError: 'Subgraph'` (group_fusions.py) and `IndexError` (emit.py)."""
    group = "graph(%x : Tensor):\n  %y : Tensor = prim::FusionGroup(%x)\n  return (%y)\n"
    _at(_error(group), 2, 3, "prim::FusionGroup without its sub-graph")
    call = "graph(%x : Tensor):\n  %y : Tensor = prim::CallFunction()\n  return (%y)\n"
    _at(_error(call), 2, 3, "prim::CallFunction needs the function")


def test_int_constant_holding_infinity() -> None:
    """Was `OverflowError: cannot convert float infinity to integer` (resolve.py): the
    declared type is checked before any pass folds with the payload."""
    text = "graph():\n  %k : int = prim::Constant[value=inf]()\n  %y : int = aten::add(%k, %k)\n  return (%y)\n"
    _at(_error(text), 2, 3, "declared int but its value inf")


def test_call_whose_callee_returns_fewer_results() -> None:
    """Was `AssertionError: destroying prim::CallFunction: %s.1 still has uses` (ir.py,
    from inline_calls): the function lost its return value, the call still expects one."""
    text = """graph(%x : Tensor):
  %f : Function = prim::Constant[name="helper"]()
  %s : Tensor = prim::CallFunction(%f, %x)
  return (%s)
with helper = graph(%a : Tensor):
  %b : Tensor = aten::relu(%a)
  return ()
"""
    _at(_error(text), 3, 3, "call of helper expects 1 result(s); it returns 0")
    two_args = text.replace("(%f, %x)", "(%f, %x, %x)").replace("return ()", "return (%b)")
    _at(_error(two_args), 3, 3, "call of helper with 2 argument(s); it takes 1")


@pytest.mark.parametrize(
    "decl,words",
    [
        ("%k : Long(requires_grad=0, device=cpu) = prim::Constant[value={inf}]()", "inf is not an integer (a Long tensor)"),
        ("%k : Tensor = prim::Constant[value={99999999999999999999}]()", "does not fit in a 64-bit integer"),
        ("%k = prim::Constant[value={99999999999999999999}]()", "does not fit in a 64-bit integer"),
    ],
)
def test_tensor_literal_out_of_its_dtype(decl: str, words: str) -> None:
    """Was `OverflowError: cannot convert float infinity to integer` (resolve.py): the
    numbers of a tensor literal must fit the tensor's dtype."""
    text = f"graph():\n  {decl}\n  return (%k)\n"
    _at(_error(text), 2, 3, words)


def test_attribute_access_without_its_object() -> None:
    """Was `IndexError` in eliminate_common_subexpressions.py: a prim::Constant renamed
    prim::GetAttr has no object to read from."""
    text = "graph():\n  %k : float = prim::GetAttr[value=0.1]()\n  return (%k)\n"
    _at(_error(text), 2, 3, "prim::GetAttr takes the object as its one input")
    setattr_text = 'graph(%self : __torch__.M):\n  prim::SetAttr[name="w"](%self)\n  return (%self)\n'
    _at(_error(setattr_text), 2, 3, "prim::SetAttr takes the object and the value")


def _edited_irbc(tmp_path: Path, text: str, edit: Any) -> Path:
    """``text`` compiled to an .irbc whose program.json ``edit`` changes, hash rewritten."""
    import io
    import json
    import zipfile

    import vm.program.irbc as irbc
    from tests.support.mutations import _rehash

    path = tmp_path / "p.irbc"
    irbc.save(compiler.compile_source(text, "p.ir"), path)
    with zipfile.ZipFile(io.BytesIO(path.read_bytes())) as zf:
        names = zf.namelist()
        header = json.loads(zf.read(names[0]))
        members = [(n, zf.read(n)) for n in names[1:]]
    members = [(n, json.dumps(edit(json.loads(d))).encode() if n == "program.json" else d) for n, d in members]
    path.write_bytes(_rehash(members, header))
    return path


def test_irbc_fused_kernel_with_malformed_attributes(tmp_path: Path) -> None:
    """Was `TypeError: int() argument must be ... not 'UnboundTensor'` (fusion.py): an
    operator's attributes edited in the file are a BytecodeError naming the operator, at
    load since the fused kernels' specs are checked there (issue #40)."""
    from compiler.diagnostics import BytecodeError
    from vm.interpreter.machine import Interpreter

    def edit(body: dict[str, Any]) -> dict[str, Any]:
        for f in body["functions"]:
            for op in f["operators"]:
                if op["name"] == "prim::FusedKernel":
                    op["attrs"] = [[k, {"list": [{"list": ["f.ir", {"unbound": "w"}, 1, None]}]} if k == "spec" else v]
                                   for k, v in op["attrs"]]  # fmt: skip
        return body

    path = _edited_irbc(tmp_path, (ROOT / "examples" / "lstm_cell.ir").read_text(), edit)
    with pytest.raises(BytecodeError, match="fused kernel prim::FusionGroup has a malformed spec"):
        Interpreter(irbc.load(path))


def test_irbc_raise_with_a_message_that_is_not_a_string(tmp_path: Path) -> None:
    """Was `TypeError: __str__ returned non-string` while reporting the failure: a raise
    whose message constant was edited to a bool fails as a RunError."""
    from compiler.diagnostics import RunError
    from vm.interpreter.machine import Interpreter

    text = 'graph(%x : int):\n  %m : str = prim::Constant[value="boom"]()\n  prim::RaiseException(%m)\n  return (%x)\n'

    def edit(body: dict[str, Any]) -> dict[str, Any]:
        body["functions"][0]["constants"] = [True if c == "boom" else c for c in body["functions"][0]["constants"]]
        return body

    program = irbc.load(_edited_irbc(tmp_path, text, edit))
    with pytest.raises(RunError, match="needs a str message, got bool"):
        Interpreter(program)(1)
