"""The compiled tier never makes a call wait (``vm.ops.compiled``: background loading, the
default): a first call runs the numpy kernels at once, the family is compiled in a child
process and loaded by a thread, and later calls take the compiled kernel, with the same
numbers to float32 rounding.  Each case runs in a fresh interpreter with an empty numba cache of its own (what
a fresh install has), so nothing any other test loaded or compiled helps it.
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
import json, sys, time
import numpy as np
from vm.ops import compiled
from vm.ops.registry import lookup

x = np.random.default_rng(0).standard_normal((64, 257)).astype(np.float32)
silu = lookup("aten::silu").kernel
start = time.perf_counter()
first = silu(x)
first_seconds = time.perf_counter() - start
numba_after_first = "numba" in sys.modules
loaded_after_first = sorted(compiled._families)
assert compiled.wait(600), "the family did not load"
second = silu(x)
fam = compiled._families.get("activation")
stats = fam.silu.stats if fam is not None else None
print(json.dumps({
    "numba_after_first": numba_after_first,
    "loaded_after_first": loaded_after_first,
    "loaded": sorted(compiled._families),
    "failures": compiled.failures,
    "same": bool(np.allclose(first, second, rtol=2e-6, atol=1e-7)),
    "misses": sum(stats.cache_misses.values()) if stats else None,
    "hits": sum(stats.cache_hits.values()) if stats else None,
    "first_seconds": first_seconds,
}))
"""


def _run(tmp_path, loading: str) -> dict:
    env = {**os.environ, "IRVM_COMPILE": loading, "NUMBA_CACHE_DIR": str(tmp_path / "numba"),
           "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True, text=True, timeout=900,
                          cwd=ROOT)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_a_first_call_with_a_cold_cache_runs_numpy_and_the_compiled_kernel_arrives(tmp_path) -> None:
    """Background loading with numba's cache empty: the first call returns without numba
    imported or any family loaded (it ran the numpy kernel); once loaded, the family came
    from the cache the child process filled (no compilation in this process: cache hits
    only) and gives the numpy kernel's numbers to float32 rounding (a few ulp, as the two
    differ from torch's own kernel: tests/compiled/test_activation.py)."""
    got = _run(tmp_path, "background")
    assert got["failures"] == {}
    assert got["loaded_after_first"] == [] and got["numba_after_first"] is False
    assert got["loaded"] == ["activation"]
    assert got["misses"] == 0 and got["hits"] >= 1
    assert got["same"]
    assert list((tmp_path / "numba").rglob("activation.*.nbi")), "the child process wrote no cache"


def test_eager_loading_loads_on_the_first_call(tmp_path) -> None:
    """``IRVM_COMPILE=eager``: the first call loads (here: compiles) the family on the
    caller's thread and runs the compiled kernel, as the suite and the benchmarks want."""
    got = _run(tmp_path, "eager")
    assert got["loaded_after_first"] == ["activation"] and got["numba_after_first"] is True
    assert got["same"]


def test_a_family_that_fails_to_load_leaves_the_numpy_kernels(monkeypatch) -> None:
    """A family whose import fails is recorded in ``failures`` and asked for no more; its
    kernels keep running on numpy."""
    import numpy as np

    from vm.ops.registry import lookup

    monkeypatch.setattr(compiled, "_families", {})
    monkeypatch.setattr(compiled, "failures", {})
    monkeypatch.setattr(compiled, "_cached", lambda name: True)

    def broken(name: str):
        raise ImportError(f"no {name} here")

    monkeypatch.setattr(compiled, "family", broken)
    before = compiled.loading("background")
    try:
        x = np.linspace(-3, 3, 50, dtype=np.float32)
        want = x / (1 + np.exp(-x))
        np.testing.assert_allclose(lookup("aten::silu").kernel(x), want, rtol=1e-6, atol=1e-7)
        assert compiled.wait(60)
        assert compiled.failures == {"activation": "ImportError: no activation here"}
        np.testing.assert_allclose(lookup("aten::silu").kernel(x), want, rtol=1e-6, atol=1e-7)
        assert compiled.ready("activation") is None
    finally:
        compiled.loading(before)
