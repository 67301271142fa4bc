"""Overload resolution: the most specific schema wins, defaults fill in, errors list all."""

from __future__ import annotations

import numpy as np
import pytest

from compiler import types as T
from compiler.diagnostics import CompileError, Span
from vm.ir.graph import Graph, Node, TensorLiteral
from vm.ir.resolve import (
    FixedList,
    TypeVar,
    UnboundTensor,
    constant_value,
    parse_schema_type,
    resolve,
    resolve_all,
)
from vm.ops.registry import OpRef, bind, register_op

# PyTorch's own schemas for aten::add (torch._C._jit_get_schemas_for_operator), registered
# under a test namespace so the tests do not depend on which kernels other modules hold.
ADD_SCHEMAS = [
    "test::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor",
    "test::add.Scalar(Tensor self, Scalar other, Scalar alpha=1) -> Tensor",
    "test::add.t(t[] a, t[] b) -> t[]",
    "test::add.str(str a, str b) -> str",
    "test::add.int(int a, int b) -> int",
    "test::add.float(float a, float b) -> float",
    "test::add.int_float(int a, float b) -> float",
    "test::add.float_int(float a, int b) -> float",
    "test::add(Scalar a, Scalar b) -> Scalar",
    "test::getitem.t(t[](a) list, int idx) -> t(*)",
    "test::getitem.str(str s, int index) -> str",
    "test::getitem.Dict_str(Dict(str, t) self, str key) -> t(*)",
    "test::getitem.Dict_int(Dict(int, t) self, int key) -> t(*)",
    "test::getitem.Dict_Tensor(Dict(Tensor, t) self, Tensor key) -> t(*)",
    "test::conv(Tensor input, Tensor weight, Tensor? bias=None, int[2] stride=1, int reduction=Mean) -> Tensor",
    "test::opt(Tensor? x) -> Tensor",
    "test::opt.plain(Tensor x) -> Tensor",
    "test::append.t(t[](a!) self, t(c -> *) el) -> t[](a!)",
    "test::zeros(int[] size, *, ScalarType? dtype=None, Device? device=None) -> Tensor",
    "test::cat(Tensor[] tensors, int dim=0) -> Tensor",
    "test::ambiguous.a(t x) -> int",
    "test::ambiguous.b(t x) -> float",
]


@pytest.fixture(scope="module", autouse=True)
def _register() -> None:
    for schema in ADD_SCHEMAS:
        register_op(schema, lambda *args, s=schema: (s, args), replace=True)


def node(kind: str, *types: T.Type | None, outs: tuple[T.Type | None, ...] = (None,), **attrs: object) -> Node:
    g = Graph()
    values = [g.block.add_param(f"a{i}", t) for i, t in enumerate(types)]
    n = Node(kind, attrs=dict(attrs), span=Span("m.ir", 3, 14))
    for v in values:
        n.add_input(v)
    for i, t in enumerate(outs):
        n.add_output(f"r{i}", t)
    g.block.append(n)
    return n


def chosen(kind: str, *types: T.Type | None, outs: tuple[T.Type | None, ...] = (None,)) -> str:
    return resolve(node(kind, *types, outs=outs)).name


FLOAT_T = T.TensorType(dtype="Float", sizes=(2, 3))


@pytest.mark.parametrize(
    ("types", "expected"),
    [
        ((T.INT, T.INT), "test::add.int"),
        ((T.FLOAT, T.FLOAT), "test::add.float"),
        ((T.INT, T.FLOAT), "test::add.int_float"),
        ((T.FLOAT, T.INT), "test::add.float_int"),
        ((T.TENSOR, T.INT), "test::add.Scalar"),
        ((FLOAT_T, T.FLOAT), "test::add.Scalar"),
        ((T.TENSOR, FLOAT_T), "test::add.Tensor"),
        ((None, None), "test::add.Tensor"),  # an untyped value is a Tensor
        ((T.TENSOR, T.TENSOR, T.INT), "test::add.Tensor"),
        ((T.STR, T.STR), "test::add.str"),
        ((T.ListType(T.INT), T.ListType(T.INT)), "test::add.t"),
        ((T.SCALAR, T.INT), "test::add"),
        ((T.NUMBER, T.NUMBER), "test::add"),
    ],
)
def test_add_picks_the_most_specific_overload(types: tuple[T.Type | None, ...], expected: str) -> None:
    assert chosen("test::add", *types) == expected


