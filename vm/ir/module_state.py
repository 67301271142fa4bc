"""Module state: the attributes of ``%self`` that a program writes.

A scripted module may keep state in its attributes: a streaming model's LSTM state and
the last samples of audio (``self._context = x1[..., -64:]``), a counter, a key/value
cache that grows, a flag that starts None.  Such an attribute holds a different value,
shape, length, dtype or even type on every call, so no pass, plan, fold or cache may
treat it as a constant.  Every attribute *not* written is a setting or a weight, which
the specialization passes, the static runtime's shape folding and its one-time read of
``%self`` rely on being fixed.  This module is the one place that tells them apart.

An attribute is *written* when

* a ``prim::SetAttr`` in any graph of the module assigns it (``self.count = ...``,
  ``self.sub.h = ...``), or
* a node may write the object an attribute read returns (``self.buf.add_(x)``,
  ``self.cache.append(k)``: ``effects.may_be_written``), or
* another method of the same module object writes it: ``Module.state`` carries what the
  frontend found in the archive's other methods (``reset_states`` assigning
  ``self._context``), which no graph of this program shows.

Written attributes are dotted paths from the entry's ``%self`` (``"_context"``,
``"sub.count"``).  A write to an object the analysis cannot trace back to ``%self`` (a
callee's parameter, a module picked from a list at run time) is recorded as ``"*.NAME"``:
attribute ``NAME`` of any object; ``"*"`` says that anything may be written (a method the
frontend could not compile).  A path is state when it, or a prefix of it (a submodule
assigned whole), is written.  An object the graph creates itself (``prim::CreateObject``:
the ``no_grad`` of a ``with torch.no_grad():`` saving the grad mode) is no module state.
"""

from __future__ import annotations

from collections.abc import Iterable

from vm.core import types as T
from vm.core.state_paths import ANYTHING, is_written
from vm.ir import effects
from vm.ir.graph import Graph, Module, Node, Value


def written_attributes(module: Module) -> frozenset[str]:
    """The attributes some graph of ``module`` (or, per ``Module.state``, another method
    of its module object) writes, as dotted paths from ``%self`` or ``*.NAME``."""
    written = set(module.state)
    for i, graph in enumerate((module.main, *module.functions.values())):
        written.update(graph_writes(graph, entry=i == 0))
    return frozenset(written)


def graph_writes(graph: Graph, entry: bool = True) -> set[str]:
    """The attributes ``graph`` writes; paths are traced from ``%self`` only in an
    ``entry`` graph (a callee's first parameter may be any object)."""
    written: set[str] = set()
    root = graph.inputs[0] if entry and graph.inputs and _is_object(graph.inputs[0].type) else None
    index = effects.WriteIndex((graph,))  # one pass, not one search per attribute read
    for node in graph.walk():
        path = None
        if node.kind == "prim::SetAttr":
            path = _path(node.inputs[0], str(node.attrs.get("name")), root)
        elif node.kind == "prim::GetAttr" and _holds_data(node.outputs[0].type):
            if index.may_be_written_through(node.outputs[0]):
                path = _path(node.inputs[0], str(node.attrs.get("name")), root)
        if path is not None:
            written.add(path)
    return written


def attribute_path(value: Value) -> str | None:
    """The dotted path of a GetAttr chain from the first input of ``value``'s graph
    (``%self``): ``"conv.weight"``; None when ``value`` is no such chain."""
    names: list[str] = []
    current = value
    while True:
        node = current.node
        if node is None:
            block = current.block
            owner = block.owner if block is not None else None
            return ".".join(reversed(names)) if owner is None and _is_first_input(current) else None
        if node.kind != "prim::GetAttr":
            return None
        names.append(str(node.attrs.get("name")))
        current = node.inputs[0]


def state_reads(graph: Graph, written: Iterable[str], entry: bool = True) -> set[Node]:
    """The ``prim::GetAttr`` nodes of ``graph`` (any depth) that read written state; in a
    graph that is not the ``entry``, paths from its first parameter are not ``%self``'s."""
    names = frozenset(written)
    if not names:
        return set()
    return {n for n in graph.walk() if n.kind == "prim::GetAttr" and reads_state(n, names, entry)}


def reads_state(node: Node, written: frozenset[str], entry: bool = True) -> bool:
    """Whether the ``prim::GetAttr`` ``node`` may read a written attribute; a read the
    analysis cannot trace to ``%self`` is state when an attribute of its name is written."""
    if not written:
        return False
    path = attribute_path(node.outputs[0]) if entry else None
    if path is not None:
        return is_written(path, written)
    leaf = str(node.attrs.get("name"))
    return ANYTHING in written or any(n.rsplit(".", 1)[-1] == leaf for n in written)


def _path(obj: Value, name: str, root: Value | None) -> str | None:
    """The written attribute's path, ``*.NAME`` when untraced, None for an object the
    graph made itself (``prim::CreateObject``: ``no_grad``'s saved mode), which is no
    module state."""
    if _made_here(obj):
        return None
    base = attribute_path(obj) if root is not None else None
    if base is None:
        return f"*.{name}"
    return f"{base}.{name}" if base else name


def _made_here(obj: Value) -> bool:
    current = obj
    while current.node is not None and current.node.kind == "prim::GetAttr":
        current = current.node.inputs[0]
    return current.node is not None and current.node.kind == "prim::CreateObject"


def _is_first_input(value: Value) -> bool:
    block = value.block
    return block is not None and bool(block.params) and block.params[0] is value and _is_object(value.type)


def _is_object(t: T.Type | None) -> bool:
    return isinstance(t, T.ClassType)


def _holds_data(t: T.Type | None) -> bool:
    """A tensor, list or dict attribute: what an in-place op may change (not a submodule)."""
    return effects.is_mutable_type(t) and not _is_object(t)


__all__ = ["ANYTHING", "attribute_path", "graph_writes", "is_written", "reads_state", "state_reads", "written_attributes"]
