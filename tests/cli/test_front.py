"""The command lines say what they do and do only that (issue #29): debug flags write no
``.irbc``, help texts name every program kind and option, usage errors exit 2, ``irvm
run`` without ``--inputs`` lists the inputs it needs, numpy's ``arr_0`` keys are read as
positions, ``irc compile --example-inputs`` records shapes that ``irvm info`` prints, and
``irvm info`` on a scripted archive prints what its weights imply."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest

from tests.cli.test_cli import EXAMPLES, irc, irvm


@pytest.mark.parametrize("flags", [
    ["-v", "--print-after-all", "--diff"],
    ["--passes", "inline_calls,eliminate_dead_code", "--print-after", "eliminate_dead_code"],
    ["--print-after", "peephole"],
])
def test_debug_flags_write_no_irbc_without_o(tmp_path: Path, flags: list[str]) -> None:
    """Looking at the passes leaves the directory as it was (cnn.irbc used to be replaced);
    with -o the file is written."""
    source = tmp_path / "cnn.ir"
    shutil.copy(EXAMPLES / "cnn.ir", source)
    proc = irc("compile", str(source), *flags)
    assert proc.returncode == 0, proc.stderr
    assert "=== after" in proc.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["cnn.ir"]
    assert "no .irbc written" in proc.stderr
    proc = irc("compile", str(source), *flags, "-o", str(tmp_path / "dbg.irbc"))
    assert proc.returncode == 0 and (tmp_path / "dbg.irbc").exists(), proc.stderr


def test_help_names_every_program_kind_and_option() -> None:
    """`irvm run --help` and `irvm profile --help` name .pt, .ir and .irbc; every option
    of every subcommand has a help text; --no-fusion is not said to be '.ir only'."""
    for command in ("run", "profile", "info", "disasm"):
        text = irvm(command, "--help").stdout
        assert ".pt" in text and ".irbc" in text and ".ir" in text, command
        assert ".ir only" not in text
    run_help = irvm("run", "--help").stdout
    backend = " ".join(run_help.split("--backend {interp,static}")[-1].split("--trace TRACE")[0].split())
    assert "interpreter" in backend and "static runtime" in backend
    for command in ("compile", "check", "viz"):
        assert ".pt" in irc(command, "--help").stdout, command


def test_usage_errors_exit_2() -> None:
    """An unknown option or a missing argument is argparse's usage error: exit 2."""
    assert irvm("run", "--bogus").returncode == 2
    assert irvm("run").returncode == 2
    assert irc("compile").returncode == 2


def test_run_without_inputs_lists_the_inputs_needed() -> None:
    """`irvm run m.pt` without --inputs says inputs are needed and names them (it said
    "input 'x' is missing from the inputs file, which has nothing")."""
    proc = irvm("run", str(EXAMPLES / "cnn.pt"))
    assert proc.returncode == 1, proc.stderr
    assert "takes 1 input(s): x (Tensor)" in proc.stderr and "--inputs" in proc.stderr
    assert "inputs file, which has nothing" not in proc.stderr


def test_numpy_default_keys_are_positions(tmp_path: Path) -> None:
    """numpy.savez(f, x) writes arr_0: read as the first input, as arg0 is."""
    with np.load(EXAMPLES / "cnn.inputs.npz") as data:
        x = data[data.files[0]]
    positional = tmp_path / "pos.npz"
    np.savez(positional, x)
    proc = irvm("run", str(EXAMPLES / "cnn.pt"), "--inputs", str(positional), "--output", str(tmp_path / "a.npz"))
    assert proc.returncode == 0, proc.stderr
    named = irvm("run", str(EXAMPLES / "cnn.pt"), "--inputs", str(EXAMPLES / "cnn.inputs.npz"),
                 "--output", str(tmp_path / "b.npz"))
    assert named.returncode == 0, named.stderr
    with np.load(tmp_path / "a.npz") as a, np.load(tmp_path / "b.npz") as b:
        np.testing.assert_array_equal(a["out0"], b["out0"])


def test_example_inputs_are_recorded_and_info_prints_them(tmp_path: Path) -> None:
    """`irc compile --example-inputs IN.npz` writes the inputs' dtypes and shapes into the
    .irbc; `irvm info` prints them; the scripted archive itself shows what its first
    convolution's weight implies (float32, one channel, rank 4)."""
    info = irvm("info", str(EXAMPLES / "cnn.pt"))
    assert info.returncode == 0, info.stderr
    assert "float32  [?, 1, ?, ?]" in info.stdout
    out = tmp_path / "cnn.irbc"
    proc = irc("compile", str(EXAMPLES / "cnn.pt"), "-o", str(out), "--example-inputs", str(EXAMPLES / "cnn.inputs.npz"))
    assert proc.returncode == 0, proc.stderr
    with np.load(EXAMPLES / "cnn.inputs.npz") as data:
        shape = list(data[data.files[0]].shape)
    info = irvm("info", str(out))
    assert "float32  [?, ?, ?, ?]" in info.stdout, info.stdout  # sizes free: one example fixes none
    assert f"x float32 {shape}" in info.stdout, info.stdout
