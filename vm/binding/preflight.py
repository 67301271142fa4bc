"""Checks a run makes before its first operator, where PyTorch would refuse the call.

PyTorch's kernels for convolutions, matrix products, norms, RNNs and ``prelu`` take tensors
of one dtype only: a float64 image fed to a float32 convolution raises "expected scalar
type Double but found Float" (or "Input type (double) and bias type (float) should be the
same"), while numpy would promote and quietly answer in float64.  ``DtypeGuard`` finds
those calls before the run:

1. the dtype of every value it can know, in program order: the run's tensor inputs, the
   weights the graph reads through ``prim::GetAttr`` from ``%self``, bound ``<Tensor>``
   constants; through ops that keep their input's dtype (activations, views, pools...)
   and binary arithmetic on two tensors of known rank (PyTorch's promotion);
2. at each *strict* op, the dtypes of its tensor arguments must agree (an embedding's
   indices must be integers); a value it cannot know is never an error.

A value's dtype carries the graph input it came from, so the error names the input to
cast.  ``DtypeGuard(graph, ...)(args)`` runs once per new combination of input dtypes
(cached); a graph whose inputs reach no strict op gets no guard at all (``make_guard``
returns None), so dtype-generic graphs (``x * 2``) take any dtype, as in PyTorch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs
import numpy as np

from vm.core import types as T
from vm.core.errors import RunError
from vm.core.gc_pause import gc_paused
from vm.core.state_paths import is_written
from vm.ir.graph import Block, Graph, Node, Value
from vm.ops.facts import dtype_rules
from vm.ops.registry import DtypeRule
from vm.program.check_graph import is_tensor_literal

# the graphs read here are the program's IR (vm.ir.graph): its module, or the nodes of it a
# loaded program's check table keeps (vm.program.check_graph), one data model

# the strict ops are those with a dtype rule on their registration (``vm.ops.registry.DtypeRule``:
# the positions of the tensor arguments that must share one dtype), ``vm.ops.facts.dtype_rules``

# ops whose (first) output has the dtype of their first input
_KEEP_EXACT = {  # elementwise: the rank is kept too
    "relu", "relu_", "gelu", "sigmoid", "sigmoid_", "tanh", "tanh_", "silu", "silu_", "hardtanh", "hardtanh_",
    "leaky_relu", "leaky_relu_", "elu", "elu_", "selu", "celu", "hardswish", "hardswish_", "hardsigmoid",
    "mish", "softplus", "relu6", "dropout", "dropout_", "feature_dropout", "alpha_dropout", "contiguous",
    "clone", "detach", "neg", "abs", "exp", "log", "sqrt", "rsqrt", "sin", "cos", "clamp", "clamp_",
    "clamp_min", "clamp_max", "square",
}
_KEEP_DTYPE = {  # the dtype is kept, the rank may change
    "view", "reshape", "flatten", "permute", "transpose", "t", "squeeze", "unsqueeze", "select", "slice",
    "narrow", "expand", "expand_as", "repeat", "pad", "constant_pad_nd", "reflection_pad1d",
    "reflection_pad2d", "replicate_pad1d", "replicate_pad2d", "max_pool1d", "max_pool2d", "max_pool3d",
    "avg_pool1d", "avg_pool2d", "avg_pool3d", "adaptive_avg_pool1d", "adaptive_avg_pool2d",
    "adaptive_avg_pool3d", "upsample_nearest2d", "upsample_bilinear2d", "pixel_shuffle", "channel_shuffle",
    "mean", "sum", "amax", "amin", "flip", "roll", "unflatten", "movedim", "masked_fill", "masked_fill_",
    "_nested_tensor_from_mask", "to_padded_tensor", "nested_to_padded_tensor",
}
_SPLITS = {"chunk", "split", "unbind", "split_with_sizes", "tensor_split", "unsafe_chunk", "unsafe_split"}
_PROMOTE = {"add", "sub", "mul", "add_", "sub_", "mul_", "div", "div_", "maximum", "minimum"}


@attrs.frozen
class Known:
    """What is known of a tensor value (or of a list or tuple of tensors): its dtype,
    whether it has dimensions (None: not known), and where it came from (``input %x.1``,
    ``weight conv.weight``)."""

    dtype: np.dtype | None  # None: a list or tuple whose items differ
    dimensioned: bool | None
    origin: str
    input_name: str | None = None  # the graph input it derives from, if any
    items: tuple[Known | None, ...] | None = None  # a list's or tuple's items, when built here


class DtypeGuard:
    """Raises a RunError before the run when PyTorch would refuse the inputs' dtypes."""

    def __init__(self, graph: Graph, attribute: Callable[[Value], tuple[Any, str]],
                 constant: Callable[[Node], tuple[Any, str]],
                 inputs: Sequence[Value]):
        self.graph = graph
        self.attribute, self.constant = attribute, constant
        self.inputs = list(inputs)
        self._ok: set[tuple[Any, ...]] = set()  # keys of the argument dtypes that passed
        self._last_dtype: Any = None
        self._last_dimensioned: Any = None
        self._prepare()
        self._expect()

    def _expect(self) -> None:
        """Check now the input dtypes a first call most likely brings: each tensor input at
        its declared dtype, float32 where none is declared, with its declared rank (one
        dimension when unknown).  A first call with those dtypes then checks nothing, as a
        steady call; any other combination is checked when it comes, and inputs torch
        would refuse are reported at that call, as before."""
        args: list[Any] = []
        for value in self.inputs:
            t = value.type
            if not isinstance(t, T.TensorType):
                args.append(None)
                continue
            name = T.NUMPY_DTYPES.get(t.dtype) if t.dtype is not None else "float32"
            if name is None:
                return
            args.append(np.empty((1,) * (1 if t.sizes is None else len(t.sizes)), dtype=name))
        try:
            self.check(args)
        except RunError:
            return  # such inputs would be refused: let the call that brings them say so
        self._ok.add(tuple((a.dtype, a.ndim > 0) if isinstance(a, np.ndarray) else None for a in args))

    def _prepare(self) -> None:
        """Decide at construction what no input changes: the walk in program order as a
        flat list, what it knows before any input (the weights' and constants' dtypes,
        and what follows from them alone), and which steps an input can reach.  A check
        then starts from that knowledge and replays only those steps: the same answer as
        the whole walk, since a step no input reaches reads and writes the same
        knowledge for every input dtypes.  (Weights that disagree among themselves are
        left to the whole walk, which reports them at the call, as before.)"""
        order: list[tuple[bool, Node]] = []
        _flatten(self.graph.block, 0, order)
        reached, needed = _reached(self.inputs), _feeding_strict(self.graph)
        order = [(join, node) for join, node in order if node in needed]
        known: dict[Value, Known] = {}
        try:  # only what feeds a strict op matters; what no input reaches is known now
            for join, node in order:
                if node not in reached:
                    _replay(join, node, known, self.attribute, self.constant)
        except RunError:
            self._steps: list[tuple[bool, Node]] | None = None
            return
        self._fixed = known
        self._steps = [(join, node) for join, node in order if node in reached]

    def __call__(self, args: Sequence[Any]) -> None:
        if len(args) == 1:  # the common case, kept cheap: one array, as on the last call
            a = args[0]
            if type(a) is np.ndarray and a.dtype is self._last_dtype and (a.ndim > 0) is self._last_dimensioned:
                return
        key = tuple((a.dtype, a.ndim > 0) if isinstance(a, np.ndarray) else None for a in args)
        if key not in self._ok:
            self.check(args)
            self._ok.add(key)
        if len(args) == 1 and key[0] is not None:
            self._last_dtype, self._last_dimensioned = key[0]

    @gc_paused()  # a check walks the graph; only new input dtypes reach it, never a steady call
    def check(self, args: Sequence[Any]) -> None:
        known: dict[Value, Known] = {} if self._steps is None else dict(self._fixed)
        for value, arg in zip(self.inputs, args):
            if isinstance(arg, np.ndarray):
                known[value] = Known(arg.dtype, arg.ndim > 0, f"input %{value.name}", value.name)
        if self._steps is None:
            self._walk(self.graph.block, known, 0)
            return
        for join, node in self._steps:
            _replay(join, node, known, self.attribute, self.constant)

    def _walk(self, block: Block, known: dict[Value, Known], depth: int) -> None:
        """Each node after its blocks; an If's output is known when every branch returns the
        same dtype.  Past 100 nested blocks values are left unknown (never an error)."""
        for node in block.nodes:
            if node.blocks:
                if depth > 100:
                    continue
                for sub in node.blocks:
                    self._walk(sub, known, depth + 1)
                if node.kind == "prim::If":
                    _join_branches(node, known)
                continue
            _step(node, known, self.attribute, self.constant)


