"""Fold an inference BatchNorm into the convolution or linear that feeds it, given the weights.

A pass of the specialization pipeline (``compiler.pipeline.SPECIALIZE_PIPELINE``), which
the pass manager runs when the weights are known: ``irc compile --weights``, a ``.pt``
archive, ``compiler.specialize(module, weights)``.  It takes the weights as its input
and records the tensors it makes in the module (``Module.folded_tensors``), bound by
name like a frozen graph's constants.

A convolution followed by an eval-mode ``aten::batch_norm`` computes, per output channel
``o``, ``(conv(x, W)[o] + b[o] - mean[o]) / sqrt(var[o] + eps) * gamma[o] + beta[o]``.
That is one convolution with ``W'[o] = W[o] * s[o]`` and ``b'[o] = (b[o] - mean[o]) *
s[o] + beta[o]``, where ``s = gamma / sqrt(var + eps)`` (ONNX Runtime and
``torch.fx``'s ``fuse_conv_bn_eval`` do the same when they load a model).  The new weight
and bias are computed in float64 and rounded once to the weight's dtype, so the folded
convolution differs from the two nodes by float32 rounding only.

What the weights make known is ``compiler.analysis.known_values.known_for``: the bound
``%self`` object and tensor constants, followed through ``prim::GetAttr`` chains,
constants, ``aten::__not__`` and a ``prim::If`` whose condition is known (torchvision's
``bn_training = self.training or ...`` compiles to one).  A pair is folded when:

- the BatchNorm's ``training`` is known False and its running mean and variance (and
  ``weight``/``bias`` when not None) are known float arrays of the conv's out channels;
- the producer is a layer whose registration declares that a BatchNorm folds into it
  (``vm.ops.registry.Weights.folds_batch_norm``: the forward convolutions, either padding
  overload, and the linear layer), not transposed when it has a ``transposed`` flag, with
  a known float weight (output channels on its axis 0) and a known bias or None; a layer
  with its features last (BatchNorm1d after Linear) only when the graph proves its input
  2-d (``_rank``: a sized type, ``flatten(x, 1)``, a literal ``view``...), since only
  then are its output features BatchNorm's channels (a 3-d ``(N, L, C)`` result would be
  normalized along ``L``);
- the convolution's result has no other use but ones that read only its shape, dtype or
  device (torch's ``_check_input_dim`` reads ``dim()``), which the fold keeps; and no
  value involved is written in place by any node (kinds ending in ``_``), and none is
  module state (an attribute some method assigns: ``vm.ir.module_state``,
  which ``known_for`` asks, leaves it unknown).

Each fold adds two ``<Tensor>`` constants named after the BatchNorm's result
(``%x.3.bn_weight``, ``%x.3.bn_bias``), rewires the convolution to them and removes the
BatchNorm; ``Module.folded_tensors`` holds their arrays.  Postcondition: no folded
BatchNorm remains, and every rewired convolution reads only constants that
``folded_tensors`` defines.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from compiler import types as T
from compiler.analysis.known_values import Known, known_for, record_sources
from compiler.analysis.known_values import written as _written
from compiler.passes import note, owned_copy
from vm.ir.graph import Graph, Module, Node, TensorLiteral, Value
from vm.ops.facts import weights_of

# ops that read only a tensor's shape, dtype or device, the same before and after a fold
METADATA = {"aten::dim", "aten::size", "aten::numel", "prim::dtype", "prim::device", "prim::shape"}
_DTYPE_NAMES = {"<f2": "Half", "<f4": "Float", "<f8": "Double"}


def fold_batch_norm(module: Module, weights: Mapping[str, Any] | Any = None) -> Module:
    """``module`` with each foldable conv + BatchNorm pair of its main graph as one
    convolution (see the module essay), the arrays it made added to ``folded_tensors``;
    ``module`` itself without weights or when nothing folds."""
    if weights is None or not _foldable(module, "aten::batch_norm"):
        return module
    copy = owned_copy(module)
    known = known_for(copy, weights)
    arrays: dict[str, np.ndarray] = {}
    taken = copy.main.value_names()

    def known_here(value: Value) -> Any:  # a constant a fold made is known by its name
        if value.node is not None and value.node.kind == "prim::Constant" and value.name in arrays:
            return arrays[value.name]
        return known(value)

    for node in list(copy.main.walk()):
        if node.kind == "aten::batch_norm" and node.owner is not None:
            read = _fold(copy.main, node, known_here, arrays, taken)
            record_sources(copy, read, known_here)
    note("batch norms folded", len(arrays) // 2)
    copy.folded_tensors = {**copy.folded_tensors, **arrays}
    return copy


def _foldable(module: Module, kind: str) -> bool:
    """Whether the module has a ``kind`` node to fold (whether its weights are constants
    of the program is ``known_for``'s question, which module state answers no)."""
    kinds = {n.kind for g in (module.main, *module.functions.values()) for n in g.walk()}
    return kind in kinds


def _fold(graph: Graph, bn: Node, known: Known, arrays: dict[str, np.ndarray], taken: set[str]) -> list[Value]:
    """Fold ``bn`` into its producer when the essay's conditions hold; the values whose
    arrays the fold read (none when it did not fold)."""
    conv = bn.inputs[0].node
    block = bn.owner
    if conv is None or block is None or conv.owner is not block:
        return []
    layer = weights_of(conv.kind)
    if layer is None or not layer.folds_batch_norm or layer.bias is None:
        return []
    if layer.features_last and _rank(conv.inputs[0], known) != 2:
        return []  # a linear's features are BatchNorm's channels only when its result is (N, C)
    y = bn.inputs[0]
    others = [u.user for u in y.uses if u.user is not bn]
    if any(not isinstance(u, Node) or u.kind not in METADATA for u in others) or len(conv.outputs) != 1:
        return []
    at = layer.transposed
    if at is not None and known(conv.inputs[at]) is not False:
        return []
    if _falsy(known(bn.inputs[5])) is not True:
        return []
    params = (conv.inputs[layer.weight], conv.inputs[layer.bias])
    weight, bias = (known(v) for v in params)
    gamma, beta, mean, var = (known(v) for v in bn.inputs[1:5])
    eps = known(bn.inputs[7])
    if not _float_array(weight) or weight.ndim < (2 if layer.features_last else 3):
        return []
    if not isinstance(eps, (int, float)):
        return []
    channels = weight.shape[0]
    if not all(_float_array(a) and a.shape == (channels,) for a in (mean, var)):
        return []
    if not all(a is None or (_float_array(a) and a.shape == (channels,)) for a in (gamma, beta, bias)):
        return []
    if any(_written(v) for v in (*params, *bn.inputs[1:5])):
        return []
    scale = 1.0 / np.sqrt(var.astype(np.float64) + float(eps))
    if gamma is not None:
        scale = scale * gamma.astype(np.float64)
    shift = -mean.astype(np.float64) * scale
    if bias is not None:
        shift = shift + bias.astype(np.float64) * scale
    if beta is not None:
        shift = shift + beta.astype(np.float64)
    folded_w = (weight.astype(np.float64) * scale.reshape((-1,) + (1,) * (weight.ndim - 1))).astype(weight.dtype)
    folded_b = shift.astype(weight.dtype)
    read = [*params, *bn.inputs[1:5]]
    base = bn.output.name
    for index, array, suffix in ((layer.weight, folded_w, "bn_weight"), (layer.bias, folded_b, "bn_bias")):
        name = graph.fresh_name(f"{base}.{suffix}", taken)
        taken.add(name)
        const = Node("prim::Constant", attrs={"value": TensorLiteral(None, printed="<Tensor>")}, span=conv.span)
        const.add_output(name, T.TensorType(dtype=_DTYPE_NAMES.get(array.dtype.str), sizes=array.shape))
        block.insert_before(conv, const)
        conv.replace_input(index, const.output)
        arrays[name] = array
    bn.output.replace_all_uses_with(y)
    bn.destroy()
    return read


# ops whose result has the rank of their first operand
_SAME_RANK = {
    "aten::relu", "aten::relu_", "aten::dropout", "aten::gelu", "aten::sigmoid", "aten::tanh",
    "aten::hardtanh", "aten::hardtanh_", "aten::silu", "aten::silu_", "aten::contiguous",
    "aten::batch_norm",
}


def _rank(value: Value, known: Known, depth: int = 0) -> int | None:
    """The number of dims ``value`` has on every run, when the graph proves it: a type
    with sizes, ``flatten(x, 1)`` (torch refuses a 1-d ``x``), a ``view``/``reshape`` to a
    literal list, ``addmm``/``mm``, and ops that keep their operand's rank (a linear by a
    known matrix among them)."""
    sizes = getattr(value.type, "sizes", None)
    if sizes is not None:
        return len(sizes)
    node = value.node
    if node is None or depth > 32:
        return None
    if node.kind == "aten::flatten" and len(node.inputs) == 3:
        start, end = known(node.inputs[1]), known(node.inputs[2])
        return 2 if start == 1 and end == -1 else None
    if node.kind in ("aten::view", "aten::reshape"):
        shape = node.inputs[1].node
        return len(shape.inputs) if shape is not None and shape.kind == "prim::ListConstruct" else None
    if node.kind in ("aten::addmm", "aten::mm"):
        return 2
    layer = weights_of(node.kind)
    if node.kind in _SAME_RANK or (
        layer is not None and layer.features_last and getattr(known(node.inputs[layer.weight]), "ndim", 0) == 2
    ):
        return _rank(node.inputs[0], known, depth + 1)
    return None


def _falsy(value: Any) -> bool | None:
    """True for a known False (``bool`` or a 0 constant), None when unknown or truthy."""
    if value is False or (type(value) is int and value == 0):
        return True
    return None


def _float_array(value: Any) -> bool:
    return type(value) is np.ndarray and value.dtype.kind == "f"
