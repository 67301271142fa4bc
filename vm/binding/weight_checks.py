"""Weights that do not fit the graph are refused before the run, as PyTorch's
``load_state_dict`` refuses a state_dict of another model ("size mismatch for fc.weight").

Two checks, both on the bound weights and the graph alone (no input needed):

- ``check_module_structure(graph, root)``: the parameters of each standard submodule the
  graph reads (its class is in the ``prim::GetAttr`` types) agree with each other as that
  module's structure fixes them: a Linear's or Conv's bias has one entry per output
  feature / channel, a Conv2d weight has 4 dimensions, a BatchNorm's weight, bias and
  running statistics have one shape, an LSTM's ``weight_hh_l0`` has 4 x hidden rows...
- ``check_declared_shapes(graph, resolve)``: where the dump declares shapes (traced and
  frozen graphs print ``Float(2, 10, ...)`` on each value), the weights of a linear,
  convolution, norm or embedding agree with them: a Linear whose declared output has 10
  features cannot take a weight of 5 rows.  Which sizes a weight shares with its values
  is declared on the operator's registration (``vm.ops.registry.WeightShapes``).

Each failure is a ``RunError`` naming the weight, its shape, and what the graph or the
module needs.  What neither the graph nor the weights say cannot be checked: a scripted
dump (``Tensor`` types everywhere) of a 10-class model does not say "10", so a complete,
self-consistent 5-class state_dict binds to it.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from vm.core import types as T
from vm.core.errors import RunError
from vm.ir.graph import Graph, Node, Value
from vm.ops.facts import weight_shapes
from vm.ops.registry import CHANNEL

# the graphs read here are the program's IR (vm.ir.graph): its module, or the nodes of it a
# loaded program's check table keeps (vm.program.check_graph), one data model

_GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def check_module_structure(graph: Graph, root: Any) -> None:
    """Raise RunError when a standard submodule's parameters contradict each other."""
    if not graph.inputs or not isinstance(graph.inputs[0].type, T.ClassType):
        return
    for obj, class_name in _submodules(graph.inputs[0], root):
        short = class_name.rsplit(".", 1)[-1]
        tensors = {k: v for k, v in obj.attributes.items() if isinstance(v, np.ndarray)}
        problem = _structure_problem(short, tensors, obj.attributes)
        if problem is not None:
            raise RunError(
                f"the weights of {obj.path or 'self'} ({short}) do not fit together: {problem} "
                f"(PyTorch's load_state_dict refuses such a state_dict)"
            )


def _submodules(self_value: Value, root: Any) -> list[tuple[Any, str]]:
    found: list[tuple[Any, str]] = []
    pending = [(self_value, root)]
    seen: set[int] = set()
    while pending:
        value, obj = pending.pop()
        for use in value.uses:
            node: Any = use.user
            if getattr(node, "kind", None) != "prim::GetAttr" or use.index != 0:  # a node, not a block
                continue
            out = node.outputs[0]
            child = getattr(obj, "attributes", {}).get(str(node.attrs.get("name")))
            if isinstance(out.type, T.ClassType) and getattr(child, "attributes", None) is not None:
                if id(child) not in seen:
                    seen.add(id(child))
                    found.append((child, out.type.qualname))
                pending.append((out, child))
    return found


