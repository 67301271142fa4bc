"""The .irbc file format: round trip, refusal of damaged or foreign files, and the verifier.

Every way a file can be wrong (truncated, bit-flipped, hand-edited, from a newer irvm)
must give a BytecodeError naming the file, never another exception and never a program
that runs wrongly.
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import compiler
import vm
from compiler.diagnostics import BytecodeError
from tests.support.paths import ROOT
from vm.program.irbc import (
    FORMAT_VERSION,
    MAGIC_MEMBER,
    OlderFormatError,
    _digest,
    is_irbc,
    load,
    save,
)

EXAMPLES = ROOT / "examples"

LOOP_IR = """\
graph(%x.1 : Tensor, %n.1 : int):
  %2 : bool = prim::Constant[value=1]()
  %one : int = prim::Constant[value=1]()
  %x : Tensor = prim::Loop(%n.1, %2, %x.1)
    block0(%i : int, %x.3 : Tensor):
      %x.5 : Tensor = aten::add(%x.3, %x.3, %one)
      -> (%2, %x.5)
  return (%x)
"""


@pytest.fixture(scope="module")
def ratio_iou_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    program = compiler.compile_file(EXAMPLES / "ratio_iou.ir")
    path = tmp_path_factory.mktemp("irbc") / "ratio_iou.irbc"
    save(program, path, {"fusion": True})
    return path


def _inputs(name: str) -> list[np.ndarray]:
    with np.load(EXAMPLES / f"{name}.inputs.npz") as data:
        from vm.files.npz import load_inputs

        return load_inputs({k: data[k] for k in data.files}, compiler.compile_file(EXAMPLES / f"{name}.ir"))


def test_round_trip_runs_the_same(ratio_iou_file: Path) -> None:
    """A saved and reloaded program gives exactly the results of the one compiled in memory."""
    direct = vm.Interpreter(compiler.compile_file(EXAMPLES / "ratio_iou.ir"))(*_inputs("ratio_iou"))
    loaded = vm.Interpreter(load(ratio_iou_file))(*_inputs("ratio_iou"))
    np.testing.assert_array_equal(direct, loaded)


def test_round_trip_keeps_tables(tmp_path: Path) -> None:
    """Instructions, operator and constant tables survive the file unchanged."""
    program = compiler.compile_source(LOOP_IR, "loop.ir")
    save(program, tmp_path / "loop.irbc")
    loaded = load(tmp_path / "loop.irbc")
    assert [f.instructions for f in loaded.functions] == [f.instructions for f in program.functions]
    assert [f.operators for f in loaded.functions] == [f.operators for f in program.functions]
    assert loaded.input_names == program.input_names
    x = np.arange(4, dtype=np.float32)
    np.testing.assert_array_equal(vm.Interpreter(loaded)(x, 3), x * 8)


def test_tensor_constants_are_npy_members(tmp_path: Path) -> None:
    """Array constants are stored as .npy members and come back with dtype and values."""
    text = """\
graph(%x.1 : Tensor):
  %c : Tensor = prim::Constant[value={2.5}]()
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::add(%x.1, %c, %one)
  return (%y)
