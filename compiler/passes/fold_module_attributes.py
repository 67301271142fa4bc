"""Module-attribute folding: a program compiled with its weights reads its settings as constants.

A scripted module's graph reads every setting through ``prim::GetAttr`` chains from
``%self``: ``training``, ``eps``, ``inplace``, ``num_heads``, a ``str`` mode, an
Optional that is None.  Nothing in the graph says what they hold, so branches on them
stay, and an operator irvm lacks inside a branch never taken at inference (stochastic
depth's ``bernoulli_`` under ``if self.training``) would stop the compile.  When the
weights are known -- ``irvm run model.ir --weights w.npz``, ``compiler.compile_source(text,
weights=w)`` -- this pass does what ``torch.jit.freeze`` does for attributes: each chain
that ends in a ``bool``, ``int``, ``float``, ``str`` or enum attribute (timm's
``output_fmt``), or in an Optional attribute holding None, becomes a ``prim::Constant``
of the weights' value, and ``propagate_constants`` (which runs next) removes the
branches those constants decide.

Only immutable values are folded: tensors, lists, tuples and dicts stay attribute reads
(they are objects a run may modify, and a tensor constant would print rounded), and an
attribute that is module *state* -- one a ``prim::SetAttr`` of any graph, or of another
method of the module object, assigns (``vm.ir.module_state``) -- is never
folded: ``self._last_sr``, ``self.count`` are read on every call.  An
attribute absent from the weights is not folded (the runtime reports or defaults it as
before).  The values folded are recorded in ``Module.attributes`` (dotted path -> value):
the program is specialized for them, and the runtimes refuse weights that contradict
them (``vm.binding.weights.check_folded``), so a program compiled for eval never silently runs
weights that say ``training = True``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from compiler import types as T
from compiler.passes import note
from vm.core.enum_values import EnumValue, stored
from vm.ir.graph import FreshNames, Module, Node, Value
from vm.ir.module_state import ANYTHING, is_written, written_attributes

_PLAIN = {T.BOOL: bool, T.INT: int, T.FLOAT: float, T.STR: str}


def fold_module_attributes(module: Module, weights: Mapping[str, Any]) -> Module:
    """A copy of ``module`` where no GetAttr chain from the entry's ``%self`` reads a
    bool/int/float/str attribute (or a None Optional) that ``weights`` holds and no
    method writes; the values used are added to the copy's ``attributes``."""
    from vm.binding.weights import ModuleObject

    copy = module.clone()
    main = copy.main
    if not main.inputs or not isinstance(main.inputs[0].type, T.ClassType):
        return copy
    written = written_attributes(copy)
    if ANYTHING in written:
        return copy
    root = weights if isinstance(weights, ModuleObject) else ModuleObject.from_state_dict(weights)
    folded: dict[str, Any] = {}
    _fold_reads(main.name_source(), main.inputs[0], root, folded, written)
    copy.attributes = {**copy.attributes, **folded}
    return copy


def _fold_reads(names: FreshNames, value: Value, obj: Any, folded: dict[str, Any], written: frozenset[str]) -> None:
    from vm.binding.weights import ModuleObject

    for use in list(value.uses):
        node = use.user
        if not isinstance(node, Node) or node.kind != "prim::GetAttr" or use.index != 0:
            continue
        name = str(node.attrs["name"])
        out = node.outputs[0]
        child = obj.attributes.get(name) if isinstance(obj, ModuleObject) else None
        if isinstance(out.type, T.ClassType):
            if isinstance(child, ModuleObject):
                _fold_reads(names, out, child, folded, written)
            continue
        if is_written(obj.dotted(name) if isinstance(obj, ModuleObject) else name, written):
            continue  # module state: read on every call
        constant = _constant_for(child, out.type, name in obj.attributes if isinstance(obj, ModuleObject) else False)
        if constant is _KEEP:
            continue
        path = obj.dotted(name)
        folded[path] = stored(constant) if isinstance(constant, EnumValue) else constant  # as the weights store it
        const = Node("prim::Constant", attrs={} if constant is None else {"value": _payload(constant)}, span=node.span)
        const.add_output(names(out.name), out.type)  # names gathered once, not per attribute
        assert node.owner is not None  # a node being folded sits in a block
        node.owner.insert_before(node, const)
        out.replace_all_uses_with(const.outputs[0])
        node.destroy()
        note("attributes folded")


_KEEP: Any = object()


def _constant_for(raw: Any, type_: T.Type | None, present: bool) -> Any:
    """The Python value to fold for an attribute of ``type_`` stored as ``raw``, or _KEEP."""
    from vm.binding.weights import convert_attribute

    if not present:
        return _KEEP
    try:
        value = convert_attribute(raw, T.TENSOR if type_ is None else type_)
    except (TypeError, ValueError):
        return _KEEP  # the runtime's binding reports it, with its path
    if value is None and (isinstance(type_, T.OptionalType) or type_ == T.NONE):
        return None
    return value if type_ in _PLAIN or isinstance(type_, T.EnumType) else _KEEP


def _payload(value: Any) -> Any:
    """``value`` as a ``prim::Constant``'s ``value=`` attribute (a bool is printed 0/1)."""
    return int(value) if isinstance(value, bool) else value
