"""Random valid graphs for property tests, and the reference evaluator that runs them.

``graphs()`` is THE hypothesis strategy of the project for whole programs: it draws a
``compiler.ir.Module`` (a main graph and a few functions it calls) together with inputs
for it.  Graphs are built with the ``compiler.ir`` API, statement by statement, by a
builder that tracks the shape and dtype of every tensor so that everything it emits is
valid and runs: all shapes come from a small set that broadcasts pairwise, and every
tensor type in the IR is exact (``Float(2, 3)``), so passes may trust the types.

What a drawn program contains: float tensors and int/bool scalars; pointwise ops (unary,
binary with broadcasting, with scalar constants and scalar values, comparisons and
``where``), reductions, transposes (views), scalar arithmetic and comparisons; constants
with many duplicates (``1``, ``1.`` and ``True`` among them); dead code; ``prim::If`` with
outputs, on input flags, computed conditions or constants (including a ``raise`` guarded
by a condition that never holds: a drawn program raises through nothing else, since DCE
may drop a dead op that would raise); ``prim::Loop`` with loop-carried tensors; calls
between functions (``prim::CallFunction``); in-place ops (``aten::add_``) on fresh
tensors created in the same block, also while they sit in a list (``aten::append``,
``aten::stack``); and prints.

``run_reference(module, inputs)`` is the oracle: a direct walk of the IR (JAX's
``eval_jaxpr``: an environment, read, write) that runs each node through
``compiler.resolve`` and ``vm.ops.registry.bind``, with If, Loop, CallFunction,
CallMethod on a known graph, and FusionGroup handled here.  It copies its inputs, so
callers can reuse them.

Profiles: the ``ci`` profile (default) runs 200 examples per property; run 10,000 with
``pytest --hypothesis-profile long tests/passes/test_fuzz.py`` (``dev`` runs 30).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from compiler import types as T
from compiler.ir import Block, Graph, Module, Node, Value
from vm.ops import registry

SHAPES: tuple[tuple[int, ...], ...] = ((), (3,), (2, 3), (1, 3))
UNARY = ("aten::neg", "aten::relu", "aten::sigmoid", "aten::tanh", "aten::abs")
BINARY = ("aten::add", "aten::sub", "aten::mul", "aten::maximum")
REDUCTIONS = ("aten::sum", "aten::mean")
INPLACE = ("aten::add_", "aten::mul_")
INT_CONSTANTS = (0, 1, 2, -1)
FLOAT_CONSTANTS = (1.0, 0.0, 0.5, 2.0, -1.5)


def available(kind: str) -> bool:
    """Is ``kind`` in the operator library (the strategy only emits what can run)?"""
    return bool(registry.overloads(kind)) or registry.has_factory(kind)


@attrs.frozen
class TensorMeta:
    shape: tuple[int, ...]
    dtype: str = "Float"  # PyTorch scalar-type name

    @property
    def type(self) -> T.TensorType:
        return T.TensorType(dtype=self.dtype, sizes=self.shape)


@attrs.define
class Scope:
    """The values visible at a point, by kind; nested blocks see a copy."""

    tensors: list[Value] = attrs.field(factory=list)  # float tensors
    masks: list[Value] = attrs.field(factory=list)  # bool tensors
    ints: list[Value] = attrs.field(factory=list)
    bools: list[Value] = attrs.field(factory=list)
    fresh: list[Value] = attrs.field(factory=list)  # float tensors made in this block, unaliased

    def child(self) -> Scope:
        return Scope(list(self.tensors), list(self.masks), list(self.ints), list(self.bools), [])


class Builder:
    """Emits random valid statements into blocks of one graph."""

    def __init__(self, draw: Callable[..., Any], graph: Graph, functions: dict[str, FunctionSig], depth: int) -> None:
        self.draw = draw
        self.graph = graph
        self.functions = functions
        self.max_depth = depth
        self.meta: dict[Value, TensorMeta] = {}
        self.counter = 0
        self.n: Value | None = None  # main's %n input (0..3 at run time), if any

    # -- emitting -----------------------------------------------------------------------
    def fresh_name(self) -> str:
        self.counter += 1
        return str(self.counter)

    def emit(self, block: Block, kind: str, inputs: Sequence[Value], outs: Sequence[T.Type], **attrs_: Any) -> Node:
        node = Node(kind, attrs=dict(attrs_))
        for v in inputs:
            node.add_input(v)
        for t in outs:
            node.add_output(self.fresh_name(), t)
        block.append(node)
        return node

    def tensor(self, block: Block, kind: str, inputs: Sequence[Value], meta: TensorMeta) -> Value:
        out = self.emit(block, kind, inputs, [meta.type]).output
        self.meta[out] = meta
        return out

    def const(self, block: Block, value: Any, type_: T.Type) -> Value:
        payload = int(value) if type_ == T.BOOL else value
        attrs_ = {} if value is None else {"value": payload}
        return self.emit(block, "prim::Constant", [], [type_], **attrs_).output

    def scalar_const(self, block: Block) -> Value:
        kind = self.draw(st.sampled_from(["int", "float", "bool"]))
        if kind == "int":
            return self.const(block, self.draw(st.sampled_from(INT_CONSTANTS)), T.INT)
        if kind == "float":
            return self.const(block, self.draw(st.sampled_from(FLOAT_CONSTANTS)), T.FLOAT)
        return self.const(block, self.draw(st.booleans()), T.BOOL)

    # -- picking ------------------------------------------------------------------------
    def pick(self, values: Sequence[Value]) -> Value:
        """Any of ``values``, the latest one half of the time (so that chains form and
        less of the program is dead)."""
        if self.draw(st.booleans()):
            return values[-1]
        return values[self.draw(st.integers(0, len(values) - 1))]

    def pick_compatible(self, values: Sequence[Value], shape: tuple[int, ...], into: bool = False) -> Value | None:
        """A tensor broadcastable with ``shape`` (``into``: without growing ``shape``)."""
        ok = []
        for v in values:
            joint = _broadcast(self.meta[v].shape, shape)
            if joint is not None and (not into or joint == shape):
                ok.append(v)
        return self.pick(ok) if ok else None

    # -- statements ---------------------------------------------------------------------
    def block_body(self, block: Block, scope: Scope, n: int, depth: int) -> None:
        for _ in range(n):
            self.statement(block, scope, depth)

    def statement(self, block: Block, scope: Scope, depth: int) -> None:
        choices = ["unary", "binary", "scalar_arg", "where", "reduce", "transpose", "int", "inplace", "const", "repeat"]
        choices += ["list", "print"]
        if depth < self.max_depth:
            choices += ["if", "loop", "raise"]
        if self.functions:
            choices.append("call")
        getattr(self, "stmt_" + self.draw(st.sampled_from(choices)))(block, scope, depth)

    def stmt_unary(self, block: Block, scope: Scope, depth: int) -> None:
        x = self.pick(scope.tensors)
        out = self.tensor(block, self.draw(st.sampled_from(UNARY)), [x], self.meta[x])
        scope.tensors.append(out)
        scope.fresh.append(out)

    def stmt_repeat(self, block: Block, scope: Scope, depth: int) -> None:
        """A copy of an earlier pure tensor op of this block, on the same inputs."""
        earlier = [n for n in block.nodes if n.kind in UNARY + BINARY and len(n.outputs) == 1 and n.output in self.meta]
        if not earlier:
            return self.stmt_unary(block, scope, depth)
        node = self.pick(earlier)
        out = self.tensor(block, node.kind, node.inputs, self.meta[node.output])
        scope.tensors.append(out)
        scope.fresh.append(out)
        return None

    def stmt_binary(self, block: Block, scope: Scope, depth: int) -> None:
        a = self.pick(scope.tensors)
        b = self.pick_compatible(scope.tensors, self.meta[a].shape)
        assert b is not None  # a itself always fits
        kind = self.draw(st.sampled_from(BINARY))
        inputs = [a, b]
        if kind in ("aten::add", "aten::sub") and self.draw(st.booleans()):
            inputs.append(self.const(block, self.draw(st.sampled_from((1, 2))), T.INT))
        shape = _broadcast(self.meta[a].shape, self.meta[b].shape)
        out = self.tensor(block, kind, inputs, TensorMeta(shape))  # type: ignore[arg-type]
        scope.tensors.append(out)
        scope.fresh.append(out)

    def stmt_scalar_arg(self, block: Block, scope: Scope, depth: int) -> None:
        x = self.pick(scope.tensors)
        if scope.ints and self.draw(st.booleans()):
            s = self.pick(scope.ints)
        else:
            value = self.draw(st.sampled_from(INT_CONSTANTS + FLOAT_CONSTANTS))
            s = self.const(block, value, T.FLOAT if isinstance(value, float) else T.INT)
        kind = self.draw(st.sampled_from(["aten::add", "aten::mul", "aten::sub"]))
        inputs = [x, s]
        if kind != "aten::mul":
            inputs.append(self.const(block, 1, T.INT))
        out = self.tensor(block, kind, inputs, self.meta[x])
        scope.tensors.append(out)
        scope.fresh.append(out)

    def stmt_where(self, block: Block, scope: Scope, depth: int) -> None:
        a = self.pick(scope.tensors)
        b = self.pick_compatible(scope.tensors, self.meta[a].shape)
        assert b is not None
        shape = _broadcast(self.meta[a].shape, self.meta[b].shape)
        assert shape is not None
        mask = self.tensor(block, self.draw(st.sampled_from(["aten::gt", "aten::lt"])), [a, b], TensorMeta(shape, "Bool"))
        scope.masks.append(mask)
        out = self.tensor(block, "aten::where", [mask, a, b], TensorMeta(shape))
        scope.tensors.append(out)
        scope.fresh.append(out)

    def stmt_reduce(self, block: Block, scope: Scope, depth: int) -> None:
        kinds = [k for k in REDUCTIONS if available(k)]
        if not kinds:
            return self.stmt_unary(block, scope, depth)
        x = self.pick(scope.tensors)
        out = self.tensor(block, self.draw(st.sampled_from(kinds)), [x, self.const(block, None, T.NONE)], TensorMeta(()))
        scope.tensors.append(out)
        scope.fresh.append(out)

    def stmt_transpose(self, block: Block, scope: Scope, depth: int) -> None:
        """``x.t()`` (a view of x), sometimes ``x.t().t()``; only for rank <= 2 (t raises
        otherwise, and a drawn program may only raise through an explicit raise)."""
        small = [v for v in scope.tensors if len(self.meta[v].shape) <= 2]
        if not small:
            return self.stmt_unary(block, scope, depth)
        x = self.pick(small)
        out = self.tensor(block, "aten::t", [x], TensorMeta(self.meta[x].shape[::-1]))
        if self.draw(st.booleans()):
            out = self.tensor(block, "aten::t", [out], self.meta[x])
        scope.tensors.append(out)

    def stmt_int(self, block: Block, scope: Scope, depth: int) -> None:
        a = self.pick(scope.ints) if scope.ints and self.draw(st.booleans()) else self.const(block, self.draw(st.sampled_from(INT_CONSTANTS)), T.INT)
        b = self.const(block, self.draw(st.sampled_from(INT_CONSTANTS)), T.INT)
        if self.draw(st.booleans()):
            kind = self.draw(st.sampled_from(["aten::add", "aten::sub", "aten::mul"]))
            scope.ints.append(self.emit(block, kind, [a, b], [T.INT]).output)
        else:
            kind = self.draw(st.sampled_from(["aten::lt", "aten::eq", "aten::gt"]))
            scope.bools.append(self.emit(block, kind, [a, b], [T.BOOL]).output)

    def stmt_inplace(self, block: Block, scope: Scope, depth: int) -> None:
        """``t.add_(other)`` on a fresh ``t``; sometimes read ``t`` just before and use that
        read just after, the pattern a pass must not reorder across the write."""
        if not scope.fresh:
            return self.stmt_binary(block, scope, depth)
        target = self.pick(scope.fresh)
        other = self.pick_compatible(scope.tensors, self.meta[target].shape, into=True)
        if other is None:
            return None
        read_around = self.draw(st.booleans())
        if read_around:
            before = self.tensor(block, self.draw(st.sampled_from(UNARY)), [target], self.meta[target])
        kind = self.draw(st.sampled_from(INPLACE))
        inputs = [target, other] + ([self.const(block, 1, T.INT)] if kind == "aten::add_" else [])
        out = self.tensor(block, kind, inputs, self.meta[target])
        scope.tensors.append(out)  # the same tensor as target: not fresh (an alias)
        if read_around:
            after = self.tensor(block, "aten::mul", [before, target], self.meta[target])
            scope.tensors.append(after)
            scope.fresh.append(after)
        return None

    def stmt_list(self, block: Block, scope: Scope, depth: int) -> None:
        """``stack([a, b] (+ append c))``, sometimes writing to ``a`` in place while it sits
        in the list: the write must be seen through the list."""
        a = self.pick(scope.tensors)
        same = [v for v in scope.tensors if self.meta[v] == self.meta[a]]
        items = [a, self.pick(same)]
        list_type = T.ListType(T.TENSOR)
        lst = self.emit(block, "prim::ListConstruct", items, [list_type]).output
        if self.draw(st.booleans()):
            extra = self.pick(same)
            self.emit(block, "aten::append", [lst, extra], [list_type])
            items.append(extra)
        if a in scope.fresh and self.draw(st.booleans()):
            self.tensor(block, "aten::mul_", [a, self.const(block, 2.0, T.FLOAT)], self.meta[a])
        out = self.tensor(block, "aten::stack", [lst, self.const(block, 0, T.INT)], TensorMeta((len(items), *self.meta[a].shape)))
        scope.tensors.append(out)
        scope.fresh.append(out)

    def stmt_print(self, block: Block, scope: Scope, depth: int) -> None:
        """``print(x)``: an effect DCE must keep (the evaluator's caller sees stdout)."""
        self.emit(block, "prim::Print", [self.pick(scope.tensors)], [])

    def stmt_const(self, block: Block, scope: Scope, depth: int) -> None:
        v = self.scalar_const(block)
        (scope.ints if v.type == T.INT else scope.bools if v.type == T.BOOL else []).append(v)

    def condition(self, block: Block, scope: Scope) -> Value:
        if scope.bools and self.draw(st.integers(0, 3)) > 0:
            return self.pick(scope.bools)
        return self.const(block, self.draw(st.booleans()), T.BOOL)

    def stmt_if(self, block: Block, scope: Scope, depth: int) -> None:
        cond = self.condition(block, scope)
        shapes = sorted({self.meta[v].shape for v in scope.tensors})
        out_shapes = self.draw(st.lists(st.sampled_from(shapes), max_size=2))
        node = self.emit(block, "prim::If", [cond], [TensorMeta(s).type for s in out_shapes])
        for out, s in zip(node.outputs, out_shapes):
            self.meta[out] = TensorMeta(s)
        for _ in range(2):
            inner = node.add_block()
            inner_scope = scope.child()
            self.block_body(inner, inner_scope, self.draw(st.integers(0, 3)), depth + 1)
            for s in out_shapes:
                inner.add_return(self.pick([v for v in inner_scope.tensors if self.meta[v].shape == s]))
        scope.tensors.extend(node.outputs)

    def stmt_loop(self, block: Block, scope: Scope, depth: int) -> None:
        if self.n is not None and self.draw(st.booleans()):
            trip = self.n  # the graph's %n input: 0..3
        else:
            trip = self.const(block, self.draw(st.integers(-1, 3)), T.INT)
        cond = self.const(block, self.draw(st.integers(0, 4)) > 0, T.BOOL)
        carried = self.draw(st.lists(st.sampled_from(scope.tensors), max_size=2))
        node = self.emit(block, "prim::Loop", [trip, cond, *carried], [self.meta[v].type for v in carried])
        body = node.add_block()
        body_scope = scope.child()
        i = body.add_param(self.fresh_name(), T.INT)
        body_scope.ints.append(i)
        params = []
        for v in carried:
            p = body.add_param(self.fresh_name(), self.meta[v].type)
            self.meta[p] = self.meta[v]
            params.append(p)
        body_scope.tensors.extend(params)
        self.block_body(body, body_scope, self.draw(st.integers(0, 3)), depth + 1)
        if self.draw(st.booleans()):
            body.add_return(self.const(body, True, T.BOOL))
        else:
            limit = self.const(body, self.draw(st.integers(0, 2)), T.INT)
            body.add_return(self.emit(body, "aten::lt", [i, limit], [T.BOOL]).output)
        for v in carried:
            body.add_return(self.pick([w for w in body_scope.tensors if self.meta[w] == self.meta[v]]))
        for out, v in zip(node.outputs, carried):
            self.meta[out] = self.meta[v]
        scope.tensors.extend(node.outputs)

    def stmt_raise(self, block: Block, scope: Scope, depth: int) -> None:
        """A raise behind a condition that never holds at run time (%n >= 0, or False)."""
        if self.n is not None and self.draw(st.booleans()):
            zero = self.const(block, 0, T.INT)
            cond = self.emit(block, "aten::lt", [self.n, zero], [T.BOOL]).output
        else:
            cond = self.const(block, False, T.BOOL)
        node = self.emit(block, "prim::If", [cond], [])
        then = node.add_block()
        msg = self.const(then, "boom", T.STR)
        self.emit(then, "prim::RaiseException", [msg], [])
        node.add_block()

    def stmt_call(self, block: Block, scope: Scope, depth: int) -> None:
        name = self.draw(st.sampled_from(sorted(self.functions)))
        sig = self.functions[name]
        args = []
        for meta in sig.params:
            matching = [v for v in scope.tensors if self.meta[v] == meta]
            if not matching:
                return
            args.append(self.pick(matching))
        fn = self.emit(block, "prim::Constant", [], [T.FUNCTION], name=name).output
        out = self.tensor(block, "prim::CallFunction", [fn, *args], sig.result)
        scope.tensors.append(out)
        return


@attrs.frozen
class FunctionSig:
    params: tuple[TensorMeta, ...]
    result: TensorMeta


def _broadcast(a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...] | None:
    try:
        return tuple(np.broadcast_shapes(a, b))
    except ValueError:
        return None


def _tensor_params(builder: Builder, graph: Graph, scope: Scope, metas: Sequence[TensorMeta]) -> None:
    for meta in metas:
        p = graph.block.add_param(f"x{len(graph.inputs)}", meta.type)
        builder.meta[p] = meta
        scope.tensors.append(p)


@st.composite
def modules(draw: Callable[..., Any], max_statements: int = 8, max_depth: int = 2, max_functions: int = 2) -> Module:
    """A random valid Module; its main graph takes (tensors..., %n: int, %flag: bool)."""
    functions: dict[str, Graph] = {}
    sigs: dict[str, FunctionSig] = {}
    for k in range(draw(st.integers(0, max_functions))):
        graph = Graph(name=f"helper{k}")
        builder = Builder(draw, graph, dict(sigs), depth=1)
        scope = Scope()
        metas = tuple(TensorMeta(s) for s in draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=2)))
        _tensor_params(builder, graph, scope, metas)
        builder.block_body(graph.block, scope, draw(st.integers(1, 4)), depth=1)
        result = scope.tensors[-1]
        graph.block.add_return(result)
        functions[graph.name] = graph
        sigs[graph.name] = FunctionSig(metas, builder.meta[result])
    main = Graph()
    builder = Builder(draw, main, sigs, max_depth)
    scope = Scope()
    _tensor_params(builder, main, scope, [TensorMeta(s) for s in draw(st.lists(st.sampled_from(SHAPES), min_size=1, max_size=3))])
    builder.n = main.block.add_param("n", T.INT)
    scope.ints.append(builder.n)
    scope.bools.append(main.block.add_param("flag", T.BOOL))
    builder.block_body(main.block, scope, draw(st.integers(1, max_statements)), depth=0)
    results = [scope.tensors[-1], *draw(st.lists(st.sampled_from(scope.tensors + scope.ints[:1]), max_size=2))]
    for v in results:
        main.block.add_return(v)
    return Module(main, functions)