def _flatten(block: Block, depth: int, order: list[tuple[bool, Node]]) -> None:
    """``_walk``'s order as a list: (False, node) a step, (True, node) an If's join."""
    for node in block.nodes:
        if node.blocks:
            if depth > 100:
                continue
            for sub in node.blocks:
                _flatten(sub, depth + 1, order)
            if node.kind == "prim::If":
                order.append((True, node))
            continue
        order.append((False, node))


def _replay(join: bool, node: Node, known: dict[Value, Known], attribute: Callable[[Value], tuple[Any, str]],
            constant: Callable[[Node], tuple[Any, str]]) -> None:
    if join:
        _join_branches(node, known)
    else:
        _step(node, known, attribute, constant)


def _reached(inputs: Sequence[Value]) -> set[Node]:
    """The nodes whose step an input's dtype can change: its users, their users... (a
    block's return reaches its node; ``aten::append`` reaches the list it extends, and
    so the list's producer and readers)."""
    nodes: set[Node] = set()
    pending = list(inputs)
    while pending:
        value = pending.pop()
        for use in value.uses:
            user: Any = use.user  # a node, or a block returning the value
            if not hasattr(user, "kind"):
                user = user.owner
            if user is None or user in nodes:
                continue
            nodes.add(user)
            pending.extend(user.outputs)
            pending.extend(p for b in user.blocks for p in b.params)
            if user.kind == "aten::append" and user.inputs:
                target = user.inputs[0]
                if target.node is not None and target.node not in nodes:
                    nodes.add(target.node)
                    pending.extend(target.node.outputs)
                pending.append(target)
    return nodes


