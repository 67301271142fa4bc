"""A model's inputs and outputs as ONNX Runtime's ``NodeArg``: name, type, dtype, shape.

``type`` is ONNX Runtime's text for a tensor (``tensor(float)``, ``tensor(int64)``...;
``tensor(undefined)`` when nothing says the dtype) and TorchScript's type text for
anything else (``int``, ``List[int]``, ``Optional[Tensor]``...).  ``dtype`` is the numpy
dtype, or None when unknown; ``shape`` a list with None for a dimension nothing fixes, or
None when not even the rank is known.  What is known comes from, best first: the example
inputs the model records (a traced ``.pt``'s ``traced_inputs``, an ``.irbc`` compiled
with ``--example-inputs``), then the types the graph declares (a traced graph's
``Float(1, 3, 64, 64, ...)``; ``vm.program.signature.tensor_spec``).  An example gives the
dtype and the rank, not the sizes: one traced call at ``[2, 16]`` does not make batch 2 or
length 16 the only ones the model takes (torch.jit.load runs others), so its dimensions are
left free unless the weights fix them (a convolution's input channels, ``implied``).

Outputs that are tuples (a traced Hugging Face model's ``(last_hidden_state,
pooler_output)``) are flattened into one output per element, named as ``irvm run --output``
names them (``out0.0``, ``out0.1``...; ``output_paths``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from vm.ops.facts import layer_weights
from vm.program.signature import is_tensor_type, tensor_spec


class NodeArg(NamedTuple):
    """One input or output: as ``onnxruntime.NodeArg`` (``name``, ``type``, ``shape``),
    plus ``dtype`` (a numpy dtype, or None)."""

    name: str
    type: str
    dtype: np.dtype | None
    shape: list[int | None] | None


# numpy dtype name -> ONNX's tensor element type name (onnx.TensorProto's)
ONNX_ELEMENT = {
    "float32": "float", "float64": "double", "float16": "float16", "bfloat16": "bfloat16",
    "int8": "int8", "int16": "int16", "int32": "int32", "int64": "int64", "uint8": "uint8",
    "bool": "bool", "complex64": "complex64", "complex128": "complex128",
}


def input_args(
    program: Any, examples: Sequence[Any] | None = None, weights: Mapping[str, Any] | None = None,
    known: Mapping[str, Any] | None = None,
) -> list[NodeArg]:
    """The NodeArgs of ``program``'s inputs (not ``%self``, which the weights give); an
    example (an array) fixes its input's dtype and shape; else what the graph's types say,
    completed by what the weights imply (``implied``, or ``known``: its answer kept from
    an earlier read of the same program and weights, ``implied_json``)."""
    names, types = list(program.input_names), list(program.input_types)
    if program.takes_self:
        names, types = names[1:], types[1:]
    recorded = list(examples or ()) or list(getattr(program, "example_inputs", ()) or ())
    if len(recorded) != len(names):
        recorded = [None] * len(names)
    args = [_free(_arg(n, t, e), e) for n, t, e in zip(names, types, recorded)]
    if weights and any(a.type == "tensor(undefined)" or a.shape is None or None in a.shape for a in args):
        found = implied_from_json(known) if known is not None else implied(getattr(program, "module_if_loaded", None), weights)
        args = [_completed(a, found.get(a.name)) for a in args]
    return args


def implied_json(module: Any, weights: Mapping[str, Any]) -> dict[str, Any]:
    """``implied`` as plain data (kept in the program cache's entry)."""
    return {name: [dtype.name, shape] for name, (dtype, shape) in implied(module, weights).items()}


def implied_from_json(stored: Mapping[str, Any]) -> dict[str, tuple[np.dtype, list[int | None] | None]]:
    found: dict[str, tuple[np.dtype, list[int | None] | None]] = {}
    for name, entry in stored.items():
        if isinstance(entry, (list, tuple)) and len(entry) == 2:
            found[str(name)] = (np.dtype(str(entry[0])), None if entry[1] is None else list(entry[1]))
    return found


def implied(module: Any, weights: Mapping[str, Any]) -> dict[str, tuple[np.dtype, list[int | None] | None]]:
    """Input name -> (dtype, shape) a scripted model's weights imply for an input read
    straight by a layer whose registration says so (``Weights.infers_input``): for a
    convolution (its weight ``(out, in/groups, k...)``) the dtype, the rank of the op (the
    weight's when the op does not fix it), ``in`` channels when ``groups`` is 1; for a
    linear layer (features last) the dtype only, its last dimension being ``in`` and the
    rank unknown."""
    graph = getattr(module, "main", None)
    layers = layer_weights()
    found: dict[str, tuple[np.dtype, list[int | None] | None]] = {}
    for value in getattr(graph, "inputs", ()):
        for use in value.uses:
            node = use.user
            layer = layers.get(getattr(node, "kind", ""))
            if layer is None or not layer.infers_input or use.index != 0 or len(node.inputs) <= layer.weight:
                continue
            weight_value = node.inputs[layer.weight]
            key = _weight_key(weight_value)
            weight = weights.get(key) if key else None
            if weight is None:  # a tensor the specialization passes made (BatchNorm folded in)
                weight = getattr(module, "folded_tensors", {}).get(weight_value.name)
            if not isinstance(weight, np.ndarray) or weight.ndim < 2:
                continue
            rank = None if layer.features_last else layer.rank or weight.ndim
            groups = None if layer.groups is None else _constant(node.inputs, layer.groups)
            shape = None
            if rank is not None:
                shape = [None, weight.shape[layer.in_axis] if groups == 1 else None, *[None] * (rank - 2)]
            found[value.name] = (np.dtype(weight.dtype.name), shape)
            break
    return found


def _constant(inputs: Sequence[Any], i: int) -> Any:
    producer = inputs[i].node if i < len(inputs) else None
    return producer.attrs.get("value") if producer is not None and producer.kind == "prim::Constant" else None


def _free(arg: NodeArg, example: Any) -> NodeArg:
    """An input whose shape came from an example: its rank kept, its sizes free."""
    return arg if example is None else _rank_only(arg)


def _rank_only(arg: NodeArg) -> NodeArg:
    return arg if arg.shape is None else arg._replace(shape=[None] * len(arg.shape))


def _completed(arg: NodeArg, found: tuple[np.dtype, list[int | None] | None] | None) -> NodeArg:
    if found is None or not arg.type.startswith("tensor("):
        return arg
    dtype = arg.dtype if arg.dtype is not None else found[0]
    shape = arg.shape if arg.shape is not None else found[1]
    if arg.shape is not None and found[1] is not None and len(arg.shape) == len(found[1]):
        shape = [d if d is not None else f for d, f in zip(arg.shape, found[1])]
    return NodeArg(arg.name, tensor_type(dtype), dtype, shape)


def output_args(program: Any) -> list[NodeArg]:
    """The NodeArgs of ``program``'s outputs, named ``out0``... (the keys ``irvm run --output``
    writes), a tuple output flattened into its elements (``out0.0``, ``out0.1``...)."""
    # a traced graph's output types carry the example's sizes: the rank is kept, not the sizes
    return [_rank_only(_arg(name, t, None)) for name, _, t in output_paths(program)]


def output_paths(program: Any) -> list[tuple[str, tuple[int, ...], str]]:
    """(name, path, type text) of each flattened output: ``path`` indexes the graph output's
    position, then into its tuples."""
    from vm.program.signature import output_types

    found: list[tuple[str, tuple[int, ...], str]] = []

    def walk(name: str, path: tuple[int, ...], t: str) -> None:
        items = _tuple_items(t)
        if items is None:
            found.append((name, path, t))
            return
        for i, item in enumerate(items):
            walk(f"{name}.{i}", (*path, i), item)

    for i, t in enumerate(output_types(program)):
        walk(f"out{i}", (i,), t)
    return found


def _tuple_items(type_text: str) -> list[str] | None:
    """The element types of ``Tuple[A, B]`` (None for any other type)."""
    t = type_text.strip()
    if not (t.startswith("Tuple[") and t.endswith("]")) and not (t.startswith("(") and t.endswith(")")):
        return None
    inner = t[6:-1] if t.startswith("Tuple[") else t[1:-1]
    items, depth, start = [], 0, 0
    for i, ch in enumerate(inner):
        if ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == "," and depth == 0:
            items.append(inner[start:i].strip())
            start = i + 1
    last = inner[start:].strip()
    if last:
        items.append(last)
    return items or None


def _arg(name: str, type_text: str, example: Any) -> NodeArg:
    if not is_tensor_type(type_text):
        return NodeArg(name, type_text, None, None)
    if isinstance(example, np.ndarray):
        return NodeArg(name, tensor_type(example.dtype), example.dtype, list(example.shape))
    if isinstance(example, tuple):  # (dtype name, shape) recorded by `irc compile --example-inputs`
        dtype = np.dtype(example[0]) if example[0] not in (None, "bfloat16") else None
        return NodeArg(name, tensor_type(dtype), dtype, list(example[1]))
    dtype, shape = tensor_spec(type_text.rstrip("?"))
    np_dtype = np.dtype(dtype) if dtype is not None and dtype != "bfloat16" else None
    return NodeArg(name, tensor_type(np_dtype), np_dtype, shape)


def tensor_type(dtype: np.dtype | None) -> str:
    """ONNX Runtime's type text for a tensor of ``dtype``: ``tensor(float)``..."""
    if dtype is None:
        return "tensor(undefined)"
    return f"tensor({ONNX_ELEMENT.get(np.dtype(dtype).name, np.dtype(dtype).name)})"


__all__ = ["NodeArg", "input_args", "output_args", "output_paths", "tensor_type"]


def _weight_key(value: Any) -> str | None:
    """The state_dict key of a weight: its ``prim::GetAttr`` chain from ``%self``
    (``conv1.weight``), or a frozen constant's name without ``self.``; None otherwise."""
    parts: list[str] = []
    while value.node is not None and value.node.kind == "prim::GetAttr" and value.node.inputs:
        parts.append(str(value.node.attrs.get("name")))
        value = value.node.inputs[0]
    if parts and value.node is None:  # reached a graph input: %self
        return ".".join(reversed(parts))
    if not parts and value.node is not None and value.node.kind == "prim::Constant":
        return value.name.removeprefix("self.")
    return None
