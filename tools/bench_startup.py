"""How long irvm takes to start: compile, load and first call, against steady calls.

    python tools/bench_startup.py [--sizes 1000,4000,16000,64000] [--models transformer12,densenet121,vit_b_16]
                                  [--skip-synthetic] [--skip-models] [--runs 3]
    python tools/bench_startup.py --zoo [NAME ...] [--runs 7] [--repeat 1] [--warm | --again]
    python tools/bench_startup.py --kernels
    python tools/bench_startup.py --processes [NAME ...] [--wild DIR] [--steady 20] [--repeat 3]

Part 1, scaling: synthetic graphs (``tools/synthetic_graphs.py``) of about 1k, 4k, 16k
and 64k nodes are parsed, verified, optimized and emitted; the table gives the total and
the milliseconds per node.  A flat ms/node column means compile time is linear.

Part 2, real graphs (needs torch and torchvision for the export, once): the models are
scripted and exported with ``tools/export_torch.py`` into ``$IRVM_STARTUP_DIR`` (default
``~/.cache/irvm/startup``): graph IR, weights and sample inputs.  For each: ``irc
compile`` time (in process), ``vm.program.irbc.load`` of the ``.irbc``, then for the interpreter and
the static runtime the construction time, the first call and the best of ``--runs``
steady calls; and ``torch.jit.script`` / ``torch.jit.load`` of the same model.

Part 3, ``--zoo``: first call against steady call on both backends over zoo models
(``tools/zoo_models.py``; the cases ``tools/gen_zoo.py`` wrote into the zoo cache,
``$IRVM_ZOO_CACHE`` or ``~/.cache/irvm/zoo``): see ``tools/bench_zoo_start.py``.

Part 4, ``--kernels``: the compiled kernel tier's start-up, each in a fresh interpreter:
``import vm`` (which must not import numba), then the first call of a compiled kernel (a
float32 SiLU; ``import numba`` and its family's load included) with numba's cache cold (an
empty ``NUMBA_CACHE_DIR``: every family compiles) and warm, and a steady call.

Part 5, ``--processes``: what a user meets, in fresh processes: process start to first
result, load, first and steady call of a ``.pt`` and an ``.irbc`` on both backends, with
irvm's and numba's caches warm and fresh, beside ``torch.jit.load`` and ONNX Runtime
(``tools/bench_start_processes.py``).

Compile, save and load are single-threaded and timed in CPU seconds of this process
(``time.process_time``), as are ``torch.jit.script`` and ``torch.jit.load``: on a shared
machine the wall clock mostly measures the other processes.  Calls are timed on the wall clock (fused kernels use threads).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import types
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import numpy as np
from synthetic_graphs import NODES_PER_LAYER, synthetic_graph

cpu = time.process_time
CACHE = Path(os.environ.get("IRVM_STARTUP_DIR", Path.home() / ".cache" / "irvm" / "startup"))


def compile_text(text: str, name: str) -> tuple[Any, dict[str, float], int]:
    """Parse, verify, optimize and emit ``text``: the program, seconds per phase, nodes."""
    from compiler.emit import emit
    from compiler.parser import parse
    from compiler.pipeline import optimize
    from compiler.verify import verify

    times: dict[str, float] = {}
    t0 = cpu()
    module = parse(text, name)
    t1 = cpu()
    verify(module)
    t2 = cpu()
    optimized, _ = optimize(module, verified=True)  # verified just above: once
    t3 = cpu()
    program = emit(optimized, source=text)
    t4 = cpu()
    times.update(parse=t1 - t0, verify=t2 - t1, optimize=t3 - t2, emit=t4 - t3, total=t4 - t0)
    nodes = sum(1 for _ in module.main.walk())
    return program, times, nodes


def bench_synthetic(sizes: list[int]) -> None:
    print("== compile time against graph size (synthetic graphs; CPU seconds) ==")
    print(f"{'nodes':>8} {'parse s':>8} {'verify s':>8} {'optim s':>8} {'emit s':>8} {'total s':>8} {'ms/node':>8}")
    for size in sizes:
        text = synthetic_graph(max(1, size // NODES_PER_LAYER))
        _, times, nodes = compile_text(text, f"<synthetic {size}>")
        print(
            f"{nodes:>8} {times['parse']:>8.2f} {times['verify']:>8.2f} {times['optimize']:>8.2f}"
            f" {times['emit']:>8.2f} {times['total']:>8.2f} {1000 * times['total'] / nodes:>8.3f}",
            flush=True,
        )


# ---------------------------------------------------------------------------------------
# real graphs


def _torchvision() -> Any:
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    import torchvision

    return torchvision


def _make_model(name: str) -> tuple[Any, tuple[Any, ...]]:
    import torch

    torch.manual_seed(0)
    if name.startswith("transformer"):
        layers = int(name[len("transformer"):])
        model = torch.nn.Transformer(
            d_model=64, nhead=4, num_encoder_layers=layers, num_decoder_layers=layers, dim_feedforward=128, dropout=0.0
        )
        # forward(src, tgt, three masks, three padding masks, three is_causal flags)
        return model.eval(), (torch.randn(10, 2, 64), torch.randn(9, 2, 64), *[None] * 8, False)
    model = getattr(_torchvision().models, name)()
    return model.eval(), (torch.randn(1, 3, 224, 224),)


def export_model(name: str) -> dict[str, Any]:
    """Export ``name`` into the cache once; returns paths and the torch timings."""
    import torch
    from export_torch import export, write

    model, args = _make_model(name)
    t0 = cpu()
    scripted = torch.jit.script(model)
    script_s = cpu() - t0
    pt = CACHE / f"{name}.pt"
    scripted.save(str(pt))
    t0 = cpu()
    torch.jit.load(str(pt))
    load_s = cpu() - t0
    paths = {"ir": CACHE / f"{name}.ir", "inputs": CACHE / f"{name}.inputs.npz", "weights": CACHE / f"{name}.weights.npz"}
    if not all(p.exists() for p in paths.values()):
        exp = export(model, name, args)
        paths.update(write(exp, CACHE))
    return {**paths, "script": script_s, "torch_load": load_s}


def first_and_steady(make: Any, inputs: list[Any], runs: int) -> tuple[float, float, float]:
    """Seconds to build a runner with ``make()``, its first call, and its best steady call."""
    t0 = time.perf_counter()
    runner = make()
    build = time.perf_counter() - t0
    t0 = time.perf_counter()
    runner(*inputs)
    first = time.perf_counter() - t0
    steady = float("inf")
    for _ in range(runs):
        t0 = time.perf_counter()
        runner(*inputs)
        steady = min(steady, time.perf_counter() - t0)
    return build, first, steady


def first_and_steady_cpu(make: Any, inputs: list[Any], runs: int) -> tuple[float, float, float]:
    """As ``first_and_steady`` in process CPU seconds, the steady call the median of
    ``runs`` (at least 5): on a shared machine the steadier measure of a ratio."""
    t0 = cpu()
    runner = make()
    build = cpu() - t0
    times = []
    for _ in range(1 + max(runs, 5)):
        t0 = cpu()
        runner(*inputs)
        times.append(cpu() - t0)
    return build, times[0], float(np.median(times[1:]))


def bench_model(name: str, runs: int) -> dict[str, str]:
    """Compile, save, load and run ``name``; prints its lines and returns its column of
    the summary table."""
    from vm import StaticRuntime
    from vm.files.npz import load_inputs
    from vm.interpreter.machine import Interpreter
    from vm.program import irbc
    from vm.program.irbc import save

    info = export_model(name)
    text = Path(info["ir"]).read_text()
    program, times, nodes = compile_text(text, str(info["ir"]))
    out = CACHE / f"{name}.irbc"
    t0 = cpu()
    save(program, out, options={"fusion": True, "passes": None})
    save_s = cpu() - t0
    t0 = cpu()
    loaded = irbc.load(out)
    load_s = cpu() - t0
    with np.load(info["weights"], allow_pickle=False) as data:
        weights = {k: data[k] for k in data.files}
    with np.load(info["inputs"], allow_pickle=False) as data:
        inputs = load_inputs({k: data[k] for k in data.files}, loaded)
    print(f"{name}: {len(text.splitlines())} IR lines, {nodes} nodes")
    column = {
        "IR lines / nodes": f"{len(text.splitlines())} / {nodes}",
        "irc compile (CPU s)": f"{times['total']:.2f}",
        "  parse / optimize / emit": f"{times['parse']:.2f} / {times['optimize']:.2f} / {times['emit']:.2f}",
        "vm.load (CPU s)": f"{load_s:.3f}",
        "torch.jit.script (CPU s)": f"{info['script']:.2f}",
        "torch.jit.load (CPU s)": f"{info['torch_load']:.3f}",
    }
    print(
        f"  CPU: compile {times['total']:.2f}s (parse {times['parse']:.2f}, optimize {times['optimize']:.2f},"
        f" emit {times['emit']:.2f}); save {save_s:.2f}s; vm.load {load_s:.3f}s;"
        f" torch.jit.script {info['script']:.2f}s; torch.jit.load {info['torch_load']:.3f}s"
    )
    for label, make in (("interpreter", lambda: Interpreter(loaded, weights)), ("static", lambda: StaticRuntime(loaded, weights))):
        build_s, first, steady = first_and_steady(make, inputs, runs)
        print(
            f"  {label:<11} construct {build_s:.3f}s  first call {first:.3f}s  steady {steady:.3f}s"
            f"  first/steady {first / steady:.2f}x",
            flush=True,
        )
        column[f"{label}: construct (s)"] = f"{build_s:.3f}"
        column[f"{label}: first / steady call (s)"] = f"{first:.3f} / {steady:.3f} ({first / steady:.2f}x)"
    return column


def print_summary(columns: dict[str, dict[str, str]]) -> None:
    """The models side by side: one column each, one row per measure."""
    if not columns:
        return
    rows = list(next(iter(columns.values())))
    width = max(map(len, rows))
    widths = {name: max(len(name), *(len(v) for v in col.values())) for name, col in columns.items()}
    print("== side by side ==")
    print(" " * width + "".join(f"  {name:>{widths[name]}}" for name in columns))
    for row in rows:
        print(f"{row:<{width}}" + "".join(f"  {col.get(row, '-'):>{widths[name]}}" for name, col in columns.items()))


_KERNEL_PROBE = r"""
import json, sys, time
t0 = time.perf_counter()
import vm, vm.ops
t1 = time.perf_counter()
numba_at_import = "numba" in sys.modules
import numpy as np
from vm.ops import compiled
from vm.ops.registry import lookup
x = np.ones((64, 64), np.float32)
silu = lookup("aten::silu").kernel
t2 = time.perf_counter()
silu(x)
t3 = time.perf_counter()
for name in compiled.FAMILIES:
    compiled.family(name)
