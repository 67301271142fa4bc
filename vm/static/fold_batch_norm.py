"""Fold an inference BatchNorm into the convolution or linear that feeds it, once weights are bound.

A load-time fold of the static runtime (``vm.static.prepare.fold_weights`` runs it when a
module is built with weights), on the compiler's IR data model; no pass manager.

A convolution followed by an eval-mode ``aten::batch_norm`` computes, per output channel
``o``, ``(conv(x, W)[o] + b[o] - mean[o]) / sqrt(var[o] + eps) * gamma[o] + beta[o]``.
That is one convolution with ``W'[o] = W[o] * s[o]`` and ``b'[o] = (b[o] - mean[o]) *
s[o] + beta[o]``, where ``s = gamma / sqrt(var + eps)`` (ONNX Runtime and
``torch.fx``'s ``fuse_conv_bn_eval`` do the same when they load a model).  The new weight
and bias are computed in float64 and rounded once to the weight's dtype, so the folded
convolution differs from the two nodes by float32 rounding only.

The fold runs where weights are known, so it takes them: a ``known(value)`` function
gives the load-time value of a graph value, or ``UNKNOWN``.  ``known_values`` builds one
from the bound ``%self`` object and tensor constants, following ``prim::GetAttr`` chains,
constants, ``aten::__not__`` and a ``prim::If`` whose condition is known (torchvision's
``bn_training = self.training or ...`` compiles to one).  A pair is folded when:

- the BatchNorm's ``training`` is known False and its running mean and variance (and
  ``weight``/``bias`` when not None) are known float arrays of the conv's out channels;
- the producer is ``aten::conv1d/2d/3d`` (either padding overload), or a non-transposed
  ``aten::_convolution``/``aten::convolution``, with a known float weight and a known
  bias or None; or an ``aten::linear`` (BatchNorm1d after Linear) whose input the graph
  proves 2-d (``_rank``: a sized type, ``flatten(x, 1)``, a literal ``view``...), since
  only then are its output features BatchNorm's channels (a 3-d ``(N, L, C)`` result
  would be normalized along ``L``);
- the convolution's result has no other use but ones that read only its shape, dtype or
  device (torch's ``_check_input_dim`` reads ``dim()``), which the fold keeps; and no
  value involved is written in place by any node (kinds ending in ``_``) or by
  ``prim::SetAttr`` (the caller checks the program has none).

Each fold adds two ``<Tensor>`` constants named after the BatchNorm's result
(``%x.3.bn_weight``, ``%x.3.bn_bias``), rewires the convolution to them and removes the
BatchNorm; the returned mapping holds their arrays, to be bound by name like any frozen
constant.  Afterwards no folded BatchNorm remains and every rewired convolution reads
only constants the mapping defines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from compiler import types as T
from compiler.ir import Graph, Module, Node, TensorLiteral, Value
from compiler.resolve import constant_value

UNKNOWN: Any = object()
Known = Callable[[Value], Any]

CONVS = {
    "aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::_convolution", "aten::convolution",
}
# ops that read only a tensor's shape, dtype or device, the same before and after a fold
METADATA = {"aten::dim", "aten::size", "aten::numel", "prim::dtype", "prim::device", "prim::shape"}
_DTYPE_NAMES = {"<f2": "Half", "<f4": "Float", "<f8": "Double"}
_TRANSPOSED_AT = {"aten::_convolution": 6, "aten::convolution": 6}


def fold_batch_norm(
    module: Module, known: Known, labels: dict[str, str] | None = None
) -> tuple[Module, dict[str, np.ndarray]]:
    """A copy of ``module`` whose main graph has each foldable conv + BatchNorm pair as one
    convolution (see the module essay), and the arrays of the constants it added.

    ``known`` answers for the values of ``module`` (the input); the copy is matched to it
    node by node.  ``labels`` receives, for each constant added, the name a user knows it
    by (``conv1.weight (BatchNorm bn1 folded in)``), for messages: its own name is an internal one."""
    copy = module.clone()
    originals = {id(new): old for new, old in zip(_values(copy.main), _values(module.main))}
    arrays: dict[str, np.ndarray] = {}
    taken = copy.main.value_names()

    def known_in_copy(value: Value) -> Any:  # a constant a fold made is known by its name
        if value.node is not None and value.node.kind == "prim::Constant" and value.name in arrays:
            return arrays[value.name]
        return known(originals.get(id(value), value))

    for node in list(copy.main.walk()):
        if node.kind == "aten::batch_norm" and node.owner is not None:
            _fold(copy.main, node, known_in_copy, arrays, taken, labels if labels is not None else {})
    return copy, arrays


def _values(graph: Graph) -> list[Value]:
    """Every value of ``graph`` in a fixed order (a clone lists its copies in the same order)."""
    values = list(graph.inputs)
    for node in graph.walk():
        for block in node.blocks:
            values.extend(block.params)
        values.extend(node.outputs)
    return values


def _fold(
    graph: Graph, bn: Node, known: Known, arrays: dict[str, np.ndarray], taken: set[str], labels: dict[str, str]
) -> None:
    conv = bn.inputs[0].node
    block = bn.owner
    if conv is None or block is None or conv.owner is not block:
        return
    if conv.kind not in CONVS and not (conv.kind == "aten::linear" and _rank(conv.inputs[0], known) == 2):
        return  # a linear's features are BatchNorm's channels only when its result is (N, C)
    y = bn.inputs[0]
    others = [u.user for u in y.uses if u.user is not bn]
    if any(not isinstance(u, Node) or u.kind not in METADATA for u in others) or len(conv.outputs) != 1:
        return
    at = _TRANSPOSED_AT.get(conv.kind)
    if at is not None and known(conv.inputs[at]) is not False:
        return
    if _falsy(known(bn.inputs[5])) is not True:
        return
    weight, bias = known(conv.inputs[1]), known(conv.inputs[2])
    gamma, beta, mean, var = (known(v) for v in bn.inputs[1:5])
    eps = known(bn.inputs[7])
    if not _float_array(weight) or weight.ndim < (2 if conv.kind == "aten::linear" else 3):
        return
    if not isinstance(eps, (int, float)):
        return
    channels = weight.shape[0]
    if not all(_float_array(a) and a.shape == (channels,) for a in (mean, var)):
        return
    if not all(a is None or (_float_array(a) and a.shape == (channels,)) for a in (gamma, beta, bias)):
        return
    if any(_written(v) for v in (*conv.inputs[1:3], *bn.inputs[1:5])):
        return
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
    base = bn.output.name
    norm = (weight_key(bn.inputs[3]) or "").rpartition(".")[0] or f"%{base}"
    for index, array, suffix in ((1, folded_w, "bn_weight"), (2, folded_b, "bn_bias")):
        name = graph.fresh_name(f"{base}.{suffix}", taken)
        taken.add(name)
        const = Node("prim::Constant", attrs={"value": TensorLiteral(None, printed="<Tensor>")}, span=conv.span)
        const.add_output(name, T.TensorType(dtype=_DTYPE_NAMES.get(array.dtype.str), sizes=array.shape))
        block.insert_before(conv, const)
        given = weight_key(conv.inputs[index]) or f"{conv.kind.split('::')[-1]} {('weight', 'bias')[index - 1]}"
        conv.replace_input(index, const.output)
        arrays[name] = array
        labels[name] = f"{given} (BatchNorm {norm} folded in)"
    bn.output.replace_all_uses_with(y)
    bn.destroy()


def weight_key(value: Value) -> str | None:
    """The state_dict key of a weight: its ``prim::GetAttr`` chain from ``%self``
    (``conv1.weight``), or a frozen constant's name without ``self.``; None for anything else."""
    parts: list[str] = []
    while value.node is not None and value.node.kind == "prim::GetAttr" and value.node.inputs:
        parts.append(str(value.node.attrs.get("name")))
        value = value.node.inputs[0]
    if parts and value.node is None:  # reached a graph input: %self
        return ".".join(reversed(parts))
    if not parts and value.node is not None and value.node.kind == "prim::Constant":
        return value.name.removeprefix("self.")
    return None


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
    if node.kind in _SAME_RANK or (node.kind == "aten::linear" and getattr(known(node.inputs[1]), "ndim", 0) == 2):
        return _rank(node.inputs[0], known, depth + 1)
    return None


