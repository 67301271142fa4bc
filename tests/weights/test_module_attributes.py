"""Module attributes of every kind, and programs compiled with their weights.

A scripted module reads dicts, lists, tuples, strings, Optionals, numbers, tensors kept
in lists and dicts, and submodules of ModuleList / ModuleDict; tools/export_torch.py
writes them into the weights file (flattened as program inputs are, described by path
in ``__spec__``) and both runtimes bind them: differential against torch.  Compiling with
the weights folds plain settings into constants (``fold_module_attributes``), so a
branch on ``self.training`` that holds an operator irvm lacks no longer stops a model,
and weights that contradict the folded values are refused.
"""

from __future__ import annotations

import re
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import compiler
import vm
from compiler.diagnostics import CompileError, RunError
from tests.support.paths import ROOT
from vm.files.npz import compare_flat, flatten_outputs
from vm.program import irbc

torch = pytest.importorskip("torch")

sys.path.insert(0, str(ROOT / "tools"))
import export_torch

KINDS = '''
from typing import Dict, List, Optional, Tuple
import torch
from torch import nn, Tensor


class Kinds(nn.Module):
    names: Dict[str, str]
    counts: Dict[str, int]
    by_id: Dict[int, str]
    sizes: List[int]
    words: List[str]
    mixed: Tuple[int, float, str]
    label: str
    maybe: Optional[int]
    maybe_t: Optional[Tensor]
    scale: float
    flag: bool
    tensors: List[Tensor]
    table: Dict[str, Tensor]

    def __init__(self):
        super().__init__()
        self.names = {"a": "x.y", "b.c": "", "7": "seven", "first": "1st"}
        self.counts = {"a": 2, "b": -3}
        self.by_id = {3: "three", 10: "ten"}
        self.sizes = [2, 3]
        self.words = ["relu", "tanh"]
        self.mixed = (4, 0.5, "hi there")
        self.label = "tanh"
        self.maybe = None
        self.maybe_t = None
        self.scale = 1.5
        self.flag = True
        self.tensors = [torch.ones(3), torch.arange(3.0)]
        self.table = {"w": torch.full((3,), 2.0), "v.x": torch.full((3,), -1.0)}
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])
        self.heads = nn.ModuleDict({"first": nn.Linear(3, 3), "second": nn.Tanh()})

    def forward(self, x: Tensor) -> Tuple[Tensor, str, int]:
        for layer in self.layers:
            x = layer(x)
        for name, head in self.heads.items():
            if name in self.names:
                x = head(x)
        x = self.heads["second"](x)
        if "b.c" in self.names:
            x = x + len(self.names["b.c"])
        total = 0
        for k, v in self.counts.items():
            total += v * len(k)
        for k, v in self.by_id.items():
            total += k * len(v)
        for s in self.sizes:
            total += s
        for w in self.words:
            if w == self.label:
                x = torch.tanh(x)
        x = x * self.mixed[1] + self.mixed[0]
        if self.maybe is None and self.maybe_t is None and self.flag:
            x = x * self.scale
        for t in self.tensors:
            x = x + t
        x = x + self.table["w"] - self.table["v.x"]
        return x, self.names["7"] + self.mixed[2] + self.names["a"], total


def kinds():
    torch.manual_seed(0)
    return Kinds()


def kinds_inputs():
    return (torch.randn(2, 3),)


class Noisy(nn.Module):
    """Training-only noise through an operator irvm has no kernel for (poisson), and a
    str setting choosing the activation."""

    def __init__(self):
        super().__init__()
        self.mode = "tanh"
        self.fc = nn.Linear(4, 4)

    def forward(self, x: Tensor) -> Tensor:
        x = self.fc(x)
        if self.training:
            x = x + torch.poisson(x.abs())
        if self.mode == "tanh":
            return torch.tanh(x)
        return torch.relu(x)


def noisy():
    torch.manual_seed(0)
    return Noisy().eval()


def noisy_inputs():
    return (torch.randn(2, 4),)
'''


