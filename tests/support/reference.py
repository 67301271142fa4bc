"""The reference evaluator: a direct walk of the IR, the oracle of the differential tests.

``run_reference(module, inputs)`` runs ``module.main`` as JAX's ``eval_jaxpr`` runs a
jaxpr (an environment, read, write): each node goes through ``vm.ir.resolve`` and
``vm.ops.registry.bind``, and If, Loop, CallFunction, CallMethod on a known graph and
FusionGroup are handled here.  It copies its inputs, so callers can reuse them.  The
interpreter's two loops, the static runtime and every pass are compared with it
(tests/vm/test_fuzz.py, tests/static/test_differential.py, tests/passes/).

``same_value(a, b)`` is the exact comparison those tests use: equal values of equal kinds.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from vm.ir.graph import Block, Graph, Module, Node, Value
from vm.ops import registry


def run_reference(module: Module, inputs: Sequence[Any], weights: Any = None, *, free_dead: bool = False) -> Any:
    """Run ``module.main`` on ``inputs``: one value, or a tuple when it returns several.

    Inputs are deep-copied first (in-place ops must not change the caller's arrays).  With
    ``free_dead`` every value is deleted from the environment right after its last use
    (``vm.ir.last_uses``), as the interpreter's MOVE and DROPR free registers;
    reading a freed value then fails, which tests ``insert_drops``.
    """
    run = _Run(module, weights, free_dead)
    outs = run.graph(module.main, copy.deepcopy(list(inputs)))
    return outs[0] if len(outs) == 1 else tuple(outs)


def run_graph(module: Module, graph: Graph, args: Sequence[Any], weights: Any = None) -> list[Any]:
    """Run one graph of ``module`` on ``args`` (not copied); the list of its outputs."""
    return _Run(module, weights, False).graph(graph, args)


class FreedValueError(AssertionError):
    """A value was read after the use that should have been its last."""


class _Run:
    def __init__(self, module: Module, weights: Any, free_dead: bool) -> None:
        self.module, self.weights, self.free_dead = module, weights, free_dead
        self.last: dict[int, dict[Value, Any]] = {}

    def graph(self, graph: Graph, args: Sequence[Any]) -> list[Any]:
        if len(args) != len(graph.inputs):
            raise TypeError(f"{graph.name} takes {len(graph.inputs)} inputs, got {len(args)}")
        if self.free_dead and id(graph) not in self.last:
            from vm.ir.last_uses import last_uses

            # constants are never freed: the interpreter loads them from its table (LOADC)
            self.last[id(graph)] = {
                v: u for v, u in last_uses(graph).items() if v.node is None or v.node.kind != "prim::Constant"
            }
        return self.block(graph.block, dict(zip(graph.inputs, args)), self.last.get(id(graph)))

    def block(self, block: Block, env: dict[Value, Any], last: dict[Value, Any] | None) -> list[Any]:
        for node in block.nodes:
            results = self.node(node, env, last)
            if last is not None:
                for v in node.inputs:
                    if last.get(v) is node:
                        env.pop(v, None)
            for out, value in zip(node.outputs, results):
                env[out] = value
        outs = [_read(env, v) for v in block.returns]
        if last is not None:
            for v in block.returns:
                if last.get(v) is block:
                    env.pop(v, None)
        return outs

    def node(self, node: Node, env: dict[Value, Any], last: dict[Value, Any] | None) -> list[Any]:
        from vm.ir.resolve import UnboundTensor, constant_value, resolve

        args = [_read(env, v) for v in node.inputs]
        kind = node.kind
        if kind == "prim::Constant":
            value = constant_value(node)
            return [value.bind(self.weights) if isinstance(value, UnboundTensor) else value]
        if kind == "prim::If":
            return self.block(node.blocks[0 if args[0] else 1], env, last)
        if kind == "prim::Loop":
            return self.loop(node, args, env, last)
        if kind == "prim::Drop":
            return []
        if kind == "prim::FusionGroup":
            return self.graph(node.attrs["Subgraph"], args)  # type: ignore[arg-type]
        if kind in ("prim::CallFunction", "prim::CallMethod"):
            from compiler.passes.inline_calls import callee_name

            name = callee_name(node, self.module.functions)
            if name is None:
                raise NotImplementedError(f"call of an unknown graph: {node!r}")
            return self.graph(self.module.functions[name], args[1:] if kind == "prim::CallFunction" else args)
        result = registry.bind(resolve(node))(*args)
        if len(node.outputs) == 1:
            return [result]
        return [] if result is None and not node.outputs else list(result)

    def loop(self, node: Node, args: list[Any], env: dict[Value, Any], last: dict[Value, Any] | None) -> list[Any]:
        max_trip, cond, carried = args[0], args[1], args[2:]
        body = node.blocks[0]
        i = 0
        while i < max_trip and cond:
            env.update(zip(body.params, [i, *carried]))
            cond, *carried = self.block(body, env, last)
            i += 1
        return carried


def _read(env: dict[Value, Any], v: Value) -> Any:
    try:
        return env[v]
    except KeyError:
        raise FreedValueError(f"%{v.name} read after its last use") from None


def same_value(a: Any, b: Any) -> bool:
    """Equal values of equal kinds: arrays by dtype, shape and contents (nan equals nan)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and a.shape == b.shape
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same_value(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return (
            type(b) is dict
            and list(a) == list(b)
            and all(same_value(x, y) for x, y in zip(a.values(), b.values()))
        )
    if isinstance(a, float) and isinstance(b, float) and math.isnan(a):
        return math.isnan(b)
    return type(a) is type(b) and a == b
