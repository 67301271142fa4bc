"""The command lines agree with themselves and with the README: `irc check` refuses what
`irc compile` refuses, unknown type names are errors at their line, the exit codes are the
documented ones, and the small commands users expect exist (`--version`, `irvm info`).

The commands run in-process (``main(argv)`` returns the exit code).
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from compiler.cli import main as irc_main
from compiler.cli import run_guarded
from tests.support.paths import ROOT
from vm.cli import main as irvm_main

EXAMPLES = ROOT / "examples"


def irc(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = irc_main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def irvm(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = irvm_main(list(args))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


BAD = {
    "unknown_op": ("graph(%x : Tensor, %w : Tensor):\n  %y : Tensor = aten::linaer(%x, %w)\n  return (%y)\n", "2:3"),
    "unknown_type": ("graph(%x : Tensr):\n  %y : Tensor = aten::relu(%x)\n  return (%y)\n", "1:12"),
    "unknown_type_in_node": ("graph(%x : Tensor):\n  %y : Tensr = aten::relu(%x)\n  return (%y)\n", "2:8"),
}


@pytest.mark.parametrize("case", sorted(BAD))
@pytest.mark.parametrize("command", ["check", "compile"])
def test_check_and_compile_refuse_the_same_files_at_the_same_place(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], case: str, command: str
) -> None:
    """Issue 17: `irc check` said ok for `aten::linaer` and `Tensr`, and `Tensr` compiled and ran."""
    text, where = BAD[case]
    path = tmp_path / f"{case}.ir"
    path.write_text(text)
    code, _, err = irc(capsys, command, str(path), *(["-o", str(tmp_path / "o.irbc")] if command == "compile" else []))
    assert code == 65, err
    assert f"{path}:{where}:" in err
    assert not (tmp_path / "o.irbc").exists()


def test_lowercase_type_names_are_type_variables_as_in_torch(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """torch's type parser reads an unknown lowercase name as a type variable (`t`), not an error."""
    path = tmp_path / "t.ir"
    path.write_text("graph(%x : Tensor, %n : t):\n  return (%x)\n")
    code, out, err = irc(capsys, "check", str(path))
    assert code == 0 and "ok" in out, err


def test_check_says_ok_for_a_good_file(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = irc(capsys, "check", str(EXAMPLES / "lstm_cell.ir"))
    assert code == 0 and out.startswith(f"{EXAMPLES / 'lstm_cell.ir'}: ok (")


@pytest.mark.parametrize("main", [irc_main, irvm_main])
def test_version(capsys: pytest.CaptureFixture[str], main: object) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["--version"])  # type: ignore[operator]
    assert exited.value.code == 0
    assert re.search(r"\b\d+\.\d+\.\d+\b", capsys.readouterr().out)


@pytest.mark.parametrize("suffix", [".ir", ".irbc"])
def test_info_lists_inputs_and_outputs(tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    """`irvm info` shows each input's name, dtype and shape (as ONNX Runtime's get_inputs), from .ir and .irbc."""
    source = tmp_path / "f.ir"
    source.write_text(
        "graph(%x.1 : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu), %k : int):\n"
        "  %y : Float(2, 3, strides=[3, 1], requires_grad=0, device=cpu) = aten::mul(%x.1, %k)\n"
        "  return (%y, %k)\n"
    )
    program = source
    if suffix == ".irbc":
        program = tmp_path / "f.irbc"
        assert irc(capsys, "compile", str(source), "-o", str(program))[0] == 0
    code, out, err = irvm(capsys, "info", str(program))
    assert code == 0, err
    lines = out.splitlines()
    assert re.match(r"input\s+x\.1\s+Float\(2, 3.*\)\s+float32\s+\[2, 3\]$", lines[1]), lines
    assert re.match(r"input\s+k\s+int\s+-\s+-$", lines[2]), lines
    assert re.match(r"output\s+out0\s+Float\(2, 3.*float32\s+\[2, 3\]$", lines[3]), lines
    assert re.match(r"output\s+out1\s+int\b", lines[4]), lines


def test_input_name_errors_list_the_expected_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, X=np.ones(5, np.float32))
    code, _, err = irvm(capsys, "run", str(EXAMPLES / "x2.ir"), "--inputs", str(inputs))
    assert code == 1 and "X" in err and "x.1" in err and "arg0" in err
    np.savez(inputs, other=np.ones(5, np.float32))
    code, _, err = irvm(capsys, "run", str(EXAMPLES / "ratio_iou.ir"), "--inputs", str(inputs))
    assert code == 1 and "other" in err


