"""Fusion groups resolved at compile time: ``vm.fusion.kernels.FusionSpec`` from a sub-graph.

The fused kernel of a ``prim::FusionGroup`` is built from plain data (its operators
resolved, its constants, slots and declared input kinds), so a loaded program neither
parses the group nor resolves its operators again; this is where that data is made.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from vm.core import types as T
from vm.fusion.kernels import FusionSpec, spec_attrs
from vm.ir.resolve import constant_value, resolve
from vm.ops.registry import OpRef


def input_kind(t: Any) -> str:
    """How a sub-graph input is declared, for the kernel's first plan: the dtype name of a
    tensor (``Float``; ``Float`` for a plain ``Tensor``), else ``int``, ``bool`` or ``float``."""
    if t is None or isinstance(t, T.TensorType):
        return getattr(t, "dtype", None) or "Float"
    return "int" if t == T.INT else "bool" if t == T.BOOL else "float"


def fusion_spec(subgraph: Any, refs: Mapping[Any, OpRef] | None = None) -> FusionSpec:
    """Resolve the operators of a fusion ``subgraph`` (a ``vm.ir.graph.Graph``); a node
    found in ``refs`` (resolved already, by the compiler) takes its operator from there."""
    index: dict[int, int] = {id(v): i for i, v in enumerate(subgraph.inputs)}
    slot = len(subgraph.inputs)
    constants: list[tuple[int, Any]] = []
    for node in subgraph.nodes:
        if node.kind == "prim::Constant":
            index[id(node.output)] = slot
            constants.append((slot, constant_value(node)))
            slot += 1
    steps = []
    for node in subgraph.nodes:
        if node.kind == "prim::Constant":
            continue
        ref = refs.get(node) if refs is not None else None
        if ref is None:
            ref = resolve(node)
        index[id(node.output)] = slot
        span = None if node.span is None else (node.span.file, node.span.line, node.span.col, node.span.source_line)
        steps.append((ref, tuple(index[id(v)] for v in node.inputs), slot, span, repr(node)))
        slot += 1
    return FusionSpec(
        len(subgraph.inputs),
        tuple(constants),
        tuple(steps),
        tuple(index[id(v)] for v in subgraph.outputs),
        tuple(input_kind(v.type) for v in subgraph.inputs),
    )


def fused_opref(node: Any) -> OpRef:
    """The OpRef an emitter stores for a ``prim::FusionGroup`` node: the group resolved."""
    spec = fusion_spec(node.attrs["Subgraph"])
    return OpRef("prim::FusedKernel", len(node.inputs), len(node.outputs), attrs=(("name", node.kind), ("spec", spec_attrs(spec))))
