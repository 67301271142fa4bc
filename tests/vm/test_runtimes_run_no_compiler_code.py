"""The runtimes execute: building and running either backend from a ``.irbc`` calls no
compiler code (issue #37).

In a fresh process, a meta-path hook makes every ``import compiler...`` raise (and records
the attempt), and a profile hook on every thread records any frame whose code lives under
``compiler/``; then the interpreter and the static runtime are built from the file and run
on the example's inputs, and must give the example's expected outputs.  The program's IR
the static runtime runs is the file's tables, decoded on the ground floor (``vm/ir/``), and
every fact it needs (resolved operators, fusion specs, effects) comes from there too.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import compiler
from tests.support.paths import EXAMPLES, ROOT
from vm.program.irbc import save

HOOKS = """
import sys, threading
from pathlib import Path

COMPILER = str(Path(sys.argv[1]) / "compiler")
imports, frames = [], []


class RefuseTheCompiler:
    def find_spec(self, name, path=None, target=None):
        if name == "compiler" or name.startswith("compiler."):
            imports.append(name)
            raise ImportError(f"the runtimes import nothing from compiler/ (tried {name})")
        return None


sys.meta_path.insert(0, RefuseTheCompiler())


def profile(frame, event, arg):
    if event == "call" and frame.f_code.co_filename.startswith(COMPILER):
        frames.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")
"""

RUN = HOOKS + """
import numpy as np

import vm
from vm.files.npz import flatten_outputs, load_inputs, outputs_as_list, read_npz
from vm.program import irbc

program_path, inputs_path, expected_path, weights_path = sys.argv[2:6]
threading.setprofile(profile)
sys.setprofile(profile)
program = irbc.load(program_path)
weights = read_npz(weights_path) if weights_path != "-" else None
inputs = load_inputs(inputs_path, program)
results = {}
for name, backend in (("interpreter", vm.Interpreter), ("static", vm.StaticRuntime)):
    runtime = backend(program, weights)
    results[name] = flatten_outputs(outputs_as_list(runtime(*inputs), program.n_outputs))
sys.setprofile(None)
threading.setprofile(None)
expected = read_npz(expected_path)
for name, got in results.items():
    keys = sorted(k for k in expected if not k.startswith("__"))
    assert sorted(k for k in got if not k.startswith("__")) == keys, (name, sorted(got), keys)
    for key in keys:
        np.testing.assert_allclose(got[key], expected[key], rtol=1e-5, atol=1e-6, err_msg=f"{name} {key}")
assert not imports, f"compiler modules imported: {imports}"
assert not frames, f"compiler code ran: {sorted(set(frames))[:10]}"
print("ran", ", ".join(sorted(results)), "without the compiler")
"""

# (example, compiled with its weights): a module with %self and weights folded in at
# compile time, fusion groups, loops and lists, a tuple result, functions and recursion
CASES = [("mlp", True), ("ratio_iou", False), ("control_flow", False), ("lstm_cell", False), ("fib", False)]


@pytest.mark.parametrize(("name", "with_weights"), CASES, ids=[c[0] for c in CASES])
def test_both_runtimes_build_and_run_from_an_irbc_without_the_compiler(tmp_path: Path, name: str, with_weights: bool) -> None:
    source = EXAMPLES / f"{name}.ir"
    weights_path = EXAMPLES / f"{name}.weights.npz"
    if with_weights:
        with np.load(weights_path) as data:
            weights = {k: data[k] for k in data.files}
        program = compiler.compile_source(source.read_text(), str(source), weights=weights)
    else:
        program = compiler.compile_file(source)
    path = tmp_path / f"{name}.irbc"
    save(program, path)
    done = subprocess.run(
        [sys.executable, "-c", RUN, str(ROOT), str(path), str(EXAMPLES / f"{name}.inputs.npz"),
         str(EXAMPLES / f"{name}.expected.npz"), str(weights_path) if with_weights else "-"],
        capture_output=True, text=True, cwd=ROOT, check=False, timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "without the compiler" in done.stdout


def test_the_hooks_catch_the_compiler() -> None:
    """The two hooks see what they must: an import of the compiler is refused and
    recorded, and, once the compiler is imported after all, a call into it is recorded."""
    code = HOOKS + (
        "try:\n    import compiler.parser\nexcept ImportError:\n    pass\n"
        "assert imports == ['compiler'], imports\n"
        "sys.meta_path.pop(0)\n"
        "import compiler\n"
        "sys.setprofile(profile)\n"
        "compiler.parse('graph(%x : Tensor):\\n  return (%x)\\n')\n"
        "sys.setprofile(None)\n"
        "assert any(f.endswith(':parse') for f in frames), frames\n"
        "print('caught')\n"
    )
    done = subprocess.run([sys.executable, "-c", code, str(ROOT)], capture_output=True, text=True, cwd=ROOT, check=False)
    assert done.returncode == 0 and "caught" in done.stdout, done.stderr
