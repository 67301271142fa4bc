"""A ``torch.jit.save`` archive compiled to bytecode runs with the weights written beside it
(issue #35): ``irc compile X.pt -o X.irbc`` writes ``X.irbc`` and ``X.weights.npz``, and the
command it prints, ``irvm run X.irbc --weights X.weights.npz``, gives torch's outputs on both
backends; so does ``vm.load(X.pt).save(Y.irbc)`` then ``vm.load(Y.irbc, weights=...)``.

Zoo models (``tools/zoo_models.py``) of each kind of archive: scripted, traced and frozen
(resnet18), a scripted mobile network, a traced BERT.  The tolerance is the zoo's
(``tools/zoo_check.py``).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.paths import ROOT, TOOLS

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

sys.path.insert(0, str(TOOLS))

import zoo_check  # noqa: E402
from export_torch import compile_target, to_numpy  # noqa: E402
from zoo_models import ZOO, available  # noqa: E402

import vm  # noqa: E402
from vm.files.npz import flatten_outputs  # noqa: E402

CASES = ("resnet18.script", "resnet18.trace", "resnet18.freeze", "mobilenet_v3_small.script", "bert.trace")
BACKENDS = ("interp", "static")


def _archive(case: str, tmp: Path) -> tuple[Path, Path, dict[str, np.ndarray]]:
    """``case`` saved by torch (``X.pt``), its inputs (``in.npz``, by position) and torch's
    outputs, flattened."""
    name, mode = case.split(".")
    model = ZOO.get(name)
    if model is None:
        pytest.skip(f"{name}: its package does not import")
    reason = available(model)
    if reason is not None:
        pytest.skip(reason)
    module, args = model.build()
    compiled = compile_target(module, args, trace=mode == "trace", freeze=mode == "freeze", strict=model.strict)
    pt = tmp / f"{name}.pt"
    torch.jit.save(compiled, str(pt))
    with torch.no_grad():
        expected = flatten_outputs([to_numpy(compiled(*args))])
    inputs = tmp / "in.npz"
    np.savez(inputs, **{f"arg{i}": a.numpy() for i, a in enumerate(args)})
    return pt, inputs, expected


def _matches(expected: dict[str, np.ndarray], got: dict[str, np.ndarray], where: str) -> None:
    problems, _ = zoo_check.compare(expected, {k: v for k, v in got.items() if k != "__irvm__"})
    assert problems == [], f"{where}: {problems[:3]}"


def _cli(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=1200,
                          cwd=ROOT, env=env)


@pytest.mark.parametrize("case", CASES)
def test_irc_compile_then_the_printed_irvm_run(case: str, tmp_path: Path) -> None:
    pt, inputs, expected = _archive(case, tmp_path)
    out = tmp_path / "x.irbc"
    done = _cli("compiler.cli", "compile", str(pt), "-o", str(out))
    assert done.returncode == 0, done.stderr[-3000:]
    printed = re.search(r"\(the archive's weights: (irvm run .*)\)", done.stderr)
    assert printed is not None, done.stderr
    command = printed.group(1).split()[2:]  # run X.irbc --weights X.weights.npz
    assert command == [str(out), "--weights", str(tmp_path / "x.weights.npz")]
    for backend in BACKENDS:
        result = tmp_path / f"out.{backend}.npz"
        done = _cli("vm.cli", "run", *command, "--inputs", str(inputs), "--backend", backend, "--output", str(result))
        assert done.returncode == 0, done.stderr[-3000:]
        with np.load(result) as data:
            _matches(expected, dict(data), f"irvm run {case} .irbc on {backend}")


@pytest.mark.parametrize("case", CASES)
def test_model_save_then_vm_load(case: str, tmp_path: Path) -> None:
    pt, inputs, expected = _archive(case, tmp_path)
    with np.load(inputs) as data:
        args = [data[f"arg{i}"] for i in range(len(data.files))]
    vm.load(pt).save(tmp_path / "saved.irbc")
    for backend in BACKENDS:
        model = vm.load(tmp_path / "saved.irbc", weights=tmp_path / "saved.weights.npz", backend=backend)
        got: Any = model(*args)
        _matches(expected, flatten_outputs([got]), f"vm.load of the saved {case} on {backend}")