def test_getitem_on_lists_strings_and_dicts() -> None:
    assert chosen("test::getitem", T.ListType(T.TENSOR), T.INT) == "test::getitem.t"
    assert chosen("test::getitem", T.STR, T.INT) == "test::getitem.str"
    assert chosen("test::getitem", T.DictType(T.STR, T.INT), T.STR) == "test::getitem.Dict_str"
    assert chosen("test::getitem", T.DictType(T.INT, T.ListType(T.INT)), T.INT) == "test::getitem.Dict_int"
    assert chosen("test::getitem", T.DictType(T.TENSOR, T.INT), FLOAT_T) == "test::getitem.Dict_Tensor"


def test_type_variable_binds_consistently() -> None:
    """``add.t(t[] a, t[] b)`` needs both lists of one element type."""
    with pytest.raises(CompileError):
        resolve(node("test::add", T.ListType(T.INT), T.ListType(T.STR)))
    assert chosen("test::append", T.ListType(T.TENSOR), FLOAT_T, outs=(T.ListType(T.TENSOR),)) == "test::append.t"
    opt_list = T.ListType(T.OptionalType(T.TENSOR))
    assert chosen("test::append", opt_list, T.TENSOR, outs=(opt_list,)) == "test::append.t"
    assert chosen("test::append", opt_list, T.NONE, outs=(opt_list,)) == "test::append.t"


def test_missing_trailing_arguments_take_their_defaults() -> None:
    ref = resolve(node("test::add", T.TENSOR, T.TENSOR))
    assert ref == OpRef("test::add.Tensor", 2, 1, defaults=(1,))
    ref = resolve(node("test::conv", T.TENSOR, T.TENSOR))
    # symbolic and broadcast defaults become values: int[2] stride=1 -> [1, 1], Mean -> 1
    assert ref.defaults == (None, [1, 1], 1)
    assert bind(ref)("x", "w")[1] == ("x", "w", None, [1, 1], 1)


def test_optional_and_fixed_lists() -> None:
    assert chosen("test::opt", T.TENSOR) == "test::opt.plain"
    assert chosen("test::opt", T.NONE) == "test::opt"
    assert chosen("test::opt", T.OptionalType(T.TENSOR)) == "test::opt"
    # int[2] accepts a single int, and ScalarType? accepts an int dtype code
    assert chosen("test::conv", T.TENSOR, T.TENSOR, T.NONE, T.INT) == "test::conv"
    assert chosen("test::zeros", T.ListType(T.INT), T.INT, T.DEVICE) == "test::zeros"
    assert chosen("test::zeros", T.ListType(T.INT), T.NONE, T.NONE) == "test::zeros"
    assert chosen("test::cat", T.ListType(T.TENSOR)) == "test::cat"
    with pytest.raises(CompileError):
        resolve(node("test::cat", T.ListType(T.INT)))
    with pytest.raises(CompileError):  # an Optional value cannot go where a Tensor must
        resolve(node("test::add", T.OptionalType(T.TENSOR), T.TENSOR))


def test_output_types_break_ties() -> None:
    assert chosen("test::ambiguous", T.INT, outs=(T.INT,)) == "test::ambiguous.a"
    assert chosen("test::ambiguous", T.INT, outs=(T.FLOAT,)) == "test::ambiguous.b"


def test_unmatched_overload_error_names_span_types_and_closest_schemas() -> None:
    with pytest.raises(CompileError) as info:
        resolve(node("test::add", T.STR, T.INT))
    err = info.value
    assert err.span == Span("m.ir", 3, 14)
    text = str(err)
    assert text.startswith("m.ir:3:14: no overload of test::add accepts (str, int)")
    assert "test::add.str(str a, str b) -> str" in text
    assert "test::add.int(int a, int b) -> int" in text


