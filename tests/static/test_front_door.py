"""The static runtime compiles nothing (issue #37): IR text and a program compiled without
the weights it meets are the front door's work (``vm/api/static.py``), done before a
``StaticModule`` is built.

``vm.static.StaticModule`` is built with the compiler's front door, its pipeline and its
passes patched to fail: given a program compiled without its weights it runs the program as
compiled (as the interpreter does); ``vm.StaticModule`` / ``vm.load`` specialize it first,
and IR text is refused by the runtime and compiled by the front door."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import compiler  # noqa: E402
import compiler.pipeline  # noqa: E402
import vm  # noqa: E402
import vm.program.irbc  # noqa: E402
import vm.static  # noqa: E402
from tests.support.paths import TOOLS  # noqa: E402
from vm.core.errors import RunError  # noqa: E402


def _exported() -> tuple[str, dict[str, Any], list[np.ndarray], np.ndarray]:
    """(IR text, weights, inputs, torch's result) of a conv + eval BatchNorm model."""
    import sys

    sys.path.insert(0, str(TOOLS))
    import export_torch

    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(200, 4))
    model[1].running_mean.uniform_(-1, 1)
    model[1].running_var.uniform_(0.5, 2)
    model.eval()
    x = torch.randn(2, 3, 5, 5)
    with torch.no_grad():
        want = model(x).numpy()
    exp = export_torch.export(model, "m", (x,))
    return exp.ir, dict(exp.weights), [x.numpy()], want


_CASE = _exported()
CNN = _CASE[0]


def _weights() -> dict[str, Any]:
    return dict(_CASE[1])


def _inputs() -> list[np.ndarray]:
    return list(_CASE[2])


def _forbid_compiling(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The compiler's entries that compile patched to fail; the names of those called."""
    called: list[str] = []

    def failing(name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            called.append(name)
            raise AssertionError(f"the static runtime called {name}")

        return fail

    for target, name in (
        (compiler, "compile_source"), (compiler, "compile_file"), (compiler, "specialize"), (compiler, "freeze"),
        (compiler.pipeline, "optimize"), (compiler.pipeline, "specialize"), (compiler.pipeline, "get_pass"),
    ):
        monkeypatch.setattr(target, name, failing(f"{target.__name__}.{name}"))
    return called


@pytest.mark.parametrize("from_file", [False, True], ids=["in_memory", "irbc"])
def test_a_program_compiled_without_its_weights_is_run_as_compiled_by_the_runtime(
    from_file: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``vm.static.StaticModule(program, weights)`` calls no compile, no specialization, no
    pass: the BatchNorm stays, and the result is the interpreter's on the same program."""
    program = compiler.compile_source(CNN)
    assert not program.specialized
    if from_file:
        vm.save(program, tmp_path / "cnn.irbc")
        program = vm.program.irbc.load(tmp_path / "cnn.irbc")
    weights, args = _weights(), _inputs()
    want = vm.Interpreter(program, weights)(*args)
    called = _forbid_compiling(monkeypatch)
    module = vm.static.StaticModule(program, weights)
    got = vm.static.StaticRuntime(module)(*args)
    assert called == []
    assert "aten::batch_norm" in {n.kind for n in module.ir.main.walk()}
    np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-6)


def test_the_front_door_specializes_a_program_compiled_without_its_weights(monkeypatch: pytest.MonkeyPatch) -> None:
    """``vm.StaticModule`` (and so ``vm.StaticRuntime`` and ``vm.Model``) specializes it once,
    by ``compiler.specialize``, before the runtime's module is built: the BatchNorm is folded
    and the result is the program compiled with its weights."""
    program, weights, args = compiler.compile_source(CNN), _weights(), _inputs()
    calls: list[str] = []
    real = compiler.specialize

    def counted(*a: Any, **k: Any) -> Any:
        calls.append("specialize")
        return real(*a, **k)

    monkeypatch.setattr(compiler, "specialize", counted)
    module = vm.StaticModule(program, weights)
    assert calls == ["specialize"]
    assert isinstance(module, vm.static.StaticModule)
    assert "aten::batch_norm" not in {n.kind for n in module.ir.main.walk()}
    want = vm.static.StaticRuntime(vm.static.StaticModule(compiler.compile_source(CNN, weights=weights), weights))(*args)
    np.testing.assert_array_equal(vm.StaticRuntime(module)(*args), want)
    assert isinstance(vm.StaticRuntime(program, weights), vm.static.StaticRuntime)


def test_ir_text_is_refused_by_the_runtime_and_compiled_by_the_front_door(monkeypatch: pytest.MonkeyPatch) -> None:
    """``vm.static.StaticModule(text)`` says what to call instead and compiles nothing;
    ``vm.StaticRuntime(text)`` compiles it (``compiler.compile_source``)."""
    called = _forbid_compiling(monkeypatch)
    with pytest.raises(RunError, match=r"not IR text: compile it first with `compiler.compile_source\(text\)`"):
        vm.static.StaticModule(CNN)
    assert called == []
    monkeypatch.undo()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    text = "graph(%x : Tensor):\n  %y : Tensor = aten::relu(%x)\n  return (%y)\n"
    np.testing.assert_array_equal(vm.StaticRuntime(text)(x - 2), np.maximum(x - 2, 0))


def test_vm_load_of_an_irbc_compiled_without_weights_specializes_at_the_front_door(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``vm.load(file.irbc, weights)`` on the static backend: the front door specializes the
    program once (``compiler.specialize``), and building the model's module
    (``vm.static.StaticModule``) runs no compiler stage."""
    vm.save(compiler.compile_source(CNN), tmp_path / "cnn.irbc")
    np.savez(tmp_path / "w.npz", **_weights())
    built: list[Any] = []
    real = vm.static.StaticModule.__init__

    def watched(self: Any, source: Any, *a: Any, **k: Any) -> None:
        with monkeypatch.context() as inside:
            called = _forbid_compiling(inside)
            real(self, source, *a, **k)
        built.append(called)

    monkeypatch.setattr(vm.static.StaticModule, "__init__", watched)
    specialized: list[Any] = []
    real_specialize = compiler.specialize

    def counted(*a: Any, **k: Any) -> Any:
        specialized.append(real_specialize(*a, **k))
        return specialized[-1]

    monkeypatch.setattr(compiler, "specialize", counted)
    model = vm.load(tmp_path / "cnn.irbc", tmp_path / "w.npz")
    assert built == [[]] and len(specialized) == 1
    assert specialized[0].specialized and model.static_module.ir.specialized
    np.testing.assert_allclose(model(*_inputs()), _CASE[3], rtol=1e-4, atol=1e-5)
