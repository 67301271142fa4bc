"""Long work is visible: per-pass times with ``-v``, a progress line on terminals only."""

from __future__ import annotations

import io
import subprocess
import sys
import threading
from pathlib import Path

from compiler.parser import parse
from compiler.pipeline import optimize
from compiler.progress import Progress
from tests.support.paths import ROOT

EXAMPLE = ROOT / "examples" / "lunif2.ir"


class _Terminal(io.StringIO):
    """A stream that says it is a terminal, and signals its first write."""

    def __init__(self) -> None:
        super().__init__()
        self.written = threading.Event()

    def isatty(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self.written.set()
        return super().write(text)


def test_progress_line_shows_stage_and_nodes_on_a_terminal_then_is_erased() -> None:
    """Past its delay, the line names the tool, the stage and the node count; leaving the
    ``with`` block erases it."""
    stream = _Terminal()
    with Progress("irc", stream=stream, delay=0.0) as progress:
        progress.stage("propagate_constants", nodes=12345)
        assert stream.written.wait(30), "no progress line was drawn"
    text = stream.getvalue()
    assert "irc: propagate_constants (12,345 nodes)" in text
    assert text.endswith("\033[2K")  # the line erased


def test_what_is_printed_during_the_line_goes_above_it_not_into_it() -> None:
    """A message printed to stderr while the line is shown starts on a cleared line and
    ends with its newline; the line is drawn again below it ('irc: save 9.2swrote big.irbc'
    was the bug), and the node count stays named when a later stage gives none."""
    stream = _Terminal()
    with Progress("irc", stream=stream, delay=0.0) as progress:
        progress.stage("group_fusions", nodes=321)
        assert stream.written.wait(30), "no progress line was drawn"
        print("wrote big.irbc", file=sys.stderr)
        progress.stage("save")
        assert progress.line().startswith("irc: save (321 nodes) ")
    text = stream.getvalue()
    assert "\033[2Kwrote big.irbc\n" in text
    assert "swrote" not in text


def test_progress_is_silent_when_the_stream_is_not_a_terminal() -> None:
    """A pipe or a file gets nothing, however long the work."""
    stream = io.StringIO()
    with Progress("irc", stream=stream, delay=0.0) as progress:
        assert not progress.enabled
        progress.stage("parse")
    assert stream.getvalue() == ""


def test_pipeline_reports_each_pass_as_it_starts_and_times_it() -> None:
    """``on_pass`` hears every pass with the node count it starts from; records carry times."""
    module = parse(EXAMPLE.read_text(), str(EXAMPLE))
    heard: list[tuple[str, int]] = []
    _, records = optimize(module, on_pass=lambda name, nodes: heard.append((name, nodes)))
    assert heard == [(r.name, r.nodes_before) for r in records]
    assert all(r.seconds >= 0 for r in records)


def test_irc_compile_verbose_times_every_phase_and_pass(tmp_path: Path) -> None:
    """``irc compile -v`` prints parse, each pass, emit and save with milliseconds, and no
    progress control characters when stderr is a pipe."""
    out = tmp_path / "m.irbc"
    proc = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", "-v", str(EXAMPLE), "-o", str(out)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert proc.returncode == 0, proc.stderr
    for phase in ("parse", "verify", "propagate_constants", "group_fusions", "emit", "save", "total"):
        assert any(line.startswith(f"[{phase}") and line.endswith(" ms]") for line in proc.stderr.splitlines()), phase
    assert "\r" not in proc.stderr
