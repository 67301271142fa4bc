"""A static runtime is built from what the compiler made: a program compiled with its
weights (specialized by ``compiler.pipeline.SPECIALIZE_PIPELINE``), in memory or read
back from its ``.irbc``, gives a ``StaticModule`` without running any compiler pass and
without resolving any overload again.  The pass manager and overload resolution are
patched to fail while the runtime is built and run; the results are the interpreter's
and torch's."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import compiler  # noqa: E402
import compiler.pipeline  # noqa: E402
import vm  # noqa: E402
import vm.ir.resolve  # noqa: E402
import vm.program.irbc  # noqa: E402
from tests.support.paths import TOOLS  # noqa: E402
from vm.core.errors import RunError  # noqa: E402
from vm.static import StaticModule, StaticRuntime  # noqa: E402


def _exported() -> tuple[Any, Any, np.ndarray]:
    sys.path.insert(0, str(TOOLS))
    import export_torch

    torch.manual_seed(0)
    nn = torch.nn
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.GELU(), nn.Flatten(), nn.Linear(8 * 5 * 5, 10)
    )
    model[1].running_mean.uniform_(-1, 1)
    model[1].running_var.uniform_(0.5, 2)
    model.eval()
    x = torch.randn(2, 3, 5, 5)
    with torch.no_grad():
        want = model(x).numpy()
    return export_torch.export(model, "m", (x,)), x.numpy(), want


def _forbid(monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the static runtime ran the compiler")

    for target, name in (
        (compiler.pipeline, "optimize"), (compiler.pipeline, "specialize"), (compiler.pipeline, "get_pass"),
        (vm.ir.resolve, "resolve_all"), (vm.ir.resolve, "resolve_node"), (compiler, "specialize"),
        (compiler, "freeze"), (compiler, "compile_source"),
    ):
        if hasattr(target, name):
            monkeypatch.setattr(target, name, fail)


@pytest.mark.parametrize("from_file", [False, True], ids=["in_memory", "irbc"])
def test_a_program_compiled_with_its_weights_builds_a_static_runtime_without_the_compiler(
    from_file: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The program holds the specialized IR (no BatchNorm left, its folded tensors
    recorded); building and running the static runtime calls no pass and no resolution,
    and it agrees with the interpreter and with torch."""
    exp, x, want = _exported()
    program = compiler.compile_source(exp.ir, weights=exp.weights)
    assert program.specialized and program.folded_tensors
    if from_file:
        vm.save(program, tmp_path / "m.irbc")
        program = vm.program.irbc.load(tmp_path / "m.irbc")
    interpreted = vm.Interpreter(program, exp.weights)(x)
    _forbid(monkeypatch)
    module = StaticModule(program, exp.weights)
    kinds = {n.kind for n in module.ir.main.walk()}
    assert "aten::batch_norm" not in kinds
    got = StaticRuntime(module)(x)
    np.testing.assert_allclose(got, interpreted, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


def test_other_weights_for_a_program_that_folded_its_own_are_refused(tmp_path: Path) -> None:
    """A BatchNorm statistic folded into the convolution cannot be rebound: weights that
    differ there are refused by both backends, naming the weight, instead of running
    with the old values."""
    exp, x, _ = _exported()
    program = compiler.compile_source(exp.ir, weights=exp.weights)
    vm.save(program, tmp_path / "m.irbc")
    other = dict(exp.weights)
    key = next(k for k in other if k.endswith("running_mean"))
    other[key] = np.asarray(other[key]) + 1
    for loaded in (program, vm.program.irbc.load(tmp_path / "m.irbc")):
        for runtime in (vm.Interpreter, StaticRuntime):
            with pytest.raises(RunError, match=key.replace(".", r"\.")):
                runtime(loaded, other)
    np.testing.assert_allclose(vm.Interpreter(program, exp.weights)(x), StaticRuntime(program, exp.weights)(x), rtol=1e-6)


def test_irc_print_after_all_shows_the_specialization_passes(tmp_path: Path) -> None:
    """``irc compile --weights`` runs the specialization passes by the pass manager, so
    ``--print-after-all`` prints the IR after each of them."""
    import subprocess

    exp, _, _ = _exported()
    (tmp_path / "m.ir").write_text(exp.ir)
    np.savez(tmp_path / "w.npz", **{k: np.asarray(v) for k, v in exp.weights.items()})
    root = Path(compiler.__file__).parent.parent
    out = subprocess.run(
        [sys.executable, "-m", "compiler.cli", "compile", str(tmp_path / "m.ir"), "--weights", str(tmp_path / "w.npz"),
         "--print-after-all", "--emit", "ir"],
        capture_output=True, text=True, cwd=root, timeout=300, env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    assert out.returncode == 0, out.stderr
    for name in compiler.pipeline.VALUE_PASSES:
        assert f"=== after {name} ===" in out.stdout


def _rehashed(path: Path, edit: Any) -> None:
    """Rewrite the ``.irbc`` at ``path`` with ``edit(nodes)`` applied to its optimized IR's
    entry graph (``vm.ir.tables``: ``[block, kind, inputs, ...]`` per node) and its hash
    made right again (what an edited file looks like to the hash check)."""
    import json
    import zipfile

    from vm.files.kinds import MAGIC_MEMBER
    from vm.program.irbc import _digest

    with zipfile.ZipFile(path) as zf:
        members = [(n, zf.read(n)) for n in zf.namelist() if n != MAGIC_MEMBER]
        header = json.loads(zf.read(MAGIC_MEMBER))
    def edited(data: bytes) -> bytes:
        table = json.loads(data)
        edit(table["main"][3])
        return json.dumps(table).encode()

    members = [(n, edited(data) if n == "ir.json" else data) for n, data in members]
    header["sha256"] = _digest(members)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo(MAGIC_MEMBER), json.dumps(header), compress_type=zipfile.ZIP_STORED)
        for name, data in members:
            zf.writestr(name, data)


IR = """graph(%x : Tensor, %y : Tensor):
  %1 : int = prim::Constant[value=1]()
  %z : Tensor = aten::add(%x, %y, %1)
  %r : Tensor = aten::relu(%z)
  %s : Tensor = aten::mul(%r, %y)
  return (%s)
"""


def _node(nodes: list[Any], kind: str) -> list[Any]:
    (node,) = [n for n in nodes if n[1] == kind]
    return node


def _swap_first_operands(node: list[Any]) -> None:
    inputs = node[2]
    inputs[0], inputs[1] = inputs[1], inputs[0]


@pytest.mark.parametrize(
    "edit",
    [
        lambda nodes: _node(nodes, "aten::relu").__setitem__(1, "aten::sigmoid"),  # another operator
        lambda nodes: _swap_first_operands(_node(nodes, "aten::add")),  # operands swapped
        lambda nodes: _node(nodes, "aten::mul").__setitem__(1, "aten::div"),  # another operator of the same arity
    ],
    ids=["operator", "operands", "same_arity"],
)
def test_an_optimized_ir_edited_after_the_hash_is_refused_by_the_static_runtime(tmp_path: Path, edit: Any) -> None:
    """The file's hash covers its members, but a re-hashed edit of the optimized IR alone
    would make the static runtime run another program than the interpreter: building one
    refuses it (BytecodeError), while the untouched file builds and agrees."""
    from vm.core.errors import BytecodeError

    program = compiler.compile_source(IR, fusion=False)
    path = tmp_path / "m.irbc"
    vm.save(program, path)
    x, y = np.arange(-2, 2, dtype=np.float32), np.full(4, 2, np.float32)
    np.testing.assert_array_equal(StaticRuntime(vm.program.irbc.load(path))(x, y), vm.Interpreter(vm.program.irbc.load(path))(x, y))
    _rehashed(path, edit)
    edited = vm.program.irbc.load(path)  # the hash holds: loading for the interpreter parses no IR
    with pytest.raises(BytecodeError, match="does not match the bytecode"):
        StaticRuntime(edited)


def test_a_program_holds_data_not_the_compiler() -> None:
    """No field of a compiled program is a function or other callable (the printer and
    the check table were closures over the compiler's module): tables, text, arrays and
    the IR data model only."""
    import attrs

    program = compiler.compile_source(IR)
    for field in attrs.fields(type(program)):
        value = getattr(program, field.name)
        assert not callable(value), f"Program.{field.name} is callable"
    assert program.check_table() is not None and "aten::relu" in program.optimized_text()
