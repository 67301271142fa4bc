"""Record torch's fbgemm outputs on each of its int8 kernels into tests/data/fbgemm_kernels.npz.

    python3 tools/record_fbgemm_goldens.py [--out tests/data/fbgemm_kernels.npz] [--force]

fbgemm's int8 GEMM gives other integers on a CPU with AVX-512 VNNI (exact int32 sums) than
on one without (``vpmaddubsw``'s saturating int16 pair sums; ``vm/ops/quantized/cpu.py``).
So that irvm's emulation of each is checked on every machine, this runs torch once per kernel
in a child process with fbgemm's own override ``FBGEMM_ENABLE_INSTRUCTIONS`` (``AVX512_E1``:
VNNI; ``AVX2``: the saturating kernel, which on an AVX-512 CPU groups convolutions by its
64-byte vectors, irvm's ``"avx512"``), and stores each case's inputs (integers, scales, zero
points, layer settings) beside both outputs.  It needs a CPU with AVX-512 VNNI, where both
kernels can run; tests/quantized/test_cpu_kernels.py reads the file.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
KERNELS = {"vnni": "AVX512_E1", "avx512": "AVX2"}

# name: (input shape, weight shape, stride, padding, dilation, groups); every tensor small
CONVS = {
    "conv3x3": ((1, 32, 6, 6), (8, 32, 3, 3), [1, 1], [1, 1], [1, 1], 1),
    "conv1x1": ((1, 32, 6, 6), (8, 32, 1, 1), [1, 1], [0, 0], [1, 1], 1),
    "conv_stem_odd_channels": ((1, 3, 10, 10), (8, 3, 3, 3), [2, 2], [1, 1], [1, 1], 1),
    "conv_dilated_zero_point": ((2, 16, 7, 7), (8, 16, 3, 3), [2, 1], [2, 1], [2, 1], 1),
    "conv_groups_unequal": ((1, 32, 6, 6), (16, 16, 3, 3), [1, 1], [1, 1], [1, 1], 2),
    "conv_groupwise_4x4": ((1, 16, 6, 6), (16, 4, 3, 3), [1, 1], [1, 1], [1, 1], 4),
    "conv_groupwise_few_groups": ((1, 8, 6, 6), (8, 2, 3, 3), [1, 1], [1, 1], [1, 1], 4),
    "conv_groupwise_16": ((1, 16, 6, 6), (16, 16, 3, 3), [2, 2], [1, 1], [1, 1], 1),
    "conv_groupwise_pad0": ((1, 16, 6, 6), (16, 16, 3, 3), [1, 1], [0, 0], [1, 1], 1),
    "depthwise3x3": ((1, 16, 6, 6), (16, 1, 3, 3), [1, 1], [1, 1], [1, 1], 16),
    "depthwise5x5_stride2": ((1, 16, 9, 9), (16, 1, 5, 5), [2, 2], [2, 2], [1, 1], 16),
    "depthwise_pad0": ((1, 16, 6, 6), (16, 1, 3, 3), [1, 1], [0, 0], [1, 1], 16),
    "depthwise_multiplier": ((1, 8, 6, 6), (16, 1, 3, 3), [1, 1], [1, 1], [1, 1], 8),
    "conv1d": ((1, 32, 12), (8, 32, 3), [1], [1], [1], 1),
    "conv3d": ((1, 16, 3, 4, 4), (8, 16, 3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], 1),
    "depthwise3d": ((1, 16, 3, 5, 5), (16, 1, 3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], 16),
    "conv3d_groupwise": ((1, 16, 3, 4, 4), (16, 4, 3, 3, 3), [1, 1, 1], [1, 1, 1], [1, 1, 1], 4),
}
# name: (input shape, out features, per channel, relu)
LINEARS = {
    "linear": ((5, 32), 24, False, False),
    "linear_per_channel": ((5, 32), 24, True, False),
    "linear_relu_odd_features": ((2, 3, 33), 16, False, True),
}
DYNAMIC = {  # name: (input shape, out features, per channel, reduce_range)
    "dynamic": ((3, 7, 33), 64, False, False),
    "dynamic_per_channel": ((3, 7, 33), 64, True, False),
    "dynamic_reduce_range": ((3, 7, 33), 64, False, True),
}


def _weight(torch, shape, seed, per_channel):
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(*shape, generator=g) * 3  # wide: many weights at the int8 limits
    if per_channel:
        scales = torch.rand(shape[0], generator=g).double() / 50 + 0.01
        return torch.quantize_per_channel(w, scales, torch.zeros(shape[0], dtype=torch.long), 0, torch.qint8)
    return torch.quantize_per_tensor(w, 0.02, 0, torch.qint8)


def _store_q(out: dict, key: str, t) -> None:
    out[key] = t.int_repr().numpy()
    if str(t.qscheme()) == "torch.per_tensor_affine":
        out[key + ".scale"] = np.array([t.q_scale()])
        out[key + ".zero_point"] = np.array([t.q_zero_point()])
    else:
        out[key + ".scale"] = t.q_per_channel_scales().numpy()
        out[key + ".zero_point"] = t.q_per_channel_zero_points().numpy()


def _worker(path: str) -> None:
    import torch

    warnings.filterwarnings("ignore")
    torch.backends.quantized.engine = "fbgemm"
    out: dict[str, np.ndarray] = {}
    settings: dict[str, dict] = {}
    for i, (name, (xs, ws, stride, pad, dil, groups)) in enumerate(CONVS.items()):
        g = torch.Generator().manual_seed(100 + i)
        x = torch.quantize_per_tensor(torch.rand(*xs, generator=g) * 7, 0.03, 3 * (i % 3), torch.quint8)
        w, b = _weight(torch, ws, 200 + i, False), torch.randn(ws[0], generator=g)
        dims = len(xs) - 2
        packed = getattr(torch.ops.quantized, f"conv{dims}d_prepack")(w, b, stride, pad, dil, groups)
        y = getattr(torch.ops.quantized, f"conv{dims}d")(x, packed, 0.2, 64)
        _store_q(out, f"{name}.x", x)
        _store_q(out, f"{name}.w", w)
        out[f"{name}.bias"], out[f"{name}.y"] = b.numpy(), y.int_repr().numpy()
        settings[name] = {"kind": "conv", "dims": dims, "stride": stride, "padding": pad, "dilation": dil,
                          "groups": groups, "scale": 0.2, "zero_point": 64}
    for i, (name, (xs, n, per_channel, relu)) in enumerate(LINEARS.items()):
        g = torch.Generator().manual_seed(300 + i)
        x = torch.quantize_per_tensor(torch.rand(*xs, generator=g) * 7, 0.03, 0, torch.quint8)
        w, b = _weight(torch, (n, xs[-1]), 400 + i, per_channel), torch.randn(n, generator=g)
        fn = torch.ops.quantized.linear_relu if relu else torch.ops.quantized.linear
        y = fn(x, torch.ops.quantized.linear_prepack(w, b), 0.2, 64)
        _store_q(out, f"{name}.x", x)
        _store_q(out, f"{name}.w", w)
        out[f"{name}.bias"], out[f"{name}.y"] = b.numpy(), y.int_repr().numpy()
        settings[name] = {"kind": "linear", "relu": relu, "scale": 0.2, "zero_point": 64}
    for i, (name, (xs, n, per_channel, reduce_range)) in enumerate(DYNAMIC.items()):
        g = torch.Generator().manual_seed(500 + i)
        x = torch.randn(*xs, generator=g) * 3
        w, b = _weight(torch, (n, xs[-1]), 600 + i, per_channel), torch.randn(n, generator=g)
        y = torch.ops.quantized.linear_dynamic(x, torch.ops.quantized.linear_prepack(w, b), reduce_range)
        _store_q(out, f"{name}.w", w)
        out[f"{name}.x"], out[f"{name}.bias"], out[f"{name}.y"] = x.numpy(), b.numpy(), y.numpy()
        settings[name] = {"kind": "dynamic", "reduce_range": reduce_range}
    out["settings"] = np.array(json.dumps(settings))
    np.savez(path, **out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=str(ROOT / "tests" / "data" / "fbgemm_kernels.npz"))
    ap.add_argument("--force", action="store_true", help="replace an existing file")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.worker:
        _worker(args.worker)
        return 0
    out = Path(args.out)
    if out.exists() and not args.force:
        print(f"{out} exists: --force to replace it", file=sys.stderr)
        return 2
    runs: dict[str, dict[str, np.ndarray]] = {}
    for kernel, setting in KERNELS.items():
        part = out.with_suffix(f".{kernel}.tmp.npz")
        env = {**os.environ, "FBGEMM_ENABLE_INSTRUCTIONS": setting}
        subprocess.run([sys.executable, __file__, "--worker", str(part)], check=True, env=env)
        with np.load(part) as f:
            runs[kernel] = {k: f[k] for k in f.files}
        part.unlink()
    first, second = runs["vnni"], runs["avx512"]
    merged: dict[str, np.ndarray] = {}
    for key, value in first.items():
        if key.endswith(".y"):
            merged[key[:-2] + ".y.vnni"], merged[key[:-2] + ".y.avx512"] = value, second[key]
        else:
            assert np.array_equal(value, second[key]), f"{key}: the inputs differ between the runs"
            merged[key] = value
    np.savez_compressed(out, **merged)
    differ = [k[:-len(".y.vnni")] for k in merged if k.endswith(".y.vnni") and not np.array_equal(merged[k], merged[k[:-len(".vnni")] + ".avx512"])]
    print(f"wrote {out}: {sum(k.endswith('.y.vnni') for k in merged)} cases, the kernels differ on {len(differ)}: "
          + ", ".join(differ))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
