"""``vm.core.gc_pause.gc_paused``: the collector is off inside, restored after, and a caller's
frozen objects and the cost of asking about them are left alone."""

from __future__ import annotations

import gc

import pytest

from vm.core import gc_pause
from vm.core.gc_pause import gc_paused


@pytest.fixture
def collector_on():
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_pause_disables_and_restores_and_nests(collector_on):
    """The collector is off inside nested pauses and on again only after the outermost."""
    with gc_paused():
        assert not gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_pause_leaves_a_disabled_collector_disabled():
    """A caller who turned the collector off keeps it off."""
    was = gc.isenabled()
    gc.disable()
    try:
        with gc_paused():
            pass
        assert not gc.isenabled()
    finally:
        if was:
            gc.enable()


def test_callers_frozen_objects_stay_frozen(collector_on):
    """A big pause in a process that froze its heap does not unfreeze it."""
    gc.freeze()
    try:
        frozen = gc.get_freeze_count()
        assert frozen > 0
        with gc_paused():
            junk = [[i] for i in range(3 * gc_pause._MOVE_FROM)]
        del junk
        assert gc.get_freeze_count() >= frozen
    finally:
        gc.unfreeze()


def test_small_pause_does_not_walk_the_frozen_objects(collector_on, monkeypatch):
    """A pause that allocated little never asks for the freeze count (a walk over every
    frozen object); one that allocated a lot asks once."""
    calls = []
    real = gc.get_freeze_count
    monkeypatch.setattr(gc, "get_freeze_count", lambda: calls.append(1) or real())
    gc.collect()
    with gc_paused():
        small = [0] * 10
    assert calls == []
    with gc_paused():
        big = [[i] for i in range(2 * gc_pause._MOVE_FROM)]
    assert calls == [1]
    del small, big
