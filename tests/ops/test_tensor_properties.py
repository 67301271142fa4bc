"""Tensor properties and metadata queries (vm/ops/properties.py) against torch on both
backends, for a float matrix, an int16 vector and a complex matrix: mH, H, real, conj,
is_leaf, grad, is_cpu / is_meta / is_sparse..., itemsize, nbytes, storage_offset..."""

from __future__ import annotations

import pytest

import compiler
import vm
from tests.support.reference import same_value
from vm.core.errors import RunError

torch = pytest.importorskip("torch")

PROPERTIES = [
    "x.mH", "x.H", "x.real", "x.is_leaf", "x.grad", "x.is_cpu", "x.is_meta", "x.is_mkldnn", "x.is_quantized",
    "x.is_sparse", "x.itemsize", "x.nbytes", "x.mT", "x.T", "x.is_cuda", "x.is_xpu", "x.is_mps", "x.is_vulkan",
    "x.is_ipu", "x.is_nested", "x.requires_grad", "x.is_complex()", "x.is_floating_point()", "x.element_size()",
    "x.ndim", "x.data", "x.storage_offset()", "x[1:].storage_offset()", "x.is_signed()", "x.get_device()",
    "x.is_inference()", "x.is_conj()", "x.is_neg()", "x.adjoint()", "x.conj()", "x.resolve_conj()",
    "x.resolve_neg()", "x.is_same_size(x)", "x.is_set_to(x)", "x.is_set_to(x[1:])", "x.cpu()", "x.is_pinned()",
    "x.name", "x.retains_grad",
]
INPUTS = {
    "float": lambda: torch.arange(6, dtype=torch.float32).reshape(2, 3),
    "int16": lambda: torch.arange(3, dtype=torch.int16),
    "complex": lambda: torch.complex(torch.ones(2, 2), torch.arange(4.0).reshape(2, 2)),
}


def _outcome(fn, *args):  # noqa: ANN001, ANN002, ANN202
    try:
        value = fn(*args)
    except (RuntimeError, RunError) as err:
        return "error", str(err)
    return "ok", value.resolve_conj().resolve_neg().numpy() if isinstance(value, torch.Tensor) else value


@pytest.mark.parametrize("expression", PROPERTIES)
def test_property_matches_torch(expression: str) -> None:
    unit = torch.jit.CompilationUnit(f"def f(x: Tensor):\n    return {expression}\n")
    program = compiler.compile_source(str(unit.f.graph))
    for name, make in INPUTS.items():
        kind, want = _outcome(unit.f, make())
        for runtime in (vm.Interpreter(program), vm.StaticRuntime(program)):
            got_kind, got = _outcome(runtime, make().numpy())
            assert got_kind == kind, (name, want, got)
            if kind == "ok":
                assert same_value(want, got), (name, want, got)
            else:
                assert str(want).splitlines()[-1][:40] in str(got), (name, want, got)
