"""The compiled kernel tier: single-pass kernels compiled to machine code by numba.

A numpy kernel is a chain of passes over memory: the exact GELU is about twenty (clip,
Horner steps, tanh, products), SiLU four, layer_norm six, a depthwise convolution one
``einsum`` per tap.  Each kernel here is one loop that reads each input element once,
computes in registers and writes each output element once, which is what a memory-bound
kernel needs to reach the machine's bandwidth bound.

One module per family (``activation``, ``norm``, ``depthwise``, ``softmax``, ``rnn``, ``qrnn``), each
importing numba at its top: a family is asked for the first time a kernel of it runs (the
numpy kernel's body asks ``ready("activation")``), never at ``import vm``, so a command
line that runs no such operator never pays numba's import (0.3-0.5 s, with the scipy it loads).  Every function is
``@njit(signature, cache=True)``: compiled once per machine into numba's on-disk cache
(``__pycache__`` beside the module, or ``NUMBA_CACHE_DIR``) when the family is first
imported, loaded from there by every later process; a steady call compiles nothing.
``python3 -m vm.ops.compiled`` imports every family, which fills the cache ahead.

**Tiered, as a JIT is**: a process never waits for numba.  A kernel body asks ``ready(name)``,
which gives the family only once it is loaded; until then it answers ``None`` and the numpy
kernel runs, while a background thread loads the families asked for (numba's import, the
cached machine code) and swaps each in as it is ready: the next call takes it.  A family the
cache lacks is compiled in a child process first (``python3 -m vm.ops.compiled NAME``), so that
compiling never holds this process's GIL; the thread then loads it from the cache.  The two
tiers give the same numbers to float32 rounding: each compiled kernel is tested against its
numpy kernel and torch's (a few ulp apart, as each is from torch's own; hardswish equal).  ``IRVM_COMPILE=eager`` (or ``loading("eager")``) makes ``ready`` load on the
caller's thread instead, as tests and benchmarks of the compiled kernels want; ``wait()``
blocks until every family asked for is in.

The numpy kernels stay as the reference and the fallback, one switch away: the
environment variable ``IRVM_KERNELS=numpy`` (read at import) or ``use("numpy")`` turns the
tier off; ``use("compiled")`` turns it back on.  Without numba installed the tier is off.
The compiled kernels cover float32 (the dtype the zoo's models run in) on C-contiguous
arrays; anything else runs the numpy kernel.  They run on the calling thread and release
the GIL (``nogil``), so the runtimes of a ``RuntimePool`` run them side by side.
"""

from __future__ import annotations

import atexit
import importlib
import importlib.util
import os
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType

FAMILIES = ("activation", "norm", "depthwise", "softmax", "rnn", "qrnn")
MODES = ("compiled", "numpy")


def _initial() -> bool:
    mode = os.environ.get("IRVM_KERNELS", "compiled").strip().lower() or "compiled"
    if mode not in MODES:
        raise ValueError(f"IRVM_KERNELS must be one of {', '.join(MODES)}, got {mode!r}")
    return mode == "compiled" and importlib.util.find_spec("numba") is not None


ENABLED = _initial()  # read by the numpy kernels on every call: a module attribute, not a function
_families: dict[str, ModuleType] = {}
LOADINGS = ("background", "eager")


def _initial_loading() -> str:
    loading = os.environ.get("IRVM_COMPILE", "background").strip().lower() or "background"
    if loading not in LOADINGS:
        raise ValueError(f"IRVM_COMPILE must be one of {', '.join(LOADINGS)}, got {loading!r}")
    return loading


_loading = _initial_loading()
_lock = threading.Lock()
_wanted: list[str] = []  # asked for and not loaded yet, in the order asked
_loader: threading.Thread | None = None
_stopping = threading.Event()  # the interpreter is exiting: start no new load
_go = threading.Event()  # the call that asked for a family has returned (``call_finished``)
START_AFTER = 1.0  # seconds the loader waits for that call to return, at most
SWITCH_INTERVAL = 0.0005  # the GIL's switch interval while the loader runs (see _load_wanted)
failures: dict[str, str] = {}  # family -> why it could not be loaded (its numpy kernels stay)


def use(mode: str) -> None:
    """``"compiled"``: the compiled kernels where they apply; ``"numpy"``: the numpy kernels only."""
    global ENABLED
    if mode not in MODES:
        raise ValueError(f"kernels must be one of {', '.join(MODES)}, got {mode!r}")
    ENABLED = mode == "compiled" and importlib.util.find_spec("numba") is not None


