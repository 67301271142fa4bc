"""A plan's layout: what the static runtime decides once per input-shape key.

From the sizes one recording run saw (``vm/static/runtime.py``), ``make_layout`` decides
which fusion groups run fused, which nodes are called as bare ufuncs
(``vm/static/fastpath.py``), which tensors live in the slab and where
(``vm/static/memory_planner.py``), and compiles the generated code for that choice.  A
layout holds no buffer, so it lives in the ``StaticModule`` and every runtime of the
module uses it: a runtime only allocates its own slab and binds the code to its views.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from vm.static import fastpath
from vm.static import memory_planner as mp
from vm.static.model import Mode, PlanningFacts


@attrs.frozen(eq=False)
class Layout:
    """One plan of a module, shared by its runtimes (read-only)."""

    memory: mp.MemoryPlan
    mode: Mode
    out_specs: list[mp.TensorSpec]
    fast: dict[int, Any]  # node index -> (ufunc, scalars, guard dtype)
    unfused: dict[int, str]  # group id -> why it runs as nodes
    factory: Any  # the entry graph's code: the module's generic code, or compiled for ``mode``
    shapes: dict[int, Any] = attrs.field(factory=dict)  # cached shape-only values (vm/static/shape_only.py)


def make_layout(facts: PlanningFacts, recorded: Mapping[int, Any]) -> Layout:
    """The layout for the run that recorded ``recorded`` (slot -> value), from the
    module's planning facts ``facts``."""
    opts = facts.options
    fused, unfused_why = (
        fastpath.groups_to_fuse(facts, recorded, opts.measure_fused)
        if opts.fused_kernels
        else (frozenset(), {g.gid: "fused kernels turned off" for g in facts.groups})
    )
    interior = {facts.entry.slots[v] for g in facts.groups if g.gid in fused for n in g.nodes for v in n.outputs}
    specs = {s: spec for s in facts.candidates if (spec := mp.spec_of(recorded.get(s))) is not None}
    specs = {s: spec for s, spec in specs.items() if s not in interior and spec.nbytes >= opts.min_managed_bytes}
    spans = mp.lifetimes({s: facts.candidates[s] for s in specs}, facts.used_at, facts.may_alias)
    fast = _fast_calls(facts, recorded, fused)
    inplace: dict[int, int] = {}
    if not opts.optimize_memory:  # every tensor alive for the whole run: no sharing
        last = max((end for _, end in spans.values()), default=0)
        spans = {s: (0, last) for s in spans}
    else:
        inplace = _inplace_pairs(facts, fast, specs, spans)
    memory = mp.plan(specs, spans, opts.planner, inplace)
    mp.validate(memory)
    out_slots = tuple(
        s
        for s in facts.out_candidates
        if (spec := mp.spec_of(recorded.get(s))) and spec.nbytes >= opts.min_managed_bytes and s not in interior
    )
    out_specs = [spec for s in out_slots if (spec := mp.spec_of(recorded[s])) is not None]
    structure = tuple((i, _arg_structure(args), guard is not None) for i, (_, args, guard) in sorted(fast.items()))
    tables = {i: (ufunc, [v for kind, v in args if kind == "s"], guard) for i, (ufunc, args, guard) in fast.items()}
    mode = Mode(
        managed=frozenset(memory.offsets), out_managed=out_slots, fast=structure, fused=fused,
        skip=facts.shape_skip, cached=facts.shape_cached,
    )
    # the module's generic code serves every plan without compiling (only plans that
    # manage graph outputs get code of their own)
    factory = facts.entry.factory(facts.generic_mode if facts.generic_mode is not None else mode)
    return Layout(memory, mode, out_specs, tables, unfused_why, factory, cached_values(facts.shape_cached, recorded))


def cached_values(slots: frozenset[int], recorded: Mapping[int, Any]) -> dict[int, Any]:
    """The recorded shape-only values a plan binds, arrays made read-only: they are shared
    by every call of the plan (and every runtime of the module), and nothing may write them
    (``vm/static/shape_only.py``), so a write would be a bug, reported, not a wrong answer."""
    values = {}
    for slot in slots:
        value = recorded[slot]
        if isinstance(value, np.ndarray):
            value.flags.writeable = False
        values[slot] = value
    return values


def _fast_calls(
    facts: PlanningFacts, recorded: Mapping[int, Any], fused: frozenset[int]
) -> dict[int, Any]:
    """node index -> (ufunc, args, guard) for the nodes this plan calls as bare ufuncs
    (``vm/static/fastpath.py``), constants of maximum/minimum filled to arrays."""
    fast: dict[int, Any] = {}
    fills: dict[tuple[Any, ...], Any] = {}
    for probe, gid in facts.fast_probes:  # (only those in the form the generic code calls)
        if gid is not None and gid in fused:
            continue  # inside a fused kernel: the node does not run
        choice = probe.choose(recorded)
        if choice is not None:
            fast[probe.index] = fastpath.filled(choice, recorded.get(probe.out), fills)
    return fast


def _inplace_pairs(
    facts: PlanningFacts,
    fast: Mapping[int, Any],
    specs: Mapping[int, mp.TensorSpec],
    spans: Mapping[int, tuple[int, int]],
) -> dict[int, int]:
    """output slot -> operand slot, for unguarded bare ufuncs whose managed operand has
    the output's spec and dies at the node: the output may take its bytes (a ufunc is
    exact with ``out=`` equal to an input; see ``vm/static/memory_planner.py``)."""
    pairs = {}
    for i, (_, args, guard) in fast.items():
        pn = facts.by_index[i]
        out = pn.outputs[0]
        if guard is not None or out not in specs or pn.ref is None or pn.ref.name not in fastpath.ELEMENTWISE:
            continue  # guarded, unplanned, or not elementwise (linear's matmul reads rows)
        for v in (v for kind, v in args if kind == "v" and v in specs):
            if specs[v] == specs[out] and spans[v][1] == spans[out][0]:
                pairs[out] = v
                break
    return pairs


def _arg_structure(args: tuple) -> tuple[tuple[str, int], ...]:
    """("v", slot) operands stay; constants become ("s", j), their place in the scalars."""
    out, j = [], 0
    for kind, value in args:
        if kind == "v":
            out.append(("v", value))
        else:
            out.append(("s", j))
            j += 1
    return tuple(out)
