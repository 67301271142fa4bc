"""vm.binding.weights.bind_self / bind_constants: binding %self and frozen tensor constants from a
flat weights mapping, checked against the graph before any run."""

from __future__ import annotations

import numpy as np
import pytest

import compiler
from compiler.diagnostics import RunError
from vm.binding.weights import ModuleObject, bind_constants, bind_self

MODULE_GRAPH = """\
graph(%self : __torch__.Net,
      %x : Tensor):
  %fc : __torch__.torch.nn.modules.linear.Linear = prim::GetAttr[name="fc"](%self)
  %w : Tensor = prim::GetAttr[name="weight"](%fc)
  %b : Tensor? = prim::GetAttr[name="bias"](%fc)
  %act : __torch__.torch.nn.modules.activation.ReLU = prim::GetAttr[name="act"](%self)
  %training : bool = prim::GetAttr[name="training"](%self)
  %heads : int = prim::GetAttr[name="num_heads"](%self)
  %same : bool = prim::GetAttr[name="_qkv_same_embed_dim"](%self)
  %eps : float = prim::GetAttr[name="eps"](%self)
  %mode : str = prim::GetAttr[name="mode"](%self)
  %kernel : int[] = prim::GetAttr[name="kernel_size"](%self)
  %pair : (int, int) = prim::GetAttr[name="pair"](%self)
   = prim::If(%training)
    block0():
      %rnn : __torch__.torch.nn.modules.rnn.GRU = prim::GetAttr[name="rnn"](%self)
      %flat : Tensor[] = prim::GetAttr[name="_flat_weights"](%rnn)
      -> ()
    block1():
      -> ()
  return (%x)
"""


def _graph(text: str = MODULE_GRAPH):
    return compiler.parse(text, "net.ir").main


def _weights() -> dict[str, np.ndarray]:
    f32 = np.float32
    return {
        "fc.weight": np.ones((2, 3), f32),
        "num_heads": np.array(4),
        "_qkv_same_embed_dim": np.array(True),
        "eps": np.array(1e-5),
        "mode": np.array("bilinear"),
        "kernel_size": np.array([3, 3]),
        "pair": np.array([1, 2]),
        "rnn.weight_hh_l0": np.full((3, 2), 2, f32),
        "rnn.bias_ih_l0_reverse": np.full(3, 5, f32),
        "rnn.weight_ih_l0": np.full((3, 2), 1, f32),
        "rnn.weight_ih_l0_reverse": np.full((3, 2), 4, f32),
        "rnn.weight_ih_l1": np.full((3, 2), 6, f32),
        "rnn.bias_ih_l0": np.full(3, 3, f32),
    }


def test_plain_attributes_take_the_declared_types():
    root = bind_self(_graph(), _weights())
    assert root.get("num_heads") == 4 and type(root.get("num_heads")) is int
    assert root.get("_qkv_same_embed_dim") is True
    assert type(root.get("eps")) is float and root.get("eps") == 1e-5
    assert root.get("mode") == "bilinear" and type(root.get("mode")) is str
    assert root.get("kernel_size") == [3, 3] and all(type(v) is int for v in root.get("kernel_size"))
    assert root.get("pair") == (1, 2)


def test_absent_optional_is_none_absent_training_is_false_and_empty_submodules_exist():
    root = bind_self(_graph(), _weights())
    assert root.get("fc").get("bias") is None
    assert root.get("training") is False
    assert isinstance(root.get("act"), ModuleObject) and root.get("act").path == "act"


def test_rnn_flat_weights_are_rebuilt_in_pytorch_order():
    """Layer by layer, forward before reverse, w_ih, w_hh, b_ih, b_hh within a direction."""
    flat = bind_self(_graph(), _weights()).get("rnn").get("_flat_weights")
    assert [float(t.flat[0]) for t in flat] == [1, 2, 3, 4, 5, 6]


def test_indexed_entries_make_a_tensor_list():
    weights = _weights()
    weights["rnn._flat_weights.1"] = np.zeros(2, np.float32)
    weights["rnn._flat_weights.0"] = np.ones(2, np.float32)
    flat = bind_self(_graph(), weights).get("rnn").get("_flat_weights")
    assert [float(t[0]) for t in flat] == [1, 0]


def test_every_missing_attribute_is_named_with_its_type_in_one_error():
    weights = _weights()
    del weights["fc.weight"], weights["num_heads"], weights["pair"]
    with pytest.raises(RunError) as err:
        bind_self(_graph(), weights)
    text = str(err.value)
    assert "3 attribute(s)" in text
    assert "fc.weight : Tensor" in text and "num_heads : int" in text and "pair : (int, int)" in text
    assert "net.ir:" in text  # points at the first GetAttr that reads a missing one


def test_a_value_that_does_not_fit_its_type_is_refused():
    weights = _weights()
    weights["num_heads"] = np.array([4, 5])
    with pytest.raises(RunError, match="'num_heads' does not fit the declared type int"):
        bind_self(_graph(), weights)


def test_a_function_graph_gets_the_tree_as_given():
    graph = _graph("graph(%x : Tensor):\n  return (%x)\n")
    root = bind_self(graph, {"a.b": np.zeros(1)})
    assert root.get("a").get("b").shape == (1,)


FROZEN = """\
graph(%self : __torch__.Seq,
      %x : Tensor):
  %self.0.weight : Float(4, 3, strides=[3, 1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %self.0.bias : Float(4, strides=[1], requires_grad=0, device=cpu) = prim::Constant[value= 0.1  0.2  0.3  0.4 [ CPUFloatType{4} ]]()
  %self.1.weight : Float(2, 4, strides=[4, 1], requires_grad=0, device=cpu) = prim::Constant[value=<Tensor>]()
  %y : Tensor = aten::linear(%x, %self.0.weight, %self.0.bias)
  %z : Tensor = aten::linear(%y, %self.1.weight, %self.0.bias)
  return (%z)
"""


def test_frozen_constants_bind_by_state_dict_key_or_full_name():
    graph = _graph(FROZEN)
    w0, w1 = np.ones((4, 3), np.float32), np.ones((2, 4), np.float32)
    bound = bind_constants(graph, {"0.weight": w0, "self.1.weight": w1})
    assert bound["self.0.weight"] is w0 and bound["self.1.weight"] is w1
    assert "self.0.bias" not in bound  # printed values, no weight given: the literal stands
    exact = np.array([0.11, 0.2, 0.3, 0.4], np.float32)
    assert bind_constants(graph, {"0.weight": w0, "1.weight": w1, "0.bias": exact})["self.0.bias"] is exact


def test_every_missing_frozen_constant_is_listed():
    with pytest.raises(RunError) as err:
        bind_constants(_graph(FROZEN), {})
    text = str(err.value)
    assert "2 tensor constant(s)" in text
    assert "%self.0.weight" in text and "%self.1.weight" in text and "0.weight" in text


def test_a_constant_of_the_wrong_shape_is_refused():
    with pytest.raises(RunError, match=r"shape \[3, 4\]"):
        bind_constants(_graph(FROZEN), {"0.weight": np.ones((3, 4), np.float32), "1.weight": np.ones((2, 4), np.float32)})