@pytest.fixture(scope="module")
def source(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("attrs") / "attr_models.py"
    path.write_text(KINDS)
    return path


def exported(source: Path, name: str) -> tuple[export_torch.Export, dict[str, Path]]:
    module = export_torch.load_file(source)
    exp = export_torch.export(getattr(module, name), name, getattr(module, f"{name}_inputs")())
    paths = export_torch.write(exp, source.parent / name)
    return exp, paths


def run_both(program: Any, weights: Any, inputs: list[Any]) -> list[Any]:
    return [make(program, weights)(*inputs) for make in (vm.Interpreter, vm.StaticRuntime)]


def load(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files}


def test_every_attribute_kind_round_trips_through_the_weights_file_and_matches_torch(source: Path) -> None:
    """Dicts (str keys with dots and digits, int keys, tensor values), lists of ints,
    strings and tensors, a tuple, a str, None Optionals, a float, a bool, ModuleList and
    ModuleDict submodules: exported, read back from the .npz, run on both backends."""
    exp, paths = exported(source, "kinds")
    weights = load(paths["weights"])
    assert {"names.b.c", "names.7", "by_id.10", "table.v.x", "tensors.1", "__spec__"} <= set(weights)
    program = compiler.compile_file(paths["ir"])
    inputs = [exp.inputs[k] for k in exp.inputs]
    for got in run_both(program, weights, inputs):
        assert compare_flat(flatten_outputs(exp.outputs), flatten_outputs([got])) == []
    assert got[1] == "seven" + "hi there" + "x.y"


def test_a_dict_attribute_written_by_hand_as_path_key_entries_binds_without_a_spec() -> None:
    """Without ``__spec__`` a Dict(str, str) attribute is read from ``PATH.KEY`` entries,
    converted by the graph's declared type (int keys from their digits)."""
    text = """
graph(%self : __torch__.M, %k.1 : str, %i.1 : int):
  %d : Dict(str, str) = prim::GetAttr[name="names"](%self)
  %e : Dict(int, str) = prim::GetAttr[name="ids"](%self)
  %v : str = aten::__getitem__(%d, %k.1)
  %w : str = aten::__getitem__(%e, %i.1)
  %r : str = aten::add(%v, %w)
  return (%r)
"""
    weights = {"names.layer4": np.array("out"), "names.3": np.array("aux"), "ids.12": np.array("!")}
    program = compiler.compile_source(text)
    assert run_both(program, weights, ["layer4", 12]) == ["out!", "out!"]
    assert run_both(program, weights, ["3", 12]) == ["aux!", "aux!"]


@pytest.mark.parametrize(
    ("weights", "message"),
    [
        ({"names": np.array("out"), "ids.1": np.array("x")}, "'names' does not fit the declared type Dict(str, str)"),
        ({"names.a": np.array("x"), "ids.one": np.array("x")}, "the key 'one' is not a int"),
        ({"names.a": np.array("x")}, "ids : Dict(int, str)"),
    ],
)
def test_a_missing_or_ill_kinded_dict_attribute_is_a_clear_error(weights: dict[str, Any], message: str) -> None:
    """A dict given as one array, a key of the wrong type, or a missing dict: one RunError
    naming the attribute's path and type, before the run."""
    text = """
graph(%self : __torch__.M):
  %d : Dict(str, str) = prim::GetAttr[name="names"](%self)
  %e : Dict(int, str) = prim::GetAttr[name="ids"](%self)
  %n : int = aten::len(%d)
  %m : int = aten::len(%e)
  %r : int = aten::add(%n, %m)
  return (%r)
"""
    program = compiler.compile_source(text)
    for make in (vm.Interpreter, vm.StaticRuntime):
        with pytest.raises(RunError, match=re.escape(message)):
            make(program, weights)


def test_compiling_with_the_weights_removes_a_training_branch_with_an_unknown_operator(source: Path) -> None:
    """`if self.training: torch.poisson(...)`: without the weights the unknown operator is a
    compile error; with them `training` and the str `mode` fold to constants, the branches
    go, and the program matches torch (eval) on both backends, from `irvm run` too."""
    exp, paths = exported(source, "noisy")
    text = paths["ir"].read_text()
    with pytest.raises(CompileError, match="aten::poisson"):
        compiler.compile_source(text, str(paths["ir"]))
    weights = load(paths["weights"])
    program = compiler.compile_source(text, str(paths["ir"]), weights=weights)
    optimized = str(program.module)
    assert "poisson" not in optimized and "prim::If" not in optimized and "GetAttr[name=\"mode\"]" not in optimized
    assert program.module.attributes == {"training": False, "mode": "tanh"}
    for got in run_both(program, weights, list(exp.inputs.values())):
        np.testing.assert_allclose(got, exp.outputs[0], rtol=1e-5, atol=1e-6)
    from vm.cli import main

    out = paths["ir"].parent / "noisy.out.npz"
    assert main(["run", str(paths["ir"]), "--inputs", str(paths["inputs"]), "--weights", str(paths["weights"]),
                 "--output", str(out)]) == 0
    np.testing.assert_allclose(load(out)["out0"], exp.outputs[0], rtol=1e-5, atol=1e-6)


def test_weights_contradicting_a_folded_attribute_are_refused_and_irbc_keeps_the_folding(
    source: Path, tmp_path: Path
) -> None:
    """A program folded for training=False refuses weights with training=True (both
    backends); an .irbc of it keeps the folded values, so its static runtime (rebuilt from
    the IR) folds the same way and runs without the unknown operator."""
    exp, paths = exported(source, "noisy")
    weights = load(paths["weights"])
    program = compiler.compile_source(paths["ir"].read_text(), str(paths["ir"]), weights=weights)
    training = {**weights, "training": np.array(True)}
    for make in (vm.Interpreter, vm.StaticRuntime):
        with pytest.raises(RunError, match="training = False in the program, True in these weights"):
            make(program, training)
    vm.save(program, tmp_path / "noisy.irbc")
    loaded = irbc.load(tmp_path / "noisy.irbc")
    assert loaded.folded == {"training": False, "mode": "tanh"}
    from vm.static.ir_text import optimized_module

    assert optimized_module(loaded).attributes == {"training": False, "mode": "tanh"}
    for got in run_both(loaded, weights, list(exp.inputs.values())):
        np.testing.assert_allclose(got, exp.outputs[0], rtol=1e-5, atol=1e-6)


def test_irc_compile_with_weights_writes_a_folded_irbc_that_irvm_runs(source: Path) -> None:
    """`irc compile model.ir --weights w.npz` folds the settings (the training branch with
    its unknown operator goes), and `irvm run model.irbc --weights w.npz` matches torch."""
    from compiler.cli import main as irc
    from vm.cli import main as irvm

    exp, paths = exported(source, "noisy")
    irbc = paths["ir"].with_suffix(".irbc")
    assert irc(["compile", str(paths["ir"]), "--weights", str(paths["weights"]), "-o", str(irbc), "--force"]) == 0
    out = irbc.with_suffix(".out.npz")
    assert irvm(["run", str(irbc), "--inputs", str(paths["inputs"]), "--weights", str(paths["weights"]),
                 "--output", str(out), "--backend", "static"]) == 0
    np.testing.assert_allclose(load(out)["out0"], exp.outputs[0], rtol=1e-5, atol=1e-6)


def test_attributes_the_program_assigns_are_not_folded() -> None:
    """A module whose graph has prim::SetAttr keeps every attribute a read (its value may
    change between runs)."""
    text = """
graph(%self : __torch__.M, %x.1 : int):
  %n : int = prim::GetAttr[name="count"](%self)
  %m : int = aten::add(%n, %x.1)
   = prim::SetAttr[name="count"](%self, %m)
  return (%m)
"""
    program = compiler.compile_source(text, weights={"count": np.array(1)})
    assert program.module.attributes == {}
    run = vm.Interpreter(program, {"count": np.array(1)})
    assert (run(2), run(2)) == (3, 5)


SEGMENTATION = ["fcn_resnet50", "lraspp_mobilenet_v3_large"]


@pytest.mark.slow
@pytest.mark.parametrize("name", SEGMENTATION)
def test_torchvision_segmentation_models_scripted_match_torch(name: str, tmp_path: Path) -> None:
    """fcn_resnet50 and lraspp_mobilenet_v3_large, scripted: their backbone reads the
    Dict(str, str) attribute ``return_layers``; exported and run at 1x3x64x64 on both
    backends, the ``out`` entry of the dict output matches torch."""
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    tv = pytest.importorskip("torchvision")
    torch.manual_seed(0)
    model = getattr(tv.models.segmentation, name)(weights=None, weights_backbone=None).eval()
    exp = export_torch.export(model, name, (torch.randn(1, 3, 64, 64),))
    paths = export_torch.write(exp, tmp_path)
    weights = load(paths["weights"])
    assert "backbone.return_layers" in str(weights["__spec__"])
    program = compiler.compile_file(paths["ir"], weights=weights)
    for got in run_both(program, weights, list(exp.inputs.values())):
        assert compare_flat(flatten_outputs(exp.outputs), flatten_outputs([got]), rtol=1e-3, atol=1e-4) == []


INTERFACE_NET = '''
import torch
from torch import nn


@torch.jit.interface
class Block(nn.Module):
    def forward(self, input: torch.Tensor) -> torch.Tensor:
        pass


class Picks(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(3, 3), nn.Linear(3, 3)])

    def forward(self, x: torch.Tensor, i: int) -> torch.Tensor:
        layer: Block = self.layers[i]
        return layer.forward(x)
'''

PICK_BY_INDEX = """graph(%self : __torch__.Picks,
      %x : Tensor,
      %i : int,
      %k : str):
  %layers : __torch__.torch.nn.modules.container.ModuleList = prim::GetAttr[name="layers"](%self)
  %m : InterfaceType<Block> = prim::ModuleContainerIndex(%layers, %i)
  %w : Tensor = prim::GetAttr[name="weight"](%m)
  %blocks : __torch__.torch.nn.modules.container.ModuleDict = prim::GetAttr[name="blocks"](%self)
  %n : InterfaceType<Block> = prim::ModuleContainerIndex(%blocks, %k)
  %b : Tensor = prim::GetAttr[name="bias"](%n)
  %y : Tensor = aten::linear(%x, %w, %b)
  return (%y)
"""


def test_a_module_interface_graph_as_torch_prints_it_parses_and_prints_back(tmp_path: Path) -> None:
    """``InterfaceType<Block>``, the type torch gives a ``ModuleList`` element picked by a
    run-time index, parses and prints back unchanged; calling a method through it is a
    compile error at its line naming the interface (the module is chosen at run time)."""
    source = tmp_path / "picks.py"
    source.write_text(INTERFACE_NET)
    module = export_torch.load_file(source)
    text = str(torch.jit.script(module.Picks()).inlined_graph)
    assert "InterfaceType<Block> = prim::ModuleContainerIndex" in text
    assert str(compiler.parse(text)) == str(compiler.parse(str(compiler.parse(text))))
    assert "InterfaceType<Block>" in str(compiler.parse(text))
    line = next(n for n, row in enumerate(text.splitlines(), 1) if "prim::CallMethod" in row)
    with pytest.raises(CompileError, match=rf":{line}:\d+: prim::CallMethod through module interface InterfaceType<Block>"):
        compiler.compile_source(text, "picks.ir")


@pytest.mark.parametrize("make", [vm.Interpreter, vm.StaticRuntime], ids=["interp", "static"])
def test_module_container_index_picks_a_list_element_and_a_dict_entry(make: Any) -> None:
    """``prim::ModuleContainerIndex`` picks ``layers[i]`` of a ModuleList and ``blocks[k]``
    of a ModuleDict from the weights at run time: torch's linear with the picked weight
    and bias; an index past the list names the missing module."""
    torch.manual_seed(0)
    layers = [torch.nn.Linear(3, 2) for _ in range(3)]
    blocks = {"a": torch.nn.Linear(3, 2), "b": torch.nn.Linear(3, 2)}
    weights = {f"layers.{i}.{p}": v.detach().numpy() for i, m in enumerate(layers) for p, v in m.named_parameters()}
    weights |= {f"blocks.{k}.{p}": v.detach().numpy() for k, m in blocks.items() for p, v in m.named_parameters()}
    program = compiler.compile_source(PICK_BY_INDEX, "pick.ir")
    x = torch.randn(4, 3)
    for i, k in ((0, "a"), (2, "b"), (1, "a")):
        want = torch.nn.functional.linear(x, layers[i].weight, blocks[k].bias).detach().numpy()
        np.testing.assert_allclose(make(program, weights)(x.numpy(), i, k), want, rtol=1e-6, atol=1e-6)
    with pytest.raises(RunError, match="layers.5"):
        make(program, weights)(x.numpy(), 5, "a")
