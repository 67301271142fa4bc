"""The op-facts table (vm/ops/facts.py) is consistent with itself and with the registry.

DCE, CSE, fusion, the static runtime's planner and its fast path all read their facts
from this one table; a contradiction there (an elementwise op with an effect, a control
kind with a kernel) would make one of them unsound, so each property below is a rule the
readers rely on, checked over every registered overload and every listed kind.
"""

from __future__ import annotations

import pytest

from vm.ops import facts, registry
from vm.ops.facts import F, Fact, info_facts, kind_facts

ALL = registry.all_ops()


def _returns_tensor(info: registry.OpInfo) -> bool:
    return any(r.type.startswith("Tensor") for r in info.schema.returns)


def _tensor_overloads(kind: str) -> list[registry.OpInfo]:
    """The overloads of ``kind`` that take a tensor (``aten::split.str`` splits a string)."""
    return [i for i in registry.overloads(kind) if any(a.type.startswith("Tensor") for a in i.schema.arguments)]


def test_every_kind_is_pure_or_effectful_never_both() -> None:
    """A kind the table marks pure is never also marked effectful (DCE would remove a print)."""
    both = [k for k, f in facts.KINDS.items() if F.PURE in f and F.EFFECT in f]
    assert both == []


@pytest.mark.parametrize("info", ALL, ids=lambda i: i.name)
def test_elementwise_overloads_are_pure_fresh_tensor_maps(info: registry.OpInfo) -> None:
    """Property: ELEMENTWISE implies no effect, no write, no view, a tensor argument and one
    tensor result, so fusion may group it and the planner may give it an operand's bytes."""
    f = info_facts(info)
    if Fact.ELEMENTWISE not in f:
        return
    assert not f & (F.EFFECT | F.MUTATES | F.VIEW), (info.name, f)
    assert any(a.type.startswith("Tensor") or a.type == "Scalar" for a in info.schema.arguments), info.name
    assert len(info.schema.returns) == 1 and info.schema.returns[0].type == "Tensor", info.name


@pytest.mark.parametrize("info", ALL, ids=lambda i: i.name)
def test_out_variants_return_tensors(info: registry.OpInfo) -> None:
    """Property: OUT_VARIANT implies the overload returns a tensor (the buffer it writes)."""
    if Fact.OUT_VARIANT in info_facts(info):
        assert _returns_tensor(info), info.name


def test_control_kinds_have_no_kernel() -> None:
    """Property: a CONTROL kind has no registered overload, so resolution may skip it and the
    emitter and runtimes handle it; every SUBGRAPH kind is a CONTROL kind."""
    for kind in facts.CONTROL_KINDS:
        assert registry.overloads(kind) == [], kind
    assert facts.SUBGRAPH_KINDS <= facts.CONTROL_KINDS


def test_shape_queries_are_pure_and_return_no_tensor() -> None:
    """Property: every overload of a SHAPE_QUERY kind is pure and returns metadata, not a
    tensor: the static planner keeps its result untainted because of that."""
    for kind in facts.SHAPE_QUERIES:
        for info in registry.overloads(kind):
            assert Fact.EFFECT not in info_facts(info), info.name
            assert not _returns_tensor(info), info.name


def test_data_dependent_and_shape_only_kinds_make_tensors() -> None:
    """Property: the kinds whose result shapes the planner classifies (DATA_DEPENDENT_SHAPE,
    SHAPE_ONLY_LIST) are tensor operators (each registered one has an overload returning
    tensors), and no kind is both."""
    assert not facts.DATA_DEPENDENT_SHAPES & facts.SHAPE_ONLY_LISTS
    for kind in facts.DATA_DEPENDENT_SHAPES | facts.SHAPE_ONLY_LISTS:
        infos = _tensor_overloads(kind)
        assert not infos or any(_returns_tensor(i) for i in infos), kind


def test_effect_kinds_with_kernels_are_registered_impure() -> None:
    """Property: when an EFFECT kind has kernels, each is registered pure=False, so the
    registry and the kind table tell every reader the same thing."""
    for kind in facts.EFFECT_KINDS:
        for info in registry.overloads(kind):
            assert not info.pure, info.name


def test_simple_maps_have_an_elementwise_overload() -> None:
    """Property: each kind of PyTorch's simple-map list with a tensor overload has an
    ELEMENTWISE one (fusion falls back to the list only for unresolved nodes)."""
    for kind in facts.SIMPLE_MAPS:
        infos = _tensor_overloads(kind)
        if infos:
            assert any(Fact.ELEMENTWISE in info_facts(i) for i in infos), kind


def test_fast_path_ops_are_elementwise() -> None:
    """The static fast path lets only ELEMENTWISE nodes write over a dying operand, and every
    ufunc it calls directly stands for an elementwise overload."""
    from vm.static import fastpath

    products = {name for name, calls in facts.fast_calls().items() if any(c.matrices for c in calls)}
    assert products == {"aten::linear"}
    assert fastpath.ELEMENTWISE == fastpath.NAMES - products
    for name in fastpath.NAMES - products:
        assert Fact.ELEMENTWISE in facts.op_facts(name), name


def test_kind_facts_of_unknown_kind_is_none() -> None:
    """A kind the table does not list has no facts: readers treat it conservatively."""
    assert kind_facts("aten::no_such_op") == Fact.NONE
    assert facts.op_facts("aten::no_such_op.Tensor") == Fact.NONE


@pytest.mark.parametrize("name", sorted(facts.fast_calls()))
def test_fast_calls_agree_with_the_schema(name: str) -> None:
    """A declared bare call takes argument positions of its overload (a tensor first), a
    ``("c", i)`` or ``none`` position is an optional or Scalar argument, a ``required`` one
    a Scalar; alternatives share one form (the generic planned code is written with it)."""
    info = registry.lookup(name)
    arguments = info.schema.arguments
    calls = facts.fast_calls()[name]
    for call in calls:
        assert call.operands[0] == 0 and arguments[0].type == "Tensor", name
        for operand in call.operands:
            if isinstance(operand, int):
                assert operand < len(arguments) and arguments[operand].type in ("Tensor", "Tensor?", "Scalar"), name
            elif operand[0] == "c":
                assert arguments[operand[1]].type == "Scalar?", name
            else:
                assert operand[0] == "s" and isinstance(operand[1], (int, float)), name
        assert all(arguments[i].type == "Scalar?" for i in call.none), name
        assert all(arguments[i].type == "Scalar" for i, _ in call.required), name
    forms = {tuple(isinstance(o, tuple) for o in c.operands) for c in calls}
    assert len(forms) == 1, name