"""
    program = compiler.compile_source(text)
    save(program, tmp_path / "c.irbc")
    with zipfile.ZipFile(tmp_path / "c.irbc") as zf:
        assert any(n.startswith("arrays/") for n in zf.namelist())
    out = vm.Interpreter(load(tmp_path / "c.irbc"))(np.ones(2, np.float32))
    np.testing.assert_array_equal(out, np.full(2, 3.5, np.float32))


def test_magic_identifies_files(ratio_iou_file: Path, tmp_path: Path) -> None:
    """is_irbc knows our files by their bytes, not their names; a plain zip is not one."""
    assert is_irbc(ratio_iou_file)
    other = tmp_path / "other.irbc"
    with zipfile.ZipFile(other, "w") as zf:
        zf.writestr("hello.txt", "hi")
    assert not is_irbc(other)
    with pytest.raises(BytecodeError, match="not an irvm bytecode file"):
        load(other)


def test_truncated_file_is_refused(ratio_iou_file: Path, tmp_path: Path) -> None:
    data = ratio_iou_file.read_bytes()
    for cut in (10, 40, len(data) // 2, len(data) - 5):
        bad = tmp_path / f"cut{cut}.irbc"
        bad.write_bytes(data[:cut])
        with pytest.raises(BytecodeError, match=str(bad.name)):
            load(bad)


def _rewrite(path: Path, out: Path, edit, fix_hash: bool = True, header_edit=None) -> None:
    """Copy an .irbc with program.json edited by ``edit`` (and the hash recomputed)."""
    with zipfile.ZipFile(path) as zf:
        header = json.loads(zf.read(MAGIC_MEMBER))
        members = [(n, zf.read(n)) for n in zf.namelist()[1:]]
    members = [(n, json.dumps(edit(json.loads(d))).encode() if n == "program.json" else d) for n, d in members]
    if fix_hash:
        header["sha256"] = _digest(members)
    if header_edit:
        header_edit(header)
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(zipfile.ZipInfo(MAGIC_MEMBER), json.dumps(header), compress_type=zipfile.ZIP_STORED)
        for n, d in members:
            zf.writestr(n, d)


def test_edit_without_hash_is_detected(ratio_iou_file: Path, tmp_path: Path) -> None:
    def edit(body):
        body["functions"][0]["n_registers"] += 1
        return body

    bad = tmp_path / "edited.irbc"
    _rewrite(ratio_iou_file, bad, edit, fix_hash=False)
    with pytest.raises(BytecodeError, match="does not match its hash"):
        load(bad)


def test_newer_format_says_so_in_one_line(ratio_iou_file: Path, tmp_path: Path) -> None:
    bad = tmp_path / "newer.irbc"
    _rewrite(ratio_iou_file, bad, lambda b: b, header_edit=lambda h: h.update(format=FORMAT_VERSION + 1))
    with pytest.raises(BytecodeError) as info:
        load(bad)
    assert "newer irvm" in str(info.value) and "\n" not in str(info.value)


def _older_file(ratio_iou_file: Path, tmp_path: Path) -> Path:
    old = tmp_path / "old.irbc"

    def garble(body):  # an old format's tables mean nothing to this irvm; only the IR counts
        body["functions"] = "format 0 tables"
        return body

    _rewrite(ratio_iou_file, old, garble, header_edit=lambda h: h.update(format=FORMAT_VERSION - 1))
    return old


def test_older_format_is_refused_naming_the_remedy(ratio_iou_file: Path, tmp_path: Path) -> None:
    """vm.load compiles nothing: a file of an older format is refused in one line that names
    the file and says to compile its IR again, and the error carries that IR text."""
    old = _older_file(ratio_iou_file, tmp_path)
    with pytest.raises(OlderFormatError) as info:
        load(old)
    message = str(info.value)
    assert str(old) in message and "older irvm" in message and "irc compile" in message and "\n" not in message
    assert info.value.text == (EXAMPLES / "ratio_iou.ir").read_text()


def test_older_format_runs_from_the_command_line(ratio_iou_file: Path, tmp_path: Path) -> None:
    """`irvm run old.irbc` compiles the older file's IR again (saying so) and runs it."""
    from vm.cli import main as irvm_main

    old = _older_file(ratio_iou_file, tmp_path)
    out = tmp_path / "out.npz"
    assert irvm_main(["run", str(old), "--inputs", str(EXAMPLES / "ratio_iou.inputs.npz"), "--output", str(out)]) == 0
    expected = vm.Interpreter(compiler.compile_file(EXAMPLES / "ratio_iou.ir"))(*_inputs("ratio_iou"))
    with np.load(out) as data:
        np.testing.assert_array_equal(data["out0"], expected)


def _edit_code(index: int, new):
    def edit(body):
        code = body["functions"][0]["code"]
        code[index] = new(code[index], body["functions"][0])
        return body

    return edit


@pytest.mark.parametrize(
    "edit, message",
    [
        (_edit_code(1, lambda ins, f: [99, 0, 0]), "unknown opcode 99"),
        (_edit_code(1, lambda ins, f: [3, f["n_registers"] + 5, 0]), "out of range"),  # MOVE past registers
        (_edit_code(-1, lambda ins, f: [10, 10_000, 0]), "out of range"),  # JMP outside the function
        (_edit_code(1, lambda ins, f: [6, 0, 0]), "stack"),  # DROP: the stack no longer balances
        (_edit_code(1, lambda ins, f: [8, 500, 0]), "out of range"),  # LOADC of a missing constant
    ],
    ids=["opcode", "register", "jump", "stack-depth", "constant"],
)
def test_verifier_refuses_hand_edited_code(ratio_iou_file: Path, tmp_path: Path, edit, message: str) -> None:
    """Edits that keep the hash consistent still meet the verifier before anything runs."""
    bad = tmp_path / "hand.irbc"
    _rewrite(ratio_iou_file, bad, edit)
    with pytest.raises(BytecodeError, match=message):
        load(bad)


