"""The CI slice of the archive fuzz campaign: mutated ``.pt`` archives (``tests/fuzz/hostile.py``:
zip structure, pickle opcodes, storages, records, source) are compiled and run as ``irvm run``
does, and each ends in a result or in one of irvm's own errors — never another exception.

The long run is ``python3 tools/fuzz_campaign.py --only pt --n 100000`` (a worker under a
memory and a time limit); this slice runs 300 fixed mutants in-process, in batches so that
a failure names its attempt (replay it with ``--replay pt:ci:N``).
"""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from tests.fuzz.hostile import attempt, mutant
from tests.support.mutations import Escape

BATCH = 50


@pytest.mark.parametrize("first", range(0, 300, BATCH))
def test_archive_mutants_end_in_a_result_or_an_irvm_error(tmp_path: Path, first: int) -> None:
    outcomes: dict[str, int] = {}
    for i in range(first, first + BATCH):
        data = mutant(random.Random(f"pt:ci:{i}"))
        try:
            outcome = attempt(data, tmp_path / "m.pt")
        except Escape as esc:
            pytest.fail(f"attempt {i} (--replay pt:ci:{i}) escaped:\n{esc.trace}")
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    assert sum(outcomes.values()) == BATCH


def test_the_unmutated_seeds_run(tmp_path: Path) -> None:
    from tests.fuzz.hostile import seed_members, zip_bytes

    assert [attempt(zip_bytes(m), tmp_path / "m.pt") for m in seed_members()] == ["ok", "ok", "ok"]
