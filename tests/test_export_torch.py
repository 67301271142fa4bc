"""tools/export_torch.py: from a Python file with an nn.Module to a command irvm runs.

This is the walkthrough of examples/README.md as a test: export a module (scripted,
traced, frozen) and a function, check the files and the printed ``irvm run`` command,
then run that command and compare with torch's own result.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

ROOT = Path(__file__).parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import export_torch

from vm.io import compare_flat, flatten_outputs, read_npz

NET = '''
import torch, torch.nn as nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(4, 3)
        self.register_buffer("shift", torch.tensor([0.5, -0.5, 1.0]))
        self.gain = 2.0

    def forward(self, x):
        return torch.relu(self.fc(x)) * self.gain + self.shift

def net():
    torch.manual_seed(0)
    return Net().eval()

def net_inputs():
    return (torch.randn(2, 4),)

def scaled(x, k: int):
    return x * k, k + 1

def _double(x):
    return x * 2

def _quad(x):
    return _double(_double(x))

def twice(x, k: int):
    return _quad(x) + _double(x), k
'''


@pytest.fixture()
def source(tmp_path: Path) -> Path:
    path = tmp_path / "net.py"
    path.write_text(NET)
    return path


def export(source: Path, *args: str, capsys: pytest.CaptureFixture[str]) -> tuple[Path, str]:
    outdir = source.parent / "out"
    assert export_torch.main([str(source), *args, "-o", str(outdir)]) == 0
    return outdir, capsys.readouterr().out.strip()


def torch_result(source: Path, outdir: Path, name: str = "net") -> dict[str, np.ndarray]:
    module = export_torch.load_file(source)
    inputs = read_npz(outdir / f"{name}.inputs.npz")
    args = [torch.from_numpy(inputs[k]) for k in sorted(k for k in inputs if k != "__spec__")]
    with torch.no_grad():
        return flatten_outputs([export_torch.to_numpy(getattr(module, name)()(*args))])


@pytest.mark.parametrize("mode", [[], ["--trace"], ["--freeze"]])
def test_module_export_writes_graph_weights_inputs_and_the_command(
    source: Path, mode: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    outdir, command = export(source, "net", *mode, capsys=capsys)
    text = (outdir / "net.ir").read_text()
    weights = read_npz(outdir / "net.weights.npz")
    assert text.startswith("graph(%self")
    assert command.startswith(f"irvm run {outdir}/net.ir --inputs {outdir}/net.inputs.npz --weights")
    if mode == ["--freeze"]:
        assert "prim::GetAttr" not in text and "self.fc.weight" in weights  # constants, by name
    else:
        assert 'prim::GetAttr[name="weight"]' in text and {"fc.weight", "fc.bias", "shift"} <= set(weights)
    if not mode:
        assert weights["gain"].shape == () and weights["gain"].dtype == np.float64  # a plain attribute


@pytest.mark.parametrize("mode", [[], ["--trace"], ["--freeze"], ["--no-inline"]])
def test_the_printed_command_reproduces_torch(source: Path, mode: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("vm.interpreter", reason="vm.Interpreter cannot be imported yet")
    outdir, command = export(source, "net", *mode, capsys=capsys)
    argv = shlex.split(command)
    assert argv[:2] == ["irvm", "run"]
    proc = subprocess.run([sys.executable, "-m", "vm.cli", *argv[1:]], check=False, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    problems = compare_flat(torch_result(source, outdir), read_npz(outdir / "net.out.npz"))
    assert not problems, problems


def test_function_export_with_an_inputs_spec(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outdir, command = export(source, "scaled", "--inputs", "f32[2,3]; 4", capsys=capsys)
    inputs = read_npz(outdir / "scaled.inputs.npz")
    assert inputs["x.1"].shape == (2, 3) and inputs["x.1"].dtype == np.float32
    assert int(inputs["k.1"]) == 4 and inputs["k.1"].dtype == np.int64
    assert "--weights" not in command and not (outdir / "scaled.weights.npz").exists()


def test_source_paths_in_the_dump_do_not_name_the_machine(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    outdir, _ = export(source, "net", capsys=capsys)
    text = (outdir / "net.ir").read_text()
    assert "site-packages" not in text and str(source.parent) not in text
    assert "# torch/nn/modules/linear.py:" in text and "# net.py:12:" in text


def test_unknown_name_and_missing_inputs_are_reported(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert export_torch.main([str(source), "nothing", "-o", str(source.parent / "o")]) == 2
    assert "defines no 'nothing'" in capsys.readouterr().err
    assert export_torch.main([str(source), "scaled", "-o", str(source.parent / "o")]) == 2
    assert "no sample inputs" in capsys.readouterr().err


def test_no_inline_writes_one_graph_per_called_function(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Calls stay calls; each callee (transitively, once) follows as `with NAME = graph(...)`."""
    outdir, _ = export(source, "twice", "--no-inline", "--inputs", "f32[3]; 2", capsys=capsys)
    text = (outdir / "twice.ir").read_text()
    assert text.startswith("graph(%x.1 : Tensor,") and "prim::CallFunction" in text
    assert text.count("with _quad = graph(") == 1 and text.count("with _double = graph(") == 1
    try:
        from compiler.parser import parse
    except ImportError as err:
        pytest.skip(f"compiler.parser cannot be imported yet: {err}")
    assert sorted(parse(text, "twice.ir").functions) == ["_double", "_quad"]


def test_no_inline_module_keeps_its_submodule_calls(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A module's `.graph`: fc stays a prim::CallMethod, run through irvm's known Linear body."""
    outdir, _ = export(source, "net", "--no-inline", capsys=capsys)
    text = (outdir / "net.ir").read_text()
    assert 'prim::CallMethod[name="forward"](%fc' in text and "aten::linear" not in text
    assert "with " not in text  # Linear is known: no section needed
