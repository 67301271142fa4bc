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

from tests.support.paths import ROOT

torch = pytest.importorskip("torch")

sys.path.insert(0, str(ROOT / "tools"))
import export_torch

from compiler.parser import parse
from vm.files.npz import compare_flat, flatten_outputs, read_npz

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

class Seq(nn.Module):
    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(4, 5, batch_first=True)
        self.fc = nn.Linear(5, 2)

    def forward(self, x):
        y, _ = self.lstm(x)
        return self.fc(y[:, -1])

def seq():
    torch.manual_seed(0)
    return Seq().eval()

def seq_inputs():
    return (torch.randn(2, 3, 4),)
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
    assert sorted(parse(text, "twice.ir").functions) == ["_double", "_quad"]


def test_no_inline_module_keeps_its_submodule_calls(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A module's `.graph`: fc stays a prim::CallMethod, run through irvm's known Linear body."""
    outdir, _ = export(source, "net", "--no-inline", capsys=capsys)
    text = (outdir / "net.ir").read_text()
    assert 'prim::CallMethod[name="forward"](%fc' in text and "aten::linear" not in text
    assert "with " not in text  # Linear is known: no section needed


def test_a_frozen_lstm_exports_to_ir_irvm_runs(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 17: --freeze of a module with nn.LSTM wrote `prim::Constant[value=[<Tensors>]]`,
    which no parser reads back.  The list becomes one bound `<Tensor>` constant per element."""
    from vm.cli import load_program
    from vm.files.npz import load_inputs
    from vm.interpreter.machine import Interpreter

    outdir, _ = export(source, "seq", "--freeze", capsys=capsys)
    text = (outdir / "seq.ir").read_text()
    assert "<Tensors>" not in text and "%self.lstm._flat_weights.0 : Tensor = prim::Constant[value=<Tensor>]()" in text
    program = load_program(str(outdir / "seq.ir"))
    weights = read_npz(outdir / "seq.weights.npz")
    got = Interpreter(program, weights)(*load_inputs(outdir / "seq.inputs.npz", program))
    problems = compare_flat(torch_result(source, outdir, "seq"), flatten_outputs([got]))
    assert not problems, problems


def test_a_torchscript_archive_exports_with_the_command_irvm_names(source: Path, tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """The command `irvm run cnn.pt` prints (export_torch.py ARCHIVE -o OUTDIR) writes IR and
    weights that reproduce torch.jit.load's result."""
    from vm.cli import load_program
    from vm.files.npz import load_inputs
    from vm.interpreter.machine import Interpreter

    archive = tmp_path / "seq.pt"
    torch.jit.save(torch.jit.script(export_torch.load_file(source).seq()), str(archive))
    outdir = tmp_path / "from_archive"
    assert export_torch.main([str(archive), "--inputs", "f32[2,3,4]", "-o", str(outdir)]) == 0
    assert capsys.readouterr().out.startswith(f"irvm run {outdir}/seq.ir --inputs {outdir}/seq.inputs.npz --weights")
    program = load_program(str(outdir / "seq.ir"))
    inputs = read_npz(outdir / "seq.inputs.npz")
    got = Interpreter(program, read_npz(outdir / "seq.weights.npz"))(*load_inputs(inputs, program))
    with torch.no_grad():
        want = torch.jit.load(str(archive))(torch.from_numpy(inputs["x.1"])).numpy()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_export_never_overwrites_a_file_it_did_not_write(source: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A rerun replaces the tool's own files; a hand-made file of the same name is refused
    (exit 2, the file untouched) unless --force."""
    outdir, _ = export(source, "net", capsys=capsys)
    export(source, "net", capsys=capsys)  # its own files: replaced
    mine = outdir / "net.weights.npz"
    np.savez(mine, mine=np.arange(3))
    before = mine.read_bytes()
    assert export_torch.main([str(source), "net", "-o", str(outdir)]) == 2
    assert "refusing to overwrite" in capsys.readouterr().err and mine.read_bytes() == before
    (outdir / "net.ir").write_text("my notes\n")
    assert export_torch.main([str(source), "net", "-o", str(outdir), "--force"]) == 0
    assert (outdir / "net.ir").read_text().startswith("graph(%self")
