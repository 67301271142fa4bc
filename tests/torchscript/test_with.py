"""``with`` blocks in a ``.pt``: ``__enter__`` (its value bound by ``as``), the body, then
``__exit__``, inlined, on both backends against torch; the printed graph, which holds no
method bodies, is refused saying to run the archive."""

from __future__ import annotations

from pathlib import Path
from typing import Any, List, Tuple  # noqa: UP035  (TorchScript reads typing's names)

import numpy as np
import pytest

import compiler
import vm
from compiler.diagnostics import CompileError
from compiler.torchscript import compile_archive

torch = pytest.importorskip("torch")


@torch.jit.script
class Log:
    def __init__(self, entries: List[int]) -> None:  # noqa: UP006
        self.entries = entries

    def __enter__(self) -> int:
        self.entries.append(1)
        return len(self.entries)

    def __exit__(self, a: Any, b: Any, c: Any) -> None:
        self.entries.append(2)


class WithBlocks(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> Tuple[List[int], int]:  # noqa: UP006
        entries: List[int] = []  # noqa: UP006
        with Log(entries) as depth, Log(entries):
            entries.append(int(x.sum()))
        return entries, depth


def test_with_from_a_pt_matches_torch(tmp_path: Path) -> None:
    scripted = torch.jit.script(WithBlocks())
    torch.jit.save(scripted, str(tmp_path / "w.pt"))
    x = np.arange(3, dtype=np.float32)
    want = scripted(torch.from_numpy(x))
    program, weights = compile_archive(tmp_path / "w.pt")
    for runtime_class in (vm.Interpreter, vm.StaticRuntime):
        runtime = runtime_class(program, weights)
        assert runtime(x) == want and runtime(x) == want


def test_with_from_a_printed_graph_is_refused_naming_the_archive() -> None:
    scripted = torch.jit.script(WithBlocks())
    with pytest.raises(CompileError, match=r"with. block: prim::Enter .* run the module's torch.jit.save archive"):
        compiler.compile_source(str(scripted.inlined_graph))
