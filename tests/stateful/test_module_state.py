"""Module state is state (``vm.ir.module_state``): the attributes any method
writes, found once, and every fold, plan and cache that asks it.  A setting nothing writes
still folds; a weight another method reassigns does not; the static runtime neither folds
``len(self._context)`` nor plans a tensor that a state attribute keeps."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import vm  # noqa: E402
from compiler.parser import parse  # noqa: E402
from compiler.torchscript import compile_archive, load_torchscript  # noqa: E402
from tests.support.stateful_models import StreamingVAD, SubState  # noqa: E402
from vm import StaticModule  # noqa: E402
from vm.core.errors import RunError  # noqa: E402
from vm.ir.module_state import is_written, state_reads, written_attributes  # noqa: E402
from vm.static import StaticOptions  # noqa: E402


def _save(module: torch.nn.Module, path: Path) -> Path:
    torch.manual_seed(0)
    torch.jit.script(module.eval()).save(str(path))
    return path


class Scaled(torch.nn.Module):
    """``forward`` only reads ``scale`` and the batch norm; ``set_scale`` and ``reset``
    write them: state for ``forward`` too.  ``k`` no method writes: a setting."""

    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 2, 3)
        self.bn = torch.nn.BatchNorm2d(2)
        self.scale = 1.0
        self.k = 2

    @torch.jit.export
    def set_scale(self, s: float) -> None:
        self.scale = s

    @torch.jit.export
    def reset(self) -> None:
        self.bn.running_mean = torch.ones(2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.conv(x)) * self.scale * self.k


class InPlace(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.register_buffer("total", torch.zeros(3))
        self.register_buffer("weight", torch.ones(3))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        self.total.add_(x)
        return self.total * self.weight


def test_the_written_attributes_of_a_streaming_model(tmp_path: Path) -> None:
    """SetAttr in forward and in the reset it calls: the four state attributes, no weight."""
    module, _ = load_torchscript(_save(StreamingVAD(), tmp_path / "vad.pt"))
    written = written_attributes(module)
    assert written == {"_context", "_last_batch_size", "_last_sr", "_state"}
    reads = {str(n.attrs["name"]) for n in state_reads(module.main, written)}
    assert reads == {"_context", "_last_batch_size", "_last_sr", "_state"}


def test_an_in_place_write_and_a_submodule_are_state(tmp_path: Path) -> None:
    module, _ = load_torchscript(_save(InPlace(), tmp_path / "inplace.pt"))
    assert written_attributes(module) == {"total"}
    sub, _ = load_torchscript(_save(SubState(), tmp_path / "sub.pt"))
    assert written_attributes(sub) == {"acc.total", "acc.steps"}
    assert is_written("acc.total", {"acc"}) and is_written("x.total", {"*.total"}) and not is_written("lin.weight", {"acc.total"})


def test_what_another_method_writes_is_state_for_forward(tmp_path: Path) -> None:
    """``forward``'s own graph assigns nothing; the archive's other methods do."""
    path = _save(Scaled(), tmp_path / "scaled.pt")
    module, _ = load_torchscript(path)
    assert not any(n.kind == "prim::SetAttr" for n in module.main.walk())
    assert module.state == {"scale", "bn.running_mean"}
    program, _ = compile_archive(path)
    assert set(program.state) == {"scale", "bn.running_mean"}
    # the setting no method writes folds; the state stays a read, the batch norm unfolded
    folded = program.module_if_loaded
    assert folded is not None and folded.attributes.get("k") == 2 and "scale" not in folded.attributes
    assert any(n.kind == "aten::batch_norm" for n in folded.main.walk())


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_a_method_that_sets_state_changes_what_forward_computes(tmp_path: Path, backend: str) -> None:
    path = _save(Scaled(), tmp_path / "scaled.pt")
    theirs = torch.jit.load(str(path))
    ours = vm.load(path, backend=backend)
    assert ours.methods == ["forward", "reset", "set_scale"]
    x = np.random.default_rng(0).standard_normal((1, 1, 5, 5)).astype(np.float32)
    with torch.no_grad():
        for step in range(4):
            if step == 1:
                theirs.set_scale(3.0)
                ours.set_scale(3.0)
            if step == 2:
                theirs.reset()
                ours.reset()
            np.testing.assert_allclose(ours(x), theirs(torch.from_numpy(x)).numpy(), rtol=1e-5, atol=1e-5)


def test_a_stateless_module_keeps_its_folds(tmp_path: Path) -> None:
    """No method writes anything: the batch norm folds into the convolution as before."""

    class Plain(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.conv = torch.nn.Conv2d(1, 2, 3)
            self.bn = torch.nn.BatchNorm2d(2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.bn(self.conv(x))

    program, _ = compile_archive(_save(Plain(), tmp_path / "plain.pt"))
    assert program.state == ()
    module = program.module_if_loaded
    assert module is not None and not any(n.kind == "aten::batch_norm" for n in module.main.walk())


STREAM_IR = """
graph(%self : __torch__.M, %x : Tensor):
  %one : int = prim::Constant[value=1]()
  %ctx : Tensor = prim::GetAttr[name="ctx"](%self)
  %n : int = aten::numel(%ctx)
  %l : Tensor[] = prim::ListConstruct(%ctx, %x)
  %y : Tensor = aten::cat(%l, %one)
  %z : Tensor = aten::mul(%y, %y)
   = prim::SetAttr[name="ctx"](%self, %z)
  %w : Tensor = aten::add(%z, %x, %one)
  return (%w, %n)
