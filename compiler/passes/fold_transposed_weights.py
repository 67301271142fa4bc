"""Store a small linear layer's weight transposed, given the weights.

A pass of the specialization pipeline (``compiler.pipeline.SPECIALIZE_PIPELINE``), run
when the weights are known; it takes them as input and records the arrays it makes in
``Module.folded_tensors``.

A linear layer, ``linear(x, W, b)``, multiplies by ``W^T``.  The kernels hand ``W.T`` to
BLAS, which for a row-major ``W`` (``(out, in)``, as a state_dict holds it) means a transposed
operand: OpenBLAS then packs it on every call.  For the small layers of a small
transformer that packing is a good part of the call (measured here, one thread:
``(16, 64) x (64, 128)^T`` 20 us -> 12 us, BERT-tiny's 13 linears 0.396 -> 0.386 ms per
run), while for large layers the transposed kernel is as fast or faster (ConvNeXt-T with
every linear weight stored transposed: 63 -> 70 ms).  So a weight of at most
``MAX_ELEMENTS`` elements is given to its linear as a new ``<Tensor>`` constant holding
the same values in column-major order (``np.asfortranarray``): ``W.T`` is then a
row-major matrix and BLAS reads it as it is.  The values are the same tensor; only the
order of the bytes changes, so the product differs by float32 rounding at most (BLAS
may sum in another order).

A linear (any layer whose registration declares ``Weights.transposed_weight``: its kernel
multiplies by the transposed weight) is rewritten when its weight is a known 2-d float array (a ``<Tensor>``
constant or a ``%self`` attribute read, ``known_values``) not written in place by any
node, of at most ``MAX_ELEMENTS`` elements, whose shape agrees with the sizes the graph
declares for the linear's operand and result (weights of another model are left to the
runtime's checks, which name them as the user does).  Postcondition: each rewritten
linear reads a constant ``%<weight>.t`` that ``folded_tensors`` defines; other uses of
the weight keep the original array.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from compiler import types as T
from compiler.analysis.known_values import Known, known_for, record_sources
from compiler.analysis.known_values import written as _written
from compiler.passes import note, owned_copy
from vm.ir.graph import Module, Node, TensorLiteral, Value
from vm.ops.facts import weights_of
from vm.ops.registry import Weights

MAX_ELEMENTS = 65536  # 256 KiB of float32: BERT-tiny's layers are 4k-8k, ViT-B's 590k


def fold_transposed_weights(module: Module, weights: Mapping[str, Any] | Any = None) -> Module:
    """``module`` with its small linear layers reading their weight stored transposed
    (see the module essay), the arrays it made added to ``folded_tensors``; ``module``
    itself without weights or when no linear qualifies (a weight that is module state,
    ``vm.ir.module_state``, is not known, so never qualifies)."""
    kinds = {n.kind for g in (module.main, *module.functions.values()) for n in g.walk()}
    if weights is None or not any(_layer(k) is not None for k in kinds):
        return module
    known = known_for(module, weights)
    if not any(_weight(n, known) is not None for n in module.main.walk()):
        return module
    copy = owned_copy(module)
    if copy is not module:
        known = known_for(copy, weights)
    arrays: dict[str, np.ndarray] = {}
    taken = copy.main.value_names()
    made: dict[int, Value] = {}  # one constant per weight value
    for node in list(copy.main.walk()):
        layer = _layer(node.kind)
        if layer is None or node.owner is None:
            continue
        source = node.inputs[layer.weight]
        weight = _weight_of(source, source, known)
        if weight is None or not _fits(node, layer, weight):
            continue
        record_sources(copy, [source], known)
        const = made.get(id(source))
        if const is None:
            name = copy.main.fresh_name(f"{source.name}.t", taken)
            taken.add(name)
            literal = Node("prim::Constant", attrs={"value": TensorLiteral(None, printed="<Tensor>")}, span=node.span)
            const = literal.add_output(name, T.TensorType(dtype=_DTYPES.get(weight.dtype.str), sizes=weight.shape))
            copy.main.block.insert(0, literal)
            arrays[name] = np.asfortranarray(weight)
            made[id(source)] = const
        node.replace_input(layer.weight, const)
    note("linear weights transposed", len(arrays))
    copy.folded_tensors = {**copy.folded_tensors, **arrays}
    return copy


_DTYPES = {"<f2": "Half", "<f4": "Float", "<f8": "Double"}


def _layer(kind: str) -> Weights | None:
    """Where ``kind`` keeps its weight, when its kernel multiplies by the weight transposed."""
    layer = weights_of(kind)
    return layer if layer is not None and layer.transposed_weight else None


def _weight(node: Node, known: Known) -> np.ndarray | None:
    layer = _layer(node.kind)
    if layer is None or len(node.inputs) <= layer.weight:
        return None
    weight = _weight_of(node.inputs[layer.weight], node.inputs[layer.weight], known)
    return weight if weight is not None and _fits(node, layer, weight) else None


def _fits(node: Node, layer: Weights, weight: np.ndarray) -> bool:
    """Whether ``weight`` agrees with the sizes the graph declares for the linear's input
    and output (a traced graph's ``Float(2, 10)``): weights of another model are left for
    the runtime's checks (``vm.binding.preflight``) to refuse under their own names."""
    declared = getattr(node.inputs[0].type, "sizes", None)
    if declared and declared[-1] is not None and declared[-1] != weight.shape[layer.in_axis]:
        return False
    declared = getattr(node.output.type, "sizes", None)
    return not (declared and declared[-1] is not None and declared[-1] != weight.shape[layer.out_axis])


def _weight_of(value: Value, source: Value, known: Known) -> np.ndarray | None:
    """The array ``value`` holds when it is a small, known, never-written 2-d float
    matrix stored row-major (``source``: the same value in the module ``known`` reads)."""
    array: Any = known(source)
    if type(array) is not np.ndarray or array.dtype.kind != "f" or array.ndim != 2:
        return None
    if array.size > MAX_ELEMENTS or not array.flags.c_contiguous or min(array.shape) < 2:
        return None
    return None if _written(value) or _written(source) else array
