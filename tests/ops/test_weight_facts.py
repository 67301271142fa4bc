"""The facts of weight-reading operators, declared on their registrations, agree with
their schemas and with each other.

The pre-run checks (``vm.binding.preflight``, ``vm.binding.weight_checks``), the input
shapes a model's weights imply (``vm.api.signature``) and the weight passes
(``compiler.passes.fold_batch_norm``, ``fold_transposed_weights``, ``fold_epilogues``) read
these declarations and name no operator, so a position that points at the wrong
argument, or a fold declared where its arithmetic does not hold, would make one of them
check or rewrite the wrong thing.  Each test below is a rule those readers rely on,
checked over every registration that declares the fact.
"""

from __future__ import annotations

import pytest

from vm.ops import facts, registry
from vm.ops.registry import CHANNEL, Fact, OpInfo

ALL = registry.all_ops()
RULED = [i for i in ALL if i.dtypes is not None]
LAYERS = [i for i in ALL if i.weights is not None]
SHAPED = [i for i in ALL if i.weight_shapes is not None]


def _argument(info: OpInfo, i: int) -> registry.Argument:
    assert 0 <= i < len(info.schema.arguments), (info.name, i)
    return info.schema.arguments[i]


def _tensor(arg: registry.Argument) -> bool:
    return arg.type.startswith("Tensor")


def test_the_weight_bearing_operators_declare_their_facts() -> None:
    """The declarations are there (the tests below would pass over an empty list)."""
    layers = set(facts.layer_weights())
    assert {"aten::conv1d", "aten::conv2d", "aten::conv3d", "aten::_convolution", "aten::convolution",
            "aten::conv_transpose1d", "aten::conv_transpose2d", "aten::linear"} <= layers
    assert {"aten::conv2d", "aten::linear", "aten::batch_norm", "aten::embedding"} <= set(facts.weight_shapes())
    assert layers <= set(facts.dtype_rules())
    assert "aten::conv2d" in facts.TAKES_EPILOGUE_KINDS and "aten::gelu" in facts.EPILOGUE_KINDS


@pytest.mark.parametrize("info", RULED, ids=lambda i: i.name)
def test_dtype_rules_point_at_tensor_arguments(info: OpInfo) -> None:
    """Every position of a DtypeRule is a tensor argument (``Tensor``, ``Tensor?``,
    ``Tensor[]``), the first being the data; the indices, when declared, a tensor too."""
    rule = info.dtypes
    assert rule is not None and rule.same, info.name
    assert len(set(rule.same)) == len(rule.same), info.name
    assert all(_tensor(_argument(info, i)) for i in rule.same), info.name
    assert not _argument(info, rule.same[0]).type.endswith("?"), info.name  # the data is always given
    if rule.indices is not None:
        assert _tensor(_argument(info, rule.indices)) and rule.indices not in rule.same, info.name


@pytest.mark.parametrize("info", LAYERS, ids=lambda i: i.name)
def test_layer_weights_agree_with_the_schema(info: OpInfo) -> None:
    """A layer's weight is a ``Tensor weight`` after its input, its bias a ``Tensor? bias``,
    ``groups`` an int named so, ``transposed`` a bool named so; its weight and bias are
    among the tensors its dtype rule keeps to one dtype."""
    w = info.weights
    assert w is not None
    assert _argument(info, 0).type == "Tensor", info.name
    weight = _argument(info, w.weight)
    assert weight.type == "Tensor" and "weight" in weight.name, info.name
    if w.bias is not None:
        bias = _argument(info, w.bias)
        assert bias.type == "Tensor?" and "bias" in bias.name, info.name
    if w.groups is not None:
        assert (_argument(info, w.groups).name, _argument(info, w.groups).type) == ("groups", "SymInt"), info.name
    if w.transposed is not None:
        assert (_argument(info, w.transposed).name, _argument(info, w.transposed).type) == ("transposed", "bool")
    assert w.out_axis != w.in_axis and {w.out_axis, w.in_axis} <= {0, 1}, info.name
    rule = facts.dtype_rule(info.schema.name)
    assert rule is not None and {0, w.weight} <= set(rule.same), info.name
    if w.bias is not None:
        assert w.bias in rule.same, info.name