"""


def test_the_static_runtime_neither_folds_nor_plans_state() -> None:
    """``self.ctx.numel()`` is computed on every call; the tensor stored in ``ctx`` is never
    slab memory (it outlives the call), though its neighbours are planned."""
    module = parse(STREAM_IR)
    weights = {"ctx": np.zeros((2, 0), np.float32)}
    static = StaticModule(module, weights, StaticOptions(min_managed_bytes=0))
    assert static.state == {"ctx"}
    slots = static.entry.slots
    by_name = {v.name: v for v in slots}
    assert slots[by_name["n"]] not in static.shape_cached
    assert slots[by_name["z"]] not in static.candidates
    from vm import StaticRuntime

    runtime = StaticRuntime(static)
    x = np.ones((2, 1), np.float32)
    lengths = [runtime(x)[1] for _ in range(4)]
    assert lengths == [0, 2, 4, 6]  # the context grows by a column a call
    assert static.ir.main is not None and static.entry.constants[slots[module.main.inputs[0]]].get("ctx").shape == (2, 4)


def test_planning_ahead_is_refused_for_a_module_that_writes_state() -> None:
    static = StaticModule(parse(STREAM_IR), {"ctx": np.zeros((2, 0), np.float32)})
    with pytest.raises(RunError, match="module with state"):
        static.plan_for(np.ones((2, 1), np.float32))


def test_the_state_table_survives_an_irbc(tmp_path: Path) -> None:
    path = _save(Scaled(), tmp_path / "scaled.pt")
    model = vm.load(path)
    model.save(tmp_path / "scaled.irbc")
    loaded = vm.program.irbc.load(tmp_path / "scaled.irbc")
    assert loaded.state == model.program.state == ("bn.running_mean", "scale")
    again = vm.load(tmp_path / "scaled.irbc", tmp_path / "scaled.weights.npz", backend="static", strict=False)
    assert again.static_module.state == {"bn.running_mean", "scale"}


COUNTER_IR = """
graph(%self : __torch__.M, %x : Tensor):
  %one : int = prim::Constant[value=1]()
  %k : int = prim::GetAttr[name="k"](%self)
  %count : int = prim::GetAttr[name="count"](%self)
  %next : int = aten::add(%count, %one)
   = prim::SetAttr[name="count"](%self, %next)
  %y : Tensor = aten::mul(%x, %k)
  %z : Tensor = aten::mul(%y, %next)
  return (%z)
"""


def test_attribute_folding_keeps_state_and_folds_settings() -> None:
    """In a module that assigns ``count``, the setting ``k`` still folds (it used to be
    left alone with everything else); ``count`` stays a read."""
    from compiler.passes.fold_module_attributes import fold_module_attributes

    folded = fold_module_attributes(parse(COUNTER_IR), {"k": np.array(3), "count": np.array(0)})
    assert folded.attributes == {"k": 3}
    reads = [str(n.attrs["name"]) for n in folded.main.walk() if n.kind == "prim::GetAttr"]
    assert reads == ["count"]
    declared = parse(COUNTER_IR)
    declared.state = frozenset({"k"})  # what another method writes is state too
    assert fold_module_attributes(declared, {"k": np.array(3), "count": np.array(0)}).attributes == {}
