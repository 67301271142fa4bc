"""The static runtime's data model: processed nodes, expanded fusion groups, and the
modes code is generated in (``vm.static.codegen`` generates it, ``vm.static.layout`` and
``vm.static.module`` choose the modes)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from vm.core.errors import RunError
from vm.ir.graph import Node, Value
from vm.ops.registry import OpRef


@attrs.frozen
class ProcessedNode:
    """One operator node, resolved once: what runs, and where its operands live."""

    index: int
    node: Node
    ref: OpRef | None
    kernel: Callable[..., Any] | None
    out: Callable[..., Any] | None  # the out variant, f(buffer, *inputs), or None
    inputs: tuple[int, ...]
    outputs: tuple[int, ...]

    @property
    def kind(self) -> str:
        return self.node.kind


@attrs.define(eq=False)
class FusionInfo:
    """A fusion group of the entry block, expanded into its nodes, and its fused kernel.

    ``nodes`` are the expanded nodes (contiguous in the block), ``inputs`` the outer values
    the group reads, ``outputs`` the values the rest of the graph now uses in place of the
    group's outputs (inner results, or an input passed through).
    """

    gid: int
    nodes: list[Node]
    inputs: list[Value]
    outputs: list[Value]
    kernel: Any  # vm.fusion.kernels.FusedKernel, or None when the group cannot have one
    span: Any = None


@attrs.frozen
class Mode:
    """How to generate a graph's function."""

    managed: frozenset[int] = frozenset()  # slots computed into slab views b<slot>
    out_managed: tuple[int, ...] = ()  # graph outputs computed into OB[i]
    record: bool = False  # store managed candidates' values in R[slot]
    candidates: frozenset[int] = frozenset()  # what record mode records
    timed: bool = False  # accumulate each node's time in T[index]
    # nodes called as a bare ufunc (vm/static/fastpath.py):
    # (index, (("v", slot) | ("s", j), ...), guarded by a dtype check)
    fast: tuple[tuple[int, tuple[tuple[str, int], ...], bool], ...] = ()
    fused: frozenset[int] = frozenset()  # fusion groups run by their fused kernel, not expanded
    # one function for every plan (``candidates``: the plannable slots; ``fast``: every
    # fast candidate's call shape, fastpath.call_shape): a planned node is
    # ``o3(b5, ...) if b5 is not None else k3(...)``, a fast candidate tries
    # ``u3(...) if u3 is not None`` first, a fusion group runs ``g<gid>`` when it is bound;
    # a plan binds its views, fast calls and fused kernels to it, and compiles nothing
    generic: bool = False
    # generic code only: slots it stores in R[slot] when bound with a recording dict
    # (``R is not None``), so that the recording run and every plan run one code object
    recorded: frozenset[int] = frozenset()
    # shape-only nodes (vm/static/shape_only.py) a plan does not run, by node index, and the
    # slots of their values later nodes read, bound per plan as globals ``c<slot>``
    skip: frozenset[int] = frozenset()
    cached: frozenset[int] = frozenset()


@attrs.frozen(eq=False)
class Binding:
    """What one binding of a graph's generated code reads besides the module's kernels and
    constants (``StaticModule.bind``): a plan's slab views, a runtime's tables."""

    views: Mapping[int, Any] = attrs.field(factory=dict)  # slot -> slab view (``b<slot>``)
    callees: list[Any] | None = None  # the callees' functions (``F``)
    record: dict[int, Any] | None = None  # slot -> value, filled by a recording run (``R``)
    times: Any = None  # per-node clock of a timed run (``T``)
    outputs: list[Any] | None = None  # the output arena (``OB``)
    fast: Mapping[int, Any] | None = None  # node index -> (ufunc, scalars, guard dtype)
    fused: frozenset[int] | None = None  # groups run fused (None: every group with a kernel)
    globals_: dict[str, Any] | None = None  # a dict from ``spare_globals`` to bind into
    shapes: Mapping[int, Any] | None = None  # the plan's cached shape-only values (``c<slot>``)


def call_too_deep(label: str, depth: int) -> None:
    """What generated code calls when ``prim::CallFunction`` nests too deep."""
    raise RunError(f"maximum call depth ({depth - 1}) exceeded calling {label}")


@attrs.frozen(eq=False)
class PlanningFacts:
    """What making a plan's layout reads of its module (``vm.static.layout.make_layout``,
    ``fastpath.groups_to_fuse``), all decided when the ``StaticModule`` was built: the
    record the layout code takes instead of the module itself."""

    options: Any  # the module's StaticOptions
    entry: Any  # the entry graph's code (codegen.GraphCode): slots, constants, factory
    groups: list[FusionInfo]  # top-level fusion groups with a fused kernel
    candidates: Mapping[int, int]  # plannable slot -> producing step
    out_candidates: tuple[int, ...]  # graph outputs an arena may hold
    used_at: Mapping[int, Any]  # slot -> steps reading it
    may_alias: Mapping[int, list[int]]  # slot -> slots that may alias it
    tainted: frozenset[int]  # slots whose shapes the plan key does not fix
    fast_probes: list[Any]  # (fastpath.Probe, group id or None) per fast candidate
    by_index: Mapping[int, ProcessedNode]  # node index -> processed node, fast candidates
    shape_skip: frozenset[int]  # shape-only nodes a plan does not run
    shape_cached: frozenset[int]  # their values later nodes read
    generic_mode: Mode | None  # the one planned code of every plan, if there is one