def _falsy(value: Any) -> bool | None:
    """True for a known False (``bool`` or a 0 constant), None when unknown or truthy."""
    if value is False or (type(value) is int and value == 0):
        return True
    return None


def _float_array(value: Any) -> bool:
    return type(value) is np.ndarray and value.dtype.kind == "f"


def _written(value: Value) -> bool:
    """Whether some node may write ``value`` in place (an ``aten::foo_`` or ``out=`` kind)."""
    return any(
        isinstance(use.user, Node) and (use.user.kind.endswith("_") or use.user.kind.endswith(".out"))
        for use in value.uses
    )


def known_values(graph: Graph, bound: Mapping[Value, Any], tensors: Mapping[str, Any]) -> Known:
    """``known(value)``: the load-time value of ``value`` in ``graph``, or ``UNKNOWN``.

    ``bound`` maps bound graph inputs (``%self``) to their objects, ``tensors`` the names
    of bound ``<Tensor>`` constants to their arrays.  Follows constants, attribute reads
    of known objects (``.attributes`` of ``vm.binding.weights.ModuleObject``), ``aten::__not__``
    and a ``prim::If`` with a known condition, memoized."""
    memo: dict[Value, Any] = {}

    def known(value: Value) -> Any:
        if value in memo:
            return memo[value]
        memo[value] = UNKNOWN  # cycles (loop-carried values) stay unknown
        result = _evaluate(value, known, bound, tensors)
        memo[value] = result
        return result

    return known


def _evaluate(value: Value, known: Known, bound: Mapping[Value, Any], tensors: Mapping[str, Any]) -> Any:
    node = value.node
    if node is None:
        return bound.get(value, UNKNOWN)
    kind = node.kind
    if kind == "prim::Constant":
        if isinstance(node.attrs.get("value"), TensorLiteral):
            return tensors.get(value.name, UNKNOWN)
        return constant_value(node)
    if kind == "prim::GetAttr":
        owner = known(node.inputs[0])
        attributes = getattr(owner, "attributes", None)
        if isinstance(attributes, dict):
            return attributes.get(node.attrs.get("name"), UNKNOWN)
        return UNKNOWN
    if kind == "aten::__not__":
        operand = known(node.inputs[0])
        return (not operand) if type(operand) is bool else UNKNOWN
    if kind == "prim::If" and len(node.blocks) == 2:
        cond = known(node.inputs[0])
        if type(cond) is not bool:
            return UNKNOWN
        block = node.blocks[0 if cond else 1]
        return known(block.returns[node.outputs.index(value)])
    return UNKNOWN
