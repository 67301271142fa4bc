"""The benchmark tools still run and still write the tables the issues quote.

``tools/bench_fusion.py --smoke`` runs its whole machinery (a spawned worker per column,
setup, interleaved timed blocks, the path and result checks, the report) at 1/100 of the
sizes with one call per column, into a temporary directory.  The test reads back the
markdown table and the JSON next to it.
"""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

COLUMNS = ["numpy", "unfused", "fused-blocked", "fused-numba", "torch.jit", "bandwidth bound", "numba / bound"]
ROWS = ["ratio_iou n=1e2", "ratio_iou n=1e3", "ratio_iou n=8e3", "5-op chain n=1.6e5"]  # the full sizes / 100
NUMBER = re.compile(r"^\d+\.\d+†?( \(\d+\.\d+x\))?$")  # a median in ms, maybe a path mark and a ratio


@pytest.fixture(scope="module")
def fusion_smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, dict]:
    out = tmp_path_factory.mktemp("bench") / "fusion.md"
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_fusion.py"), "--smoke", "--out", str(out)],
                          check=False, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return out.read_text(), json.loads(out.with_suffix(".json").read_text())


def _table(text: str) -> dict[str, dict[str, str]]:
    """The first markdown table of ``text``, as {case: {column: cell}}."""
    all_lines = text.splitlines()
    start = next(i for i, line in enumerate(all_lines) if line.startswith("| "))
    end = next((i for i in range(start, len(all_lines)) if not all_lines[i].startswith("|")), len(all_lines))
    lines = [line for line in all_lines[start:end] if line.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[0] == "case"
    return {cells[0]: dict(zip(header[1:], cells[1:]))
            for cells in ([c.strip() for c in line.strip("|").split("|")] for line in lines[1:])}


def test_fusion_table_has_every_row_and_column_with_numbers(fusion_smoke: tuple[str, dict]) -> None:
    text, _ = fusion_smoke
    table = _table(text)
    assert list(table) == ROWS
    have_torch = importlib.util.find_spec("torch") is not None
    for row, cells in table.items():
        assert list(cells) == COLUMNS, row
        timed = ["numpy", "unfused", "fused-blocked", "fused-numba"] + (["torch.jit"] if have_torch else [])
        for column in timed:
            assert NUMBER.match(cells[column]), (row, column, cells[column])
        assert re.match(r"^\d+\.\d+$", cells["bandwidth bound"]), (row, cells["bandwidth bound"])
        if have_torch:
            assert cells["torch.jit"].endswith("(1.00x)"), "ratios are to torch.jit"


def test_fusion_columns_compute_the_same_result_and_report_their_paths(fusion_smoke: tuple[str, dict]) -> None:
    """The workers build identical inputs (same seed) and the group takes them in its own
    order: every column's result sums alike, and the fused columns count the path taken."""
    text, data = fusion_smoke
    assert "RESULTS DIFFER" not in text
    for row in data["rows"]:
        for column, cell in row["columns"].items():
            assert cell["samples"] == 1 and cell["min_ms"] <= cell["median_ms"], (row["label"], column)
            if column in ("fused-blocked", "fused-numba"):
                assert sum(cell["paths"].values()) == cell["calls"], (row["label"], column)
                assert cell["took_path"] or any(column in note for note in text.splitlines() if row["label"] in note)


def test_bench_kernels_rows_agree_with_torch_and_report_ratios() -> None:
    """tools/bench_kernels.py runs its softmax rows (one timed call each): each row checked
    irvm's kernel against torch's and printed both times, their ratio, the row's bound
    (memory or matmul, from this machine's measured copy bandwidth and matmul rate) and
    each engine's time over it."""
    pytest.importorskip("torch")
    done = subprocess.run([sys.executable, str(ROOT / "tools" / "bench_kernels.py"), "--only", "softmax",
                           "--repeat", "1"], check=False, cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    rows = [line.split("|")[1:-1] for line in done.stdout.splitlines() if line.startswith("| softmax")]
    assert len(rows) == 2
    for cells in rows:
        assert "disagrees" not in "".join(cells)
        assert all(re.fullmatch(r"\d+\.\d+", c.strip()) for c in cells[1:7] + cells[8:])
        assert re.fullmatch(r"\d+\.\d+ mem", cells[7].strip())  # softmax is bounded by memory traffic
    assert re.search(r"copy bandwidth \d+\.\d GB/s", done.stdout)
