"""The worker side of ``tools/bench_fusion.py``: one column of the table per process.

Every column (hand-written numpy, the irvm group unfused, fused-blocked, fused-numba,
torch.jit) runs in a process of its own, started with the ``spawn`` method and kept for
the whole run.  In one process the columns disturb each other: torch's OpenMP threads,
numba's threads and irvm's fusion thread pool all want the machine's two cores, and a
pool that is still spinning from one column's call steals cycles from the next column's.
Alone in its process, each column owns its threads, and while the parent times another
column it sits blocked on its pipe, costing nothing.

The protocol is three commands, each answered with one dict (or ``{"error": traceback}``):

``("setup", case, n, variants)``
    Build the case's inputs from ``np.random.default_rng(0)`` (float32 in [0.1, 1.1),
    identical in every worker), build one callable per variant (a variant is this
    column with options, e.g. fused-blocked with ``max_block=16384`` for the block sweep),
    warm each up (torch.jit: five calls, so the profiling executor has specialised), and
    answer the time of one call and a checksum of the result, so the parent can tell
    that every column computes the same thing.
``("run", variant, repeats)``
    One untimed call (it wakes thread pools and faults pages in after the idle time),
    then ``repeats`` timed calls; answer their times in ms and, for irvm kernels, how
    many calls took each path (``kernel.stats`` before and after) and the fallback
    reasons counted meanwhile: the parent checks the fused columns really ran fused.
``("stop",)``
    Exit.

One more worker, ``copy``, times a numpy copy moving as many bytes as the case's group
reads and writes: the row's bandwidth bound, measured interleaved like the columns.

Only the public face of ``vm.fusion.kernels.FusedKernel`` is used: the constructor with
``name``/``min_block``/``max_block``, the call, ``run_unfused``, ``enable_numba``,
``stats`` and ``fallback_reasons``.
"""

from __future__ import annotations

import gc
import importlib.util
import itertools
import os
import sys
import time
import traceback
from collections.abc import Callable
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent

COLUMNS = ("numpy", "unfused", "fused-blocked", "fused-numba", "torch.jit")
KERNEL_PATH = {"fused-blocked": "fused", "fused-numba": "numba"}  # the path each column must take
COPY = "copy"  # not a column: the worker timing the bandwidth bound (variants "1 thread", "2 threads")
TORCH_WARMUP = 5  # the profiling executor specialises after a couple of calls; 5 is safe

CHAIN_IR = """\
graph(%x : Tensor, %w : Tensor, %b : Tensor):
  %one : int = prim::Constant[value=1]()
  %half : float = prim::Constant[value=0.5]()
  %xw : Tensor = aten::mul(%x, %w)
  %xwb : Tensor = aten::add(%xw, %b, %one)
  %r : Tensor = aten::relu(%xwb)
  %h : Tensor = aten::mul(%r, %half)
  %y : Tensor = aten::add(%h, %x, %one)
  return (%y)
"""


# ---------------------------------------------------------------------------------------
# the programs: IR for irvm, hand-written numpy, Python for torch.jit.script


def ratio_iou_numpy(x1, y1, w1, h1, x2, y2, w2, h2):  # type: ignore[no-untyped-def]
    xi = np.maximum(x1, x2)
    yi = np.maximum(y1, y2)
    wi = np.clip(np.minimum(x1 + w1, x2 + w2) - xi, 0, None)
    hi = np.clip(np.minimum(y1 + h1, y2 + h2) - yi, 0, None)
    area_i = wi * hi
    area_u = w1 * h1 + w2 * h2 - area_i
    return area_i / np.clip(area_u, 1e-5, None)


def chain_numpy(x, w, b):  # type: ignore[no-untyped-def]
    return np.maximum(x * w + b, 0) * np.float32(0.5) + x


def _chain_torch() -> Callable[..., Any]:
    import torch

    def chain(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor) -> torch.Tensor:  # torch from the closure
        return torch.relu(x * w + b) * 0.5 + x

    return chain