def input_strategy(graph: Graph) -> st.SearchStrategy[list[Any]]:
    """Inputs for ``graph``'s parameters as drawn by ``modules`` (tensors, %n, %flag)."""
    parts: list[st.SearchStrategy[Any]] = []
    for p in graph.inputs:
        if isinstance(p.type, T.TensorType):
            shape = p.type.sizes or ()
            elements = st.floats(-4, 4, width=32, allow_subnormal=False)
            parts.append(hnp.arrays(np.float32, shape, elements=elements))  # type: ignore[arg-type]
        elif p.type == T.INT:
            parts.append(st.integers(0, 3))
        else:
            parts.append(st.booleans())
    return st.tuples(*parts).map(list)


class Case(tuple):  # type: ignore[type-arg]
    """``(module, inputs)``, shown as IR text in hypothesis reports (not as attrs fields)."""

    def __repr__(self) -> str:
        module, inputs = self
        try:
            from compiler.printer import print_module

            text = print_module(module)
        except ImportError:
            text = repr(module)
        return f"{text}\ninputs = {inputs!r}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


@st.composite
def graphs(draw: Callable[..., Any], **options: Any) -> tuple[Module, list[Any]]:
    """A random valid Module and inputs for its main graph: a ``(module, inputs)`` pair."""
    module = draw(modules(**options))
    return Case((module, draw(input_strategy(module.main))))


# ---------------------------------------------------------------------------------------
# The reference evaluator


def run_reference(module: Module, inputs: Sequence[Any], weights: Any = None, *, free_dead: bool = False) -> Any:
    """Run ``module.main`` on ``inputs``: one value, or a tuple when it returns several.

    Inputs are deep-copied first (in-place ops must not change the caller's arrays).  With
    ``free_dead`` every value is deleted from the environment right after its last use
    (``compiler.analysis.last_uses``), as the interpreter's MOVE and DROPR free registers;
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
            from compiler.analysis.last_uses import last_uses

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
        from compiler.resolve import UnboundTensor, constant_value, resolve

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
