"""torch.jit.save archives run without PyTorch and match it (the bar of issue #19).

Where torch is installed, ``tools/torchscript_archives.py`` saves the coverage set (every
corpus case, the nn models, the feature modules, resnet18 and mobilenet_v3_small, and the
model zoo's CI subset; scripted, traced, frozen) under ``~/.cache/irvm/archives`` (or
``$IRVM_ARCHIVE_CACHE``), and ``tools/run_archives.py`` runs each archive in ONE subprocess where ``import torch``
fails, on the interpreter and the static runtime, against torch's outputs.  The command
line is checked the same way, in a torch-less subprocess.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.support.paths import ROOT

torch = pytest.importorskip("torch")

sys.path.insert(0, str(ROOT / "tools"))

import torchscript_archives

NO_TORCH = "import sys; sys.modules['torch'] = None; "


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT)}


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, str]]:
    cache = torchscript_archives.CACHE
    torchscript_archives.save_all(cache, zoo="ci")
    out = tmp_path_factory.mktemp("archives") / "results.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "tools" / "run_archives.py"), str(cache), "--json", str(out)],
        capture_output=True, text=True, env=_env(), check=False,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(out.read_text())


GROUPS = ["corpus.", "nn.", "features.", "vision.", "zoo."]


@pytest.mark.parametrize("group", GROUPS)
def test_every_saved_archive_runs_without_torch_on_both_backends(results: dict[str, dict[str, str]], group: str) -> None:
    """Each archive of the group compiles from its .pt alone, in a process where torch
    cannot be imported, and both backends give torch's outputs (or raise where torch
    raised); the assertion lists every failure with its cause."""
    if group == "vision." and importlib.util.find_spec("torchvision") is None:
        pytest.skip("torchvision is not installed")
    if group == "zoo.":
        import zoo_models

        reasons = [zoo_models.available(zoo_models.ZOO[n]) for n in zoo_models.CI_SUBSET]
        if None not in reasons:  # the models of an absent package are not saved, so not checked
            pytest.skip(f"no model-zoo package is installed: {sorted(set(map(str, reasons)))}")
    cases = {name: r for name, r in results.items() if name.startswith(group)}
    assert cases, f"no {group} archives were saved"
    failures = {n: r for n, r in cases.items() if r["interp"] != "ok" or r["static"] != "ok"}
    assert not failures, "\n".join(f"{n}: {r}" for n, r in sorted(failures.items()))


def test_the_coverage_set_holds_all_three_kinds_of_save() -> None:
    """The set is what the issue asks: modules saved after script, trace and freeze."""
    names = [name for name, _ in torchscript_archives.all_cases()]
    for suffix in (".trace", ".freeze", ".script"):
        assert any(n.startswith("nn.") and n.endswith(suffix) for n in names)
    assert any(n.startswith("corpus.") and n.endswith(".freeze") for n in names)


class _Linear(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = torch.nn.Linear(4, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.relu(self.fc(x))


@pytest.fixture
def linear_pt(tmp_path: Path) -> tuple[Path, Path, np.ndarray, np.ndarray]:
    torch.manual_seed(0)
    model = _Linear().eval()
    path = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(model), str(path))
    x = torch.randn(2, 4)
    inputs = tmp_path / "in.npz"
    np.savez(inputs, x=x.numpy())
    with torch.no_grad():
        want = model(x).numpy()
    return path, inputs, x.numpy(), want


def _cli(module: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = NO_TORCH + f"from {module} import main; sys.exit(main({list(args)!r}))"
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), check=False)


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_irvm_runs_a_pt_file_without_torch(linear_pt: tuple[Path, Path, np.ndarray, np.ndarray], tmp_path: Path, backend: str) -> None:
    """`irvm run model.pt --inputs in.npz --output out.npz` with torch unimportable: the
    weights come from the archive, the result is torch's."""
    path, inputs, _, want = linear_pt
    out = tmp_path / "out.npz"
    proc = _cli("vm.cli", "run", str(path), "--inputs", str(inputs), "--output", str(out), "--backend", backend)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(out)["out0"], want, rtol=1e-5, atol=1e-6)


