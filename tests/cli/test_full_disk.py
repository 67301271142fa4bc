"""Every writer on a full disk (issue #40): the old file stays as it was, no temporary file
is left behind, and the error names the path (exit 1, a refused write).

The campaign's case: ``irc viz -o g.svg`` on a full disk exited naming no path and left
g.svg replaced by an unmarked copy (graphviz wrote the file itself, then irvm's mark was
a second write).  A full disk is simulated by making every write to a file irvm opens in
the target's folder fail with ENOSPC, as the kernel does when the disk fills mid-write.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from compiler.cli import main as irc
from tests.support.paths import EXAMPLES
from vm.cli import main as irvm
from vm.files import atomic


def _fill_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """From now on, every write to a file ``atomic_write`` creates fails with ENOSPC."""
    real = os.fdopen
    monkeypatch.setattr(atomic.os, "fdopen", lambda fd, mode: _Failing(real(fd, mode)))


def _unchanged(path: Path, old: bytes) -> None:
    assert path.read_bytes() == old
    assert [p.name for p in path.parent.iterdir() if p.name.endswith(".tmp")] == []


def test_viz_on_a_full_disk_keeps_the_old_picture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """(graphviz is not installed here: the .dot picture goes through the same single
    atomic write as an .svg, drawn to memory first.)"""
    out = tmp_path / "g.dot"
    assert irc(["viz", str(EXAMPLES / "cnn.ir"), "-o", str(out)]) == 0  # a picture of irvm's, marked
    old = out.read_bytes()
    capsys.readouterr()
    _fill_the_disk(monkeypatch)
    assert irc(["viz", str(EXAMPLES / "mlp.ir"), "-o", str(out)]) == 1
    assert f"cannot write {out}: No space left on device (the file is as it was)" in capsys.readouterr().err
    _unchanged(out, old)


def test_compile_run_output_and_trace_on_a_full_disk(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    program, results, trace = tmp_path / "m.irbc", tmp_path / "out.npz", tmp_path / "t.json"
    assert irc(["compile", str(EXAMPLES / "ratio_iou.ir"), "-o", str(program)]) == 0
    args = [str(program), "--inputs", str(EXAMPLES / "ratio_iou.inputs.npz")]
    assert irvm(["run", *args, "--output", str(results)]) == 0
    assert irvm(["profile", *args, "--chrome-trace", str(trace)]) == 0
    olds = {p: p.read_bytes() for p in (program, results, trace)}
    capsys.readouterr()

    _fill_the_disk(monkeypatch)
    commands = [
        (irc, ["compile", str(EXAMPLES / "ratio_iou.ir"), "-o", str(program), "--force"], program),
        (irvm, ["run", *args, "--output", str(results), "--force"], results),
        (irvm, ["profile", *args, "--chrome-trace", str(trace), "--force"], trace),
    ]
    for main, argv, path in commands:
        assert main(argv) == 1, argv
        assert f"cannot write {path}: No space left on device" in capsys.readouterr().err, argv
    for path, old in olds.items():
        _unchanged(path, old)


class _Failing:
    """A file whose every write fails as on a full disk."""

    def __init__(self, f):
        self.f = f

    def write(self, data) -> int:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()
