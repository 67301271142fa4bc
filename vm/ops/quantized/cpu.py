"""Which of fbgemm's int8 kernels torch would run here, so irvm gives torch's integers on this CPU.

torch's fbgemm engine picks its int8 kernels by the CPU's instruction set, and they give
different integers on the same input:

- **``"vnni"``** -- AVX-512 with VNNI (``vpdpbusd``): the products are added exactly in int32.
- **``"avx512"``** -- AVX-512 without VNNI, and **``"avx2"``** -- AVX2: ``vpmaddubsw``
  multiplies uint8 activations by int8 weights and adds each pair of products (reduction
  indices 2i, 2i+1) into an int16 *with saturation* before widening to int32.  A pair can
  saturate when activations use the full 8 bits (no ``reduce_range``): 255 * 127 * 2 > 32767.
  The two differ only in which convolutions take fbgemm's groupwise kernel, which adds
  exactly (it packs as many groups together as a 64- or 32-byte vector holds;
  ``vm.ops.quantized.saturating``).

This is the rule irvm follows wherever torch's answer depends on the CPU: by default it gives
what torch gives on the machine it runs on, chosen as fbgemm chooses (``avx512_vnni`` with the
AVX-512 foundation, byte/word, doubleword/quadword and vector-length sets: ``"vnni"``; those
without VNNI: ``"avx512"``; else ``"avx2"``), and the user can pin one (``quantized_kernel=``
on ``vm.load`` and the runtimes, ``--quantized-kernel`` on ``irvm run`` and ``irvm serve``) to
reproduce a server of another kind.  ``FBGEMM_ENABLE_INSTRUCTIONS``, fbgemm's own override,
is followed too, so irvm and torch started with the same environment agree (measured with
torch 2.13 on an AVX-512 VNNI CPU: ``AVX512_E1``, ``AVX512_E1_256`` and ``AVX2_E1`` add
exactly; ``AVX2``, ``AVX512`` and ``AVX512_256`` saturate, grouping by the CPU's 64 bytes).
fbgemm's depthwise convolutions and the qnnpack engine give the same integers on every CPU
(``docs/quantized.md`` lists what was checked).

The same holds for ATen's own vectorized quantized kernels (add, mul, hardswish, cat...):
their ``Vectorized<T>`` holds 64 bytes at ATen's AVX-512 capability and 32 at AVX2, and the
elements past the last whole pair of vectors go through a scalar loop that rounds otherwise
(``vector_bytes``; ``ATEN_CPU_CAPABILITY`` is followed as torch follows it).  ATen's
``default`` capability (no AVX2, e.g. an ARM CPU) rounds otherwise again and is not emulated.

The features come from ``/proc/cpuinfo`` (Linux) or, elsewhere, from LLVM's host feature
list (llvmlite, which numba brings); read once, on the first quantized kernel.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import os
from collections.abc import Iterator

from vm.core.errors import RunError

KERNELS = ("vnni", "avx512", "avx2")
_AVX512_FEATURES = ("avx512f", "avx512bw", "avx512dq", "avx512vl")
_KERNEL: contextvars.ContextVar[str | None] = contextvars.ContextVar("irvm_quantized_kernel", default=None)


def check_kernel(name: str) -> str:
    if name not in KERNELS:
        raise RunError(f"unknown quantized kernel {name!r}: irvm follows fbgemm's {' or '.join(KERNELS)}")
    return name


def kernel_for_features(features: set[str]) -> str:
    """fbgemm's choice on a CPU with these feature flags (``/proc/cpuinfo``'s spelling)."""
    if not all(f in features for f in _AVX512_FEATURES):
        return "avx2"
    return "vnni" if "avx512_vnni" in features else "avx512"


def kernel_for_fbgemm_setting(value: str, features: set[str]) -> str | None:
    """The kernel fbgemm runs when ``FBGEMM_ENABLE_INSTRUCTIONS`` is ``value`` on a CPU with
    ``features`` (None: not a setting fbgemm knows)."""
    v = value.strip().upper()
    if v in ("AVX512_E1", "AVX512_E1_256", "AVX2_E1"):
        return "vnni"
    if v in ("AVX2", "AVX512", "AVX512_256"):  # saturating; the grouping follows the CPU
        return "avx2" if kernel_for_features(features) == "avx2" else "avx512"
    return None


def _cpu_features() -> set[str]:
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as f:
            for line in f:
                if line.startswith("flags"):
                    return set(line.partition(":")[2].split())
    except OSError:
        pass
    try:  # not Linux: LLVM's names ("avx512vnni") spelled as the kernel's
        from llvmlite import binding

        found = binding.get_host_cpu_features()
        return {name.replace("avx512vnni", "avx512_vnni") for name, on in found.items() if on}
    except Exception:  # noqa: BLE001 -- no feature list at all: fbgemm's baseline
        return set()


def aten_capability_for(features: set[str], setting: str) -> str:
    """ATen's CPU capability on a CPU with ``features`` (``ATEN_CPU_CAPABILITY`` = ``setting``
    lowers it): ``"avx512"`` with AVX-512 F/BW/DQ/VL and FMA, ``"avx2"`` with AVX2 and FMA,
    else ``"default"``."""
    found = "default"
    if "avx2" in features and "fma" in features:
        found = "avx512" if all(f in features for f in _AVX512_FEATURES) else "avx2"
    order = ("default", "avx2", "avx512")
    asked = setting.strip().lower()
    if asked in order and order.index(asked) < order.index(found):
        return asked
    return found


@functools.cache
def host_aten_capability() -> str:
    """The capability torch's own vectorized kernels (ATen's ``Vectorized<T>``) run at here."""
    return aten_capability_for(_cpu_features(), os.environ.get("ATEN_CPU_CAPABILITY", ""))


def vector_bytes() -> int:
    """The bytes of one ATen ``Vectorized<T>`` for the machine the quantized arithmetic follows:
    64 at AVX-512, 32 at AVX2 (a pinned fbgemm kernel names its machine: ``"avx2"`` an AVX2
    one, ``"avx512"`` and ``"vnni"`` AVX-512 ones).  The elementwise quantized kernels run a
    scalar tail past the last whole pair of vectors, whose rounding differs."""
    pinned = _KERNEL.get()
    if pinned is not None:
        return 32 if pinned == "avx2" else 64
    return 64 if host_aten_capability() == "avx512" else 32


@functools.cache
def host_kernel() -> str:
    """The kernel torch's fbgemm runs on this machine, in this environment."""
    features = _cpu_features()
    forced = kernel_for_fbgemm_setting(os.environ.get("FBGEMM_ENABLE_INSTRUCTIONS", ""), features)
    return forced or kernel_for_features(features)


def fbgemm_kernel() -> str:
    """The kernel whose integers the fbgemm engine's GEMMs give now: the pinned one
    (``using_kernel``) or the host's."""
    return _KERNEL.get() or host_kernel()


def pinned_kernel() -> str | None:
    """The kernel a caller pinned for this context (None: the host's)."""
    return _KERNEL.get()


@contextlib.contextmanager
def using_kernel(name: str | None) -> Iterator[None]:
    """Run the block with fbgemm kernel ``name`` (None: the host's)."""
    token = _KERNEL.set(None if name is None else check_kernel(name))
    try:
        yield
    finally:
        _KERNEL.reset(token)