def test_verifier_refuses_unknown_operator(ratio_iou_file: Path, tmp_path: Path) -> None:
    def edit(body):
        for f in body["functions"]:
            for op in f["operators"]:
                op["name"] = "aten::no_such_op.Tensor"
        return body

    bad = tmp_path / "op.irbc"
    _rewrite(ratio_iou_file, bad, edit)
    with pytest.raises(BytecodeError, match="no_such_op"):
        load(bad)


def test_verifier_refuses_bad_function_index(tmp_path: Path) -> None:
    """fib calls itself: a CALL whose function index points nowhere is refused."""
    good = tmp_path / "fib.irbc"
    save(compiler.compile_file(EXAMPLES / "fib.ir"), good)

    def edit(body):
        calls = 0
        for f in body["functions"]:
            for ins in f["code"]:
                if ins[0] == 12:  # CALL
                    ins[1] = 42
                    calls += 1
        assert calls, "fib must contain a CALL for this test to mean anything"
        return body

    bad = tmp_path / "call.irbc"
    _rewrite(good, bad, edit)
    with pytest.raises(BytecodeError, match="out of range"):
        load(bad)


def test_no_pickle_anywhere(ratio_iou_file: Path) -> None:
    """Array members load with allow_pickle=False: an object array cannot be smuggled in."""
    buf = io.BytesIO()
    np.save(buf, np.array([{"a": 1}], dtype=object), allow_pickle=True)
    with pytest.raises(ValueError):
        np.load(io.BytesIO(buf.getvalue()), allow_pickle=False)


@settings(max_examples=200)
@given(data=st.data())
def test_mutated_files_only_raise_bytecode_errors(ratio_iou_file: Path, data: st.DataObject) -> None:
    """Random byte flips, cuts and insertions: load() either succeeds or raises BytecodeError."""
    raw = bytearray(ratio_iou_file.read_bytes())
    for _ in range(data.draw(st.integers(1, 4))):
        kind = data.draw(st.sampled_from(["flip", "cut", "insert", "zero"]))
        pos = data.draw(st.integers(0, len(raw) - 1))
        if kind == "flip":
            raw[pos] ^= 1 << data.draw(st.integers(0, 7))
        elif kind == "cut":
            del raw[pos : pos + data.draw(st.integers(1, 64))]
        elif kind == "insert":
            raw[pos:pos] = data.draw(st.binary(min_size=1, max_size=16))
        else:
            raw[pos : pos + 8] = bytes(min(8, len(raw) - pos))
        if not raw:
            raw = bytearray(b"\0")
    path = ratio_iou_file.parent / "mutant.irbc"
    path.write_bytes(bytes(raw))
    try:
        load(path)
    except BytecodeError:
        pass


