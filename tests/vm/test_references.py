"""Reference semantics (vm/core/types.py, "Run-time values"): lists, dicts, tuples of
mutable things and tensors are references as in TorchScript, on both backends, from the
printed graph, a ``.irbc`` round trip and a ``.pt``; against torch.  Each program here
once lost a write: the optimizer took a wildcard result (``d.keys()``, ``d[k]``) for memory
nothing else could see and removed the ``append``/``add_`` on it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import compiler
import vm
import vm.program.irbc
from compiler.torchscript import compile_archive
from tests.support.reference import same_value
from vm.core.errors import RunError

torch = pytest.importorskip("torch")

from typing import Dict, List, Tuple  # noqa: E402, UP035  (TorchScript reads typing's names)


class KeysAppend(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> List[str]:  # noqa: UP006
        d: Dict[str, int] = {"a": 1, "b": 2}  # noqa: UP006
        k = d.keys()
        k.append("z")
        return k


class DictTensorInplace(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:  # noqa: UP006
        d: Dict[str, torch.Tensor] = {"a": x}  # noqa: UP006
        t = d["a"]
        t.add_(1)
        return d["a"], x


class DictOfLists(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> Dict[str, List[int]]:  # noqa: UP006
        a: List[int] = [1]  # noqa: UP006
        d = {"k": a}
        a.append(5)
        d["k"].append(6)
        return d


class TupleOfList(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> Tuple[List[int], int]:  # noqa: UP006
        a = [1]
        t = (a, 2)
        t[0].append(9)
        return a, len(t[0])


class ValuesAreNewLists(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> Tuple[List[int], Dict[str, int], List[int]]:  # noqa: UP006
        d: Dict[str, int] = {"a": 1}  # noqa: UP006
        v = d.values()
        v.append(2)
        c = v.copy()
        c.append(3)
        return v, d, c


class ListOfViews(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        parts = [x[0], x[1]]
        for p in parts:
            p.add_(10)
        return x


PROGRAMS = [KeysAppend, DictTensorInplace, DictOfLists, TupleOfList, ValuesAreNewLists, ListOfViews]
RUNTIMES = {"interp": vm.Interpreter, "static": vm.StaticRuntime}


def _numpy(value: Any) -> Any:
    if isinstance(value, torch.Tensor):
        return value.numpy()
    if isinstance(value, (list, tuple)):
        return type(value)(_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: _numpy(v) for k, v in value.items()}
    return value


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    return same_value(a, b)


def _programs(module: Any, tmp_path: Path) -> dict[str, tuple[Any, Any]]:
    scripted = torch.jit.script(module)
    program = compiler.compile_source(str(scripted.inlined_graph))
    vm.save(program, tmp_path / "p.irbc")
    torch.jit.save(scripted, str(tmp_path / "p.pt"))
    return {"ir": (program, None), "irbc": (vm.program.irbc.load(tmp_path / "p.irbc"), None), "pt": compile_archive(tmp_path / "p.pt")}


@pytest.mark.parametrize("program_class", PROGRAMS, ids=lambda c: c.__name__)
def test_writes_through_references_are_kept(program_class: Any, tmp_path: Path) -> None:
    scripted = torch.jit.script(program_class())
    x = torch.arange(4, dtype=torch.float32).reshape(2, 2)
    want = _numpy(scripted(x.clone()))
    for source, (program, weights) in _programs(program_class(), tmp_path).items():
        for backend, runtime_class in RUNTIMES.items():
            runtime = runtime_class(program, weights)
            for _ in range(2):  # the static runtime's second call runs the planned code
                got = runtime(x.numpy().copy())
                assert _same(want, got), (source, backend, want, got)


def test_a_tensor_changed_in_a_dict_is_the_callers() -> None:
    scripted = torch.jit.script(DictTensorInplace())
    program = compiler.compile_source(str(scripted.inlined_graph))
    for runtime_class in RUNTIMES.values():
        x = np.zeros(3, np.float32)
        out, same = runtime_class(program)(x)
        np.testing.assert_array_equal(x, np.ones(3))  # the caller's tensor was written
        np.testing.assert_array_equal(out, np.ones(3))
        assert np.shares_memory(same, x)


@pytest.mark.parametrize("backend", sorted(RUNTIMES))
def test_tensors_in_lists_compare_by_value_never_identity(backend: str) -> None:
    unit = torch.jit.CompilationUnit("def f(x: Tensor) -> bool:\n    return [x] == [x]\n")
    program = compiler.compile_source(str(unit.f.graph))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        unit.f(torch.ones(2))
    with pytest.raises((RuntimeError, RunError), match="more than one value is ambiguous"):
        RUNTIMES[backend](program)(np.ones(2, np.float32))
    nan = np.array([np.nan], np.float32)
    assert RUNTIMES[backend](program)(nan) is unit.f(torch.from_numpy(nan)) is False