_SCALARS = frozenset({T.INT, T.FLOAT, T.BOOL, T.STR, T.NONE, T.DEVICE, T.SCALAR, T.NUMBER, T.LAYOUT,
                      T.SCALAR_TYPE, T.MEMORY_FORMAT, T.GENERATOR, T.FUNCTION})


def _may_hold_tensors(t: Any) -> bool:
    """Whether a value of type ``t`` can have a ``Known`` (a tensor, a list or tuple of them)."""
    if t in _SCALARS:
        return False
    if isinstance(t, (T.ListType, T.OptionalType)):
        return _may_hold_tensors(t.elem)
    if isinstance(t, T.TupleType):
        return any(_may_hold_tensors(e) for e in t.elems)
    return True


def _feeding_strict(graph: Graph) -> set[Node]:
    """The strict ops and every step whose result can reach one of their tensor
    arguments: producers of tensor-holding inputs, an If's branches' returns, the
    ``aten::append``s that extend a list.  Only these steps can raise or change what a
    strict op sees; shape arithmetic and everything past the last strict op cannot."""
    nodes: set[Node] = set()
    pending: list[Value] = []

    def need(node: Node) -> None:
        if node not in nodes:
            nodes.add(node)
            pending.extend(v for v in node.inputs if _may_hold_tensors(v.type))

    rules = dtype_rules()
    for node in graph.walk():
        if node.kind in rules:
            need(node)
    seen: set[Value] = set()
    while pending:
        value = pending.pop()
        if value in seen:
            continue
        seen.add(value)
        producer = value.node
        if producer is not None and value in producer.outputs:
            need(producer)
            i = producer.outputs.index(value)
            pending.extend(b.returns[i] for b in producer.blocks if i < len(b.returns))
        for use in value.uses:
            user: Any = use.user  # a node, or a block returning the value
            if hasattr(user, "kind") and user.kind == "aten::append":
                need(user)
    return nodes


def _join_branches(node: Node, known: dict[Value, Known]) -> None:
    for i, out in enumerate(node.outputs):
        branches = [known.get(b.returns[i]) if i < len(b.returns) else None for b in node.blocks]
        if branches and all(branches) and len({k.dtype for k in branches if k}) == 1:
            first = branches[0]
            assert first is not None
            known[out] = attrs.evolve(first, dimensioned=None, items=None)


