"""Language features from PyTorch's JIT tests, from a ``torch.jit.save`` archive on both
backends against torch: a module interface called on a ``ModuleList`` / ``ModuleDict`` element
chosen at run time (``prim::ModuleContainerIndex``), ``isinstance`` on an ``Any``, submodule
identity (``self.a is self.b``), and a scalar given for an ``int[2]`` argument."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")
nn = torch.nn

import compiler  # noqa: E402
import vm  # noqa: E402
from vm.core.errors import RunError  # noqa: E402


@torch.jit.interface
class ModuleInterface(nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pass


class Scale(nn.Module):
    def __init__(self, s: float) -> None:
        super().__init__()
        self.s = s

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x * self.s


class Affine(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(x)


class ContainerIndex(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.layers = nn.ModuleList([Scale(2.0), Affine(), Scale(5.0)])
        self.named = nn.ModuleDict({"a": Scale(7.0), "b": Affine()})

    def forward(self, x: torch.Tensor, i: int, key: str) -> torch.Tensor:
        m: ModuleInterface = self.layers[i]
        d: ModuleInterface = self.named[key]
        return d.forward(m.forward(x))


def kind_of(x: Any) -> int:
    if isinstance(x, int):
        return 1
    elif isinstance(x, str):
        return 2
    elif isinstance(x, torch.Tensor):
        return 3
    return 0


class AnyUser(nn.Module):
    def forward(self, x: torch.Tensor, n: int) -> int:
        return kind_of(x) + kind_of(n) * 10 + kind_of("s") * 100 + kind_of(1.5) * 1000


class Identity(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = nn.Linear(2, 2)
        self.b = self.a
        self.c = nn.Linear(2, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        r = x
        if self.a is self.a:
            r = r + 1.0
        if self.a is self.b:  # torch scripts a shared submodule as two attributes: False
            r = r * 10.0
        if self.a is not self.c:
            r = self.c(r)
        return r


def _load(model: nn.Module, tmp: Path, backend: str) -> tuple[Any, vm.Model]:
    torch.manual_seed(0)
    scripted = torch.jit.script(model.eval())
    path = tmp / "m.pt"
    scripted.save(str(path))
    return scripted, vm.load(path, backend=backend)


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_an_interface_call_on_a_container_element_chosen_at_run_time(backend: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    scripted, model = _load(ContainerIndex(), tmp_path, backend)
    x = torch.randn(2, 3)
    for i in (0, 1, 2):
        for key in ("a", "b"):
            with torch.no_grad():
                want = scripted(x, i, key).numpy()
            np.testing.assert_allclose(model(x.numpy(), i, key), want, rtol=1e-5, atol=1e-6, err_msg=f"{i}, {key}")
    for i, key in ((3, "a"), (-1, "a"), (0, "z")):  # torch looks up the element named str(i): none for -1
        with pytest.raises(Exception):  # noqa: B017 - torch's own error class
            scripted(x, i, key)
        with pytest.raises(RunError, match="IndexError|KeyError"):
            model(x.numpy(), i, key)


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_isinstance_on_any_is_decided_by_the_value(backend: str, tmp_path: Path) -> None:
    scripted, model = _load(AnyUser(), tmp_path, backend)
    x = torch.randn(2)
    assert model(x.numpy(), 4) == scripted(x, 4) == 213


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_submodule_identity_is_torchs(backend: str, tmp_path: Path) -> None:
    scripted, model = _load(Identity(), tmp_path, backend)
    x = torch.randn(3, 2)
    with torch.no_grad():
        np.testing.assert_allclose(model(x.numpy()), scripted(x).numpy(), rtol=1e-5, atol=1e-6)


POOLS = """graph(%x : Tensor):
  %k : int = prim::Constant[value=2]()
  %p : int = prim::Constant[value=0]()
  %d : int = prim::Constant[value=1]()
  %f : bool = prim::Constant[value=0]()
  %a : Tensor = aten::max_pool2d(%x, %k, %k, %p, %d, %f)
  %b : Tensor = aten::avg_pool2d(%x, %k, %k, %p, %f, %f)
  return (%a, %b)
"""


@pytest.mark.parametrize("backend", [vm.Interpreter, vm.StaticRuntime], ids=["interp", "static"])
def test_a_scalar_for_an_int2_argument_is_broadcast_as_torch_does(backend: Any) -> None:
    x = torch.randn(1, 2, 5, 6)
    got = backend(compiler.compile_source(POOLS))(x.numpy())
    want = (torch.max_pool2d(x, 2, 2, 0, 1, False), torch._C._nn.avg_pool2d(x, 2, 2, 0, False, False))
    for g, w in zip(got, want):
        np.testing.assert_allclose(g, w.numpy(), rtol=1e-6)