def test_unknown_operator_suggests_close_names() -> None:
    with pytest.raises(CompileError) as info:
        resolve(node("test::ad", T.INT, T.INT))
    assert "unknown operator test::ad(int, int)" in str(info.value)
    assert "did you mean test::add" in str(info.value)


def test_resolve_all_reports_every_bad_node() -> None:
    g = Graph()
    a = g.block.add_param("a", T.INT)
    for kind in ("test::nope", "test::add", "test::neither"):
        n = Node(kind, span=Span("m.ir", 1, 1))
        n.add_input(a)
        n.add_output("r", T.INT)
        g.block.append(n)
    resolved, errors = resolve_all(g)
    assert [e.message.startswith(prefix) for e, prefix in zip(errors, (
        "unknown operator test::nope(int)", "no overload of test::add", "unknown operator test::neither(int)"
    ))] == [True, True, True]
    assert len(errors) == 3
    assert resolved == {}


def test_schema_types_parse() -> None:
    assert parse_schema_type("int[]?") == T.OptionalType(T.ListType(T.INT))
    assert parse_schema_type("SymInt[2]") == FixedList(T.INT, 2)
    assert parse_schema_type("Dict(str, t)") == T.DictType(T.STR, TypeVar("t"))
    assert parse_schema_type("(Tensor, t[])") == T.TupleType((T.TENSOR, T.ListType(TypeVar("t"))))
    assert parse_schema_type("Tensor?[]") == T.ListType(T.OptionalType(T.TENSOR))


def const(value: object, type_: T.Type | None, name: str = "c") -> Node:
    n = Node("prim::Constant", attrs={} if value is _ABSENT else {"value": value})
    n.add_output(name, type_)
    return n


_ABSENT = object()


def test_constant_values_follow_the_output_type() -> None:
    assert constant_value(const(0, T.BOOL)) is False
    assert constant_value(const(1, T.BOOL)) is True
    assert constant_value(const(3, T.FLOAT)) == 3.0 and isinstance(constant_value(const(3, T.FLOAT)), float)
    assert constant_value(const(_ABSENT, T.NONE)) is None
    assert constant_value(const("cpu", T.DEVICE)) == "cpu"
    assert constant_value(const([1, 2], T.ListType(T.INT))) == [1, 2]
    assert constant_value(const([1.0, 2.5], T.ListType(T.FLOAT))) == [1.0, 2.5]


def test_tensor_literals_become_arrays() -> None:
    scalar = constant_value(const(TensorLiteral((2,)), T.TensorType(dtype="Long", sizes=())))
    assert isinstance(scalar, np.ndarray) and scalar.shape == () and scalar.dtype == np.int64
    assert constant_value(const(TensorLiteral((2.5,)), None)).dtype == np.float32
    long_form = TensorLiteral((0.1, 0.2, 0.3, 0.4), shape=(2, 2), dtype="Double", approximate=True)
    arr = constant_value(const(long_form, T.TensorType(dtype="Double", sizes=(2, 2))))
    assert arr.dtype == np.float64 and arr.shape == (2, 2) and arr[1, 0] == 0.3


def test_unprinted_tensor_binds_from_weights_by_name() -> None:
    marker = constant_value(const(TensorLiteral(None), T.TENSOR, name="self.0.weight"))
    assert marker == UnboundTensor("self.0.weight")
    assert marker.keys() == ["self.0.weight", "0.weight"]
    w = np.ones(3)
    assert marker.bind({"0.weight": w}) is w
    assert UnboundTensor("self.fc.bias.1").keys() == ["self.fc.bias.1", "fc.bias.1", "self.fc.bias", "fc.bias"]
    with pytest.raises(CompileError, match="no weight for tensor constant %self.0.weight"):
        marker.bind({})
