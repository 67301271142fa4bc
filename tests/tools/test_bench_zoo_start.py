"""``tools/bench_zoo_start.py`` (``bench_startup.py --zoo``) still measures and prints its
table: one row per case and backend, first and steady calls in wall and CPU time, and
the first/steady ratio, each measured in a process of its own."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.paths import TOOLS

sys.path.insert(0, str(TOOLS))

import bench_zoo_start

CASE = """
graph(%x : Tensor, %w : Tensor):
  %one : int = prim::Constant[value=1]()
  %y : Tensor = aten::matmul(%x, %w)
  %z : Tensor = aten::relu(%y)
  %s : Tensor = aten::add(%z, %x, %one)
  return (%s)
"""


@pytest.fixture
def zoo(tmp_path: Path) -> Path:
    """A zoo cache holding one case, ``tiny.script``, as ``tools/gen_zoo.py`` lays it out."""
    (tmp_path / "tiny.script.ir").write_text(CASE)
    rng = np.random.default_rng(0)
    np.savez(tmp_path / "tiny.script.inputs.npz", x=rng.random((64, 64), dtype=np.float32),
             w=rng.random((64, 64), dtype=np.float32))  # fmt: skip
    return tmp_path


def test_a_name_is_its_scripted_case_a_case_is_itself(zoo: Path) -> None:
    """``resnet18`` means ``resnet18.script`` (else ``.trace``); a dotted name is a case;
    a model the cache lacks is None."""
    (zoo / "other.trace.ir").write_text(CASE)
    assert bench_zoo_start.case_of("tiny", zoo) == "tiny.script"
    assert bench_zoo_start.case_of("other", zoo) == "other.trace"
    assert bench_zoo_start.case_of("tiny.script", zoo) == "tiny.script"
    assert bench_zoo_start.case_of("tiny.trace", zoo) is None
    assert bench_zoo_start.case_of("absent", zoo) is None


@pytest.mark.parametrize("how", ["fresh", "warm", "again"])
def test_the_table_has_a_row_per_backend_with_numbers(zoo: Path, how: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Both backends of a case get a row with construct, first, steady (wall and CPU) and
    the ratio, in a fresh process, after the other backend (``--warm``) or after another
    runner of the same backend (``--again``); a missing model gets a line saying how to
    make it, and a status of 1."""
    status = bench_zoo_start.bench_zoo(
        ["tiny", "absent"], runs=5, repeat=1, folder=zoo, warm=how == "warm", again=how == "again"
    )
    out = capsys.readouterr().out
    assert status == 1
    rows = {line.split()[1]: line.split() for line in out.splitlines() if line.startswith("tiny.script")}
    assert set(rows) == {"interp", "static"}, out
    for cells in rows.values():
        assert all(re.fullmatch(r"\d+\.\d+", c) for c in cells[2:7]), cells
        assert re.fullmatch(r"\d+\.\d+x", cells[7]), cells
    assert "absent" in out and "gen_zoo.py absent" in out


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_again_measures_a_second_runner_of_the_same_backend(zoo: Path, backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--again`` builds a runner of the measured backend, runs it twice, then builds and
    measures another of the same backend (no runner of the other backend is built)."""
    import vm

    built: list[str] = []
    for name, label in (("Interpreter", "interp"), ("StaticRuntime", "static")):
        real = getattr(vm, name)

        def counting(*args: object, _real: type = real, _label: str = label) -> object:
            built.append(_label)
            return _real(*args)

        monkeypatch.setattr(vm, name, counting)
    row = bench_zoo_start.measure("tiny.script", backend, 5, zoo, again=True)
    assert built == [backend, backend]
    assert row["first_cpu_ms"] > 0 and row["steady_cpu_ms"] > 0
