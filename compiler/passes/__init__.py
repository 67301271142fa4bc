"""Compiler passes: each module is one IR -> IR transform named for its verb.

Every pass has one entry point, ``name(target)``, taking a ``Graph`` or a ``Module`` and
returning a new object of the same type; the input is never modified (the pass works on a
clone, as xDSL's ``apply_to_clone``).  The helpers here do the cloning and the walking
over every graph of a module, and let a pass report what it changed (``note``) to the
pass manager in ``compiler.pipeline``, which turns the counters into a ``PassRecord``.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar

from vm.ir.graph import Block, Graph, Module, Node, Value, count_nodes

Target = TypeVar("Target", Graph, Module)

_counters: ContextVar[Counter[str] | None] = ContextVar("pass_counters", default=None)
_in_place: ContextVar[bool] = ContextVar("pass_in_place", default=False)


def note(counter: str, n: int = 1) -> None:
    """Count ``n`` events of kind ``counter`` ("constants pooled") for the running pass."""
    counts = _counters.get()
    if counts is not None and n:
        counts[counter] += n


@contextmanager
def collecting() -> Iterator[Counter[str]]:
    """Collect the ``note`` counters of the passes run inside the ``with`` block."""
    counts: Counter[str] = Counter()
    token = _counters.set(counts)
    try:
        yield counts
    finally:
        _counters.reset(token)


def graphs_of(target: Graph | Module) -> list[Graph]:
    """The graphs a pass transforms: the graph itself, or a module's main and functions."""
    if isinstance(target, Graph):
        return [target]
    return [target.main, *target.functions.values()]


@contextmanager
def in_place() -> Iterator[None]:
    """Let the next pass entry called inside the ``with`` block transform its target
    itself instead of a clone (the pass manager owns its copy of the module, and cloning
    it before every pass costs as much as a pass).  Passes that pass entry calls get
    copies as usual."""
    token = _in_place.set(True)
    try:
        yield
    finally:
        _in_place.reset(token)


def owned_copy(target: Target) -> Target:
    """What a pass that works on the whole target transforms: a clone of it, or inside
    ``in_place()`` the target itself."""
    return target if _in_place.get() else target.clone()


def apply_to_clone(target: Target, transform: Callable[[Graph], None]) -> Target:
    """Clone ``target`` and run the in-place ``transform`` on each of its graphs
    (no clone inside ``in_place()``)."""
    own = _in_place.get()
    token = _in_place.set(False)
    try:
        copy = target if own else target.clone()
        for graph in graphs_of(copy):
            transform(graph)
    finally:
        _in_place.reset(token)
    return copy


def node_count(target: Graph | Module) -> int:
    """Nodes of every graph of ``target``, nested blocks included (fusion subgraphs not)."""
    return count_nodes(g.block for g in graphs_of(target))


def lazy_is_written(graph: Graph) -> Callable[[Value], bool]:
    """``AliasClasses(graph).is_written``, the classes computed when the first question
    that a forward search from the value (``may_be_written``) cannot answer is asked:
    passes that ask only about rare nodes (a folded list, an identity on a tensor) then
    mostly skip the analysis of a big graph entirely.  Sound for passes whose edits never
    make a value written that was not (folding, rewriting to an alias)."""
    from vm.ir.effects import AliasClasses, may_be_written

    classes = None
    templates: dict[tuple[object, ...], Any] = {}  # may_be_written's cache, opaque here

    def is_written(value: Value) -> bool:
        nonlocal classes
        if not may_be_written(value, templates):
            return False  # no write reachable from the value: the classes are not needed
        if classes is None:
            classes = AliasClasses(graph)
        return classes.is_written(value)

    return is_written


def ancestor_in(node: Node | None, block: Block) -> Node | None:
    """The node of ``block`` that is ``node`` or contains it; None if ``node`` is not inside."""
    while node is not None and node.owner is not block:
        owner = node.owner
        node = owner.owner if owner is not None else None
    return node
