"""Arguments checked as torch checks a call (vm/binding/inputs.py ``check_scalar``): the same
Python values are refused by a scripted function and by both runtimes, each refusal naming
the input; numpy integers and 0-d integer arrays are ints when they fit int64."""

from __future__ import annotations

import numpy as np
import pytest

import compiler
import vm
from vm.core.errors import RunError

torch = pytest.importorskip("torch")

RUNTIMES = {"interp": vm.Interpreter, "static": vm.StaticRuntime}
PYTHON_VALUES = [2.7, "3", True, False, 2**63, -(2**63), 5, 3.0, 0, None, [1]]


def _scripted(kind: str):  # noqa: ANN202 (a torch ScriptFunction)
    return torch.jit.CompilationUnit(f"def f(x: Tensor, n: {kind}) -> Tensor:\n    return x * n\n").f


@pytest.mark.parametrize("backend", sorted(RUNTIMES))
@pytest.mark.parametrize("kind", ["int", "float", "bool"])
def test_python_values_are_taken_or_refused_as_torch_does(kind: str, backend: str) -> None:
    scripted = _scripted(kind)
    program = compiler.compile_source(str(scripted.graph))
    runtime = RUNTIMES[backend](program)
    for value in PYTHON_VALUES:
        try:
            want = scripted(torch.ones(2), value).numpy()
        except RuntimeError:
            with pytest.raises(RunError, match=rf"input %n(\.1)? is declared {kind} but got"):
                runtime(np.ones(2, np.float32), value)
            continue
        np.testing.assert_array_equal(runtime(np.ones(2, np.float32), value), want, err_msg=repr(value))


@pytest.mark.parametrize("backend", sorted(RUNTIMES))
def test_numpy_integers_are_ints_within_int64(backend: str) -> None:
    program = compiler.compile_source(str(_scripted("int").graph))
    runtime = RUNTIMES[backend](program)
    x = np.ones(2, np.float32)
    for value in (np.int32(3), np.int64(3), np.array(3), np.uint8(3)):
        np.testing.assert_array_equal(runtime(x, value), [3.0, 3.0])
    for value, what in ((np.uint64(2**64 - 1), "does not fit in int64"), (np.array(2.7), "float64 tensor"),
                        (np.array("3"), "tensor of shape"), (np.array([3]), "shape \\(1,\\)")):
        with pytest.raises(RunError, match=what):
            runtime(x, value)


def test_inputs_file_values_are_checked_too(tmp_path) -> None:  # noqa: ANN001
    from vm.files.npz import load_inputs

    program = compiler.compile_source(str(_scripted("int").graph))
    for value in (np.array(2.7), np.array("3"), np.array(2**64 - 1, dtype=np.uint64)):
        with pytest.raises(RunError, match="declared int"):
            load_inputs({"x": np.ones(2, np.float32), "n": value}, program)
    assert load_inputs({"x": np.ones(2, np.float32), "n": np.array(7)}, program)[1] == 7