@pytest.mark.parametrize("info", LAYERS, ids=lambda i: i.name)
def test_layer_ranks_agree_with_the_schema(info: OpInfo) -> None:
    """A fixed rank is the batched input's: 2 more than the spatial dims the schema's
    ``stride`` fixes (``SymInt[2] stride`` for a 4-d conv2d); a features-last layer (a
    linear) has neither rank nor groups."""
    w = info.weights
    assert w is not None
    if w.features_last:
        assert w.rank is None and w.groups is None and w.transposed is None, info.name
        return
    stride = next(a for a in info.schema.arguments if a.name == "stride")
    fixed = stride.type.removeprefix("SymInt[").removesuffix("]")
    assert w.rank == (int(fixed) + 2 if fixed.isdigit() else None), info.name


@pytest.mark.parametrize("info", LAYERS, ids=lambda i: i.name)
def test_what_weight_passes_may_do_holds_for_the_layer(info: OpInfo) -> None:
    """A BatchNorm folds only into a layer with a bias whose output channels are the
    weight's axis 0 (the fold scales that axis); a weight is stored transposed only for a
    features-last layer (its kernel multiplies by ``W.T``); an input is inferred only from
    a layer that reads it at position 0 with its in channels on the weight's axis 1."""
    w = info.weights
    assert w is not None
    if w.folds_batch_norm:
        assert w.out_axis == 0 and w.bias is not None, info.name
    if w.transposed_weight:
        assert w.features_last and w.out_axis == 0 and w.in_axis == 1, info.name
    if w.infers_input:
        assert w.in_axis == 1 and (w.features_last or w.groups is not None), info.name


@pytest.mark.parametrize("info", SHAPED, ids=lambda i: i.name)
def test_weight_shapes_agree_with_the_schema(info: OpInfo) -> None:
    """The checked weight is a tensor argument, the sides are the input (a tensor at 0) or
    the first result (a tensor), ``CHANNEL`` only for a layer with channels first, and a
    layer's checks agree with where it keeps its weight."""
    shapes = info.weight_shapes
    assert shapes is not None and shapes.checks, info.name
    assert _tensor(_argument(info, shapes.weight)), info.name
    layer = facts.weights_of(info.schema.name)
    for side, axis, weight_axis in shapes.checks:
        assert side in ("in", "out"), info.name
        assert (_argument(info, 0) if side == "in" else info.schema.returns[0]).type == "Tensor", info.name
        assert weight_axis in (0, 1), info.name
        if axis == CHANNEL:
            assert layer is not None and not layer.features_last, info.name
        if layer is not None:
            assert shapes.weight == layer.weight, info.name
            assert weight_axis == (layer.out_axis if side == "out" else layer.in_axis), info.name


def test_the_overloads_of_a_kind_declare_the_same_facts() -> None:
    """A kind's facts are read by node kind: every overload that declares one declares the
    same (``conv2d`` and ``conv2d.padding``); PyTorch's derived ``out=`` overloads declare
    none and take the functional's."""
    for kind in registry.kinds():
        for field in ("dtypes", "weights", "weight_shapes"):
            declared = {getattr(i, field) for i in registry.overloads(kind)} - {None}
            assert len(declared) <= 1, (kind, field, declared)


def test_epilogue_facts_are_what_the_fold_needs() -> None:
    """An EPILOGUE activation is an elementwise unary map with an in-place overload; a
    TAKES_EPILOGUE producer returns one fresh tensor (no view, no write)."""
    for kind in facts.EPILOGUE_KINDS:
        infos = registry.overloads(kind)
        assert infos and registry.overloads(kind + "_"), kind
        assert all(i.elementwise for i in infos if i.out_of is None), kind
    for kind in facts.TAKES_EPILOGUE_KINDS:
        for info in registry.overloads(kind):
            if info.out_of is None:
                assert [r.type for r in info.schema.returns] == ["Tensor"], info.name
                assert not (info.schema.mutates or info.schema.returns_alias), info.name
    assert Fact.EPILOGUE not in facts.kind_facts("aten::relu")  # a bare ufunc already writes in place
