"""The command lines: what users type, what they see, and what is never destroyed.

Every failure prints one paragraph (no Python traceback) and exits with its own code:
65 for input that does not compile or bytecode that does not verify, 1 for a run-time
failure or a bad input, 66 for a file that cannot be read.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.paths import ROOT

EXAMPLES = ROOT / "examples"


def irc(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "compiler.cli", *args], capture_output=True, text=True, cwd=cwd, check=False)


def irvm(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vm.cli", *args], capture_output=True, text=True, cwd=cwd, check=False)


def assert_one_paragraph(proc: subprocess.CompletedProcess[str], code: int) -> None:
    assert proc.returncode == code, proc.stderr
    assert "Traceback" not in proc.stderr
    assert proc.stderr.strip(), "an error must say something"


def test_compile_then_run_matches_expected(tmp_path: Path) -> None:
    """irc compile writes .irbc; irvm run on it writes the outputs torch computed."""
    out = tmp_path / "ratio_iou.irbc"
    proc = irc("compile", str(EXAMPLES / "ratio_iou.ir"), "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    result = tmp_path / "out.npz"
    proc = irvm("run", str(out), "--inputs", str(EXAMPLES / "ratio_iou.inputs.npz"), "--output", str(result))
    assert proc.returncode == 0, proc.stderr
    with np.load(result) as got, np.load(EXAMPLES / "ratio_iou.expected.npz") as want:
        np.testing.assert_allclose(got["out0"], want["out0"], rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_run_ir_directly_on_both_backends(tmp_path: Path, backend: str) -> None:
    result = tmp_path / "out.npz"
    proc = irvm(
        "run", str(EXAMPLES / "mlp.ir"), "--inputs", str(EXAMPLES / "mlp.inputs.npz"),
        "--weights", str(EXAMPLES / "mlp.weights.npz"), "--output", str(result), "--backend", backend,
    )
    assert proc.returncode == 0, proc.stderr
    with np.load(result) as got, np.load(EXAMPLES / "mlp.expected.npz") as want:
        np.testing.assert_allclose(got["out0"], want["out0"], rtol=1e-4, atol=1e-5)


def test_run_prints_results_without_output() -> None:
    proc = irvm("run", str(EXAMPLES / "x2.ir"), "--inputs", str(EXAMPLES / "x2.inputs.npz"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.startswith("out0 = tensor(")


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_nan_from_inf_minus_inf_is_silent_as_in_torch(tmp_path: Path, backend: str) -> None:
    """inf - inf is NaN without a numpy RuntimeWarning on stderr (PyTorch says nothing)."""
    program = tmp_path / "sub.ir"
    program.write_text(
        "graph(%x : Tensor, %y : Tensor):\n"
        "  %one : int = prim::Constant[value=1]()\n"
        "  %z : Tensor = aten::sub(%x, %y, %one)\n"
        "  return (%z)\n"
    )
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.array([np.inf, 1.0], np.float32), y=np.array([np.inf, 2.0], np.float32))
    proc = irvm("run", str(program), "--inputs", str(inputs), "--backend", backend)
    assert proc.returncode == 0, proc.stderr
    assert "nan" in proc.stdout and proc.stderr == ""


def test_trace_saves_every_intermediate_by_ir_name(tmp_path: Path) -> None:
    trace = tmp_path / "trace.npz"
    proc = irvm("run", str(EXAMPLES / "ratio_iou.ir"), "--inputs", str(EXAMPLES / "ratio_iou.inputs.npz"), "--trace", str(trace))
    assert proc.returncode == 0, proc.stderr
    with np.load(trace) as data:
        names = set(data.files)
    assert "%x1.1" in names or "x1.1" in names
    assert len(names) > 8, "intermediates, not only the inputs, are traced"


def test_emit_ir_and_bytecode() -> None:
    ir = irc("compile", str(EXAMPLES / "ratio_iou.ir"), "--emit", "ir")
    assert ir.returncode == 0, ir.stderr
    assert ir.stdout.startswith("graph(")
    code = irc("compile", str(EXAMPLES / "ratio_iou.ir"), "--emit", "bytecode")
    assert code.returncode == 0, code.stderr
    assert "RET" in code.stdout and "== main" in code.stdout


def test_verbose_shows_each_pass_and_diff_shows_changes() -> None:
    proc = irc("compile", str(EXAMPLES / "lunif2.ir"), "--emit", "ir", "-v", "--print-after-all", "--diff")
    assert proc.returncode == 0, proc.stderr
    assert "=== after" in proc.stdout
    assert "@@" in proc.stdout, "a unified diff of at least one pass that changed something"
    assert proc.stderr.count("[") >= 3, "-v prints a record per pass"


def test_syntax_error_points_at_the_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.ir"
    bad.write_text("graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x\n  return (%y)\n")
    proc = irc("compile", str(bad))
    assert_one_paragraph(proc, 65)
    assert f"{bad}:" in proc.stderr and ":3:" in proc.stderr or ":2:" in proc.stderr


def test_undefined_value_names_it(tmp_path: Path) -> None:
    bad = tmp_path / "undef.ir"
    bad.write_text("graph(%x : Tensor):\n  %y : Tensor = aten::relu(%z)\n  return (%y)\n")
    proc = irc("compile", str(bad))
    assert_one_paragraph(proc, 65)
    assert "%z" in proc.stderr and ":2:" in proc.stderr


def test_unknown_operator_is_a_compile_error(tmp_path: Path) -> None:
    bad = tmp_path / "unknown.ir"
    bad.write_text("graph(%x : Tensor):\n  %y : Tensor = aten::frobnicate(%x)\n  return (%y)\n")
    proc = irc("compile", str(bad))
    assert_one_paragraph(proc, 65)
    assert "aten::frobnicate" in proc.stderr and ":2:" in proc.stderr


def test_binary_garbage_and_empty_files(tmp_path: Path) -> None:
    garbage = tmp_path / "garbage.ir"
    garbage.write_bytes(bytes(range(256)) * 4)
    assert_one_paragraph(irc("compile", str(garbage)), 65)
    empty = tmp_path / "empty.ir"
    empty.write_text("")
    assert_one_paragraph(irc("compile", str(empty)), 65)


def test_missing_file_exits_66(tmp_path: Path) -> None:
    assert_one_paragraph(irc("compile", str(tmp_path / "nope.ir")), 66)
    assert_one_paragraph(irvm("run", str(tmp_path / "nope.irbc")), 66)


def test_corrupt_bytecode_exits_65(tmp_path: Path) -> None:
    good = tmp_path / "x2.irbc"
    assert irc("compile", str(EXAMPLES / "x2.ir"), "-o", str(good)).returncode == 0
    data = bytearray(good.read_bytes())
    data[len(data) // 2] ^= 0xFF
    good.write_bytes(bytes(data))
    proc = irvm("run", str(good), "--inputs", str(EXAMPLES / "x2.inputs.npz"))
    assert_one_paragraph(proc, 65)
    assert "x2.irbc" in proc.stderr


def test_wrong_input_is_a_run_error(tmp_path: Path) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, arg0=np.zeros((2, 2), np.float32), arg1=np.zeros(3, np.float32), arg2=np.zeros(1))
    proc = irvm("run", str(EXAMPLES / "x2.ir"), "--inputs", str(inputs))
    assert_one_paragraph(proc, 1)


def test_never_overwrites_the_input_or_a_foreign_file(tmp_path: Path) -> None:
    source = tmp_path / "x2.ir"
    source.write_text((EXAMPLES / "x2.ir").read_text())
    proc = irc("compile", str(source), "-o", str(source))
    assert_one_paragraph(proc, 1)
    assert source.read_text() == (EXAMPLES / "x2.ir").read_text()
    foreign = tmp_path / "notes.irbc"
    foreign.write_text("my notes")
    assert_one_paragraph(irc("compile", str(source), "-o", str(foreign)), 1)
    assert foreign.read_text() == "my notes"
    assert irc("compile", str(source), "-o", str(foreign), "--force").returncode == 0


def test_recompiling_replaces_our_own_bytecode(tmp_path: Path) -> None:
    out = tmp_path / "x2.irbc"
    assert irc("compile", str(EXAMPLES / "x2.ir"), "-o", str(out)).returncode == 0
    assert irc("compile", str(EXAMPLES / "x2.ir"), "-o", str(out)).returncode == 0


def test_check_and_passes_commands() -> None:
    proc = irc("check", str(EXAMPLES / "lstm_cell.ir"))
    assert proc.returncode == 0 and "ok" in proc.stdout
    proc = irc("passes")
    assert proc.returncode == 0 and "eliminate_dead_code" in proc.stdout


def test_disasm_and_profile() -> None:
    proc = irvm("disasm", str(EXAMPLES / "x2.ir"))
    assert proc.returncode == 0 and "RET" in proc.stdout
    proc = irvm("profile", str(EXAMPLES / "ratio_iou.ir"), "--inputs", str(EXAMPLES / "ratio_iou.inputs.npz"), "--runs", "3")
    assert proc.returncode == 0, proc.stderr
    assert "aten::" in proc.stdout


def test_calls_to_functions_missing_from_the_dump_are_named_once_each(tmp_path: Path) -> None:
    """fn.graph (not inlined_graph) calls helpers it does not print: each call is reported,
    with the way out, and nothing downstream cascades into 'used before it is defined'."""
    bad = tmp_path / "calls.ir"
    bad.write_text(
        "graph(%x.1 : Tensor):\n"
        "  %9 : int = prim::Constant[value=1]()\n"
        '  %3 : Function = prim::Constant[name="_helper"]()\n'
        "  %4 : Tensor = prim::CallFunction(%3, %x.1)\n"
        "  %8 : Tensor = prim::CallFunction(%3, %4)\n"
        "  %10 : Tensor = aten::add(%4, %8, %9)\n"
        "  return (%10)\n"
    )
    proc = irc("compile", str(bad))
    assert_one_paragraph(proc, 65)
    assert proc.stderr.count("unknown function '_helper'") == 2
    assert "inlined_graph" in proc.stderr
    assert "before it is defined" not in proc.stderr
