"""torch models and runtime choices shared by several tests; import it only after ``pytest.importorskip("torch")``,
as those tests do."""

from __future__ import annotations

from typing import Any

import torch
from torch import nn


class SmallCNN(nn.Module):
    """The issue-17 model: conv, BatchNorm, linear head of ``num_classes``; 1x8x8 inputs."""

    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3)
        self.bn = nn.BatchNorm2d(4)
        self.fc = nn.Linear(4 * 6 * 6, num_classes)

    def forward(self, x):
        return self.fc(torch.flatten(torch.relu(self.bn(self.conv(x))), 1))


BACKENDS = ["interp", "irbc", "static"]


def runtime_for(backend: str, program: Any, weights: Any) -> Any:
    """The runtime of ``backend`` for ``program`` and ``weights``: the interpreter, the
    static runtime, or (``irbc``) the interpreter on the program saved to an ``.irbc`` and
    read back, whose checks before a run read the file's check table, not the IR."""
    import tempfile
    from pathlib import Path

    import vm
    from vm import StaticRuntime
    from vm.interpreter.machine import Interpreter
    from vm.program import irbc

    if backend == "static":
        return StaticRuntime(program, weights)
    if backend == "irbc":
        with tempfile.TemporaryDirectory() as tmp:
            vm.save(program, Path(tmp) / "p.irbc")
            program = irbc.load(Path(tmp) / "p.irbc")
        assert program.module_if_loaded is None
    return Interpreter(program, weights)