def _structure_problem(short: str, t: dict[str, np.ndarray], attributes: dict[str, Any]) -> str | None:
    weight, bias = t.get("weight"), t.get("bias")
    if short == "Linear" and weight is not None:
        if weight.ndim != 2:
            return f"weight has shape {list(weight.shape)}, a Linear's is 2-d (out_features, in_features)"
        return _bias_problem(bias, weight.shape[0], "out_features", weight)
    conv = re.fullmatch(r"Conv(Transpose)?([123])d", short)
    if conv and weight is not None:
        rank = int(conv.group(2)) + 2
        if weight.ndim != rank:
            return f"weight has shape {list(weight.shape)}, a {short}'s has {rank} dimensions"
        if conv.group(1) is None:
            return _bias_problem(bias, weight.shape[0], "out_channels", weight)
        groups = attributes.get("groups")
        if isinstance(groups, int):
            return _bias_problem(bias, weight.shape[1] * groups, "out_channels", weight)
        return None
    if re.fullmatch(r"(BatchNorm|InstanceNorm)[123]d|LayerNorm|GroupNorm", short):
        shapes = {k: list(v.shape) for k, v in t.items() if k in ("weight", "bias", "running_mean", "running_var")}
        if len({tuple(s) for s in shapes.values()}) > 1:
            listing = ", ".join(f"{k} {s}" for k, s in shapes.items())
            return f"{listing} should have one shape"
        return None
    if short in ("Embedding", "EmbeddingBag") and weight is not None and weight.ndim != 2:
        return f"weight has shape {list(weight.shape)}, an {short}'s is 2-d (num_embeddings, embedding_dim)"
    if short in _GATES:
        return _rnn_problem(_GATES[short], t)
    return None


def _bias_problem(bias: np.ndarray | None, n: int, what: str, weight: np.ndarray) -> str | None:
    if bias is not None and tuple(bias.shape) != (n,):
        return f"bias has shape {list(bias.shape)} but weight {list(weight.shape)} has {n} {what}"
    return None


def _rnn_problem(gates: int, t: dict[str, np.ndarray]) -> str | None:
    for key, w_hh in t.items():
        m = re.fullmatch(r"weight_hh_l(\d+)(_reverse)?", key)
        if m is None:
            continue
        suffix = key[len("weight_hh"):]
        rows = w_hh.shape[0] if w_hh.ndim == 2 else -1
        if w_hh.ndim != 2 or rows % gates:
            return f"{key} has shape {list(w_hh.shape)}, not ({gates} x hidden_size, hidden_size)"
        for name in ("weight_ih", "bias_ih", "bias_hh"):
            other = t.get(name + suffix)
            if other is not None and (other.ndim < 1 or other.shape[0] != rows):
                return f"{name + suffix} has shape {list(other.shape)} but {key} has {rows} rows"
    return None


# -- against the shapes the graph declares ----------------------------------------------

Resolve = Callable[["Value"], tuple[Any, str]]  # a value -> (its bound array or None, its label)


def check_declared_shapes(graph: Graph, resolve: Resolve, nodes: Sequence[Node] | None = None) -> None:
    """Raise RunError when a weight contradicts a shape the graph declares at its use
    (``nodes``: the graph's nodes, when the caller has walked it already)."""
    rules = weight_shapes()
    for node in graph.walk() if nodes is None else nodes:
        rule = rules.get(node.kind)
        if rule is None or len(node.inputs) < 2:
            continue
        weight, label = resolve(node.inputs[rule.weight])
        if not isinstance(weight, np.ndarray):
            continue
        for side, axis, weight_axis in rule.checks:
            value = node.outputs[0] if side == "out" and node.outputs else node.inputs[0]
            sizes = _sizes(value)
            if sizes is None or weight.ndim <= weight_axis:
                continue
            if axis == CHANNEL:  # a convolution's channels: the axis before its spatial ones
                axis = len(sizes) - (weight.ndim - 2) - 1
            if not -len(sizes) <= axis < len(sizes):
                continue
            declared = sizes[axis]
            if declared is not None and declared != weight.shape[weight_axis]:
                raise RunError(
                    f"weight {label} has shape {list(weight.shape)}, but {node.kind} here "
                    f"{'returns' if side == 'out' else 'takes'} %{value.name} : {value.type}, which needs "
                    f"{declared} where the weight has {weight.shape[weight_axis]}: the weights are of another "
                    f"model (PyTorch's load_state_dict refuses them: size mismatch for {label})",
                    node.span,
                )


def _sizes(value: Value) -> tuple[int | None, ...] | None:
    t = value.type
    return t.sizes if isinstance(t, T.TensorType) else None


__all__ = ["check_declared_shapes", "check_module_structure"]
