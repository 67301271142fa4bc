"""Every example in ``examples/`` runs and gives its saved expected outputs.

Each ``examples/NAME.ir`` comes with ``NAME.inputs.npz``, ``NAME.expected.npz`` (torch's
outputs, or a Python reference's for the hand-written ``fib.ir``) and, for modules,
``NAME.weights.npz``.  We run each through the Python API on both backends and through
the ``irvm run`` command line, exactly as examples/README.md tells users to.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compiler.parser import parse
from tests.support.paths import EXAMPLES
from vm.files.npz import compare_flat, flatten_outputs, load_inputs, outputs_as_list, read_npz
from vm.ir.printer import print_module

ROOT = EXAMPLES.parent
NAMES = sorted(p.stem for p in EXAMPLES.glob("*.ir"))
RTOL, ATOL = 1e-4, 1e-5


def runtime_class(backend: str) -> Any:
    import vm

    return getattr(vm, "Interpreter" if backend == "interp" else "StaticRuntime")


def weights_of(name: str) -> dict | None:
    path = EXAMPLES / f"{name}.weights.npz"
    return read_npz(path) if path.exists() else None


def test_every_example_is_complete_and_documented() -> None:
    """Each .ir opens with a comment, has inputs and expected outputs, and is in the README."""
    readme = (EXAMPLES / "README.md").read_text()
    expected = {"x2", "dim_loop", "ratio_iou", "lunif2", "lstm_cell", "control_flow", "fib", "mlp", "cnn"}
    assert expected <= set(NAMES)
    for name in NAMES:
        assert (EXAMPLES / f"{name}.ir").read_text().startswith("# "), name
        assert (EXAMPLES / f"{name}.inputs.npz").exists() and (EXAMPLES / f"{name}.expected.npz").exists()
        assert f"irvm run examples/{name}.ir --inputs examples/{name}.inputs.npz" in readme, name


@pytest.mark.parametrize("backend", ["interp", "static"])
@pytest.mark.parametrize("name", NAMES)
def test_example_runs_through_the_python_api(name: str, backend: str) -> None:
    """compile_source + Interpreter/StaticRuntime reproduce the saved outputs."""
    import compiler

    cls = runtime_class(backend)
    path = EXAMPLES / f"{name}.ir"
    program = compiler.compile_source(path.read_text(), str(path))
    inputs = load_inputs(EXAMPLES / f"{name}.inputs.npz", program)
    result = cls(program, weights_of(name))(*inputs)
    actual = flatten_outputs(outputs_as_list(result, len(program.module.main.outputs)))
    problems = compare_flat(read_npz(EXAMPLES / f"{name}.expected.npz"), actual, RTOL, ATOL)
    assert not problems, "\n".join(problems)


def readme_argv(name: str, out: Path) -> list[str]:
    """The README's command for ``name`` (without the leading ``irvm``), plus --output."""
    argv = ["run", f"examples/{name}.ir", "--inputs", f"examples/{name}.inputs.npz"]
    if (EXAMPLES / f"{name}.weights.npz").exists():
        argv += ["--weights", f"examples/{name}.weights.npz"]
    return argv + ["--output", str(out)]


@pytest.mark.parametrize("name", NAMES)
def test_example_runs_through_irvm_run(name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The README's command (plus --output) exits 0 and writes the saved outputs (in-process)."""
    runtime_class("interp")
    from vm.cli import main

    monkeypatch.chdir(ROOT)
    out = tmp_path / "out.npz"
    assert main(readme_argv(name, out)) == 0
    problems = compare_flat(read_npz(EXAMPLES / f"{name}.expected.npz"), read_npz(out), RTOL, ATOL)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("name", ["x2", "mlp"])
def test_example_runs_as_a_process(name: str, tmp_path: Path) -> None:
    """The same commands from a shell: `python -m vm.cli` is what the `irvm` script runs."""
    runtime_class("interp")
    out = tmp_path / "out.npz"
    proc = subprocess.run([sys.executable, "-m", "vm.cli", *readme_argv(name, out)], check=False, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert not compare_flat(read_npz(EXAMPLES / f"{name}.expected.npz"), read_npz(out), RTOL, ATOL)


@pytest.mark.parametrize("name", NAMES)
def test_example_round_trips_through_the_printer(name: str) -> None:
    """print(parse(print(parse(t)))) == print(parse(t)) on every example."""
    once = print_module(parse((EXAMPLES / f"{name}.ir").read_text(), f"{name}.ir"))
    assert print_module(parse(once, f"{name}.ir")) == once


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_the_torchscript_archive_example_runs_without_torch(backend: str, tmp_path: Path) -> None:
    """examples/cnn.pt (torch.jit.save of the scripted CNN) runs with its own weights, in a
    process where `import torch` fails, and gives torch's outputs; its inputs file is the one
    made for cnn.ir (keyed `x.1`, while the archive names the input `x`)."""
    out = tmp_path / "out.npz"
    argv = ["run", "examples/cnn.pt", "--inputs", "examples/cnn.inputs.npz", "--backend", backend, "--output", str(out)]
    code = f"import sys; sys.modules['torch'] = None; from vm.cli import main; sys.exit(main({argv!r}))"
    proc = subprocess.run([sys.executable, "-c", code], check=False, capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert not compare_flat(read_npz(EXAMPLES / "cnn.expected.npz"), read_npz(out), RTOL, ATOL)
    assert "irvm run examples/cnn.pt --inputs examples/cnn.inputs.npz" in (EXAMPLES / "README.md").read_text()