def test_trace_with_the_static_backend_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 17: `--trace T.npz --backend static` wrote nothing and exited 0."""
    trace = tmp_path / "t.npz"
    code, _, err = irvm(capsys, "run", str(EXAMPLES / "x2.ir"), "--inputs", str(EXAMPLES / "x2.inputs.npz"),
                        "--trace", str(trace), "--backend", "static")
    assert code == 1 and "--backend interp" in err
    assert not trace.exists()


# -- exit codes, exactly as the README says ---------------------------------------------


def test_exit_65_for_a_program_that_does_not_compile(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.ir"
    bad.write_text("graph(%x : Tensor):\n  return (%y)\n")
    assert irvm(capsys, "run", str(bad))[0] == 65
    assert irc(capsys, "compile", str(bad))[0] == 65


def test_exit_1_for_a_run_time_error_or_a_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "in.npz"
    np.savez(inputs, **{"x.1": np.ones((2, 3), np.float32), "y.1": np.ones((4, 5), np.float32)})
    prog = tmp_path / "mm.ir"
    prog.write_text("graph(%x.1 : Tensor, %y.1 : Tensor):\n  %z : Tensor = aten::mm(%x.1, %y.1)\n  return (%z)\n")
    assert irvm(capsys, "run", str(prog), "--inputs", str(inputs))[0] == 1  # shapes do not multiply
    np.savez(inputs, **{"x.1": np.ones(2, np.float32)})
    assert irvm(capsys, "run", str(prog), "--inputs", str(inputs))[0] == 1  # an input is missing


def test_exit_66_for_an_unreadable_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert irvm(capsys, "run", str(tmp_path / "nope.ir"))[0] == 66
    assert irvm(capsys, "run", str(EXAMPLES / "x2.ir"), "--inputs", str(tmp_path / "nope.npz"))[0] == 66
    assert irc(capsys, "check", str(tmp_path / "nope.ir"))[0] == 66


def test_exit_70_for_an_internal_error_without_a_traceback(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("IRVM_DEBUG", raising=False)

    def broken() -> int:
        raise ZeroDivisionError("a bug")

    assert run_guarded("irvm", broken) == 70
    err = capsys.readouterr().err
    assert "internal error: ZeroDivisionError: a bug" in err and "Traceback" not in err


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_run_refuses_a_float64_image_for_a_float32_model(tmp_path: Path, capsys: pytest.CaptureFixture[str], backend: str) -> None:
    """Issue 17: a float64 image fed to the float32 CNN ran and returned float64; torch
    raises "expected scalar type Double but found Float".  irvm names the input to cast."""
    inputs = tmp_path / "in.npz"
    with np.load(EXAMPLES / "cnn.inputs.npz") as data:
        np.savez(inputs, **{"x.1": data["x.1"].astype(np.float64)})
    code, out, err = irvm(capsys, "run", str(EXAMPLES / "cnn.ir"), "--inputs", str(inputs),
                          "--weights", str(EXAMPLES / "cnn.weights.npz"), "--backend", backend)
    assert code == 1 and out == ""
    assert "cast input %x.1 to float32" in err and "expected scalar type Double but found Float" in err
    assert f"{EXAMPLES / 'cnn.ir'}:" in err
