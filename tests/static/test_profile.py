"""``irvm profile``: the rows account for the whole run, count executions, show input
shapes, and the last timed run is written as a Chrome trace that Perfetto reads."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import compiler
from vm.static.profile import OUTSIDE, profile

LOOP = """graph(%x : Tensor, %w : Tensor, %n : int):
  %t : bool = prim::Constant[value=1]()
  %y : Tensor = aten::mm(%x, %w)
  %z : Tensor = prim::Loop(%n, %t, %y)
    block0(%i : int, %acc : Tensor):
      %acc2 : Tensor = aten::relu(%acc)
      -> (%t, %acc2)
  %s : Tensor = aten::sum(%z)
  return (%s)
"""


def _report(runs: int = 3):
    program = compiler.compile_source(LOOP, "loop.ir")
    inputs = [np.ones((2, 3), np.float32), np.ones((3, 4), np.float32), 5]
    return profile(program, inputs, runs=runs)


def test_rows_add_up_to_the_timed_run_with_an_outside_row() -> None:
    """The breakdown's rows, the outside-nodes row included, sum to the timed run, and
    their shares to 100%."""
    report = _report()
    assert report.rows[-1].kind == OUTSIDE and report.rows[-1].seconds_per_run >= 0
    total = sum(r.seconds_per_run for r in report.rows)
    assert total == pytest.approx(report.timed_seconds_per_run, rel=1e-9)
    assert sum(r.share for r in report.rows) == pytest.approx(1.0, rel=1e-9)
    assert "(outside nodes)" in str(report) and "total (the rows: a run with node timing)" in str(report)


def test_calls_count_executions_and_rows_show_input_shapes() -> None:
    """A node in a 5-trip loop is one node but 5 calls per run; each row names the shapes
    its operator ran on (in a loop, the last iteration's)."""
    rows = {r.kind: r for r in _report().rows}
    assert rows["aten::relu"].calls_per_run == 5
    assert rows["aten::mm"].calls_per_run == 1 and rows["aten::mm"].shapes == "[2, 3], [3, 4]"
    assert rows["aten::sum"].shapes == "[2, 4]"
    assert rows["aten::relu"].shapes == "[2, 4]"  # the last iteration's


def test_chrome_trace_has_one_event_per_execution(tmp_path: Path) -> None:
    """The trace is Chrome trace-event JSON: complete ("X") events in µs, one per
    execution of the last run, in order, inside the run's own event."""
    report = _report()
    doc = json.loads(json.dumps(report.chrome_trace()))
    ops = [e for e in doc["traceEvents"] if e.get("cat") == "operator"]
    run = next(e for e in doc["traceEvents"] if e.get("cat") == "run")
    assert [e["name"] for e in ops] == ["aten::mm"] + ["aten::relu"] * 5 + ["aten::sum"]
    assert all(e["ph"] == "X" and e["dur"] >= 0 and e["pid"] == 1 for e in ops)
    ends = [e["ts"] + e["dur"] for e in ops]
    assert all(a <= b["ts"] + 1e-3 for a, b in zip(ends, ops[1:]))  # one after another
    assert run["ts"] == 0 and ends[-1] <= run["dur"] + 1e-3
    assert ops[0]["args"]["input shapes"] == "[2, 3], [3, 4]"


def test_cli_writes_the_trace_and_keeps_foreign_files(tmp_path: Path, capsys) -> None:
    """`irvm profile --chrome-trace FILE` writes the trace (and rewrites its own), but
    refuses to overwrite a file irvm did not write."""
    from vm.cli import main

    program = tmp_path / "loop.ir"
    program.write_text(LOOP)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=np.ones((2, 3), np.float32), w=np.ones((3, 4), np.float32), n=np.array(2))
    trace = tmp_path / "t.json"
    args = ["profile", str(program), "--inputs", str(inputs), "--runs", "2", "--chrome-trace", str(trace)]
    assert main(args) == 0
    assert json.loads(trace.read_text())["traceEvents"]
    assert main(args) == 0  # its own trace is rewritten
    mine = tmp_path / "mine.json"
    mine.write_text('{"my": "notes"}')
    assert main(args[:-1] + [str(mine)]) == 1
    assert mine.read_text() == '{"my": "notes"}' and "refusing to overwrite" in capsys.readouterr().err


def _printed_rows(text: str) -> tuple[float, list[float]]:
    """The header's per-run µs and every row's µs, read back from the printed report."""
    import re

    header = float(re.search(r"per run\s+([\d.]+) us", text).group(1))  # type: ignore[union-attr]
    table = text.split("time/run")[1].split("total (the rows")[0]
    return header, [float(m) for m in re.findall(r"([\d.]+) us\s+[\d.]+%", table)]


def test_the_printed_rows_add_up_to_the_printed_total_and_to_the_trace() -> None:
    """What a reader adds up: the rows printed sum to the header's per-run figure (within
    the 5% the printing rounds away, here far less), and the Chrome trace is that same
    run: its operator events sum to the rows' node time."""
    report = _report(runs=5)
    header, rows = _printed_rows(str(report))
    assert sum(rows) == pytest.approx(header, rel=0.05)
    assert header == pytest.approx(report.timed_seconds_per_run * 1e6, abs=0.01)
    inside = sum(r.seconds_per_run for r in report.rows if r.kind != OUTSIDE)
    assert sum(e.duration for e in report.trace) == pytest.approx(inside, rel=1e-6)


def test_long_shapes_wrap_and_are_never_cut() -> None:
    """Two convolutions whose shapes differ only past the 27th character print in full,
    on several lines, so they can be told apart."""
    text = """graph(%x : Tensor, %w1 : Tensor, %w2 : Tensor):
  %none : NoneType = prim::Constant()
  %one : int = prim::Constant[value=1]()
  %l1 : int[] = prim::ListConstruct(%one, %one)
  %l0 : int[] = prim::ListConstruct(%one, %one)
  %a : Tensor = aten::conv2d(%x, %w1, %none, %l1, %l1, %l1, %one)
  %b : Tensor = aten::conv2d(%x, %w2, %none, %l1, %l1, %l1, %one)
  %c : Tensor = aten::add(%a, %b, %one)
  return (%c)
"""
    program = compiler.compile_source(text, "convs.ir")
    x = np.ones((1, 256, 4, 4), np.float32)
    report = profile(program, [x, np.ones((512, 256, 1, 1), np.float32), np.ones((512, 256, 1, 1), np.float32)],
                     runs=2)
    printed = str(report)
    assert "..." not in printed.split("slowest nodes")[0]
    conv = next(r for r in report.rows if r.kind == "aten::conv2d")
    assert conv.shapes.startswith("[1, 256, 4, 4], [512, 256, 1, 1]")
    assert "[512, 256, 1, 1]," in printed  # the second shape, on its own line