def test_weights_given_on_the_command_line_override_the_archives(linear_pt: tuple[Path, Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    """--weights entries replace the archive's (here a zero bias and an identity-like
    weight), the others stay."""
    path, inputs, x, _ = linear_pt
    w = tmp_path / "w.npz"
    weight = np.zeros((3, 4), np.float32)
    weight[0, 0] = 1.0
    np.savez(w, **{"fc.weight": weight, "fc.bias": np.zeros(3, np.float32)})
    out = tmp_path / "out.npz"
    proc = _cli("vm.cli", "run", str(path), "--inputs", str(inputs), "--weights", str(w), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(out)["out0"], np.maximum(x @ weight.T, 0), rtol=1e-6)


def test_irc_compiles_a_pt_file_and_writes_its_weights_beside(linear_pt: tuple[Path, Path, np.ndarray, np.ndarray], tmp_path: Path) -> None:
    """`irc compile model.pt -o model.irbc` writes the bytecode and model.weights.npz
    beside it; `irvm run model.irbc --weights model.weights.npz` gives torch's result."""
    path, inputs, _, want = linear_pt
    irbc = tmp_path / "model.irbc"
    proc = _cli("compiler.cli", "compile", str(path), "-o", str(irbc))
    assert proc.returncode == 0, proc.stderr
    weights = tmp_path / "model.weights.npz"
    assert irbc.exists() and weights.exists()
    out = tmp_path / "out.npz"
    proc = _cli("vm.cli", "run", str(irbc), "--inputs", str(inputs), "--weights", str(weights), "--output", str(out))
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_allclose(np.load(out)["out0"], want, rtol=1e-5, atol=1e-6)


def test_a_method_other_than_forward_compiles(tmp_path: Path) -> None:
    """``load_torchscript(path, method=...)`` compiles any method of the module, here an
    exported one; a missing method is an error listing the methods there are."""
    import compiler
    from compiler.diagnostics import CompileError

    class Two(torch.nn.Module):
        @torch.jit.export
        def double(self, x: torch.Tensor) -> torch.Tensor:
            return x * 2

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.double(x) + 1

    path = tmp_path / "two.pt"
    torch.jit.save(torch.jit.script(Two()), str(path))
    module, _ = compiler.load_torchscript(path, method="double")
    assert "aten::mul" in str(module) and "aten::add" not in str(module)
    with pytest.raises(CompileError, match=r"has no method `triple` \(methods: double, forward\)"):
        compiler.load_torchscript(path, method="triple")


def test_debug_pickles_give_each_node_and_error_its_line_in_the_users_python(tmp_path: Path) -> None:
    """With the archive's .debug_pkl files, a node carries the user's ``file:line:col``
    (printed as the IR's ``# ...`` comment, as torch's dumps do) and a compile error names
    it after the archive location."""
    import zipfile

    import compiler
    from compiler.diagnostics import CompileError

    class Model(torch.nn.Module):
        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return torch.sigmoid(x) * 3

    path = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(Model()), str(path))
    line = Model.forward.__code__.co_firstlineno + 1
    module, _ = compiler.load_torchscript(path)
    sigmoid = next(n for n in module.main.walk() if n.kind == "aten::sigmoid")
    assert sigmoid.source == f"{__file__}:{line}:19"
    broken = tmp_path / "broken.pt"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(broken, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if "/code/" in item.filename and item.filename.endswith(".py"):
                data = data.replace(b"torch.sigmoid(", b"torch.no_such_op(")
            dst.writestr(item, data)
    with pytest.raises(CompileError, match=rf"unknown operator aten::no_such_op\(Tensor\).* \(compiled from {__file__}:{line}:19\)"):
        compiler.load_torchscript(broken)


def test_irvm_info_on_a_pt_file_says_self_comes_from_the_archive(linear_pt: tuple[Path, Path, np.ndarray, np.ndarray]) -> None:
    """`irvm info model.pt` (torch blocked) lists the forward's inputs and outputs and
    says the module object is bound from the archive's own weights."""
    path = linear_pt[0]
    proc = _cli("vm.cli", "info", str(path))
    assert proc.returncode == 0, proc.stderr
    assert "bound from the archive (4 entries)" in proc.stdout
    assert "input   x" in proc.stdout and "output  out0" in proc.stdout


def test_only_the_arm_that_runs_is_compiled_when_the_condition_is_decided(tmp_path: Path) -> None:
    """A module in eval mode whose code never assigns ``training`` has a constant
    ``self.training``, and a None check on a value that cannot be None is decided by its
    type: the training-only arm (calling an operator irvm lacks) and the None test vanish
    from the IR, and the result is torch's."""
    import compiler
    import vm

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.scale: torch.Tensor | None = torch.full((3,), 2.0)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            if self.training:
                x = torch.special.zeta(x, x)
            s = self.scale
            if s is not None:
                x = x * s
            return torch.relu(x)

    path = tmp_path / "model.pt"
    torch.jit.save(torch.jit.script(Model().eval()), str(path))
    module, _ = compiler.load_torchscript(path)
    text = str(module)
    assert "zeta" not in text and "prim::If" not in text
    program, weights = compiler.torchscript.compile_archive(path)
    x = np.array([-1.0, 0.5, 2.0], np.float32)
    np.testing.assert_allclose(vm.Interpreter(program, weights)(x), np.maximum(x * 2, 0))