def _step(node: Node, known: dict[Value, Known], attribute: Callable[[Value], tuple[Any, str]],
          constant: Callable[[Node], tuple[Any, str]]) -> None:
    kind = node.kind
    if (kind == "prim::GetAttr" or kind == "prim::Constant") and node.outputs:
        array, label = attribute(node.outputs[0]) if kind == "prim::GetAttr" else constant(node)
        if isinstance(array, np.ndarray):
            known[node.outputs[0]] = Known(array.dtype, array.ndim > 0, f"weight {label}")
        elif isinstance(array, list) and array and all(isinstance(a, np.ndarray) for a in array):
            known[node.outputs[0]] = Known(array[0].dtype, True, f"weights {label}")
        return
    if kind in ("prim::ListConstruct", "prim::TupleConstruct"):
        items = tuple(known.get(v) for v in node.inputs)
        present = [k for k in items if k is not None]
        if not items and node.outputs:  # an empty list, filled by aten::append in this block
            known[node.outputs[0]] = Known(None, True, f"list %{node.outputs[0].name}", None, ())
        elif present and node.outputs:
            dtypes = {k.dtype for k in items if k is not None}
            dtype = dtypes.pop() if len(dtypes) == 1 and len(present) == len(items) else None
            source = next((k for k in present if k.input_name is not None), present[0])
            known[node.outputs[0]] = Known(dtype, True, source.origin, source.input_name, items)
        return
    if kind == "aten::append" and node.inputs:
        _append(node, known)
        return
    if kind in ("prim::ListUnpack", "prim::TupleUnpack"):
        seq = known.get(node.inputs[0]) if node.inputs else None
        if seq is not None and seq.items is not None and len(seq.items) == len(node.outputs):
            for out, item in zip(node.outputs, seq.items):
                if item is not None:
                    known[out] = item
        elif seq is not None and seq.items is None and seq.dtype is not None:
            for out in node.outputs:
                known[out] = attrs.evolve(seq, dimensioned=None)
        return
    rule = dtype_rules().get(kind)
    if rule is not None:
        result = _check_strict(node, rule, known)
        if result is not None and node.outputs:
            known[node.outputs[0]] = result
        return
    if not kind.startswith("aten::") or not node.outputs or not node.inputs:
        return
    op = kind[len("aten::"):]
    first = known.get(node.inputs[0])
    if first is None or first.dtype is None:
        return
    if first.items is not None:  # a list or tuple of tensors: only joined back into one
        if op in _JOINS and len(first.items) == len(
                [k for k in first.items if k is not None]):
            known[node.outputs[0]] = attrs.evolve(first, dimensioned=True, items=None)
        return
    if op in _SPLITS:  # a list of pieces of the input
        known[node.outputs[0]] = attrs.evolve(first, dimensioned=None, items=None)
    elif op in _KEEP_EXACT:
        known[node.outputs[0]] = first
    elif op in _KEEP_DTYPE:
        known[node.outputs[0]] = attrs.evolve(first, dimensioned=None)
    elif op in _PROMOTE and len(node.inputs) >= 2:
        promoted = _promote(op, first, node.inputs[1], known)
        if promoted is not None:
            known[node.outputs[0]] = promoted


def _append(node: Node, known: dict[Value, Known]) -> None:
    """``aten::append(list, x)`` in the block that built the list extends its items; from
    another block (a branch, a loop body) the list's items are no longer known."""
    target = node.inputs[0]
    seq = known.get(target)
    if seq is None or seq.items is None:
        return
    if target.node is None or target.node.owner is not node.owner or len(node.inputs) < 2:
        del known[target]
        return
    items = (*seq.items, known.get(node.inputs[1]))
    present = [k for k in items if k is not None]
    dtypes = {k.dtype for k in present}
    dtype = dtypes.pop() if len(dtypes) == 1 and len(present) == len(items) else None
    source = next((k for k in present if k.input_name is not None), present[0] if present else seq)
    known[target] = Known(dtype, True, source.origin, source.input_name, items)


def _promote(op: str, first: Known, other_value: Value, known: dict[Value, Known]) -> Known | None:
    """The result of ``first <op> other`` when PyTorch's promotion gives it for sure."""
    first_dtype = first.dtype
    if first_dtype is None:
        return None
    other = known.get(other_value)
    if other is None:
        t = other_value.type
        if t in (T.INT, T.BOOL) or (t == T.FLOAT and first_dtype.kind == "f"):  # a Python scalar
            dtype = first_dtype
        else:
            return None
    elif other.dtype is None or other.items is not None:
        return None
    elif other.dtype == first_dtype:
        dtype = first_dtype
    elif first.dimensioned and other.dimensioned:
        dtype = _promote_types(first_dtype, other.dtype)
    else:
        return None
    if op.startswith("div") and dtype.kind in "iub":
        dtype = np.dtype(np.float32)
    source = first if first.input_name is not None or other is None else other
    dimensioned = first.dimensioned if other is None else (True if first.dimensioned or other.dimensioned else None)
    return Known(dtype, dimensioned, source.origin, source.input_name)


