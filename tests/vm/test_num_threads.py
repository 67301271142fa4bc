"""``vm.set_num_threads``: one switch for BLAS, the fused-kernel pool and numba.

Each case runs in a fresh interpreter (the counts are process-wide, and whether numba is
imported is part of what is tested).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from tests.support.paths import ROOT

EXAMPLES = ROOT / "examples"


def _python(code: str) -> dict:
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120,
        cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


REPORT = """
import json, sys
from threadpoolctl import threadpool_info
import vm.fusion
blas = sorted({p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"})
numba = sys.modules.get("numba")
parallel = sys.modules.get("numba.np.ufunc.parallel")
started = parallel is not None and parallel._is_initialized
print(json.dumps({"blas": blas, "fusion": vm.fusion.get_num_threads(), "vm": vm.get_num_threads(),
                  "numba": numba.get_num_threads() if started else None, "numba imported": numba is not None}))
"""


def test_one_switch_sets_blas_and_fused_threads_without_importing_numba() -> None:
    got = _python("import numpy, vm; assert vm.set_num_threads(1) == 1" + REPORT)
    assert got == {"blas": [1], "fusion": 1, "vm": 1, "numba": None, "numba imported": False}


def test_numba_threads_started_before_the_switch_follow_it() -> None:
    got = _python("import numpy, numba; numba.get_num_threads(); import vm; vm.set_num_threads(1)" + REPORT)
    assert got["numba"] == 1


def test_compiled_kernels_do_not_start_numbas_threads() -> None:
    """They run on the caller's thread; starting numba's pool would reset OpenMP's count under torch."""
    code = ("import numpy as np, vm; vm.set_num_threads(1); from vm.ops.registry import lookup; "
            "lookup('aten::silu').kernel(np.ones(1000, np.float32))")
    got = _python(code + REPORT)
    assert got["numba imported"] and got["numba"] is None


def test_default_is_the_affinity_mask_never_more() -> None:
    got = _python("import numpy, vm; vm.set_num_threads()" + REPORT)
    assert got["vm"] == len(os.sched_getaffinity(0)) == got["fusion"]
    assert got["blas"] == [got["vm"]]


@pytest.mark.parametrize("bad", [0, -1, 1.5, "2"])
def test_bad_counts_are_refused(bad: object) -> None:
    import vm.threads

    with pytest.raises(ValueError, match="positive int"):
        vm.threads.set_num_threads(bad)  # type: ignore[arg-type]


def test_cli_threads_option_reaches_blas() -> None:
    args = ["run", str(EXAMPLES / "mlp.ir"), "--inputs", str(EXAMPLES / "mlp.inputs.npz"),
            "--weights", str(EXAMPLES / "mlp.weights.npz"), "--backend", "static", "--threads", "1"]
    code = f"import contextlib, io, numpy, vm, vm.cli\nwith contextlib.redirect_stdout(io.StringIO()):\n" \
           f"    assert vm.cli.main({args!r}) == 0\n" + REPORT
    got = _python(code)
    assert got["blas"] == [1] and got["fusion"] == 1


def test_cli_refuses_zero_threads() -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "vm.cli", "profile", str(EXAMPLES / "mlp.ir"), "--threads", "0"],
        capture_output=True, text=True, check=False, timeout=120, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert proc.returncode == 2 and "positive number of threads" in proc.stderr
