"""Start-up as a user meets it: a fresh process, from its start to the first result.

    python tools/bench_startup.py --processes [NAME ...] [--wild DIR] [--steady 20] [--repeat 3]
    python tools/bench_start_processes.py [NAME ...] [--wild DIR] [--steady 20] [--repeat 3]

Models: zoo models by name (default ``resnet18 mobilenet_v2 bert densenet121
efficientnet_b0 maxvit_t``), built with ``tools/zoo_models.py`` (torch, once) and kept in
``$IRVM_STARTUP_DIR/processes`` (default ``~/.cache/irvm/startup/processes``) as a scripted
(or, where scripting fails, traced) ``NAME.pt``, ``NAME.onnx`` (``torch.onnx.export``),
``NAME.irbc`` with its weights (``vm.Model.save``) and ``NAME.inputs.npz``; and the *wild
set*: every ``*.jit`` / ``*.pt`` under ``--wild DIR`` that has a ``NAME.inputs.json`` beside
it (``{"args": [[dtype, shape] | number, ...]}``, random normal floats and zero integers)
and, for ONNX Runtime, a ``NAME.onnx`` (``"onnx_args"`` when its inputs differ).

Each cell is one fresh interpreter (``--repeat`` of them; the median is shown), one thread
per engine, timed from just before the process is started to its first result:

- ``irvm``: ``import vm; vm.load(file, backend=...)``, first call, steady calls; with the
  machine *warm* (irvm's program cache and numba's cache filled by an earlier process; the
  steady calls once the compiled kernels are in) and *fresh* (both empty: a new install's
  first run of a new file; its steady calls run the numpy tier, numba still compiling);
- ``torch``: ``import torch; torch.jit.load``, first and steady calls;
- ``ort``: ``import onnxruntime; InferenceSession`` (one intra-op thread), first and steady calls.

Columns: ``start`` (process start to first result), ``load`` (the engine's import excluded:
load and construction), ``first`` and ``steady`` (the median of ``--steady`` calls) in ms;
``start/ort`` and ``start/torch``: the ratios the bar of issue #39 is about.  Run it on a
machine at rest: ``env -u OPENBLAS_CORETYPE -u OPENBLAS_L2_SIZE python3 tools/...``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

DEFAULT = ["resnet18", "mobilenet_v2", "bert", "densenet121", "efficientnet_b0", "maxvit_t"]
FOLDER = Path(os.environ.get("IRVM_STARTUP_DIR", Path.home() / ".cache" / "irvm" / "startup")) / "processes"

# --- the child processes: each prints one JSON line; "done" is time.time() at its first result ---
_INPUTS = r"""
import json, sys, numpy as np
def inputs(spec, key="args"):
    if spec.endswith(".npz"):
        with np.load(spec) as f:
            return [f[k] for k in sorted(f.files, key=lambda k: int(k[1:]))]
    args = []
    table = json.load(open(spec))
    for a in table.get(key, table["args"]):
        if isinstance(a, list):
            rng = np.random.default_rng(0)
            args.append(rng.standard_normal(a[1]).astype(a[0]) if a[0].startswith("float") else np.zeros(a[1], a[0]))
        else:
            args.append(a)
    return args
"""
CHILD = {
    "irvm": _INPUTS + r"""
import time
t0 = time.perf_counter()
import vm
file, spec, backend, steady, weights = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
args = inputs(spec)
t1 = time.perf_counter()
model = vm.load(file, weights or None, backend=backend)
t2 = time.perf_counter()
model(*args)
done = time.time(); t3 = time.perf_counter()
from vm.ops import compiled
compiled.wait(float(sys.argv[6]))  # steady: once the compiled kernels asked for are in (a warm cache: ~1 s)
times = []
for _ in range(steady):
    a = time.perf_counter(); model(*args); times.append(time.perf_counter() - a)