_CATEGORY = {"b": 0, "u": 1, "i": 1, "f": 2, "c": 3}


def _promote_types(a: np.dtype, b: np.dtype) -> np.dtype:
    """PyTorch's promotion of two dimensioned tensors: a higher category (bool < int <
    float < complex) wins with its own dtype (int64 + float32 is float32, not numpy's
    float64); within a category the wider type wins."""
    ca, cb = _CATEGORY.get(a.kind, 9), _CATEGORY.get(b.kind, 9)
    if ca != cb:
        return a if ca > cb else b
    return np.promote_types(a, b)


def _check_strict(node: Node, rule: DtypeRule, known: dict[Value, Known]) -> Known | None:
    if rule.indices is not None and rule.indices < len(node.inputs):
        indices = known.get(node.inputs[rule.indices])
        if indices is not None and indices.dtype is not None and indices.dtype.kind not in "iu":
            raise _error(node, f"its indices, {indices.origin}, are {indices.dtype}; PyTorch takes int64 or int32 "
                               f"indices (\"Expected tensor for argument #1 'indices' to have one of the following "
                               f"scalar types: Long, Int\")", indices)
    args = [known.get(node.inputs[i]) for i in rule.same if i < len(node.inputs)]
    present = [a for a in args if a is not None and a.dtype is not None]
    if len({a.dtype for a in present}) <= 1:
        return present[0] if present and args[0] is not None else None
    data = args[0] if args[0] is not None and args[0].dtype is not None else present[0]
    params = [a for a in present[1:] if a.dtype != data.dtype] or [a for a in present if a.dtype != data.dtype]
    if rule.cpu_norm and data.dtype == np.float16 and all(p.dtype == np.float32 for p in params):
        return data  # PyTorch's CPU norms take a half input with float parameters
    culprit = next((a for a in (data, *params) if a.input_name is not None), data)
    other = params[0] if culprit is data else data
    data_dtype, culprit_dtype = data.dtype, (other.dtype if culprit is data else culprit.dtype)
    assert data_dtype is not None and culprit_dtype is not None  # both come from `present`: dtypes known
    words = _torch_words(rule, data_dtype, culprit_dtype)
    raise _error(
        node,
        f"{data.origin} is {data.dtype} but {params[0].origin} is {params[0].dtype}; PyTorch refuses mixed "
        f"dtypes here ({words}): cast {culprit.origin} to {other.dtype}",
        culprit,
    )


_TORCH_NAMES = {"float64": "Double", "float32": "Float", "float16": "Half", "int64": "Long", "int32": "Int",
                "int16": "Short", "int8": "Char", "uint8": "Byte", "bool": "Bool"}


def _torch_words(rule: DtypeRule, a: np.dtype, b: np.dtype) -> str:
    name_a, name_b = _TORCH_NAMES.get(str(a), str(a)), _TORCH_NAMES.get(str(b), str(b))
    if rule.cpu_norm:
        return "\"mixed dtype (CPU): all inputs must share same datatype\""
    return f"\"expected scalar type {name_a} but found {name_b}\""


def _error(node: Node, detail: str, culprit: Known) -> RunError:
    return RunError(f"{node.kind}: {detail}", node.span)


def make_guard(graph: Graph, self_object: Any, weights: Mapping[str, Any] | None,
               skip_self: bool, reaches: bool | None = None,
               labels: Mapping[str, str] | None = None, state: Iterable[str] = ()) -> DtypeGuard | None:
    """A DtypeGuard for ``graph`` with its weights bound (``self_object`` is ``%self``'s
    ModuleObject or None; ``weights`` the flat mapping for frozen constants), or None when
    no strict op is reachable from an input (``reaches``: that answer when the caller has
    it, as a check table does, whose graph leaves out nodes the walk needs).  ``labels``:
    the names messages give constants a load-time fold made (``resolver``); ``state``: the
    attributes some method writes (``Program.state``), whose dtype a call may change, so
    the guard knows nothing of them."""
    inputs = list(graph.inputs[1:] if skip_self else graph.inputs)
    if not (reaches_strict(inputs) if reaches is None else reaches):
        return None
    resolve = resolver(graph, self_object, weights, skip_self, labels, frozenset(state))
    return DtypeGuard(graph, resolve, lambda node: resolve(node.outputs[0]), inputs)


