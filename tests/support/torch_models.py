"""Helpers shared by the tests that compare irvm with torch itself; import it only after
``pytest.importorskip("torch")``, as those tests do."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn


def same_as_torch(ours: Any, theirs: Any, path: str = "out", rtol: float = 1e-4, atol: float = 1e-5) -> None:
    """irvm's result equals torch's: arrays of torch's dtype and shape and close values,
    lists and tuples element by element, anything else exactly and of the same type."""
    if isinstance(theirs, torch.Tensor):
        theirs = theirs.numpy()
        assert type(ours) is np.ndarray, (path, type(ours))
        assert (ours.dtype, ours.shape) == (theirs.dtype, theirs.shape), (path, ours.dtype, ours.shape, theirs.shape)
        np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=atol, err_msg=path)
    elif isinstance(theirs, (list, tuple)):
        assert isinstance(ours, (list, tuple)) and len(ours) == len(theirs), path
        for i, (o, t) in enumerate(zip(ours, theirs)):
            same_as_torch(o, t, f"{path}[{i}]", rtol, atol)
    else:
        assert type(ours) is type(theirs) and ours == theirs, (path, ours, theirs)


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
    from vm.interpreter import Interpreter
    from vm.static import StaticRuntime

    if backend == "static":
        return StaticRuntime(program, weights)
    if backend == "irbc":
        with tempfile.TemporaryDirectory() as tmp:
            vm.save(program, Path(tmp) / "p.irbc")
            program = vm.load(Path(tmp) / "p.irbc")
        assert program.module_if_loaded is None
    return Interpreter(program, weights)
