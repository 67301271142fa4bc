"""The compiled kernel tier: single-pass kernels compiled to machine code by numba.

A numpy kernel is a chain of passes over memory: the exact GELU is about twenty (clip,
Horner steps, tanh, products), SiLU four, layer_norm six, a depthwise convolution one
``einsum`` per tap.  Each kernel here is one loop that reads each input element once,
computes in registers and writes each output element once, which is what a memory-bound
kernel needs to reach the machine's bandwidth bound.

One module per family (``activation``, ``norm``, ``depthwise``, ``softmax``, ``rnn``, ``qrnn``), each
importing numba at its top: a family is imported the first time a kernel of it runs (the
numpy kernel's body asks ``family("activation")``), never at ``import vm``, so a command
line that runs no such operator never pays numba's 0.2 s import.  Every function is
``@njit(signature, cache=True)``: compiled once per machine into numba's on-disk cache
(``__pycache__`` beside the module, or ``NUMBA_CACHE_DIR``) when the family is first
imported, loaded from there by every later process; a steady call compiles nothing.
``python3 -m vm.ops.compiled`` imports every family, which fills the cache ahead.

The numpy kernels stay as the reference and the fallback, one switch away: the
environment variable ``IRVM_KERNELS=numpy`` (read at import) or ``use("numpy")`` turns the
tier off; ``use("compiled")`` turns it back on.  Without numba installed the tier is off.
The compiled kernels cover float32 (the dtype the zoo's models run in) on C-contiguous
arrays; anything else runs the numpy kernel.  They run on the calling thread and release
the GIL (``nogil``), so the runtimes of a ``RuntimePool`` run them side by side.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
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


def use(mode: str) -> None:
    """``"compiled"``: the compiled kernels where they apply; ``"numpy"``: the numpy kernels only."""
    global ENABLED
    if mode not in MODES:
        raise ValueError(f"kernels must be one of {', '.join(MODES)}, got {mode!r}")
    ENABLED = mode == "compiled" and importlib.util.find_spec("numba") is not None


def mode() -> str:
    return "compiled" if ENABLED else "numpy"


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
