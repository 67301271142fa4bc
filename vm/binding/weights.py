"""Module objects: what a scripted module's ``%self`` is at run time.

A graph of a scripted module takes ``%self`` and reads parameters through chains of
``prim::GetAttr[name="..."]``.  The runtime builds ``%self`` from a flat mapping of dotted
attribute paths, as a PyTorch state_dict has them (``0.weight``, ``bn.running_mean``)::

    >>> root = ModuleObject.from_state_dict({"fc.weight": w, "fc.bias": b})
    >>> root.get("fc").get("weight") is w
    True

Before a run, the runtimes check the weights against what the graph will read, so that
a missing parameter is reported up front, all at once, instead of at the GetAttr that
first touches it:

- ``bind_self(graph, weights) -> ModuleObject`` follows every ``prim::GetAttr`` chain
  from ``%self`` (the graph's first input, typed as a class).  Each attribute the graph
  reads gets the type the graph declares for it: a tensor stays an array; ``bool``,
  ``int``, ``float`` and ``str`` attributes, stored as 0-d arrays (``training``,
  ``num_heads``, ``_qkv_same_embed_dim``), become Python scalars; ``int[]`` and tuples
  come from 1-d arrays; ``Tensor[]`` from indexed keys (``rnn._flat_weights.0``,
  ``.1``...), or, for an RNN's ``_flat_weights``, from its named parameters
  (``weight_ih_l0``...) in PyTorch's order; a ``Dict(K, V)`` from ``PATH.KEY`` entries.
  A mapping with a ``__spec__`` entry (what ``tools/export_torch.py`` writes; the
  convention of ``vm.files.npz``) has each attribute it names rebuilt whole first
  (``gather_attributes``), so strings, None, dict keys with dots and empty containers
  round-trip (docs/weights.md).  Absent attributes default only where the
  meaning is clear: an Optional (``Tensor?``) is None and ``training`` is False
  (inference); every other absent attribute is listed, with its dotted path and type, in
  one ``RunError``.  A GetAttr marked ``required=1`` (``compiler.known`` reads
  ``Embedding.max_norm`` and ``training`` so) must be present, Optional or not; a stored 0-d string
  ``"None"`` is None for any Optional attribute.
- ``check_folded(folded, root)``: a program compiled with its weights has settings
  folded into constants (``compiler.passes.fold_module_attributes``); weights holding
  another value for one of them are refused, all listed in one ``RunError``.
- ``bind_constants(graph, weights) -> dict[str, ndarray]`` is for frozen graphs, whose
  parameters are ``prim::Constant[value=<Tensor>]()`` named like ``%self.0.weight``.  It
  maps each tensor constant's value name (``"self.0.weight"``) to its array, looked up
  under the name itself or the state_dict key without ``self.`` (``"0.weight"``); a
  ``<Tensor>`` with no weight is an error (one for all of them), a constant whose values
  were printed (rounded) is bound only when the weights have it.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from vm.core import types as T
from vm.core.enum_values import EnumValue, parse_member
from vm.core.errors import RunError, Span
from vm.core.quantized import PACKED_TYPES, QTensor
from vm.ir.graph import Graph, Node, Value

# the graphs read here are the program's IR (vm.ir.graph): its module, or the nodes of it a
# loaded program's check table keeps (vm.program.check_graph), one data model


class ModuleObject:
    """One level of a module tree: named attributes, some of them sub-modules."""

    __slots__ = ("attributes", "path")

    def __init__(self, path: str = "", attributes: dict[str, Any] | None = None):
        self.path = path
        self.attributes: dict[str, Any] = {} if attributes is None else attributes

    def __repr__(self) -> str:
        return f"<ModuleObject {self.path or 'self'}: {sorted(self.attributes)}>"

    def dotted(self, name: str) -> str:
        return f"{self.path}.{name}" if self.path else name

    def get(self, name: str) -> Any:
        try:
            return self.attributes[name]
        except KeyError:
            raise RunError(f"module attribute {self.dotted(name)!r} is not in the weights") from None

    def set(self, name: str, value: Any) -> None:
        self.attributes[name] = value

    @classmethod
    def from_state_dict(cls, weights: Mapping[str, Any]) -> ModuleObject:
        """The tree of ``weights``: dotted keys split into levels; an entry described in
        the mapping's ``__spec__`` (a container, a string, None...) is rebuilt whole first
        and becomes one leaf, whatever its keys look like (``return_layers.layer4``)."""
        root = cls()
        for key, value in gather_attributes(weights).items():
            node = root
            *parents, leaf = key.split(".")
            for part in parents:
                child = node.attributes.get(part)
                if not isinstance(child, ModuleObject):
                    child = ModuleObject(node.dotted(part))
                    node.attributes[part] = child
                node = child
            node.attributes[leaf] = value
        return root


def override(base: Mapping[str, Any], given: Mapping[str, Any], source: str) -> dict[str, Any]:
    """``base`` (a model's own weights, from ``source``) with the entries of ``given``
    replacing them; a tensor of another shape is refused as ``load_state_dict`` refuses a
    "size mismatch", naming every such weight."""
    clashes = [
        f"{key}: {list(np.shape(given[key]))} given, {list(np.shape(base[key]))} in {source}"
        for key in sorted(given.keys() & base.keys())
        if isinstance(base[key], np.ndarray) and base[key].ndim and np.shape(given[key]) != base[key].shape
    ]
    if clashes:
        raise RunError("size mismatch: the weights given do not fit the model's own (another model's weights?): "
                       + "; ".join(clashes))
    from vm.binding.strict import ArchiveState

    merged = {**base, **given}
    return ArchiveState(merged) if isinstance(base, ArchiveState) else merged


def gather_attributes(weights: Mapping[str, Any]) -> dict[str, Any]:
    """``weights`` with each attribute its ``__spec__`` describes rebuilt as one value
    (``vm.files.npz``'s convention, as for program inputs) in place of its flattened entries."""
    from vm.files.npz import SPEC_KEY, spec_of, unflatten

    if SPEC_KEY not in weights:
        return dict(weights)
    try:
        spec = spec_of(weights)
    except ValueError as err:
        raise RunError(f"the weights' {SPEC_KEY} entry is not valid JSON: {err}") from None
    if not isinstance(spec, dict):
        raise RunError(f"the weights' {SPEC_KEY} entry should map attribute paths to kinds")
    gathered = {k: v for k, v in weights.items() if k != SPEC_KEY}
    for name, kind in spec.items():
        gathered[name] = unflatten(weights, name, kind)
        prefix = name + "."
        for key in [k for k in gathered if k.startswith(prefix)]:
            del gathered[key]
    return gathered


# ---------------------------------------------------------------------------------------
# Checking weights against a graph before the run


class _Missing:
    """Collects the attributes the graph reads and the weights lack."""

    def __init__(self) -> None:
        self.entries: list[str] = []
        self.span: Span | None = None

    def add(self, text: str, span: Span | None) -> None:
        if text not in self.entries:  # a graph may read one attribute many times
            self.entries.append(text)
        self.span = self.span or span


def bind_self(
    graph: Graph, weights: Mapping[str, Any] | ModuleObject | None, folded: Mapping[str, Any] | None = None
) -> ModuleObject:
    """``%self`` for ``graph``, built from ``weights`` and checked against every GetAttr.

    ``weights`` is a flat mapping of dotted paths (a state_dict plus plain attributes as
    0-d arrays), or an already built ``ModuleObject``.  Returns the root object with every
    attribute the graph reads converted to its declared type; raises ``RunError`` listing
    each missing ``path : type`` at once.  A graph whose first input is not a class
    (a function, not a method) gets the tree as given.  ``folded`` are the attribute
    values the program was compiled for (``Module.attributes``): weights that hold
    another value for one of them are refused (``check_folded``).
    """
    root = weights if isinstance(weights, ModuleObject) else ModuleObject.from_state_dict(weights or {})
    if folded:
        check_folded(folded, root, graph.span)
    if not graph.inputs or not isinstance(graph.inputs[0].type, T.ClassType):
        return root
    missing = _Missing()
    _bind_reads(graph.inputs[0], root, missing)
    if missing.entries:
        listing = "\n  ".join(missing.entries)
        raise RunError(
            f"the weights lack {len(missing.entries)} attribute(s) the graph reads from %self:\n  {listing}"
            + (_PLAIN_HINT if any(not e.endswith(" : Tensor") for e in missing.entries) else ""),
            missing.span,
        )
    from vm.binding.weight_checks import check_module_structure

    check_module_structure(graph, root)
    return root


def check_folded(folded: Mapping[str, Any], root: ModuleObject, span: Span | None = None) -> None:
    """Raise a RunError when ``root`` holds, for an attribute the program was compiled
    with as a constant, a different value (an absent one keeps the compiled value)."""
    wrong = []
    for path, expected in folded.items():
        obj: Any = root
        *parents, leaf = path.split(".")
        for part in parents:
            obj = obj.attributes.get(part) if isinstance(obj, ModuleObject) else None
        if not isinstance(obj, ModuleObject) or leaf not in obj.attributes:
            continue
        raw = obj.attributes[leaf]
        try:
            if expected is None:
                actual = None if raw is None or is_none_marker(raw) else raw
            else:
                actual = convert_attribute(raw, _TYPE_OF[type(expected)])
        except (TypeError, ValueError):
            actual = raw
        if actual is not expected and not (actual is not None and expected is not None and actual == expected
                                           and type(actual) is type(expected)):
            wrong.append(f"{path} = {expected!r} in the program, {_show(actual)} in these weights")
    if wrong:
        listing = "\n  ".join(wrong)
        raise RunError(
            "the program was compiled for other values of these module attributes (its settings "
            f"were folded into constants):\n  {listing}\nrecompile the IR with these weights", span
        )


_TYPE_OF: dict[type, T.Type] = {bool: T.BOOL, int: T.INT, float: T.FLOAT, str: T.STR}


def _show(value: Any) -> str:
    return repr(value) if value is None or isinstance(value, (bool, int, float, str)) else _kind_name(value)


_PLAIN_HINT = (
    "\nplain module settings (stride, eps, inplace...) are in no state_dict: add each to the weights file "
    "under its dotted path as an array (`conv.stride` = [2, 2], `norm.eps` = 1e-5 as a 0-d array, a None as "
    "the string 'None'), or torch.jit.save the model and run its .pt (`irvm run model.pt`: the archive carries them), or, for a dump "
    "of `.graph`, dump `module.inlined_graph` (or a torch.jit.freeze'd module) instead"
)


def _bind_reads(value: Value, obj: ModuleObject, missing: _Missing) -> None:
    for use in list(value.uses):
        node: Any = use.user  # a node, or a block returning the value
        if getattr(node, "kind", None) != "prim::GetAttr" or use.index != 0:  # a Node, not a Block
            continue
        name = str(node.attrs["name"])
        out = node.outputs[0]
        if isinstance(out.type, T.ClassType) and not out.type.qualname.startswith(TORCHBIND):
            child = obj.attributes.get(name)
            if not isinstance(child, ModuleObject):  # a parameterless submodule (ReLU)
                child = ModuleObject(obj.dotted(name))
                obj.attributes[name] = child
            _bind_reads(out, child, missing)
            continue
        _bind_leaf(obj, name, out.type, node, missing)


def _bind_leaf(obj: ModuleObject, name: str, type_: T.Type | None, node: Node, missing: _Missing) -> None:
    type_ = T.TENSOR if type_ is None else type_
    dotted = obj.dotted(name)
    raw = obj.attributes.get(name, _ABSENT)
    if raw is _ABSENT and name == "_flat_weights":
        raw = _rnn_flat_weights(obj)
    if raw is _ABSENT:
        optional = isinstance(type_, T.OptionalType) or type_ == T.NONE
        if optional and not node.attrs.get("required"):
            obj.attributes[name] = None
        elif name == "training" and type_ == T.BOOL and not node.attrs.get("required"):
            obj.attributes[name] = False
        else:
            missing.add(f"{dotted} : {type_}", node.span)
        return
    try:
        obj.attributes[name] = convert_attribute(raw, type_)
    except (TypeError, ValueError) as err:
        raise RunError(f"weight {dotted!r} does not fit the declared type {type_}: {err}", node.span) from None


_ABSENT: Any = object()
TORCHBIND = "__torch__.torch.classes."  # torch's C++ classes (packed parameters): values, not modules
NONE_MARKER = "None"  # a stored 0-d string array "None" is None for an Optional attribute


def is_none_marker(raw: Any) -> bool:
    array = np.asarray(raw) if isinstance(raw, (str, np.ndarray)) else None
    return array is not None and array.ndim == 0 and array.dtype.kind == "U" and str(array.item()) == NONE_MARKER
_SCALARS: dict[T.Type, type] = {T.BOOL: bool, T.INT: int, T.FLOAT: float, T.STR: str}


def convert_attribute(raw: Any, type_: T.Type) -> Any:
    """A stored weight as the runtime value of an attribute of type ``type_``."""
    if isinstance(type_, T.OptionalType):
        return None if raw is None or is_none_marker(raw) else convert_attribute(raw, type_.elem)
    if raw is None or (type_ == T.NONE and is_none_marker(raw)):
        if type_ == T.NONE:
            return None
        raise TypeError("the weight is None")
    if isinstance(type_, T.TensorType):
        if isinstance(raw, ModuleObject):
            raise TypeError("expected one array, found a group of entries")
        return raw if isinstance(raw, (np.ndarray, QTensor)) else np.asarray(raw)
    if type_ in _SCALARS:
        array = np.asarray(raw)
        if array.size != 1:
            raise ValueError(f"expected one value, got an array of shape {list(array.shape)}")
        return _SCALARS[type_](array.reshape(()).item())
    if isinstance(type_, T.EnumType):
        return _enum_attribute(raw, type_)
    if isinstance(type_, T.DictType):
        return _dict_attribute(raw, type_)
    if isinstance(type_, (T.ListType, T.TupleType)):
        items = _items(raw)
        elems = [type_.elem] * len(items) if isinstance(type_, T.ListType) else list(type_.elems)
        if len(elems) != len(items):
            raise ValueError(f"expected {len(elems)} elements, got {len(items)}")
        converted = [convert_attribute(item, elem) for item, elem in zip(items, elems)]
        return converted if isinstance(type_, T.ListType) else tuple(converted)
    return raw


def _enum_attribute(raw: Any, type_: T.EnumType) -> EnumValue:
    """An ``Enum<...>`` attribute, stored as its member's name (``'NCHW'``; a qualified
    ``'__torch__.m.Format.NCHW'`` is read too)."""
    if isinstance(raw, EnumValue):
        if raw.qualname != type_.qualname:
            raise TypeError(f"expected a member of {type_.qualname}, found {raw}")
        return raw
    array = np.asarray(raw) if isinstance(raw, (str, np.ndarray)) else None
    if array is None or array.ndim != 0 or array.dtype.kind != "U":
        raise TypeError(f"expected the name of a member of {type_.qualname} as a string, found {_kind_name(raw)}")
    text = str(array.item())
    member = parse_member(type_.qualname, text)
    if member is None:
        raise ValueError(f"{text!r} is not the name of a member of {type_.qualname}")
    return member


def _dict_attribute(raw: Any, type_: T.DictType) -> dict[Any, Any]:
    """A ``Dict(K, V)`` attribute: a dict (from a ``__spec__``), or ``PATH.KEY`` entries
    written by hand, whose keys are converted to ``K`` (``"3"`` for an int key)."""
    if isinstance(raw, ModuleObject):
        items = list(raw.attributes.items())
    elif isinstance(raw, dict):
        items = list(raw.items())
    else:
        raise TypeError(f"expected a dict (entries PATH.KEY, or a {_SPEC} kind), found {_kind_name(raw)}")
    key_type = _SCALARS.get(type_.key)
    if key_type is None and isinstance(raw, ModuleObject):
        raise TypeError(f"dict keys of type {type_.key} cannot be stored as PATH.KEY entries")
    result: dict[Any, Any] = {}
    for key, value in items:
        try:
            converted = key if key_type is None else key_type(key)
        except ValueError:
            raise ValueError(f"the key {key!r} is not a {type_.key}") from None
        result[converted] = convert_attribute(value, type_.value)
    return result


_SPEC = "__spec__"


def _kind_name(raw: Any) -> str:
    if isinstance(raw, np.ndarray):
        return f"an array of shape {list(raw.shape)} and dtype {raw.dtype}"
    return type(raw).__name__


def _items(raw: Any) -> list[Any]:
    """The elements of a stored list: a Python sequence, a 1-d array, or indexed entries."""
    if isinstance(raw, ModuleObject):
        keys = sorted(raw.attributes, key=lambda k: int(k) if k.isdigit() else -1)
        if any(not k.isdigit() for k in keys) or [int(k) for k in keys] != list(range(len(keys))):
            raise ValueError(f"expected entries .0, .1, ..., found {keys}")
        return [raw.attributes[k] for k in keys]
    if isinstance(raw, np.ndarray):
        return list(raw.reshape(-1)) if raw.ndim <= 1 else list(raw)
    return list(raw)


_RNN_PARAM = re.compile(r"(weight_ih|weight_hh|bias_ih|bias_hh|weight_hr)_l(\d+)(_reverse)?$")


def _rnn_flat_weights(obj: ModuleObject) -> Any:
    """An RNN module's ``_flat_weights`` from its named parameters, in PyTorch's order:
    by layer, forward then reverse, ``w_ih, w_hh, b_ih, b_hh, w_hr``."""
    order = ["weight_ih", "weight_hh", "bias_ih", "bias_hh", "weight_hr"]
    found = []
    for key, value in obj.attributes.items():
        m = _RNN_PARAM.match(key)
        if m:
            found.append(((int(m.group(2)), bool(m.group(3)), order.index(m.group(1))), value))
    return [value for _, value in sorted(found, key=lambda kv: kv[0])] if found else _ABSENT


def bind_constants(graph: Graph, weights: Mapping[str, Any], nodes: Sequence[Node] | None = None) -> dict[str, Any]:
    """The arrays for ``graph``'s tensor constants, keyed by value name (``"self.0.weight"``).

    Each ``prim::Constant`` holding a tensor literal is looked up in ``weights`` under its
    value name, then without the ``self.`` prefix (``"0.weight"``), then both without a
    trailing ``.N`` uniquing suffix.  Constants printed as ``<Tensor>`` must be found
    (``RunError`` listing every missing one); constants printed with (rounded) values are
    bound only when present.  A bound array whose shape contradicts the declared type is
    an error too.
    """
    from vm.program.check_graph import is_tensor_literal

    bound: dict[str, Any] = {}  # arrays; quantized tensors and packed parameters as they are
    missing = _Missing()
    for node in graph.walk() if nodes is None else nodes:
        literal: Any = node.attrs.get("value") if node.kind == "prim::Constant" else None
        if not is_tensor_literal(literal) or not node.outputs:
            continue
        out = node.outputs[0]
        keys = constant_keys(out.name)
        key = next((k for k in keys if k in weights), None)
        if key is None:
            if literal.values is None:
                missing.add(f"%{out.name} : {out.type or 'Tensor'} (tried {', '.join(keys)})", node.span)
            continue
        raw = weights[key]
        if isinstance(raw, (QTensor, *PACKED_TYPES)):  # a quantized tensor, a frozen object(0x...)
            bound[out.name] = raw
            continue
        array = np.asarray(raw)
        _check_shape(out, array, node)
        bound[out.name] = array
    if missing.entries:
        listing = "\n  ".join(missing.entries)
        raise RunError(
            f"the weights lack {len(missing.entries)} tensor constant(s) of the graph:\n  {listing}", missing.span
        )
    return bound


def constant_keys(name: str) -> list[str]:
    """Where a tensor constant named ``name`` may sit in a weights mapping, in order (the
    same rule as ``vm.ir.resolve.UnboundTensor.keys``)."""
    # lazy: vm.ir.resolve imports the operator library, which imports this module
    from vm.binding.unbound import UnboundTensor

    return UnboundTensor(name).keys()


def _check_shape(out: Value, array: np.ndarray, node: Node) -> None:
    """The bound array against the constant's declared type: its shape, and its dtype
    (a frozen ``Float(10)`` constant is float32; binding float64 would change the results)."""
    from vm.binding.inputs import DTYPES

    t = out.type
    sizes = t.sizes if isinstance(t, T.TensorType) else None
    if sizes is not None and None not in sizes and tuple(array.shape) != tuple(sizes):
        raise RunError(f"weight for %{out.name} has shape {list(array.shape)}, the graph declares {t}", node.span)
    dtype = DTYPES.get(t.dtype) if isinstance(t, T.TensorType) and t.dtype else None
    if dtype is not None and array.dtype != np.dtype(dtype):
        raise RunError(f"weight for %{out.name} is {array.dtype}, the graph declares {t} ({dtype})", node.span)
