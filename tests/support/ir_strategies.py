"""Hypothesis strategies for random, well-formed IR: types, attribute payloads, graphs, modules.

Every graph drawn here passes ``compiler.verify.verify``: names are unique, uses are in
scope, ``prim::If``/``prim::Loop`` have the right block arities, constants match their
declared types.  Everything else (op kinds, attributes, types of ordinary op outputs) is
free, so the graphs exercise the parser and printer rather than any operator semantics.

Payloads are drawn as PyTorch could print them: tensor literals use values that survive
PyTorch's 6-digit printing, so ``parse(print(m))`` can be compared with ``m`` exactly.

    from tests.support.ir_strategies import modules, graphs, types
    @given(modules())
    def test_something(module): ...
"""

from __future__ import annotations

import math
from functools import lru_cache
from typing import Any

from hypothesis import strategies as st

from compiler import types as T
from compiler.ir import Block, Graph, Module, Node, TensorLiteral, Value
from compiler.literals import AnnotatedList, format_float

__all__ = ["attr_payloads", "graphs", "modules", "types", "value_names"]

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


@lru_cache(maxsize=None)
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


@lru_cache(maxsize=None)
def types(max_leaves: int = 6) -> st.SearchStrategy[T.Type]:
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


@lru_cache(maxsize=None)
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


@lru_cache(maxsize=None)
def _attr_types() -> st.SearchStrategy[T.Type]:
    # a bare tuple type is not an attribute value (it would read as a tuple of values)
    return types(3).filter(lambda t: not str(t).startswith("("))


@lru_cache(maxsize=None)
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


class _Builder:
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
        return self.draw(st.none() | types(3))

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
        for i in range(len(node.blocks[0].returns)):
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
        sub = _draw_graph(self.draw, depth=1, subgraphs=False, n_inputs=len(inputs))
        if self.draw(st.booleans()):
            node.attrs["cache_id"] = self.draw(st.integers(0, 9))
        node.attrs["Subgraph"] = sub
        for _ in sub.outputs:
            node.add_output(self.name(), self.maybe_type())
        return node


def _draw_graph(draw: st.DrawFn, depth: int, subgraphs: bool, n_inputs: int | None = None) -> Graph:
    builder = _Builder(draw, depth, subgraphs)
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
def graphs(draw: st.DrawFn, depth: int = 2, subgraphs: bool = True) -> Graph:
    """A well-formed graph with nested blocks up to ``depth`` and optional fusion sub-graphs."""
    return _draw_graph(draw, depth, subgraphs)


@st.composite
def modules(draw: st.DrawFn, depth: int = 2) -> Module:
    """A module: a main graph and 0-2 functions (``with NAME = graph(...)``)."""
    main = draw(graphs(depth))
    names = draw(st.lists(_IDENT.filter(lambda s: s not in ("graph", "with", "return")), max_size=2, unique=True))
    functions = {name: draw(graphs(1)) for name in names}
    return Module(main, functions, "<random>")
