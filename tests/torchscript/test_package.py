"""torch.package archives holding TorchScript modules (compiler/torchscript/package.py): made
by ``torch.package.PackageExporter.save_pickle`` of scripted and traced modules, listed by
``irvm info``, run one by one with ``vm.load(path, module=...)`` / ``irvm run --module`` on
both backends against torch, compiled by ``irc compile --module``; what cannot run (a pickle
of Python objects) is refused saying why."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.support.paths import ROOT

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

import vm  # noqa: E402
from compiler.diagnostics import IRError  # noqa: E402
from vm.files.kinds import FileKind, sniff  # noqa: E402


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)
        self.norm = torch.nn.LayerNorm(3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.norm(torch.relu(self.fc(x)) + x[:, :3])


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    import torch.package.package_exporter as exporter

    exporter._gate_torchscript_serialization = False  # torch calls saving ScriptModules a beta feature
    torch.manual_seed(0)
    scripted = torch.jit.script(Net().eval())
    traced = torch.jit.trace(Net().eval(), torch.randn(2, 4))
    path = tmp_path_factory.mktemp("package") / "models.pt"
    with torch.package.PackageExporter(str(path)) as pe:
        pe.save_pickle("models", "net.pkl", scripted)
        pe.save_pickle("models", "traced.pkl", traced)
        pe.save_pickle("extra", "settings.pkl", {"lr": 0.1, "name": "net"})
        pe.save_text("extra", "notes.txt", "not a pickle")
    return path, {"models/net.pkl": scripted, "models/traced.pkl": traced}


def _cli(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", module, *args], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env=env)


def test_a_package_is_recognized_and_listed(package: tuple[Path, dict[str, Any]]) -> None:
    path, _ = package
    assert sniff(path) is FileKind.PACKAGE
    done = _cli("vm.cli", "info", str(path))
    assert done.returncode == 0, done.stderr
    assert "a torch.package archive, 2 TorchScript module(s) of 3 pickle(s)" in done.stdout
    assert f"models/net.pkl: TorchScript module (irvm run {path} --module models/net.pkl)" in done.stdout
    assert "models/traced.pkl: TorchScript module" in done.stdout
    assert "extra/settings.pkl: cannot run: a Python object (plain data), not TorchScript" in done.stdout
    assert "torch.save checkpoint" not in done.stdout + done.stderr


@pytest.mark.parametrize("backend", ["interp", "static"])
@pytest.mark.parametrize("name", ["models/net.pkl", "models/traced.pkl"])
def test_each_torchscript_module_runs_as_torch_does(package: tuple[Path, dict[str, Any]], name: str, backend: str,
                                                    tmp_path: Path) -> None:
    path, modules = package
    x = torch.randn(5, 4)
    with torch.no_grad():
        want = modules[name](x).numpy()
    model = vm.load(path, module=name, backend=backend)
    np.testing.assert_allclose(model(x.numpy()), want, rtol=1e-5, atol=1e-6)
    model.save(tmp_path / "m.irbc")  # the package's weights of that module go beside it
    again = vm.load(tmp_path / "m.irbc", weights=tmp_path / "m.weights.npz", backend=backend)
    np.testing.assert_allclose(again(x.numpy()), want, rtol=1e-5, atol=1e-6)


def test_the_command_lines_take_the_module(package: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    path, modules = package
    x = torch.randn(2, 4)
    np.savez(tmp_path / "in.npz", arg0=x.numpy())
    with torch.no_grad():
        want = modules["models/net.pkl"](x).numpy()
    done = _cli("vm.cli", "run", str(path), "--module", "models/net.pkl", "--inputs", str(tmp_path / "in.npz"),
                "--output", str(tmp_path / "out.npz"))
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "out.npz") as data:
        np.testing.assert_allclose(data["out0"], want, rtol=1e-5, atol=1e-6)
    done = _cli("compiler.cli", "compile", str(path), "--module", "models/net.pkl", "-o", str(tmp_path / "n.irbc"))
    assert done.returncode == 0, done.stderr
    done = _cli("vm.cli", "run", str(tmp_path / "n.irbc"), "--weights", str(tmp_path / "n.weights.npz"),
                "--inputs", str(tmp_path / "in.npz"), "--output", str(tmp_path / "out2.npz"), "--backend", "static")
    assert done.returncode == 0, done.stderr
    with np.load(tmp_path / "out2.npz") as data:
        np.testing.assert_allclose(data["out0"], want, rtol=1e-5, atol=1e-6)


def test_what_cannot_run_is_refused_saying_why(package: tuple[Path, dict[str, Any]]) -> None:
    path, _ = package
    with pytest.raises(IRError, match=r"torch.package archive: choose one of its TorchScript modules "
                                      r"\(models/net.pkl, models/traced.pkl\) with module="):
        vm.load(path)
    with pytest.raises(IRError, match=r"it holds no 'models/other.pkl'"):
        vm.load(path, module="models/other.pkl")
    with pytest.raises(IRError, match=r"extra/settings.pkl is a Python object \(plain data\), not TorchScript"):
        vm.load(path, module="extra/settings.pkl")
    done = _cli("vm.cli", "run", str(path))
    assert done.returncode == 65 and "--module NAME" in done.stderr, done.stderr


def test_a_pickle_holding_a_scripted_module_inside_python_objects_is_refused(tmp_path: Path) -> None:
    import torch.package.package_exporter as exporter

    exporter._gate_torchscript_serialization = False
    path = tmp_path / "wrapped.pt"
    with torch.package.PackageExporter(str(path)) as pe:
        pe.save_pickle("models", "both.pkl", {"net": torch.jit.script(Net().eval())})
    with pytest.raises(IRError, match=r"a Python object holding a TorchScript module"):
        vm.load(path, module="models/both.pkl")
