"""The hypothesis strategies of the test suite: random programs that run, and random IR
that parses.

**Programs that run.** ``graphs()`` is THE strategy for whole programs: it draws a
``vm.ir.graph.Module`` (a main graph and a few functions it calls) together with inputs
for it.  Graphs are built with the ``vm.ir.graph`` API, statement by statement, by a
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
``aten::stack``); and prints.  ``tests/support/reference.py`` runs them as the oracle.

**IR that parses.** ``ir_modules()``, ``ir_graphs()``, ``ir_types()`` and
``attr_payloads()`` draw well-formed IR for the parser and printer: every graph passes
``compiler.verify.verify`` (unique names, uses in scope, ``prim::If``/``prim::Loop``
block arities, constants of their declared types), and everything else (op kinds,
attributes, types of ordinary op outputs) is free, so these graphs exercise the text
format rather than any operator.  Payloads are drawn as PyTorch could print them: tensor
literals use values that survive PyTorch's 6-digit printing, so ``parse(print(m))`` can
be compared with ``m`` exactly.

Profiles: the ``ci`` profile (default) runs 200 examples per property; run 10,000 with
``pytest --hypothesis-profile long tests/passes/test_fuzz.py`` (``dev`` runs 30).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from functools import cache
from typing import Any

import attrs
import numpy as np
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from compiler import types as T
from vm.ir.graph import Block, Graph, Module, Node, TensorLiteral, Value
from vm.ir.literals import AnnotatedList, format_float
from vm.ir.printer import print_module
from vm.ops import registry

__all__ = [
    "attr_payloads", "graphs", "input_strategy", "ir_graphs", "ir_modules", "ir_types", "modules", "value_names",
]  # fmt: skip

# ---------------------------------------------------------------------------------------
# Programs that run

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
        return f"{print_module(module)}\ninputs = {inputs!r}"

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(repr(self))


@st.composite
def graphs(draw: Callable[..., Any], **options: Any) -> tuple[Module, list[Any]]:
    """A random valid Module and inputs for its main graph: a ``(module, inputs)`` pair."""
    module = draw(modules(**options))
    return Case((module, draw(input_strategy(module.main))))


# ---------------------------------------------------------------------------------------
# Well-formed IR for the parser and the printer

_LEAVES = [T.INT, T.FLOAT, T.BOOL, T.STR, T.NONE, T.DEVICE, T.SCALAR, T.ANY, T.FUNCTION, T.SCALAR_TYPE]
_DTYPES = ["Float", "Long", "Double", "Int", "Bool", "Half"]
# prim::GetAttr is not here: the verifier requires its object and name, which a random op lacks
_KINDS = ["aten::add", "aten::mul", "aten::__getitem__", "my_ns::op", "aten::sub", "foo::bar2", "aten::_cat"]
_IDENT = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,6}", fullmatch=True)
_TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)

_SOURCES = st.from_regex(r"[a-z_/]{1,8}\.py:[0-9]{1,3}:[0-9]{1,2}", fullmatch=True)
_SCOPES = st.from_regex(r"__module(\.[a-z0-9_]{1,4}){0,2}(/[a-z_.0-9]{1,6})?", fullmatch=True)
_CLASSES = st.from_regex(r"__torch__(\.[A-Za-z_][A-Za-z0-9_]{0,5}){1,3}", fullmatch=True).map(T.ClassType)
value_names = st.one_of(
    st.integers(0, 10**6).map(str),
    st.from_regex(r"[a-z_][a-z0-9_]{0,5}(\.[0-9]{1,3})?", fullmatch=True),
    st.from_regex(r"self(\.[a-z0-9_]{1,4}){1,3}", fullmatch=True),
)


@cache
def _tensor_types() -> st.SearchStrategy[T.Type]:
    sizes = st.lists(st.one_of(st.none(), st.integers(0, 64)), max_size=4)

    @st.composite
    def refined(draw: st.DrawFn) -> T.Type:
        dims = draw(sizes)
        strides = draw(st.none() | st.lists(st.integers(0, 512), min_size=len(dims), max_size=len(dims)))
        return T.TensorType(
            dtype=draw(st.sampled_from(_DTYPES)),
            sizes=tuple(dims),
            strides=None if strides is None else tuple(strides),
            requires_grad=draw(st.none() | st.booleans()),
            device=draw(st.none() | st.sampled_from(["cpu", "cuda:1"])),
        )

    return st.one_of(st.just(T.TENSOR), refined())


@cache
def ir_types(max_leaves: int = 6) -> st.SearchStrategy[T.Type]:
    """Any IR type, nested (lists, optionals, tuples, dicts, unions, futures, classes)."""
    leaves = st.one_of(
        st.sampled_from(_LEAVES),
        _tensor_types(),
        _CLASSES,
    )
    return st.recursive(
        leaves,
        lambda inner: st.one_of(
            inner.map(T.ListType),
            inner.filter(lambda t: not isinstance(t, T.OptionalType)).map(T.OptionalType),
            st.lists(inner, max_size=3).map(lambda ts: T.TupleType(tuple(ts))),
            st.lists(inner, min_size=1, max_size=3).map(
                lambda ts: T.TupleType(tuple(ts), tuple(f"f{i}" for i in range(len(ts))))
            ),
            st.tuples(st.sampled_from([T.STR, T.INT]), inner).map(lambda kv: T.DictType(*kv)),
            st.lists(inner, min_size=2, max_size=3).map(lambda ts: T.UnionType(tuple(ts))),
            inner.map(T.FutureType),
        ),
        max_leaves=max_leaves,
    )


@cache
def _floats(typed: bool = True) -> st.SearchStrategy[float]:
    """Floats; PyTorch prints an integral double >= 1e10 like an int (``10000000000000000``),
    which only a float-typed constant can read back as a float, so ``typed=False`` avoids them."""
    floats = st.one_of(
        st.floats(allow_nan=True, allow_infinity=True),
        st.sampled_from([0.0, -0.0, 1.0, -1.0, 0.1, 1e-5, 1e20, 1e16, 5e-324, 123456789.0]),
    )
    return floats if typed else floats.filter(lambda f: not format_float(f).lstrip("-").isdigit())


@st.composite
def _tensor_literals(draw: st.DrawFn) -> TensorLiteral:
    """``<Tensor>``, ``{v}`` or the long form, with values that print exactly."""
    form = draw(st.sampled_from(["opaque", "scalar", "long"]))
    if form == "opaque":
        return TensorLiteral(None)
    exact = st.integers(-40, 40).map(lambda k: k / 4)
    if form == "scalar":
        # C++ prints a float 2.0 as `{2}`: integral values come back as ints, so draw them so
        return TensorLiteral((draw(st.one_of(st.integers(-999, 999), exact.filter(lambda v: v != int(v)))),))
    dtype = draw(st.sampled_from(["Float", "Long", "Bool"]))
    shape = tuple(draw(st.lists(st.integers(0, 3), min_size=1, max_size=3)))
    n = math.prod(shape)
    elem = {"Float": exact, "Long": st.integers(-99, 99), "Bool": st.booleans()}[dtype]
    values = tuple(draw(st.lists(elem, min_size=n, max_size=n)))
    return TensorLiteral(values, shape, dtype, approximate=dtype == "Float")


@cache
def _attr_types() -> st.SearchStrategy[T.Type]:
    # a bare tuple type is not an attribute value (it would read as a tuple of values)
    return ir_types(3).filter(lambda t: not str(t).startswith("("))


@cache
def attr_payloads(max_leaves: int = 8) -> st.SearchStrategy[Any]:
    """Any attribute payload: numbers, strings, None, lists, tuples, dicts, types, tensors."""
    scalars = st.one_of(
        st.integers(-(2**63), 2**63 - 1), _floats(typed=False), st.booleans(), _TEXT, st.none(), _tensor_literals(), _attr_types()
    )
    return st.recursive(
        scalars,
        lambda inner: st.one_of(
            st.lists(inner, max_size=3),
            st.lists(inner, max_size=3).map(tuple),
            st.dictionaries(st.one_of(_TEXT, st.integers(-9, 9)), inner, max_size=3),
            st.lists(st.integers(-9, 9), max_size=2).map(lambda xs: AnnotatedList(xs, "List[int]")),
        ),
        max_leaves=max_leaves,
    )


_CONSTANTS: list[tuple[T.Type, st.SearchStrategy[Any]]] = [
    (T.INT, st.integers(-(2**63), 2**63 - 1)),
    (T.FLOAT, _floats()),
    (T.BOOL, st.sampled_from([0, 1])),
    (T.STR, _TEXT),
    (T.ListType(T.INT), st.lists(st.integers(-5, 5), max_size=3)),
    (T.ListType(T.FLOAT), st.lists(_floats(), max_size=3)),
    (T.TENSOR, _tensor_literals()),
    (T.DictType(T.STR, T.INT), st.dictionaries(_TEXT, st.integers(-5, 5), max_size=2)),
]


class _SyntaxBuilder:
    """Draws nodes into blocks, tracking the names taken and the values in scope."""

    def __init__(self, draw: st.DrawFn, depth: int, subgraphs: bool) -> None:
        self.draw = draw
        self.depth = depth
        self.subgraphs = subgraphs
        self.taken: set[str] = set()

    def name(self) -> str:
        name = self.draw(value_names)
        while name in self.taken:
            name += "_"
        self.taken.add(name)
        return name

    def maybe_type(self) -> T.Type | None:
        return self.draw(st.none() | ir_types(3))

    def fill(self, block: Block, scope: list[Value], level: int) -> None:
        scope = list(scope) + list(block.params)
        for _ in range(self.draw(st.integers(0, 4 if level == 0 else 2))):
            node = self.node(scope, level)
            block.append(node)
            scope.extend(node.outputs)

    def pick(self, scope: list[Value], n: int) -> list[Value]:
        if not scope:
            return []
        return self.draw(st.lists(st.sampled_from(scope), min_size=n, max_size=n))

    def node(self, scope: list[Value], level: int) -> Node:
        choices = ["constant", "op", "op", "list"]
        if level < self.depth and scope:
            # blocks only on If/Loop: the parser reads them on any node, the verifier refuses
            # them elsewhere (tests/parser/test_irparser.py covers those texts)
            choices += ["if", "loop"]
        if self.subgraphs:
            choices.append("group")
        what = self.draw(st.sampled_from(choices))
        node = getattr(self, "_" + what)(scope, level)
        if self.draw(st.booleans()):
            node.source = self.draw(_SOURCES)
        if self.draw(st.integers(0, 5)) == 0:
            node.scope = self.draw(_SCOPES)
        return node

    def _constant(self, scope: list[Value], level: int) -> Node:
        node = Node("prim::Constant")
        kind = self.draw(st.integers(0, len(_CONSTANTS) + 1))
        if kind == len(_CONSTANTS):  # None
            node.add_output(self.name(), T.NONE)
        elif kind == len(_CONSTANTS) + 1:  # a function reference
            node.attrs["name"] = self.draw(_IDENT)
            node.add_output(self.name(), T.FUNCTION)
        else:
            type_, payloads = _CONSTANTS[kind]
            node.attrs["value"] = self.draw(payloads)
            node.add_output(self.name(), type_)
        return node

    def _op(self, scope: list[Value], level: int) -> Node:
        draw = self.draw
        if draw(st.integers(0, 6)) == 0:
            node = Node("prim::PythonOp", attrs={"^name": draw(_IDENT)})
            node.attrs.update(draw(st.dictionaries(_IDENT, attr_payloads(4), max_size=2)))
            node.attrs["^scalars"] = draw(st.sampled_from(["()", "(2.5)", "(1, None)"]))
        else:
            node = Node(draw(st.sampled_from(_KINDS)))
            node.attrs.update(draw(st.dictionaries(_IDENT, attr_payloads(5), max_size=2)))
        for value in self.pick(scope, draw(st.integers(0, 3))):
            node.add_input(value)
        for _ in range(draw(st.integers(0, 3))):
            node.add_output(self.name(), self.maybe_type())
        return node

    def _list(self, scope: list[Value], level: int) -> Node:
        node = Node("prim::ListConstruct")
        for value in self.pick([v for v in scope if v.type == T.INT], self.draw(st.integers(0, 3))):
            node.add_input(value)
        node.add_output(self.name(), T.ListType(T.INT))
        return node

    def _if(self, scope: list[Value], level: int) -> Node:
        node = Node("prim::If")
        node.add_input(self.draw(st.sampled_from(scope)))
        n_out = self.draw(st.integers(0, 2))
        for _ in range(2):
            block = node.add_block()
            self.fill(block, scope, level + 1)
            inner = scope + [o for n in block.nodes for o in n.outputs]
            for value in self.pick(inner, n_out):
                block.add_return(value)
        for _ in range(len(node.blocks[0].returns)):
            node.add_output(self.name(), None)
        return node

    def _loop(self, scope: list[Value], level: int) -> Node:
        node = Node("prim::Loop")
        carried = self.pick(scope, self.draw(st.integers(0, 2)))
        for value in self.pick(scope, 2) + carried:
            node.add_input(value)
        body = node.add_block()
        body.add_param(self.name(), T.INT)
        for _ in carried:
            body.add_param(self.name(), None)
        self.fill(body, scope, level + 1)
        inner = scope + body.params + [o for n in body.nodes for o in n.outputs]
        for value in self.pick(inner, len(carried) + 1):
            body.add_return(value)
        for _ in carried:
            node.add_output(self.name(), None)
        return node

    def _group(self, scope: list[Value], level: int) -> Node:
        node = Node(self.draw(st.sampled_from(["prim::FusionGroup", "prim::TensorExprGroup", "prim::DifferentiableGraph"])))
        inputs = self.pick(scope, self.draw(st.integers(0, 2)))
        for value in inputs:
            node.add_input(value)
        sub = _draw_syntax_graph(self.draw, depth=1, subgraphs=False, n_inputs=len(inputs))
        if self.draw(st.booleans()):
            node.attrs["cache_id"] = self.draw(st.integers(0, 9))
        node.attrs["Subgraph"] = sub
        for _ in sub.outputs:
            node.add_output(self.name(), self.maybe_type())
        return node


def _draw_syntax_graph(draw: st.DrawFn, depth: int, subgraphs: bool, n_inputs: int | None = None) -> Graph:
    builder = _SyntaxBuilder(draw, depth, subgraphs)
    graph = Graph()
    count = draw(st.integers(0, 3)) if n_inputs is None else n_inputs
    for _ in range(count):
        graph.block.add_param(builder.name(), builder.maybe_type())
    builder.fill(graph.block, [], 0)
    visible = graph.inputs + [o for n in graph.nodes for o in n.outputs]
    for value in builder.pick(visible, draw(st.integers(0, 3))):
        graph.block.add_return(value)
    return graph


@st.composite
def ir_graphs(draw: st.DrawFn, depth: int = 2, subgraphs: bool = True) -> Graph:
    """A well-formed graph with nested blocks up to ``depth`` and optional fusion sub-graphs."""
    return _draw_syntax_graph(draw, depth, subgraphs)


@st.composite
def ir_modules(draw: st.DrawFn, depth: int = 2) -> Module:
    """A module: a main graph and 0-2 functions (``with NAME = graph(...)``)."""
    main = draw(ir_graphs(depth))
    names = draw(st.lists(_IDENT.filter(lambda s: s not in ("graph", "with", "return")), max_size=2, unique=True))
    functions = {name: draw(ir_graphs(1)) for name in names}
    return Module(main, functions, "<random>")
