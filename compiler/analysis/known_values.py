"""What the weights make known at compile time: the value a graph value holds on every
run of a program specialized for its weights.

The passes that fold weight *values* into the program (``fold_batch_norm``,
``fold_transposed_weights``) need to know, for a convolution's weight or a BatchNorm's
``training`` flag, what it will be on every run.  A graph reads those through
``prim::GetAttr`` chains from ``%self`` and through ``<Tensor>`` constants bound by name,
and the flags through a few cheap operators (``aten::__not__``, an ``If`` whose condition
is known: torchvision's ``bn_training = self.training or ...``).  ``known_for(module,
weights)`` binds ``%self`` and the tensor constants from the weights exactly as the
runtimes will (``vm.binding.weights``) and returns ``known(value)``: the value, or
``UNKNOWN``.  Module state is never known: an attribute some method writes
(``vm.ir.module_state``) holds another value on the next call.  Weights the runtimes would refuse make nothing known (the runtime then
names what is wrong, in its own words); the tensors earlier folds made
(``Module.folded_tensors``) are known by their names.

``values_of(graph)`` lists a graph's values in a fixed order (a clone lists its copies
in the same order), and ``written(value)`` says whether some node may write a value in
place, which no fold may assume away.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from compiler import types as T
from vm.ir.graph import Graph, Module, Node, TensorLiteral, Value
from vm.ir.resolve import constant_value

UNKNOWN: Any = object()
Known = Callable[[Value], Any]


def known_for(module: Module, weights: Any) -> Known:
    """``known(value)`` for the values of ``module.main`` under ``weights`` (a flat
    mapping of dotted keys or a ``vm.binding.weights.ModuleObject``)."""
    from vm.binding.weights import ModuleObject, bind_constants, bind_self
    from vm.core.errors import RunError
    from vm.ir.module_state import written_attributes

    main = module.main
    state = written_attributes(module)
    flat = weights if isinstance(weights, Mapping) else {}
    tensors: dict[str, Any] = {}
    bound: dict[Value, Any] = {}
    try:
        if main.inputs and isinstance(main.inputs[0].type, T.ClassType):
            root = weights if isinstance(weights, ModuleObject) else bind_self(main, flat, module.attributes)
            bound[main.inputs[0]] = root
        tensors = bind_constants(main, {**flat, **module.folded_tensors})
    except RunError:  # weights the runtime will refuse: nothing is known, nothing folds
        return lambda value: UNKNOWN
    return known_values(main, bound, tensors, state)


def weight_key(value: Value, known: Known) -> str | None:
    """The key a runtime binds ``value`` from: the dotted path of a ``%self`` attribute read
    (``layer1.0.bn1.running_mean``), or a ``<Tensor>`` constant's name; None otherwise."""
    node = value.node
    if node is None:
        return None
    if node.kind == "prim::Constant" and isinstance(node.attrs.get("value"), TensorLiteral):
        return value.name
    if node.kind == "prim::GetAttr":
        dotted = getattr(known(node.inputs[0]), "dotted", None)
        return str(dotted(node.attrs.get("name"))) if callable(dotted) else None
    return None


def record_sources(module: Module, values: list[Value], known: Known) -> None:
    """Record in ``module.folded_from`` the key and digest of each weight array among
    ``values`` that a fold read (``vm.binding.folded``: a runtime given other weights
    under those keys refuses them)."""
    from vm.binding.folded import digest

    for value in values:
        array, key = known(value), weight_key(value, known)
        if key is not None and type(array).__name__ == "ndarray" and key not in module.folded_from:
            module.folded_from[key] = digest(array)


def values_of(graph: Graph) -> list[Value]:
    """Every value of ``graph`` in a fixed order (a clone lists its copies in the same order)."""
    values = list(graph.inputs)
    for node in graph.walk():
        for block in node.blocks:
            values.extend(block.params)
        values.extend(node.outputs)
    return values


def written(value: Value) -> bool:
    """Whether some node may write ``value`` in place (an ``aten::foo_`` or ``out=`` kind)."""
    return any(
        isinstance(use.user, Node) and (use.user.kind.endswith("_") or use.user.kind.endswith(".out"))
        for use in value.uses
    )


def known_values(
    graph: Graph, bound: Mapping[Value, Any], tensors: Mapping[str, Any], state: frozenset[str] = frozenset()
) -> Known:
    """``known(value)``: the load-time value of ``value`` in ``graph``, or ``UNKNOWN``.

    ``bound`` maps bound graph inputs (``%self``) to their objects, ``tensors`` the names
    of bound ``<Tensor>`` constants to their arrays.  Follows constants, attribute reads
    of known objects (``.attributes`` of ``vm.binding.weights.ModuleObject``) that are not
    module ``state`` (written attributes), ``aten::__not__`` and a ``prim::If`` with a
    known condition, memoized."""
    memo: dict[Value, Any] = {}

    def known(value: Value) -> Any:
        if value in memo:
            return memo[value]
        memo[value] = UNKNOWN  # cycles (loop-carried values) stay unknown
        result = _evaluate(value, known, bound, tensors, state)
        memo[value] = result
        return result

    return known


def _evaluate(
    value: Value, known: Known, bound: Mapping[Value, Any], tensors: Mapping[str, Any], state: frozenset[str]
) -> Any:
    node = value.node
    if node is None:
        return bound.get(value, UNKNOWN)
    kind = node.kind
    if kind == "prim::Constant":
        if isinstance(node.attrs.get("value"), TensorLiteral):
            return tensors.get(value.name, UNKNOWN)
        return constant_value(node)
    if kind == "prim::GetAttr":
        if state and _is_state(value, state):
            return UNKNOWN
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


def _is_state(value: Value, state: frozenset[str]) -> bool:
    from vm.ir.module_state import reads_state

    return value.node is not None and reads_state(value.node, state)
