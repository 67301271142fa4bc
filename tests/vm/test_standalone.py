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
from vm import errors, unbound
from vm import types as vm_types
from vm.irbc import save
from tests.support.paths import ROOT


RUN = """
import sys
import numpy as np
import vm
program = vm.load(sys.argv[1])
out = vm.Interpreter(program)(*[np.full(4, 2.0, np.float32)] * 8)
assert out.shape == (4,), out
print(",".join(sorted(m for m in sys.modules if m == "compiler" or m.startswith("compiler."))))
"""


def test_load_and_interpret_import_no_compiler_module(tmp_path: Path) -> None:
    """``import vm; vm.load(p); vm.Interpreter(prog)(...)`` leaves ``compiler`` unimported."""
    path = tmp_path / "ratio_iou.irbc"
    save(compiler.compile_file(ROOT / "examples" / "ratio_iou.ir"), path)
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(path)], capture_output=True, text=True, cwd=ROOT, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "", f"compiler modules imported: {done.stdout.strip()}"


def test_compiler_names_are_the_vm_objects() -> None:
    """The re-exports are the same objects, so ``except compiler.diagnostics.RunError``
    catches what the VM raises and types compare equal across the two names."""
    assert diagnostics.RunError is errors.RunError and diagnostics.Span is errors.Span
    assert types.TensorType is vm_types.TensorType and types.INT is vm_types.INT
    from compiler.resolve import UnboundTensor

    assert UnboundTensor is unbound.UnboundTensor
