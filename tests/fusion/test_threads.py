"""``vm.fusion.set_num_threads``: how many threads a fused call uses.

Properties: with one thread a big fused call runs on its caller alone (no pool, no helper
thread alive); with two it splits its blocks between two threads; both give the unfused
operators' bits; helpers another call holds are not waited for (the call runs on its
caller); a count that is not a positive int is refused."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from tests.fusion.test_kernels import _chain_kernel, _same
from vm.fusion import get_num_threads, set_num_threads
from vm.fusion import kernels as fusion_kernels
from vm.fusion.threads import borrow, give_back, thread_pool


@pytest.fixture
def restore_threads():
    before = get_num_threads()
    yield
    set_num_threads(before)


def _helpers() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("irvm-fusion")]


def _big_call(monkeypatch, threads: int) -> tuple[list[int], object, object]:
    """Run the chain kernel on enough elements for ``threads`` threads; the threads seen."""
    set_num_threads(threads)
    monkeypatch.setattr(fusion_kernels, "PARALLEL_WORK", 1)  # any call is big enough to split
    seen: set[int] = set()
    kernel = _chain_kernel(min_block=64)
    run_blocks = kernel._run_blocks

    def spy(*args):
        seen.add(threading.get_ident())
        return run_blocks(*args)

    monkeypatch.setattr(kernel, "_run_blocks", spy)
    rng = np.random.default_rng(0)
    x, w, b = (rng.standard_normal(4096).astype(np.float32) for _ in range(3))
    fused = kernel(x, w, b)
    return sorted(seen), fused, kernel._result(kernel._run_whole([x, w, b]))


def test_one_thread_runs_every_block_on_the_caller(monkeypatch, restore_threads) -> None:
    seen, fused, unfused = _big_call(monkeypatch, 1)
    assert seen == [threading.get_ident()]
    assert thread_pool() is None and not _helpers()
    _same(fused, unfused)


def test_two_threads_split_a_big_call(monkeypatch, restore_threads) -> None:
    seen, fused, unfused = _big_call(monkeypatch, 2)
    assert len(seen) == 2 and threading.get_ident() in seen
    _same(fused, unfused)


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2", True])
def test_a_bad_count_is_refused(bad, restore_threads) -> None:
    with pytest.raises(ValueError, match="positive int"):
        set_num_threads(bad)


def test_a_call_does_not_wait_for_helpers_lent_elsewhere(monkeypatch, restore_threads) -> None:
    set_num_threads(2)
    held = borrow(1)  # another call holds the only helper
    try:
        assert held == 1 and borrow(1) == 0
        seen, fused, unfused = _big_call(monkeypatch, 2)
        assert seen == [threading.get_ident()]
        _same(fused, unfused)
    finally:
        give_back(held)
    assert borrow(5) == 1  # every helper came back
    give_back(1)
