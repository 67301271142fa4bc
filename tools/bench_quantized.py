"""The quantized section of the zoo benchmark: each quantized model against torch, and
against irvm running the same model in float.

    python3 tools/bench_quantized.py [--only NAME ...] [--rounds 7]

For each model of ``tools/quantized_zoo.ZOO`` (default ``DEFAULT``), one thread everywhere,
median milliseconds per call of: ``irvm q static`` and ``irvm q interp`` (the quantized
``.pt`` archive, with the model's engine), ``torch q`` (torch.jit running that archive, its
engine set), ``irvm float static`` (the float model before quantization, scripted or traced
the same way, through irvm's static runtime) and ``torch float``; then the ratios irvm
quantized / torch quantized and irvm quantized / irvm float, and the operators where irvm's
quantized time goes (``vm.static.profile``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

DEFAULT = ("small_cnn_fbgemm", "resnet18_fbgemm", "mobilenet_v2_fbgemm", "mobilenet_v3_large_qnnpack",
           "linear_stack", "lstm_tagger", "gru", "bert")
COLUMNS = ("irvm q static", "irvm q interp", "torch q", "irvm float static", "torch float")


def _mode(spec: Any) -> str:
    return "script" if "script" in spec.modes else "trace"


def calls(name: str, folder: Path) -> dict[str, Any]:
    import numpy as np
    import quantized_zoo as QZ
    import torch

    import vm
    from compiler.torchscript import compile_archive

    spec = QZ.ZOO[name]
    mode = _mode(spec)
    pt = QZ.CACHE / f"{name}.{mode}.pt"
    if not pt.exists():
        QZ.generate(name, QZ.CACHE)
    with np.load(QZ.CACHE / f"{name}.inputs.npz") as data:
        args = [data[f"arg{i}"] for i in range(len(data.files))]
    torch.backends.quantized.engine = spec.engine
    program, weights = compile_archive(pt)
    out: dict[str, Any] = {"_program": (program, weights, args)}
    static = vm.StaticRuntime(program, weights, quantized_engine=spec.engine)
    interp = vm.Interpreter(program, weights, quantized_engine=spec.engine)
    out["irvm q static"] = lambda: static(*args)
    out["irvm q interp"] = lambda: interp(*args)
    jit = torch.jit.load(str(pt))
    targs = [torch.from_numpy(a) for a in args]

    def torch_q() -> Any:
        torch.backends.quantized.engine = spec.engine
        with torch.no_grad():
            return jit(*targs)

    out["torch q"] = torch_q
    model, _ = spec.build_float()
    fjit = QZ.compile_mode(model, tuple(targs), mode)
    fpt = folder / f"{name}.float.pt"
    torch.jit.save(fjit, str(fpt))
    fprog, fweights = compile_archive(fpt)
    fstatic = vm.StaticRuntime(fprog, fweights)
    out["irvm float static"] = lambda: fstatic(*args)

    def torch_float() -> Any:
        with torch.no_grad():
            return fjit(*targs)

    out["torch float"] = torch_float
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args(argv)
    import torch
    from bench_zoo import measure, operator_shares

    torch.set_num_threads(1)
    names = args.only or list(DEFAULT)
    lines = ["| model | " + " | ".join(COLUMNS) + " | irvm q / torch q | irvm q / irvm float | where irvm's time goes |",
             "|---" * (len(COLUMNS) + 4) + "|"]
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            made = calls(name, Path(tmp))
            program, weights, inputs = made.pop("_program")
            times = measure(made, args.rounds)
            cells = [f"{times[c]:.2f}" if isinstance(times.get(c), float) else str(times.get(c)) for c in COLUMNS]
            q, tq, fl = times.get("irvm q static"), times.get("torch q"), times.get("irvm float static")
            r1 = f"{q / tq:.1f}x" if isinstance(q, float) and isinstance(tq, float) else "-"
            r2 = f"{q / fl:.2f}x" if isinstance(q, float) and isinstance(fl, float) else "-"
            ops = ", ".join(f"{k} {s:.0%}" for k, s in operator_shares(program, inputs, weights, top=3))
            lines.append(f"| {name} | " + " | ".join(cells) + f" | {r1} | {r2} | {ops} |")
            print(lines[-1], file=sys.stderr, flush=True)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
