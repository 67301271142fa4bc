"""Modules exercising what a TorchScript archive can hold beyond plain layers.

Interface-typed submodules, NamedTuples and TorchScript classes defined in the model,
``ModuleList`` / ``ModuleDict`` iteration, attributes of every kind (list, dict, str,
Optional, tuple), module-level functions, ``@torch.jit.export`` methods calling each
other, and in-place updates of a module attribute.  ``tools/torchscript_archives.py``
saves each (scripted, and frozen where torch can) for the coverage run.
"""

# TorchScript reads typing.List/Dict/Optional annotations:
# ruff: noqa: UP006, UP035, UP045

from typing import Dict, List, NamedTuple, Optional, Tuple

import torch
from torch import nn


class Stats(NamedTuple):
    mean: torch.Tensor
    spread: torch.Tensor
    count: int


@torch.jit.interface
class Activation(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pass


class Scaled(nn.Module):
    def __init__(self, s: float) -> None:
        super().__init__()
        self.s = s

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.tanh(x) * self.s


@torch.jit.script
class Accumulator:
    def __init__(self, start: torch.Tensor) -> None:
        self.total = start
        self.steps = 0

    def add(self, x: torch.Tensor) -> None:
        self.total = self.total + x
        self.steps += 1


def _clip(x: torch.Tensor, lo: float, hi: float = 1.0) -> torch.Tensor:
    return torch.clamp(x, lo, hi)


class InterfaceNet(nn.Module):
    """A submodule reached through an interface type; a NamedTuple result."""

    act: Activation

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = Scaled(0.5)

    def forward(self, x: torch.Tensor) -> Stats:
        y = self.act.forward(self.fc(x))
        return Stats(y.mean(0), y.std(0), y.size(0))


class ContainerNet(nn.Module):
    """ModuleList and ModuleDict iteration, attributes of many kinds, a class object."""

    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(4, 4) for _ in range(3)])
        self.heads = nn.ModuleDict({"a": nn.Linear(4, 2), "b": nn.Linear(4, 2)})
        self.gains: List[float] = [1.0, 0.5, 0.25]
        self.names: Dict[str, int] = {"a": 1, "b": 2}
        self.label = "net"
        self.offset: Optional[float] = 0.1
        self.shape: Tuple[int, int] = (2, 2)

    def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, str]:
        acc = Accumulator(torch.zeros_like(x))
        for i, block in enumerate(self.blocks):
            x = torch.relu(block(x)) * self.gains[i]
            acc.add(x)
        outs: List[torch.Tensor] = []
        for key, head in self.heads.items():
            outs.append(head(x) * float(self.names[key]))
        y = torch.cat(outs, 1)
        if self.offset is not None:
            y = y + self.offset
        z = _clip(acc.total / acc.steps, -0.5)
        return y.reshape(-1, self.shape[1]), z, self.label + str(len(outs))


class ExportNet(nn.Module):
    """``forward`` calling an exported method, which calls a helper; a counter buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(2, 3, 3, padding=1)
        self.register_buffer("calls", torch.zeros(1))

    @torch.jit.export
    def features(self, x: torch.Tensor, scale: float) -> torch.Tensor:
        return self._post(self.conv(x) * scale)

    def _post(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)

    def forward(self, x: torch.Tensor, n: int) -> torch.Tensor:
        self.calls.add_(1)
        y = self.features(x, 2.0)
        k = 0
        while k < n:
            y = y * 0.5
            if bool(y.sum() < 0.01):
                break
            k += 1
        return y + self.calls


FEATURES = {
    "interface_namedtuple": (InterfaceNet, lambda: (torch.randn(5, 4),)),
    "containers_class": (ContainerNet, lambda: (torch.randn(3, 4),)),
    "export_methods": (ExportNet, lambda: (torch.randn(2, 2, 5, 5), 4)),
}