def test_loading_runs_no_pass_and_no_parse(ratio_iou_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The file is the compiled program: ``load`` and an interpreter run call neither the
    IR parser, nor the pass pipeline, nor overload resolution; fusion groups come resolved."""
    import compiler.parser
    import compiler.pipeline
    import vm.ir.resolve

    def forbidden(*args, **kwargs):
        raise AssertionError("loading a .irbc must not parse, optimize or resolve")

    monkeypatch.setattr(compiler.parser, "parse", forbidden)
    monkeypatch.setattr(compiler.pipeline, "optimize", forbidden)
    monkeypatch.setattr(vm.ir.resolve, "resolve", forbidden)
    program = load(ratio_iou_file)
    assert any(ref.name == "prim::FusedKernel" for f in program.functions for ref in f.operators)
    out = vm.Interpreter(program)(*[np.ones(4, np.float32)] * 8)
    assert out.shape == (4,)


def test_static_runtime_of_a_loaded_file_gets_the_optimized_ir_with_original_spans(ratio_iou_file: Path) -> None:
    """The optimized IR the file carries is parsed when a static runtime needs it, not
    re-optimized, and its nodes point at the original file's lines."""
    program = load(ratio_iou_file)
    assert program.module_if_loaded is None
    direct = vm.Interpreter(compiler.compile_file(EXAMPLES / "ratio_iou.ir"))(*_inputs("ratio_iou"))
    np.testing.assert_array_equal(vm.StaticRuntime(program)(*_inputs("ratio_iou")), direct)
    spans = [n.span for n in program.module.main.walk() if n.kind != "prim::Constant"]
    assert spans and all(s is not None and s.file.endswith("ratio_iou.ir") for s in spans)


def test_self_attribute_reads_are_bound_without_the_ir(tmp_path: Path) -> None:
    """A module program read from a file binds ``%self`` from its stored attribute reads,
    and a missing weight is still reported with its dotted path and type."""
    text = """\
graph(%self : __torch__.Net, %x : Tensor):
  %lin : __torch__.Scaler = prim::GetAttr[name="lin"](%self)
  %w : Tensor = prim::GetAttr[name="weight"](%lin)
  %scale : float = prim::GetAttr[name="scale"](%self)
  %y : Tensor = aten::mul(%x, %w)
  %z : Tensor = aten::mul(%y, %scale)
  return (%z)
"""
    path = tmp_path / "net.irbc"
    save(compiler.compile_source(text, "net.ir"), path)
    program = load(path)
    assert [(name, kind) for _, name, kind, _, _ in program.self_reads] == [
        ("lin", "__torch__.Scaler"), ("scale", "float"), ("weight", "Tensor")
    ]
    weights = {"lin.weight": np.full(3, 2.0, np.float32), "scale": np.array(0.5)}
    np.testing.assert_array_equal(vm.Interpreter(program, weights)(np.ones(3, np.float32)), np.ones(3, np.float32))
    from compiler.diagnostics import RunError

    with pytest.raises(RunError, match=r"lin\.weight : Tensor"):
        vm.Interpreter(program, {"scale": np.array(0.5)})


def test_a_node_operator_index_out_of_range_is_refused(ratio_iou_file: Path, tmp_path: Path) -> None:
    """The operator table the static runtime reads (``node_ops``) is checked on load."""
    bad = tmp_path / "bad.irbc"

    def edit(body: dict) -> dict:
        assert body["node_ops"], "the compiler recorded the nodes' operators"
        body["node_ops"][0] = len(body["node_operators"])
        return body

    _rewrite(ratio_iou_file, bad, edit)
    with pytest.raises(BytecodeError, match="node operator index"):
        load(bad)


def test_an_unknown_node_operator_is_refused(ratio_iou_file: Path, tmp_path: Path) -> None:
    """The verifier checks the node operators as it checks the functions' operators."""
    bad = tmp_path / "bad.irbc"

    def edit(body: dict) -> dict:
        body["node_operators"][0]["name"] = "aten::no_such_op"
        return body

    _rewrite(ratio_iou_file, bad, edit)
    with pytest.raises(BytecodeError, match="node operators: operator 'aten::no_such_op' is not known"):
        load(bad)
def _rewrite_member(path: Path, out: Path, member: str, edit) -> None:
    """Copy an .irbc with the JSON member ``member`` edited by ``edit``, hash recomputed."""
    with zipfile.ZipFile(path) as zf:
        header = json.loads(zf.read(MAGIC_MEMBER))
        members = [(n, zf.read(n)) for n in zf.namelist()[1:]]
    members = [(n, json.dumps(edit(json.loads(d))).encode() if n == member else d) for n, d in members]
    header["sha256"] = _digest(members)
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(zipfile.ZipInfo(MAGIC_MEMBER), json.dumps(header), compress_type=zipfile.ZIP_STORED)
        for n, d in members:
            zf.writestr(n, d)


def test_the_check_table_is_stored_and_read_without_the_ir(ratio_iou_file: Path) -> None:
    """A loaded program carries its check table (the nodes the checks before a run read):
    the same table the compiler made, so a run checks what it would have checked."""
    from compiler.program_tables import check_table

    program = compiler.compile_file(EXAMPLES / "ratio_iou.ir")
    loaded = load(ratio_iou_file)
    assert loaded.check_table() == json.loads(json.dumps(check_table(program.module)))
    assert loaded.module_if_loaded is None


@pytest.mark.parametrize(
    "edit",
    [
        lambda t: {**t, "version": 99},
        lambda t: {**t, "main": [[], [["aten::linear", [10**6], [], {}, [], None]], []]},
        lambda t: {**t, "types": ["Float(2"] * len(t["types"])},
        lambda t: {k: v for k, v in t.items() if k != "values"},
        lambda t: [t],
    ],
)
def test_a_damaged_check_table_is_a_bytecode_error(ratio_iou_file: Path, tmp_path: Path, edit) -> None:
    """An edited check table (hash recomputed) is refused with a BytecodeError naming the
    check table, before anything runs, never a traceback."""
    bad = tmp_path / "bad.irbc"
    _rewrite_member(ratio_iou_file, bad, "checks.json", edit)
    with pytest.raises(BytecodeError, match="check table"):
        vm.Interpreter(load(bad))
