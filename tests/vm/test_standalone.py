"""The VM stands below the compiler: running a compiled file needs no compiler module.

Errors, spans, the type model, ``UnboundTensor`` and the dtype table live in ``vm/``
(``compiler.diagnostics`` and ``compiler.types`` re-export them), and a ``.irbc`` file
carries everything the interpreter needs, so loading and running one imports nothing
from ``compiler``.  Checked in a fresh process, where nothing was imported before.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import compiler
from compiler import diagnostics, types
from tests.support.paths import ROOT
from vm.binding import unbound
from vm.core import errors
from vm.core import types as vm_types
from vm.program.irbc import save

RUN = """
import sys
import numpy as np
import vm
from vm.program import irbc
program = irbc.load(sys.argv[1])
out = vm.Interpreter(program)(*[np.full(4, 2.0, np.float32)] * 8)
assert out.shape == (4,), out
model = vm.load(sys.argv[1], backend="interp")  # the front door opens an .irbc without the compiler too
assert (model(*[np.full(4, 2.0, np.float32)] * 8) == out).all()
print(",".join(sorted(m for m in sys.modules if m == "compiler" or m.startswith("compiler."))))
"""


def test_load_and_interpret_import_no_compiler_module(tmp_path: Path) -> None:
    """``import vm; vm.program.irbc.load(p); vm.Interpreter(prog)(...)`` leaves ``compiler`` unimported."""
    path = tmp_path / "ratio_iou.irbc"
    save(compiler.compile_file(ROOT / "examples" / "ratio_iou.ir"), path)
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(path)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"compiler modules imported: {done.stdout.strip()}"


MODULE_IR = """\
graph(%self : __torch__.Net,
      %x.1 : Float(2, 3)):
  %w : __torch__.torch.nn.modules.linear.Linear = prim::GetAttr[name="fc"](%self)
  %weight : Tensor = prim::GetAttr[name="weight"](%w)
  %bias : Tensor = prim::GetAttr[name="bias"](%w)
  %y : Float(2, 4) = aten::linear(%x.1, %weight, %bias)
  %r : Tensor = aten::relu(%y)
  return (%r)
"""

RUN_WITH_WEIGHTS = """
import sys
import numpy as np
import vm
from vm.core.errors import RunError
from vm.program import irbc
program = irbc.load(sys.argv[1])
w, b = np.arange(12, dtype=np.float32).reshape(4, 3) - 6, np.ones(4, np.float32)
x = np.linspace(-1, 1, 6, dtype=np.float32).reshape(2, 3)
out = vm.Interpreter(program, {"fc.weight": w, "fc.bias": b})(x)
np.testing.assert_allclose(out, np.maximum(x @ w.T + b, 0), rtol=1e-6)
refusals = []
try:  # the graph declares 4 output features: a weight of 5 rows is another model's
    vm.Interpreter(program, {"fc.weight": np.ones((5, 3), np.float32), "fc.bias": np.ones(5, np.float32)})
except RunError as err:
    refusals.append("size mismatch" in str(err))
try:  # PyTorch's linear refuses a float64 input with float32 weights
    vm.Interpreter(program, {"fc.weight": w, "fc.bias": b})(x.astype(np.float64))
except RunError as err:
    refusals.append("float64" in str(err))
assert refusals == [True, True], refusals
print(",".join(sorted(m for m in sys.modules if m == "compiler" or m.startswith("compiler."))))
"""


def test_a_module_with_weights_is_bound_and_checked_without_the_compiler(tmp_path: Path) -> None:
    """A loaded module program binds ``%self`` from its weights, refuses weights of another
    shape and an input of another dtype, and runs, importing no ``compiler`` module: its
    checks read the file's attribute reads and check table, never the IR."""
    path = tmp_path / "net.irbc"
    save(compiler.compile_source(MODULE_IR, "net.ir"), path)
    done = subprocess.run(
        [sys.executable, "-c", RUN_WITH_WEIGHTS, str(path)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"compiler modules imported: {done.stdout.strip()}"


def test_compiler_names_are_the_vm_objects() -> None:
    """The re-exports are the same objects, so ``except compiler.diagnostics.RunError``
    catches what the VM raises and types compare equal across the two names."""
    assert diagnostics.RunError is errors.RunError and diagnostics.Span is errors.Span
    assert types.TensorType is vm_types.TensorType and types.INT is vm_types.INT
    from vm.ir.resolve import UnboundTensor

    assert UnboundTensor is unbound.UnboundTensor


RUN_CLI = """
import sys
from vm.cli import main
code = main(["run", sys.argv[1], "--inputs", sys.argv[2], "--output", sys.argv[3]])
assert code == 0, code
print(",".join(sorted(m for m in sys.modules if m == "compiler" or m.startswith("compiler."))))
"""


def test_irvm_run_of_an_irbc_imports_no_compiler_module(tmp_path: Path) -> None:
    """``irvm run model.irbc`` runs with no compiler module imported (the command line
    imports the compiler only for ``.ir`` text and TorchScript archives)."""
    path = tmp_path / "ratio_iou.irbc"
    save(compiler.compile_file(ROOT / "examples" / "ratio_iou.ir"), path)
    inputs, out = ROOT / "examples" / "ratio_iou.inputs.npz", tmp_path / "out.npz"
    done = subprocess.run(
        [sys.executable, "-c", RUN_CLI, str(path), str(inputs), str(out)],
        capture_output=True, text=True, cwd=ROOT, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"compiler modules imported: {done.stdout.strip()}"
    assert out.is_file()