def mode() -> str:
    return "compiled" if ENABLED else "numpy"


def loading(how: str | None = None) -> str:
    """How ``ready`` loads a family it lacks: ``"background"`` (the default: numpy kernels
    until it is in) or ``"eager"`` (on the caller's thread, now).  Returns the previous one."""
    global _loading
    before = _loading
    if how is not None:
        if how not in LOADINGS:
            raise ValueError(f"loading must be one of {', '.join(LOADINGS)}, got {how!r}")
        _loading = how
    return before


def ready(name: str) -> ModuleType | None:
    """The family ``name`` if the tier is on and it is loaded, else ``None`` (run the numpy
    kernel); a family not loaded yet is asked for (see the module docstring)."""
    if not ENABLED:
        return None
    found = _families.get(name)
    if found is not None:
        return found
    if _loading == "eager" or name in failures:
        return None if name in failures else family(name)
    _want(name)
    return None


def _want(name: str) -> None:
    global _loader
    with _lock:
        if name in _wanted or name in _families or _stopping.is_set():
            return
        _wanted.append(name)
        if _loader is None:
            _loader = threading.Thread(target=_load_wanted, name="irvm-compiled-tier", daemon=True)
            _loader.start()


def call_finished() -> None:
    """A model call returned (``vm.Model`` says so): families it asked for may load now.
    The loader never starts while the call that asked is running, so a first call runs its
    numpy kernels alone; a runtime used without ``vm.Model`` starts it after ``START_AFTER``."""
    if _wanted and not _go.is_set():
        _go.set()


def _load_wanted() -> None:
    """The loader thread: once the asking call has returned, load each family asked for.
    Loading is Python work that holds the GIL (numba's import, the cache's machine code):
    while it runs, the GIL changes hands every ``SWITCH_INTERVAL`` instead of every 5 ms,
    so a call made meanwhile waits for it a fraction of a millisecond, not 5 ms a time."""
    _go.wait(START_AFTER)
    before = sys.getswitchinterval()
    sys.setswitchinterval(min(before, SWITCH_INTERVAL))
    try:
        _load_all()
    finally:
        sys.setswitchinterval(before)


def _load_all() -> None:
    global _loader
    while True:
        with _lock:
            if not _wanted or _stopping.is_set():
                _wanted.clear()
                _loader = None
                return
            name = _wanted[0]
        try:
            if not _cached(name):
                _compile_apart(name)
            family(name)
        except Exception as exc:  # noqa: BLE001  (a family that cannot load leaves its numpy kernels)
            failures[name] = f"{type(exc).__name__}: {exc}"
        with _lock:
            _wanted.remove(name)


def wait(timeout: float | None = None) -> bool:
    """Block until every family asked for is loaded (or failed); whether that happened."""
    loader = _loader
    if loader is not None:
        loader.join(timeout)
    return not _wanted


@atexit.register
def _stop() -> None:
    _stopping.set()


def _cached(name: str) -> bool:
    """Whether numba's cache seems to hold the family's machine code (its index files, newer
    than the source), judged without importing numba: anywhere under ``NUMBA_CACHE_DIR`` if it
    is set, else beside the module (where numba keeps it when it can write there).  A wrong guess costs time only: numba checks the cache itself."""
    source = Path(__file__).with_name(f"{name}.py")
    custom = os.environ.get("NUMBA_CACHE_DIR")
    found = Path(custom).rglob(f"{name}.*.nbi") if custom else (source.parent / "__pycache__").glob(f"{name}.*.nbi")
    mtime = source.stat().st_mtime
    return any(f.stat().st_mtime >= mtime for f in found)


def _compile_apart(name: str) -> None:
    """Fill numba's cache with the family in a child process (this one's GIL stays free)."""
    root = str(Path(__file__).resolve().parents[3])
    env = dict(os.environ)
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    subprocess.run(
        [sys.executable, "-m", "vm.ops.compiled", name],
        env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
    )


def family(name: str) -> ModuleType:
    """The compiled family ``name`` (imported, and its kernels loaded or compiled, on first use)."""
    found = _families.get(name)
    if found is None:
        found = _families[name] = importlib.import_module(f"vm.ops.compiled.{name}")
        from vm.threads import after_numba_import

        after_numba_import()  # the BLAS numba loads and numba's own pool take vm's count
    return found


def warm() -> list[str]:
    """Import every family (compiling what the cache lacks); the names loaded."""
    for name in FAMILIES:
        family(name)
    return list(FAMILIES)