print(json.dumps({"done": done, "load": t2 - t1, "first": t3 - t2, "steady": sorted(times)[len(times) // 2]}))
""",
    "torch": _INPUTS + r"""
import time
import torch
torch.set_num_threads(1)
file, spec, steady = sys.argv[1], sys.argv[2], int(sys.argv[3])
args = [torch.from_numpy(a) if isinstance(a, np.ndarray) else a for a in inputs(spec)]
t1 = time.perf_counter()
model = torch.jit.load(file).eval()
t2 = time.perf_counter()
with torch.no_grad():
    model(*args)
    done = time.time(); t3 = time.perf_counter()
    times = []
    for _ in range(steady):
        a = time.perf_counter(); model(*args); times.append(time.perf_counter() - a)
print(json.dumps({"done": done, "load": t2 - t1, "first": t3 - t2, "steady": sorted(times)[len(times) // 2]}))
""",
    "ort": _INPUTS + r"""
import time
import onnxruntime as ort
file, spec, steady = sys.argv[1], sys.argv[2], int(sys.argv[3])
args = inputs(spec, "onnx_args")
t1 = time.perf_counter()
options = ort.SessionOptions(); options.intra_op_num_threads = 1; options.inter_op_num_threads = 1
session = ort.InferenceSession(file, options, providers=["CPUExecutionProvider"])
names = [i.name for i in session.get_inputs()]
feeds = {n: a if isinstance(a, np.ndarray) else np.asarray(a, np.int64 if isinstance(a, int) else np.float32)
         for n, a in zip(names, args)}
t2 = time.perf_counter()
session.run(None, feeds)
done = time.time(); t3 = time.perf_counter()
times = []
for _ in range(steady):
    a = time.perf_counter(); session.run(None, feeds); times.append(time.perf_counter() - a)
print(json.dumps({"done": done, "load": t2 - t1, "first": t3 - t2, "steady": sorted(times)[len(times) // 2]}))
""",
}


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")}
    for var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
        env[var] = "1"
    env["PYTHONPATH"] = str(ROOT)
    env.update(extra)
    return env


def run_child(engine: str, argv: list[str], env: dict[str, str]) -> dict[str, float]:
    start = time.time()
    done = subprocess.run([sys.executable, "-c", CHILD[engine], *argv], env=env, capture_output=True, text=True,
                          timeout=1800)
    if done.returncode != 0:
        raise RuntimeError(f"{engine} {argv[0]}: {done.stderr.strip().splitlines()[-1:]}")
    got = json.loads(done.stdout.strip().splitlines()[-1])
    got["start"] = got.pop("done") - start
    return got


# --- the model files ---
def prepare(name: str) -> dict[str, Any]:
    """The model's files in FOLDER, made with torch the first time."""
    FOLDER.mkdir(parents=True, exist_ok=True)
    files = {k: FOLDER / f"{name}.{k}" for k in ("pt", "onnx", "irbc")}
    files["inputs"] = FOLDER / f"{name}.inputs.npz"
    files["weights"] = FOLDER / f"{name}.weights.npz"
    if not (files["pt"].exists() and files["inputs"].exists()):
        sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
        import numpy as np
        import torch
        import zoo_models

        module, inputs = zoo_models.ZOO[name].build()
        module.eval()
        try:
            scripted = torch.jit.script(module)
        except Exception:  # noqa: BLE001  (a model torch cannot script is traced, as its users would)
            scripted = torch.jit.trace(module, inputs, strict=False)
        scripted.save(str(files["pt"]))
        np.savez(files["inputs"], **{f"x{i}": t.numpy() for i, t in enumerate(inputs)})
        for source in (module, scripted):  # the eager module, else the TorchScript one (a trace exports)
            try:
                torch.onnx.export(source, tuple(inputs), str(files["onnx"]), dynamo=False, opset_version=17)
                break
            except Exception as exc:  # noqa: BLE001  (no ORT column for a model ONNX cannot export)
                print(f"{name}: no ONNX export of {type(source).__name__} ({type(exc).__name__}: {exc})"[:300],
                      file=sys.stderr)
    if not files["irbc"].exists():
        import vm

        vm.load(files["pt"]).save(files["irbc"], force=True)
    return files


def wild(folder: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in sorted([*folder.rglob("*.jit"), *folder.rglob("*.pt")]):
        spec = path.with_suffix(".inputs.json")
        if spec.exists():
            onnx = path.with_suffix(".onnx")
            found[path.stem] = {"pt": path, "inputs": spec, "onnx": onnx if onnx.exists() else None, "irbc": None}
    return found


def cells(name: str, files: dict[str, Any], steady: int, repeat: int) -> list[tuple[str, dict[str, float]]]:
    rows: list[tuple[str, dict[str, float]]] = []
    spec = str(files["inputs"])

    def median(engine: str, argv: list[str], env_for: Any) -> dict[str, float]:
        runs = [run_child(engine, argv, env_for()) for _ in range(repeat)]
        return {k: statistics.median(r[k] for r in runs) for k in runs[0]}

    if files.get("onnx") is not None and Path(files["onnx"]).exists():
        rows.append(("ort", median("ort", [str(files["onnx"]), spec, str(steady)], _env)))
    rows.append(("torch.jit", median("torch", [str(files["pt"]), spec, str(steady)], _env)))
    warm_dir = Path(tempfile.mkdtemp(prefix="irvm-bench-warm-"))
    warm = lambda: _env(IRVM_CACHE_DIR=str(warm_dir / "irvm"))  # noqa: E731
    for backend in ("static", "interp"):
        argv = [str(files["pt"]), spec, backend, str(steady), "", "60"]
        run_child("irvm", argv, warm())  # fills the program cache (numba's is the machine's own)
        rows.append((f"irvm {backend} .pt warm", median("irvm", argv, warm)))

        def fresh() -> dict[str, str]:
            place = Path(tempfile.mkdtemp(prefix="irvm-bench-fresh-"))
            return _env(IRVM_CACHE_DIR=str(place / "irvm"), NUMBA_CACHE_DIR=str(place / "numba"))

        rows.append((f"irvm {backend} .pt fresh", median("irvm", [*argv[:-1], "0"], fresh)))
        # a fresh process leaves numba compiling its families for a cache that is then thrown away
        subprocess.run(["pkill", "-f", "vm.ops.compiled"], check=False, capture_output=True)
        if files.get("irbc") is not None:
            argv = [str(files["irbc"]), spec, backend, str(steady), str(files["weights"]), "60"]
            rows.append((f"irvm {backend} .irbc", median("irvm", argv, warm)))
    shutil.rmtree(warm_dir, ignore_errors=True)
    return rows


def table(results: dict[str, list[tuple[str, dict[str, float]]]]) -> str:
    lines = ["| model | engine | start ms | load ms | first ms | steady ms | first/steady | start/ort | start/torch |",
             "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    for name, rows in results.items():
        ref = dict(rows)
        ort, torch = ref.get("ort", {}).get("start"), ref.get("torch.jit", {}).get("start")
        for engine, r in rows:
            ratio = {base: f"{r['start'] / base:.2f}x" if base else "" for base in (ort, torch)}
            lines.append(f"| {name} | {engine} | {1e3 * r['start']:.0f} | {1e3 * r['load']:.0f} | {1e3 * r['first']:.1f} | "
                         f"{1e3 * r['steady']:.2f} | {r['first'] / r['steady']:.2f} | {ratio[ort]} | {ratio[torch]} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("names", nargs="*", default=None)
    parser.add_argument("--wild", type=Path, help="a folder of shipped TorchScript files (see the docstring)")
    parser.add_argument("--steady", type=int, default=20)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    import numpy  # noqa: F401  (its BLAS, for the line below)
    from threadpoolctl import threadpool_info

    print("BLAS:", ", ".join(f"{i.get('internal_api')} {i.get('architecture')}" for i in threadpool_info()),
          "| load:", os.getloadavg()[0])
    models: dict[str, dict[str, Any]] = {name: prepare(name) for name in (args.names or DEFAULT)}
    if args.wild is not None:
        models.update(wild(args.wild))
    results = {}
    for name, files in models.items():
        results[name] = cells(name, files, args.steady, args.repeat)
        print("\n".join(table({name: results[name]}).splitlines()[2:]), flush=True)
    print()
    print(table(results))
    print("load after:", os.getloadavg()[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())