t4 = time.perf_counter()
silu(x)
t5 = time.perf_counter()
print(json.dumps({"import": t1 - t0, "numba_at_import": numba_at_import, "first": t3 - t2, "all": t4 - t2,
                  "steady": t5 - t4}))
"""


def bench_kernels() -> int:
    """Part 4: import time, first compiled call with numba's cache cold and warm."""
    import json
    import subprocess
    import tempfile

    print("== compiled kernels: start-up (s, one fresh interpreter per row) ==")
    print("| numba cache | import vm | numba imported by it | first compiled call | every family ready | steady call |")
    print("|---|---:|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory() as cold:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.pop("IRVM_KERNELS", None)
        for label, extra in (("cold (empty)", {"NUMBA_CACHE_DIR": cold}), ("warm", {"NUMBA_CACHE_DIR": cold})):
            proc = subprocess.run([sys.executable, "-c", _KERNEL_PROBE], capture_output=True, text=True, check=False,
                                  timeout=1800, env={**env, **extra})
            if proc.returncode:
                print(proc.stderr[-2000:])
                return 1
            r = json.loads(proc.stdout.strip().splitlines()[-1])
            print(f"| {label} | {r['import']:.3f} | {'yes' if r['numba_at_import'] else 'no'} | {r['first']:.2f} "
                  f"| {r['all']:.2f} | {r['steady'] * 1e6:.0f} µs |")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,4000,16000,64000")
    parser.add_argument("--models", default="transformer12,densenet121,vit_b_16")
    parser.add_argument("--skip-synthetic", action="store_true")
    parser.add_argument("--skip-models", action="store_true")
    parser.add_argument("--runs", type=int, default=None, help="steady calls (default 3; --zoo: 7, at least 5)")
    parser.add_argument("--zoo", nargs="*", metavar="NAME", help="first/steady over zoo models (default: a sample)")
    parser.add_argument("--repeat", type=int, default=1, help="--zoo: processes per model and backend")
    parser.add_argument("--warm", action="store_true", help="--zoo: run the other backend first in each process")
    parser.add_argument("--again", action="store_true", help="--zoo: measure a second runner of the backend")
    parser.add_argument("--kernels", action="store_true", help="the compiled kernels' start-up, cache cold and warm")
    parser.add_argument("--processes", nargs=argparse.REMAINDER, metavar="ARG",
                        help="fresh processes, start to first result, beside torch.jit and ONNX Runtime "
                             "(tools/bench_start_processes.py; the arguments are its own)")
    args = parser.parse_args(argv)
    sys.setrecursionlimit(10000)
    if args.processes is not None:
        from bench_start_processes import main as processes

        return processes(args.processes)
    if args.kernels:
        return bench_kernels()
    if args.zoo is not None:
        from bench_zoo_start import SAMPLE, bench_zoo

        return bench_zoo(args.zoo or list(SAMPLE), max(args.runs or 7, 5), args.repeat, warm=args.warm, again=args.again)
    if not args.skip_synthetic:
        bench_synthetic([int(s) for s in args.sizes.split(",") if s])
    if not args.skip_models:
        try:
            import torch  # noqa: F401
        except ImportError:
            print("torch is not installed: the real graphs need it for their export")
            return 0
        CACHE.mkdir(parents=True, exist_ok=True)
        print("== real graphs ==")
        columns = {name: bench_model(name, args.runs or 3) for name in args.models.split(",") if name}
        print_summary(columns)
    return 0


if __name__ == "__main__":
    sys.exit(main())
