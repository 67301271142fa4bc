"""What ``StaticModule`` does to the optimized IR before it resolves a node: the module
behind a Program, Module, Graph or text (``as_module``); fusion groups expanded into their
nodes, each top-level group keeping its fused kernel (``expand_fusion_groups``); the
load-time folds once weights are bound (``fold_weights``); and ``%self`` and tensor
constants bound from the weights.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler.ir import Graph, Module, Value, clone_node
from vm import types as T
from vm.errors import CompileError
from vm.static.codegen import FusionInfo


def as_module(source: Any, fusion: bool) -> Module:
    """The optimized IR module of a Program, a Module, a Graph, or IR text."""
    if isinstance(source, Module):
        return source
    if isinstance(source, Graph):
        return Module(source)
    if isinstance(source, str):
        import compiler
        from compiler.pipeline import optimize

        module, _ = optimize(compiler.parse(source), fusion=fusion)
        return module
    from vm.static.ir_text import optimized_module

    module = optimized_module(source) if hasattr(source, "optimized_ir") else getattr(source, "module", None)
    if isinstance(module, Module):
        return module
    raise TypeError(f"cannot build a StaticModule from {type(source).__name__}")


def expand_fusion_groups(
    module: Module,
) -> tuple[Module, list[tuple[Any, int]], list[FusionInfo]]:
    """A copy where each prim::FusionGroup is replaced by its Subgraph's nodes.

    Groups of the entry graph's top-level block also keep a fused kernel
    (``vm.fusion.kernels.FusedKernel``), which a plan uses instead of the nodes when the recorded
    sizes make it pay; every other group always runs expanded (listed as a fallback).
    """
    module = module.clone()
    fallbacks, groups = [], []
    for graph in (module.main, *module.functions.values()):
        for node in list(graph.walk()):
            if node.kind != "prim::FusionGroup":
                continue
            sub = node.attrs.get("Subgraph")
            if not isinstance(sub, Graph):
                raise CompileError("prim::FusionGroup without a Subgraph", node.span)
            mapping = {id(p): v for p, v in zip(sub.inputs, node.inputs)}
            block = node.owner
            inlined = [clone_node(inner, mapping) for inner in sub.nodes]
            for new in inlined:
                block.insert_before(node, new)
            outputs = [mapping.get(id(ret), ret) for ret in sub.outputs]
            kernel = fused_kernel(sub) if block is module.main.block else None
            if kernel is None:
                fallbacks.append((node.span, len(sub.nodes)))
            else:
                groups.append(
                    FusionInfo(
                        len(groups),
                        inlined,
                        list(node.inputs),
                        outputs,
                        kernel,
                        node.span,
                    )
                )
            for out, new_value in zip(node.outputs, outputs):
                out.replace_all_uses_with(new_value)
            node.destroy()
    return module, fallbacks, groups


def fused_kernel(subgraph: Graph) -> Any:
    try:
        from compiler.fusion_spec import fusion_spec
        from vm.fusion.kernels import FusedKernel

        return FusedKernel(fusion_spec(subgraph.clone()))
    except Exception:  # noqa: BLE001  (no fused kernel: the group runs expanded)
        return None


def fold_weights(module: Module, weights: Any) -> tuple[Module, dict[str, Any]]:
    """``module`` with the load-time folds applied (compiler/passes/fold_*.py), and the
    arrays of the constants they added; unchanged when the program assigns attributes
    (its weights are then not constants)."""
    from compiler.passes.fold_batch_norm import fold_batch_norm, known_values

    graphs = (module.main, *module.functions.values())
    if any(n.kind == "prim::SetAttr" for g in graphs for n in g.walk()):
        return module, {}
    main = module.main
    known = known_values(
        main, bind_self(main, weights, module.attributes), bound_constants(module, flat_weights(weights))
    )
    return fold_batch_norm(module, known)


def flat_weights(weights: Any) -> Mapping[str, Any]:
    if weights is None:
        return {}
    if isinstance(weights, Mapping):
        return weights
    return {}


def bind_self(graph: Graph, weights: Any, folded: Mapping[str, Any]) -> dict[Value, Any]:
    """``%self`` (a leading module-typed input) comes from the weights, not the caller."""
    params = graph.inputs
    if not params or not isinstance(params[0].type, T.ClassType):
        return {}
    from vm import weights as W

    if isinstance(weights, W.ModuleObject):
        return {params[0]: weights}
    binder = getattr(W, "bind_self", None)
    if binder is not None:
        return {params[0]: binder(graph, weights or {}, folded)}
    return {params[0]: W.ModuleObject.from_state_dict(weights or {})}


def bound_constants(module: Module, weights: Mapping[str, Any]) -> dict[str, Any]:
    """Tensor constants bound from the weights by name (``vm.weights.bind_constants``)."""
    from vm.weights import bind_constants

    bound: dict[str, Any] = {}
    for graph in (module.main, *module.functions.values()):
        bound.update(bind_constants(graph, weights))
    return bound


def constant(node: Any, weights: Mapping[str, Any]) -> Any:
    from compiler.resolve import UnboundTensor, constant_value

    value = constant_value(node)
    if isinstance(value, UnboundTensor):
        try:
            return value.bind(weights)
        except CompileError as err:
            raise CompileError(err.message, node.span) from None
    return value
