"""Names, types and outputs as torch prints them in real models (issue #14): value names
with any character torch's printer emits (``%block1-0`` from a module path in regnet,
``%input.1``, ``%self.layer.0.weight``, non-ASCII Python names), ``NamedTuple(...)``
output types (googlenet, inception), and dict outputs (segmentation models, a traced
Hugging Face ModelOutput), written to the output npz as ``out0.KEY``."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import compiler
import vm
from vm.files.npz import read_npz, save_values

NAMES = """graph(%self.1 : __torch__.M,
      %input.1 : Float(1, 3, strides=[3, 1], requires_grad=0, device=cpu),
      %α : Tensor):
  %self.layer.0.weight : int = prim::Constant[value=2]()
  %block1-0 : Tensor = aten::mul(%input.1, %self.layer.0.weight)
  %trunk_output.block1-0.1 : Tensor = aten::relu(%block1-0)
  %4 : int = prim::Constant[value=1]()
  %out-1.2 : Tensor = aten::add(%trunk_output.block1-0.1, %α, %4)
  return (%out-1.2)
"""

NAMED_TUPLE = """graph(%self : __torch__.M,
      %x.1 : Tensor):
  %2 : NoneType = prim::Constant()
  %3 : int = prim::Constant[value=2]()
  %4 : Tensor = aten::mul(%x.1, %3)
  %5 : NamedTuple(logits : Tensor, aux_logits2 : Tensor?, aux_logits1 : Tensor?) = prim::TupleConstruct(%4, %2, %2)
  return (%5)
"""

DICT = """graph(%self : __torch__.D,
      %x.1 : Tensor):
  %2 : str = prim::Constant[value="aux"]()
  %3 : str = prim::Constant[value="out"]()
  %4 : int = prim::Constant[value=1]()
  %6 : Tensor = aten::add(%x.1, %4, %4)
  %7 : Tensor = aten::neg(%x.1)
  %8 : Dict(str, Tensor) = prim::DictConstruct(%3, %6, %2, %7)
  return (%8)
"""

BACKENDS = [vm.Interpreter, vm.StaticRuntime]


def test_value_names_as_torch_prints_them_parse_and_print_back() -> None:
    """Names with ``-``, dotted module paths and non-ASCII letters parse, and print back
    unchanged (torch's printer emits any debug name: ``%block1-0`` in regnet)."""
    module = compiler.parse(NAMES)
    text = str(module)
    for name in ("%block1-0", "%trunk_output.block1-0.1", "%self.layer.0.weight", "%α", "%out-1.2"):
        assert name in text
    assert str(compiler.parse(text)) == text


@pytest.mark.parametrize("runtime", BACKENDS, ids=["interp", "static"])
def test_value_names_as_torch_prints_them_run(runtime: type) -> None:
    """A graph whose values have such names runs: relu(2x) + a."""
    program = compiler.compile_source(NAMES)
    x = np.array([[-1.0, 0.5, 2.0]], np.float32)
    a = np.ones((1, 3), np.float32)
    np.testing.assert_allclose(runtime(program)(x, a), np.maximum(2 * x, 0) + a)


def test_value_name_stops_at_punctuation() -> None:
    """A name ends where the syntax goes on: ``(%a,%b)`` is two uses, ``%x:`` a typed name."""
    module = compiler.parse("graph(%a : Tensor,%b : Tensor):\n  %c : Tensor = aten::mul(%a,%b)\n  return (%c)\n")
    assert [v.name for v in module.main.inputs] == ["a", "b"]


@pytest.mark.parametrize("runtime", BACKENDS, ids=["interp", "static"])
def test_named_tuple_output(runtime: type) -> None:
    """A ``NamedTuple(...)`` output (googlenet's GoogLeNetOutputs) is returned as a tuple."""
    program = compiler.compile_source(NAMED_TUPLE)
    out = runtime(program)(np.ones(2, np.float32))
    assert isinstance(out, tuple) and len(out) == 3 and out[1] is None
    np.testing.assert_array_equal(out[0], [2.0, 2.0])


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_dict_output_written_as_out0_key(backend: str, tmp_path: Path) -> None:
    """``irvm run`` writes a dict output as ``out0.KEY`` entries (as tuples use ``out0.0``)."""
    from vm.cli import main

    ir = tmp_path / "d.ir"
    ir.write_text(DICT)
    save_values(tmp_path / "in.npz", {"x.1": np.arange(3, dtype=np.float32)})
    out = tmp_path / "out.npz"
    assert main(["run", str(ir), "--inputs", str(tmp_path / "in.npz"), "--output", str(out),
                 "--backend", backend]) == 0
    flat = read_npz(out)
    assert sorted(k for k in flat if not k.startswith("__")) == ["out0.aux", "out0.out"]
    np.testing.assert_array_equal(flat["out0.out"], [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(flat["out0.aux"], [-0.0, -1.0, -2.0])
