"""``RuntimePool``: runtimes over one ``StaticModule`` for callers on many threads.

The module is shared and read-only; each runtime owns its plans, slabs and random
generator, so a call takes a free runtime (or waits for one) and gives it back, as
AITemplate's ``ModelContainer`` does.  A module with state (``StaticModule.state``: the
attributes some method writes) has one ``%self`` for all its runtimes, so the pool runs
its calls one at a time, as ``vm.Model`` does.
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

from vm.static.module import StaticModule
from vm.static.runtime import StaticRuntime


class RuntimePool:
    """N runtimes over one StaticModule; a call takes a free one or waits (AITemplate's
    ModelContainer)."""

    def __init__(self, static_module: StaticModule, n: int, *, seed: int | None = None):
        if n < 1:
            raise ValueError("a RuntimePool needs at least one runtime")
        self.module = static_module
        # each runtime draws its own stream: seeds spawned from ``seed`` (None: from the OS)
        seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(n)]
        self._free = [StaticRuntime(static_module, seed=s) for s in seeds]
        self._available = threading.Condition()
        self._state = threading.Lock() if static_module.state else None  # one %self: one call at a time

    def __call__(self, *args: Any) -> Any:
        with self._available:
            while not self._free:
                self._available.wait()
            runtime = self._free.pop()
        try:
            if self._state is None:
                return runtime(*args)
            with self._state:
                return runtime(*args)
        finally:
            with self._available:
                self._free.append(runtime)
                self._available.notify()
