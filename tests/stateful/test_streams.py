"""The stateful harness (``tests/support/stateful.py``): every stateful model of
``tests/support/stateful_models.py`` runs a stream of consecutive calls (30, or
``--stateful-calls N``; three runs over two shapes, and the case's other methods between
them) on torch and on irvm, from its ``.pt`` and from its printed IR, on the interpreter,
the static runtime, and the static runtime planning every tensor; each call's result must
be torch's.  ``python3 tools/stateful_check.py`` prints the same streams as a table."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from tests.support import stateful  # noqa: E402
from tests.support.stateful_models import CASES  # noqa: E402


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("stateful")


@pytest.mark.parametrize("backend", stateful.BACKENDS)
@pytest.mark.parametrize("source", ["pt", "ir"])
@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_every_call_of_a_stream_is_torchs(case, source: str, backend: str, directory: Path, stateful_calls: int) -> None:
    result = stateful.check(case, stateful_calls, directory, backend, source)
    assert result.calls == stateful_calls
    assert result.mismatches == [], f"{case.name} from {source} on {backend}: {result.mismatches[:3]}"
    assert result.both_failed == []  # a stream of calls torch runs, not of errors alike


def test_a_stream_alternates_two_shapes_and_calls_the_other_methods() -> None:
    """Three runs over two shapes (as Static Runtime's tests), the resets where the case says."""
    vad = next(c for c in CASES if c.name == "streaming_vad")
    steps = stateful.steps(vad, 30)
    shapes = [args[0].shape for name, args in steps if name == "forward"]
    assert shapes == [(1, 128)] * 10 + [(2, 128)] * 10 + [(1, 128)] * 10
    assert [i for i, (name, _) in enumerate(steps) if name == "reset_states"] == [7, 18]
    assert all(name == "forward" for name, _ in stateful.steps(vad, 30, methods=False))


def test_the_harness_reports_calls_that_differ(directory: Path) -> None:
    """Compared with torch's results for another stream, every call differs; a call that
    fails on one side only is a mismatch too, one that fails on both is not."""
    import vm

    case = next(c for c in CASES if c.name == "counter")
    archive = stateful.save_archive(case, directory)
    mine = stateful.steps(case, 6, seed=0)
    other = stateful.steps(case, 6, seed=1)
    ours = stateful.run_irvm(vm.load(archive, backend="interp"), mine)
    result = stateful.compare(case.name, "pt", "interp", ours, stateful.run_torch(archive, other), mine)
    assert [i for i, _ in result.mismatches] == list(range(6))
    failed = stateful.compare("x", "pt", "interp", [RuntimeError("no"), ValueError("a")], [np.zeros(1), KeyError("b")],
                              [("forward", ()), ("forward", ())])
    assert [i for i, _ in failed.mismatches] == [0] and failed.both_failed == [1]
