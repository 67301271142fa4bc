"""A process whose numba cache is warm compiles nothing: every compiled kernel is loaded from
numba's on-disk cache, at its family's first use, and a steady call never compiles.

The count is of numba's compiler entry (``numba.core.compiler.compile_extra``, which every
compilation goes through), patched before any family is imported, in a fresh interpreter
that runs every kernel through the operator registry.  The first process fills the cache
(if this checkout's is cold); the second must compile nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT
from vm.ops import compiled

pytestmark = pytest.mark.skipif(not compiled.ENABLED, reason="IRVM_KERNELS=numpy: the compiled tier is off")

SCRIPT = r"""
import json
import numba.core.compiler as compiler
import numpy as np

compiles = []
original = compiler.compile_extra


def counting(typingctx, targetctx, func, *args, **kwargs):
    compiles.append(getattr(func, "__qualname__", str(func)))
    return original(typingctx, targetctx, func, *args, **kwargs)


compiler.compile_extra = counting

from vm.core.quantized import CellParams, LinearPacked, QTensor
from vm.ops import compiled
from vm.ops.registry import lookup

assert compiled.ENABLED
x = np.random.default_rng(0).standard_normal((2, 8, 6, 6)).astype(np.float32)
w8 = np.ones(8, np.float32)
for _ in range(2):  # the second round is the steady call
    for name in ("silu", "hardswish"):
        lookup(f"aten::{name}").kernel(x)
    lookup("aten::gelu").kernel(x, "none")
    lookup("aten::gelu").kernel(x, "tanh")
    lookup("aten::layer_norm").kernel(x, [6], None, None, 1e-5, True)
    lookup("aten::rms_norm").kernel(x, [6], None, 1e-6)
    lookup("aten::group_norm").kernel(x, 2, w8, w8, 1e-5, True)
    lookup("aten::softmax.int").kernel(x, -1, None)
    lookup("aten::log_softmax.int").kernel(x, -1, None)
    lookup("aten::conv2d").kernel(x, np.ones((8, 1, 3, 3), np.float32), w8, [1, 1], [1, 1], [1, 1], 8)
    lookup("aten::conv2d").kernel(x, np.ones((8, 1, 3, 3), np.float32), None, [2, 2], [1, 1], [1, 1], 8)
    seq, h = np.ones((5, 2, 3), np.float32), np.zeros((1, 2, 4), np.float32)
    for kind, gates in (("lstm", 16), ("gru", 12), ("rnn_tanh", 4)):
        params = [np.ones((gates, 3), np.float32) / 9, np.ones((gates, 4), np.float32) / 9,
                  np.ones(gates, np.float32), np.ones(gates, np.float32)]
        state = [h, h] if kind == "lstm" else h
        lookup(f"aten::{kind}.input").kernel(seq, state, params, True, 1, 0.0, False, False, False)
        if kind != "rnn_tanh":
            cell_state = [h[0], h[0]] if kind == "lstm" else h[0]
            lookup(f"aten::{kind}_cell").kernel(seq[0], cell_state, *params)
    packs = [LinearPacked(QTensor(np.ones((16, k), np.int8), 0.01, 0), np.ones(16, np.float32)) for k in (3, 4)]
    cells = [CellParams("quantized_dynamic", packs[0], packs[1], None, None, True)]
    lookup("aten::quantized_lstm.input").kernel(seq, [h, h], cells, True, 1, 0.0, False, False, False, None, True)
loaded = sorted(compiled._families)
print(json.dumps({"compiles": compiles, "families": loaded}))
"""


def _run() -> dict:
    env = {k: v for k, v in os.environ.items() if k != "IRVM_KERNELS"}
    env["PYTHONPATH"] = str(ROOT)
    proc = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, check=False,
                          timeout=900, cwd=ROOT, env=env)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_warm_process_compiles_nothing() -> None:
    first = _run()  # fills the cache where it is cold
    assert first["families"] == sorted(compiled.FAMILIES)
    second = _run()
    assert second["compiles"] == []
    assert second["families"] == sorted(compiled.FAMILIES)


def test_import_vm_does_not_import_numba() -> None:
    code = "import sys, vm, vm.ops, vm.static; print('numba' in sys.modules)"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=300,
                          cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "False"
