"""Strict weights (vm/binding/strict.py): keys nothing reads are refused before a run, as
``load_state_dict(strict=True)`` refuses them, on both backends, from the printed graph,
a ``.irbc`` and a ``.pt``; ``strict=False`` / ``--weights-partial`` keep the old binding."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import compiler
import vm
import vm.program.irbc
from compiler.torchscript import compile_archive
from tests.support.paths import ROOT
from vm.core.errors import RunError

EXAMPLES = ROOT / "examples"
RUNTIMES = {"interp": vm.Interpreter, "static": vm.StaticRuntime}


def _misspelled() -> dict[str, np.ndarray]:
    weights = dict(np.load(EXAMPLES / "cnn.weights.npz"))
    weights["conv1.wieght"] = weights.pop("conv1.bias")
    return weights


def _inputs() -> np.ndarray:
    return np.load(EXAMPLES / "cnn.inputs.npz")["x.1"]


@pytest.mark.parametrize("backend", sorted(RUNTIMES))
def test_a_misspelled_optional_key_is_refused_naming_both_keys(backend: str, tmp_path: Path) -> None:
    program = compiler.compile_file(str(EXAMPLES / "cnn.ir"))
    vm.save(program, tmp_path / "cnn.irbc")
    for p in (program, vm.program.irbc.load(tmp_path / "cnn.irbc")):
        with pytest.raises(RunError) as err:
            RUNTIMES[backend](p, _misspelled())
        text = str(err.value)
        assert "unexpected key(s) (1):\n  conv1.wieght (closest: conv1.bias)" in text
        assert "missing key(s) (1):\n  conv1.bias (closest: conv1.wieght)" in text


@pytest.mark.parametrize("backend", sorted(RUNTIMES))
def test_strict_false_keeps_the_partial_binding(backend: str) -> None:
    program = compiler.compile_file(str(EXAMPLES / "cnn.ir"))
    out = RUNTIMES[backend](program, _misspelled(), strict=False)(_inputs())
    assert out.shape == (2, 10)


@pytest.mark.parametrize("backend", sorted(RUNTIMES))
def test_exact_weights_and_unread_buffers_pass(backend: str) -> None:
    program = compiler.compile_file(str(EXAMPLES / "cnn.ir"))
    weights = dict(np.load(EXAMPLES / "cnn.weights.npz"))
    expected = np.load(EXAMPLES / "cnn.expected.npz")
    out = RUNTIMES[backend](program, {**weights, "bn.num_batches_tracked": np.array(0)})(_inputs())
    np.testing.assert_allclose(out, next(iter(expected.values())), rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("backend", sorted(RUNTIMES))
def test_an_archives_own_weights_are_its_state(backend: str) -> None:
    """Every key of a .pt is the model's (read or not): its own weights always bind."""
    program, own = compile_archive(EXAMPLES / "cnn.pt")
    assert RUNTIMES[backend](program, own)(_inputs()).shape == (2, 10)


def test_torch_refuses_the_same_state_dict() -> None:
    torch = pytest.importorskip("torch")
    module = torch.jit.load(str(EXAMPLES / "cnn.pt"))
    with pytest.raises(RuntimeError, match=r"Missing key\(s\).*conv1.bias.*\n?.*Unexpected key\(s\).*conv1.wieght"):
        module.load_state_dict({k: torch.from_numpy(v) for k, v in _misspelled().items()}, strict=True)


def _irvm(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "vm.cli", *args], capture_output=True, text=True, check=False,
                          timeout=300)


@pytest.mark.parametrize("program", ["cnn.ir", "cnn.pt"])
@pytest.mark.parametrize("backend", sorted(RUNTIMES))
def test_cli_refuses_then_accepts_with_weights_partial(program: str, backend: str, tmp_path: Path) -> None:
    bad = tmp_path / "bad.npz"
    np.savez(bad, **_misspelled())
    args = ("run", str(EXAMPLES / program), "--inputs", str(EXAMPLES / "cnn.inputs.npz"), "--weights", str(bad),
            "--backend", backend)
    refused = _irvm(*args)
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "conv1.wieght (closest: conv1.bias)" in refused.stderr
    assert "conv1.bias (closest: conv1.wieght)" in refused.stderr
    partial = _irvm(*args, "--weights-partial")
    assert partial.returncode == 0, partial.stderr
    assert "out0 = tensor(" in partial.stdout


def test_cli_refuses_a_pt_override_missing_a_parameter(tmp_path: Path) -> None:
    weights = dict(np.load(EXAMPLES / "cnn.weights.npz"))
    del weights["fc.weight"]
    given = tmp_path / "some.npz"
    np.savez(given, **weights)
    proc = _irvm("run", str(EXAMPLES / "cnn.pt"), "--inputs", str(EXAMPLES / "cnn.inputs.npz"), "--weights", str(given))
    assert proc.returncode != 0 and "missing key(s) (1):\n  fc.weight" in proc.stderr
