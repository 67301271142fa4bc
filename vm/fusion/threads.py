"""How many threads a fused kernel may use, and the pool it takes them from.

A big fused call splits its blocks between the calling thread and this pool (numpy
releases the GIL inside its ufuncs), so on a 2-core machine ratio_iou at 8e5 elements
runs in about 0.8x its one-thread time.  The count is a process-wide setting, as
``torch.set_num_threads`` is: ``set_num_threads(1)`` makes every fused call run on its
caller's thread alone (what a one-thread comparison with another engine must use, and
what a server running one runtime per core wants, so as not to oversubscribe), and the
default uses every core this process may run on (its affinity mask, as ``vm.threads``).  Helpers are lent, not queued: a call
takes the helpers that are free at that moment (``borrow``) and runs the rest of its
blocks itself, so when several threads run fused calls at once (a ``RuntimePool`` on a
busy server) no more than ``get_num_threads() - 1`` helpers run beside them and no call
waits behind another's blocks.  numpy's BLAS (convolutions, matmuls) and numba have
their own threads; ``vm.set_num_threads`` sets all three at once.  The graph runs one
operator at a time, so the pools never compete.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

try:
    DEFAULT_THREADS = max(1, len(os.sched_getaffinity(0)))
except (AttributeError, OSError):  # no affinity call outside Linux
    DEFAULT_THREADS = max(1, os.cpu_count() or 1)

_threads = DEFAULT_THREADS
_pool: ThreadPoolExecutor | None = None
_lock = threading.Lock()
_free = DEFAULT_THREADS - 1  # helpers not lent to a call right now


def set_num_threads(n: int) -> None:
    """Let fused kernels use ``n`` threads (the caller's included) from now on; call it
    while no fused call is running (the old pool is shut down)."""
    global _threads, _pool, _free
    if type(n) is not int or n < 1:
        raise ValueError(f"set_num_threads expects a positive int, got {n!r}")
    with _lock:
        if n != _threads and _pool is not None:
            _pool.shutdown(wait=True)
            _pool = None
        _free += n - _threads  # helpers lent out now come back through give_back
        _threads = n


def get_num_threads() -> int:
    """The threads a fused call may use, the caller's included."""
    return _threads


def thread_pool() -> ThreadPoolExecutor | None:
    """The pool helper threads come from (made on first use), or None with one thread."""
    global _pool
    with _lock:
        if _threads == 1:
            return None
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=_threads - 1, thread_name_prefix="irvm-fusion")
        return _pool


def borrow(wanted: int) -> int:
    """Lend up to ``wanted`` helpers to a call; returns how many it got (maybe 0)."""
    global _free
    with _lock:
        got = max(0, min(wanted, _free))
        _free -= got
        return got


def give_back(n: int) -> None:
    """Return ``n`` helpers lent by ``borrow``."""
    global _free
    with _lock:
        _free += n
