"""One switch for every thread pool irvm's kernels run on: ``vm.set_num_threads(n)``.

Three pools do irvm's work, and each had its own knob: numpy's BLAS (OpenBLAS's pthreads, for
convolutions and matrix products), the fused-kernel pool (``vm.fusion.threads``) and numba's
(the compiled kernels' ``prange`` loops).  A user who wants one thread per runtime (a server
with a runtime per core, a one-thread comparison with another engine, a busy machine where
spinning BLAS threads cost ten times what they win) now says so once.

BLAS is reached through threadpoolctl, the library that finds the BLAS and OpenMP runtimes
loaded in this process and sets their thread counts at run time (no environment variable to
set before numpy loads).  numba is set only when it is already imported; the compiled kernels
call ``after_numba_import`` when they first import it, so the count set before holds there too and
``import vm`` never pays for numba.

The default is the number of cores this process may run on (``os.sched_getaffinity``), never
more: a container or ``taskset`` given two of 64 cores gets two threads per pool.  It is applied
when a command line starts or when the user calls the switch; until then the libraries keep
their own defaults.
"""

from __future__ import annotations

import os
import sys

_chosen: int | None = None  # what the user (or a command line) last asked for


def available_cores() -> int:
    """The cores this process may run on (its affinity mask), at least 1."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # macOS and Windows have no affinity call
        return max(1, os.cpu_count() or 1)


def set_num_threads(n: int | None = None) -> int:
    """Let BLAS, the fused-kernel pool and numba use ``n`` threads each from now on
    (``None``: the available cores).  Returns the count set.  Call it between runs, not during
    one: the fused-kernel pool is rebuilt."""
    global _chosen
    if n is None:
        n = available_cores()
    if type(n) is not int or n < 1:
        raise ValueError(f"set_num_threads expects a positive int, got {n!r}")
    from threadpoolctl import threadpool_limits

    from vm.fusion import threads as fusion_threads

    threadpool_limits(limits=n)  # every BLAS and OpenMP library loaded now, for the process's life
    fusion_threads.set_num_threads(n)
    _chosen = n
    apply_to_numba()
    return n


def get_num_threads() -> int:
    """The count last set (by ``set_num_threads`` or a command line's ``--threads``), else the
    available cores."""
    return _chosen if _chosen is not None else available_cores()


def after_numba_import() -> None:
    """What the compiled kernels call once they have imported numba: numba loads scipy's own
    BLAS (a second OpenBLAS, at the machine's thread count) and may have started its pool, so
    the chosen count is applied again to every library loaded now."""
    if _chosen is None:
        return
    from threadpoolctl import threadpool_limits

    threadpool_limits(limits=_chosen)
    apply_to_numba()


def apply_to_numba() -> None:
    """Give numba the chosen count if numba is imported (no-op otherwise; never imports it).

    Only once numba has started its threads (the fused groups' ``prange`` loops start them;
    the compiled kernels run on the caller's thread): ``numba.set_num_threads`` would start
    them now, and numba's OpenMP layer sets the process's OpenMP thread count as it starts,
    under torch's feet (a one-thread torch became two in the benchmarks)."""
    numba = sys.modules.get("numba")
    if numba is None or _chosen is None:
        return
    parallel = sys.modules.get("numba.np.ufunc.parallel")
    if parallel is None or not getattr(parallel, "_is_initialized", False):
        return  # not started: the fused groups' numba path sets the count from vm.fusion's as it starts them
    numba.set_num_threads(max(1, min(_chosen, numba.config.NUMBA_NUM_THREADS)))
