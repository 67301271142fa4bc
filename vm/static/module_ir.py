"""What ``StaticModule`` does to the optimized IR before it binds a node (``prepare``):
the module behind a Program, Module or Graph (``as_module``); the operators the
compiler resolved (``resolved_refs``); fusion groups expanded into their nodes, each
top-level group keeping its fused kernel (``expand_fusion_groups``); and ``%self`` and
tensor constants bound from the weights (for the binding session, ``vm.binding.session``).

Nothing here compiles: IR text and a program compiled without the weights it meets are
the front door's work (``vm.api.static``: ``compiler.compile_source``, ``compiler.specialize``),
done before a module is built.  ``SPECIALIZE_SWITCHES`` names the ``StaticOptions``
switch of each specialization pass, which the front door reads.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs

from vm.core import types as T
from vm.core.errors import CompileError
from vm.ir.graph import Graph, Module, Node, Value, all_nodes, clone_node
from vm.static.model import FusionInfo


def as_module(source: Any) -> Module:
    """The optimized IR module of a Program, a Module or a Graph (IR text is refused: the
    front door compiles it, ``vm.StaticModule``)."""
    if isinstance(source, str):
        from vm.core.errors import RunError

        raise RunError(
            "vm.static.StaticModule runs a compiled program, not IR text: compile it first with "
            "`compiler.compile_source(text)`, or give it to `vm.StaticModule` / `vm.StaticRuntime`, which compile it"
        )
    if isinstance(source, Module):
        return source
    if isinstance(source, Graph):
        return Module(source)
    from vm.static.ir_text import optimized_module

    module = optimized_module(source) if hasattr(source, "ir_table") else getattr(source, "module", None)
    if isinstance(module, Module):
        return module
    raise TypeError(f"cannot build a StaticModule from {type(source).__name__}")


def expand_fusion_groups(
    module: Module, refs: Mapping[Node, Any] | None = None
) -> tuple[Module, list[tuple[Any, int]], list[FusionInfo], dict[Node, Node]]:
    """A copy where each prim::FusionGroup is replaced by its Subgraph's nodes, and where
    each node of ``module`` (fusion sub-graphs included) went.  ``refs``: the operators
    of ``module``'s nodes as the compiler resolved them, for the fused kernels.

    Groups of the entry graph's top-level block also keep a fused kernel
    (``vm.fusion.kernels.FusedKernel``), which a plan uses instead of the nodes when the recorded
    sizes make it pay; every other group always runs expanded (listed as a fallback).
    """
    fallbacks: list[tuple[Any, int]] = []
    groups: list[FusionInfo] = []
    graphs = (module.main, *module.functions.values())
    if not any(n.kind == "prim::FusionGroup" for g in graphs for n in g.walk()):
        return module, fallbacks, groups, {}  # nothing to expand: no copy
    original = module
    module = module.clone()
    moved = dict(zip(all_nodes(original), all_nodes(module)))
    came_from = {new: old for old, new in moved.items()}
    for graph in (module.main, *module.functions.values()):
        for node in list(graph.walk()):
            if node.kind != "prim::FusionGroup":
                continue
            sub = node.attrs.get("Subgraph")
            if not isinstance(sub, Graph):
                raise CompileError("prim::FusionGroup without a Subgraph", node.span)
            mapping = {id(p): v for p, v in zip(sub.inputs, node.inputs)}
            block = node.owner
            assert block is not None  # a node of a graph's walk has a block
            inlined = []
            for inner in sub.nodes:
                new = clone_node(inner, mapping)
                inlined.append(new)
                if inner in came_from:
                    moved[came_from[inner]] = new
            for new in inlined:
                block.insert_before(node, new)
            outputs = [mapping.get(id(ret), ret) for ret in sub.outputs]
            known = None if refs is None else {n: refs[came_from[n]] for n in sub.nodes if came_from.get(n) in refs}
            kernel = fused_kernel(sub, known) if block is module.main.block else None
            if kernel is None:
                fallbacks.append((node.span, len(sub.nodes)))
            else:
                groups.append(FusionInfo(len(groups), inlined, list(node.inputs), outputs, kernel, node.span))
            for out, new_value in zip(node.outputs, outputs):
                out.replace_all_uses_with(new_value)
            node.destroy()
    return module, fallbacks, groups, moved


def fused_kernel(subgraph: Graph, refs: Mapping[Node, Any] | None = None) -> Any:
    """The fused kernel of a group's ``subgraph`` (its operators from ``refs`` when the
    compiler resolved them), or None when it cannot have one."""
    try:
        from vm.fusion.kernels import FusedKernel
        from vm.ir.fusion_spec import fusion_spec

        return FusedKernel(fusion_spec(subgraph, refs))
    except Exception:  # noqa: BLE001  (no fused kernel: the group runs expanded)
        return None


# The StaticOptions switches of the specialization passes (compiler.pipeline.SPECIALIZE_PIPELINE),
# which the front door reads when it specializes a program for the weights (vm.api.static)
SPECIALIZE_SWITCHES = {
    "fold_attributes": "fold_module_attributes",
    "fold_batch_norm": "fold_batch_norm",
    "fold_epilogues": "fold_epilogues",
    "fold_transposed_weights": "fold_transposed_weights",
}
# ... and of the load-time folds (the four passes, and the per-plan shape-only values)
LOAD_TIME_FOLDS = (*SPECIALIZE_SWITCHES, "fold_shapes")


def bind_self(graph: Graph, weights: Any, folded: Mapping[str, Any], shared: Any = None) -> dict[Value, Any]:
    """``%self`` (a leading module-typed input) comes from the weights, not the caller;
    ``shared``: the module object it is (a ``vm.Model``'s, one for all its methods and
    threads), with what the graph reads of it bound in place."""
    params = graph.inputs
    if not params or not isinstance(params[0].type, T.ClassType):
        return {}
    from vm.binding import weights as W
    if shared is not None:
        return {params[0]: W.bind_self(graph, shared, folded)}
    if isinstance(weights, W.ModuleObject):
        return {params[0]: weights}
    binder = getattr(W, "bind_self", None)
    if binder is not None:
        return {params[0]: binder(graph, weights or {}, folded)}
    return {params[0]: W.ModuleObject.from_state_dict(weights or {})}


def bound_constants(module: Module, weights: Mapping[str, Any]) -> dict[str, Any]:
    """Tensor constants bound from the weights by name (``vm.binding.weights.bind_constants``)."""
    from vm.binding.weights import bind_constants

    bound: dict[str, Any] = {}
    for graph in (module.main, *module.functions.values()):
        bound.update(bind_constants(graph, weights))
    return bound


def constant(node: Any, weights: Mapping[str, Any]) -> Any:
    from vm.ir.resolve import UnboundTensor, constant_value

    value = constant_value(node)
    if isinstance(value, UnboundTensor):
        try:
            return value.bind(weights)
        except CompileError as err:
            raise CompileError(err.message, node.span) from None
    return value


def resolved_refs(source: Any, module: Module) -> dict[Node, Any] | None:
    """The operator of every node of ``module`` as the compiler recorded it
    (``Program.node_refs``), or None when ``source`` carries none for this module."""
    refs = getattr(source, "node_refs", ())
    if not refs or getattr(source, "module", None) is not module:
        return None
    nodes = list(all_nodes(module))
    if len(nodes) != len(refs):
        return None
    return {node: ref for node, ref in zip(nodes, refs) if ref is not None}


@attrs.frozen(eq=False)
class Prepared:
    """The IR a StaticModule runs, and what came with it."""

    module: Module  # fusion groups expanded
    refs: dict[Node, Any]  # each operator node's resolved operator
    groups: list[FusionInfo]  # top-level groups that keep a fused kernel
    fallbacks: list[tuple[Any, int]]  # (span, nodes) of groups that always run expanded
    added: dict[str, Any]  # arrays of the constants the specialization passes made
    labels: dict[str, str] = attrs.field(factory=dict)  # their names in messages (none recorded yet)
    source_module: Module | None = None  # the IR as given, before its fusion groups were expanded


def prepare(source: Any) -> Prepared:
    """The static runtime's IR of ``source`` (a Program, Module or Graph): its operators
    as the compiler resolved them when the program recorded them, else resolved here,
    every unsupported node reported at once; ``source_module``, the IR before its fusion
    groups were expanded, is what the weights' keys are checked against."""
    module = as_module(source)
    recorded = resolved_refs(source, module)
    source_module = module
    added = dict(module.folded_tensors)
    module, fallbacks, groups, moved = expand_fusion_groups(module, recorded)
    if recorded is not None:
        refs = {moved.get(n, n): ref for n, ref in recorded.items()}
        return Prepared(module, refs, groups, fallbacks, added, source_module=source_module)
    from vm.ir.resolve import resolve_all

    refs, errors = resolve_all(module)
    if len(errors) == 1:
        raise errors[0]
    if errors:  # every unsupported node at once, as vm.ir.resolve.check_all reports them
        raise CompileError(f"{len(errors)} nodes cannot be compiled:\n" + "\n".join(map(str, errors)))
    return Prepared(module, refs, groups, fallbacks, added, source_module=source_module)
