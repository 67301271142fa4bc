"""``tools/stateful_check.py`` prints the stateful harness's table and exits 0 when every
call of every stream is torch's; an unknown model name is a usage error."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

pytest.importorskip("torch")

from tests.support.paths import TOOLS  # noqa: E402

sys.path.insert(0, str(TOOLS))
import stateful_check  # noqa: E402


def test_the_table_has_a_row_per_model_and_source(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert stateful_check.main(["--calls", "4", "--only", "counter", "--only", "optional_state",
                                "--cache", str(tmp_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["model", "from", "calls", "interp", "static", "static-planned"]
    rows = [line.split() for line in lines[2:6]]
    assert rows == [["counter", "pt", "4", "0", "0", "0"], ["counter", "ir", "4", "0", "0", "0"],
                    ["optional_state", "pt", "4", "0", "0", "0"], ["optional_state", "ir", "4", "0", "0", "0"]]
    assert len(list(tmp_path.glob("counter-*.pt"))) == 1


def test_an_unknown_model_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        stateful_check.main(["--only", "nope", "--cache", str(tmp_path)])


def test_any_archive_streams_against_torch(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``--archive``: forward calls on random inputs of ``--shape`` and the ``--arg``
    literals, one row with each backend's mismatches (the VAD's ``sr`` here)."""
    from tests.support import stateful
    from tests.support.stateful_models import CASES

    vad = next(c for c in CASES if c.name == "streaming_vad")
    archive = stateful.save_archive(vad, tmp_path)
    assert stateful_check.main(["--archive", str(archive), "--shape", "1,128", "--arg", "16000", "--calls", "5"]) == 0
    assert capsys.readouterr().out.splitlines()[1].split()[1:] == ["5", "0", "0"]