def check_weights(graph: Graph, self_object: Any, weights: Mapping[str, Any] | None, skip_self: bool,
                  nodes: Sequence[Node] | None = None, labels: Mapping[str, str] | None = None) -> None:
    """The weights against the shapes the graph declares (``vm.binding.weight_checks``)."""
    from vm.binding.weight_checks import check_declared_shapes

    check_declared_shapes(graph, resolver(graph, self_object, weights, skip_self, labels), nodes)


def resolver(graph: Graph, self_object: Any, weights: Mapping[str, Any] | None,
             skip_self: bool, labels: Mapping[str, str] | None = None,
             state: frozenset[str] = frozenset()) -> Callable[[Value], tuple[Any, str]]:
    """value -> (what it is bound to before the run, a label): ``%self``'s attributes
    through GetAttr chains (an array, a list of arrays, a ModuleObject), a tensor
    constant's bound array; (None, ...) for anything else.  A constant's label is its name
    in ``labels`` when there (what a load-time fold made: the weights it came from), else
    ``%name``.  An attribute in ``state`` (written by some method) resolves to None: what
    it holds now says nothing of the next call."""
    root = graph.inputs[0] if skip_self and graph.inputs else None
    flat = weights if isinstance(weights, Mapping) else {}

    def resolve(value: Value) -> tuple[Any, str]:
        if value is root:
            return self_object, "self"
        node = value.node
        if node is None or not node.inputs and node.kind != "prim::Constant":
            return None, ""
        if node.kind == "prim::GetAttr":
            parent, _ = resolve(node.inputs[0])
            name = str(node.attrs.get("name"))
            attributes = getattr(parent, "attributes", None)
            if not isinstance(attributes, dict):
                return None, name
            dotted = parent.dotted(name)
            if state and is_written(dotted, state):
                return None, dotted
            return attributes.get(name), dotted
        if node.kind == "prim::Constant":
            array, label = _constant(node, flat)
            return array, (labels or {}).get(node.outputs[0].name, label) if node.outputs else label
        return None, ""

    return resolve


def _constant(node: Node, flat: Mapping[str, Any]) -> tuple[Any, str]:
    literal: Any = node.attrs.get("value")
    if not is_tensor_literal(literal) or not node.outputs:
        return None, ""
    from vm.binding.weights import constant_keys

    label = f"%{node.outputs[0].name}"
    key = next((k for k in constant_keys(node.outputs[0].name) if k in flat), None)
    if key is not None:
        return np.asarray(flat[key]), label
    if literal.values is not None and literal.dtype is not None:
        from vm.binding.inputs import DTYPES

        name = DTYPES.get(literal.dtype)
        return (np.zeros(literal.shape or (), dtype=name) if name else None), label
    return None, label


def checked_kind(kind: str) -> bool:
    """True for the operators whose nodes a check reads (the dtype walk, the declared
    shapes, binding ``%self``): what a check table keeps (``vm.program.check_graph``)."""
    if kind in _CHECKED_PRIMS or kind in dtype_rules():
        return True
    return kind.startswith("aten::") and kind[len("aten::"):] in _CARRIERS


_CHECKED_PRIMS = {"prim::GetAttr", "prim::ListConstruct", "prim::TupleConstruct", "prim::ListUnpack",
                  "prim::TupleUnpack", "aten::append"}
_JOINS = {"cat", "stack", "concat", "hstack", "vstack"}
_CARRIERS = _KEEP_EXACT | _KEEP_DTYPE | _SPLITS | _PROMOTE | _JOINS


def reaches_strict(inputs: Sequence[Value]) -> bool:
    """True when a value computed from ``inputs`` (through any node) meets a strict op."""
    seen: set[int] = set()
    pending = list(inputs)
    rules = dtype_rules()
    while pending:
        value = pending.pop()
        for use in value.uses:
            user: Any = use.user  # a node, or a block returning the value
            if not hasattr(user, "kind"):  # returned from a block: on to its node's outputs
                user = user.owner
            if user is None or id(user) in seen:
                continue
            seen.add(id(user))
            if user.kind in rules:
                return True
            pending.extend(user.outputs)
            pending.extend(p for b in user.blocks for p in b.params)
    return False


__all__ = ["DtypeGuard", "Known", "check_weights", "checked_kind", "make_guard", "reaches_strict", "resolver"]