def _ratio_iou_torch() -> Callable[..., Any]:
    """``ratio_iou`` from examples/models.py: the very source examples/ratio_iou.ir was dumped from."""
    spec = importlib.util.spec_from_file_location("_irvm_example_models", ROOT / "examples" / "models.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.ratio_iou


# case name -> (IR text loader, number of inputs, numpy function, torch function loader)
CASES: dict[str, tuple[Callable[[], str], int, Callable[..., Any], Callable[[], Callable[..., Any]]]] = {
    "ratio_iou": (lambda: (ROOT / "examples" / "ratio_iou.ir").read_text(), 8, ratio_iou_numpy, _ratio_iou_torch),
    "5-op chain": (lambda: CHAIN_IR, 3, chain_numpy, _chain_torch),
}


def make_inputs(case: str, n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.random(n, dtype=np.float32) + np.float32(0.1) for _ in range(CASES[case][1])]


def group_kernel(case: str, inputs: list[np.ndarray], **options: Any) -> tuple[Any, list[np.ndarray]]:
    """The FusedKernel of the case's one fusion group, as the pipeline groups it, and the
    program's inputs in the order the group takes them (grouping reorders them: the chain
    group takes ``(x, b, w)``)."""
    import compiler
    from compiler.pipeline import optimize
    from vm.fusion.kernels import FusedKernel
    from vm.ir.fusion_spec import fusion_spec

    optimized, _ = optimize(compiler.parse(CASES[case][0](), case))
    (node,) = [n for n in optimized.main.walk() if "Subgraph" in n.attrs]
    position = {id(v): i for i, v in enumerate(optimized.main.inputs)}
    order = [position[id(v)] for v in node.inputs]  # a KeyError: the group takes a non-input
    kernel = FusedKernel(fusion_spec(node.attrs["Subgraph"]), name=f"{case} group", **options)
    return kernel, [inputs[i] for i in order]


# ---------------------------------------------------------------------------------------
# one variant of a column: its callable, its kernel (for the path check), its notes


class Variant:
    """A callable of no arguments doing one call of the column, the FusedKernel behind it
    (for the path check) and notes for the report (e.g. why numba did not compile)."""

    def __init__(self, fn: Callable[[], Any], kernel: Any = None, notes: list[str] | None = None):
        self.fn, self.kernel, self.notes = fn, kernel, notes or []


def build(column: str, case: str, inputs: list[np.ndarray], options: dict[str, Any]) -> Variant:
    if column == "numpy":
        numpy_fn = CASES[case][2]
        return Variant(lambda: numpy_fn(*inputs))
    if column == "unfused":
        kernel, args = group_kernel(case, inputs)
        return Variant(lambda: kernel.run_unfused(*args))
    if column == "fused-blocked":
        kernel, args = group_kernel(case, inputs, **options)
        return Variant(lambda: kernel(*args), kernel)
    if column == "fused-numba":
        kernel, args = group_kernel(case, inputs, **options)
        problems = kernel.enable_numba()
        return Variant(lambda: kernel(*args), kernel, [f"numba did not compile: {p}" for p in problems])
    if column == COPY:
        return copy_variant(inputs, options["threads"])
    if column == "torch.jit":
        import torch

        scripted = torch.jit.script(CASES[case][3]())
        t_inputs = [torch.from_numpy(a) for a in inputs]
        return Variant(lambda: scripted(*t_inputs).numpy())
    raise ValueError(f"unknown column {column!r}")


def copy_variant(inputs: list[np.ndarray], threads: int) -> Variant:
    """A numpy copy moving as many bytes as the group reads and writes (the inputs and one
    output: half of that read, half written), on one thread or split over two (numpy
    releases the GIL in copyto).  Its time is the row's bandwidth bound."""
    from concurrent.futures import ThreadPoolExecutor

    src = np.ones((len(inputs) + 1) * inputs[0].size // 2, dtype=inputs[0].dtype)
    dst = np.empty_like(src)
    if threads == 1:
        return Variant(lambda: np.copyto(dst, src) or dst)
    pool = ThreadPoolExecutor(threads - 1)
    cuts = np.linspace(0, src.size, threads + 1).astype(int)

    def split() -> np.ndarray:
        futures = [pool.submit(np.copyto, dst[lo:hi], src[lo:hi]) for lo, hi in itertools.pairwise(cuts[1:])]
        np.copyto(dst[: cuts[1]], src[: cuts[1]])
        for f in futures:
            f.result()
        return dst

    return Variant(split)


def describe(column: str) -> dict[str, Any]:
    """What the parent prints about this worker's runtime: versions and thread counts."""
    info: dict[str, Any] = {"column": column, "pid": os.getpid(), "numpy": np.__version__,
                            "env": {k: v for k, v in os.environ.items() if k.startswith(("MALLOC_", "OMP_"))}}
    if column == "torch.jit":
        import torch

        info.update(torch=torch.__version__, torch_threads=torch.get_num_threads())
    if column == "fused-numba":
        from vm.fusion import numba_backend as fusion_numba

        if fusion_numba.AVAILABLE:
            import numba

            info.update(numba=numba.__version__, numba_threads=numba.get_num_threads())
            try:
                info["numba_layer"] = numba.threading_layer()
            except ValueError:  # no parallel kernel has run in this process yet
                info["numba_layer"] = "(not started)"
    if column in ("fused-blocked", "fused-numba"):
        from vm.fusion import kernels as fusion

        info["fusion_threads"] = fusion.get_num_threads()
    return info


# ---------------------------------------------------------------------------------------
# the command loop


def _timed(fn: Callable[[], Any]) -> float:
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


def _setup(column: str, case: str, n: int, variants: dict[str, dict[str, Any]],
           state: dict[str, Variant]) -> dict[str, Any]:
    state.clear()
    gc.collect()  # the previous case's arrays go before this case's are made
    inputs = make_inputs(case, n)
    answer: dict[str, Any] = {}
    for name, options in variants.items():
        variant = build(column, case, inputs, options)
        warmup = TORCH_WARMUP if column == "torch.jit" else 2
        for _ in range(warmup - 1):
            variant.fn()
        out = np.asarray(variant.fn())
        state[name] = variant
        answer[name] = {
            "call_ms": _timed(variant.fn),
            "checksum": float(np.sum(out, dtype=np.float64)),
            "dtype": str(out.dtype),
            "notes": variant.notes,
        }
    return answer


def _run(state: dict[str, Variant], name: str, repeats: int) -> dict[str, Any]:
    variant = state[name]
    kernel = variant.kernel
    before = (dict(kernel.stats), dict(kernel.fallback_reasons)) if kernel is not None else None
    gc.collect()
    gc.disable()  # a collection inside the block would be charged to one call
    try:
        variant.fn()
        times = [_timed(variant.fn) for _ in range(repeats)]
    finally:
        gc.enable()
    answer: dict[str, Any] = {"times": times, "calls": repeats + 1}
    if before is not None:
        answer["paths"] = {k: v - before[0].get(k, 0) for k, v in kernel.stats.items()}
        answer["reasons"] = {k: v - before[1].get(k, 0) for k, v in kernel.fallback_reasons.items()
                             if v != before[1].get(k, 0)}
    return answer


def worker_main(conn: Connection, column: str) -> None:
    """Entry point of a worker process (spawned, with its environment set from the start,
    as glibc's malloc and OpenMP read it once): serve commands until "stop"."""
    sys.path.insert(0, str(ROOT))
    state: dict[str, Variant] = {}
    while True:
        command, *args = conn.recv()
        try:
            if command == "stop":
                break
            if command == "describe":
                answer = describe(column)
            elif command == "setup":
                answer = _setup(column, *args, state)
            elif command == "run":
                answer = _run(state, *args)
            else:
                raise ValueError(f"unknown command {command!r}")
        except Exception:  # noqa: BLE001 - the parent reports it and stops the run
            answer = {"error": traceback.format_exc()}
        conn.send(answer)
    conn.close()
