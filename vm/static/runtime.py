"""``StaticRuntime``: one caller's plans and buffers over a shared ``StaticModule``.

A run first checks the inputs against the graph's declared types (a ``RunError`` naming
the input) and computes the plan key: the shapes and dtypes of the tensor inputs.  The
first run for a key executes the allocating kernels and records the size of every
managed tensor; the planner (``vm/static/memory_planner.py``) then groups tensors that
are never alive together, validates the plan and allocates one slab.  Later runs with
that key call the out variants with the slab views, so a steady-state run allocates no
managed intermediate.  Plans live in a bounded LRU cache, like ONNX Runtime's memory
patterns.  Graph outputs are never slab memory: with ``manage_output_tensors`` they come
from an output arena that the runtime reuses only after ``release_outputs()``.

A runtime is not thread-safe; ``vm/static/pool.py`` hands one to each concurrent caller.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from vm.errors import RunError
from vm.ops.random import generator, make_generator, using_generator
from vm.static import fastpath
from vm.static import memory_planner as mp
from vm.static.codegen import Mode
from vm.static.module import StaticModule, StaticOptions


class StaticRuntime:
    """Runs a StaticModule: ``StaticRuntime(program, weights=None)(*args)``.

    Returns one value, or a tuple when the graph returns several (as ``vm.Interpreter``).
    Not thread-safe: use one per thread, or a ``RuntimePool``.  Random operators draw
    from ``self.generator``, this runtime's numpy Generator seeded by ``seed``.
    """

    def __init__(
        self,
        module_or_program: Any,
        weights: Any = None,
        options: StaticOptions | None = None,
        *,
        seed: int | None = None,
    ):
        if isinstance(module_or_program, StaticModule):
            if weights is not None or options is not None:
                raise ValueError("weights and options belong to the StaticModule")
            self.module = module_or_program
        else:
            self.module = StaticModule(module_or_program, weights, options)
        sm = self.module
        # random operators draw from this runtime's own generator (vm.ops.random)
        self.generator = make_generator(seed)
        self._draws = sm.draws
        self._plain = sm.bind(
            sm.entry, Mode(), {}, sm.callee_functions(False), None, None
        )
        self._plans: OrderedDict[Any, _Plan] = OrderedDict()
        self._last_key: Any = object()  # never equal to a key: the first run looks up
        self._last_plan: _Plan | None = None
        self._arena_in_use = False
        self.plans_made = self.plan_hits = self.arenas = 0

    def __call__(self, *args: Any) -> Any:
        if self._draws and generator() is not self.generator:
            with using_generator(self.generator):
                return self(*args)
        sm = self.module
        if len(args) != sm.n_inputs:
            names = ", ".join(f"%{v.name}" for v in sm.inputs)
            raise RunError(
                f"the program takes {sm.n_inputs} input(s) ({names}), got {len(args)}"
            )
        key = sm._enter(*args)
        if sm.dtype_guard is not None:
            sm.dtype_guard(args)
        if key == self._last_key:  # the steady state: same shapes as the last run
            plan = self._last_plan
        elif not sm.plannable:
            return self._run(self._plain, args)
        else:
            plan = self._plans.get(key)
            if plan is None:
                return self._first_run(key, args)
            self._plans.move_to_end(key)
            self._last_key, self._last_plan = key, plan
        self.plan_hits += 1
        if plan.out_specs:
            plan.outputs[:] = self._output_arena(plan)
        try:
            return plan.run(*args)
        except Exception as exc:  # noqa: BLE001  (every kernel failure becomes a RunError)
            raise sm.wrap_error(exc) from None

    @property
    def stats(self) -> dict[str, int]:
        return {
            "plans_made": self.plans_made,
            "plan_hits": self.plan_hits,
            "arenas_allocated": self.arenas,
        }

    def _run(self, fn: Any, args: tuple) -> Any:
        try:
            return fn(*args)
        except Exception as exc:  # noqa: BLE001  (every kernel failure becomes a RunError)
            raise self.module.wrap_error(exc) from None

    def release_outputs(self) -> None:
        """The caller is done with the managed outputs of the last run: reuse their arena."""
        self._arena_in_use = False

    def _output_arena(self, plan: _Plan) -> list[np.ndarray]:
        if (
            self._arena_in_use
        ):  # the caller still holds the previous outputs: a new arena
            plan.arena = mp.arena(plan.out_specs)
            self.arenas += 1
        self._arena_in_use = True
        return plan.arena

    def _first_run(self, key: Any, args: tuple) -> Any:
        """Run with allocating kernels, record managed sizes, make and cache the plan."""
        sm = self.module
        recorded: dict[int, Any] = dict(zip(sm.entry.params, args))
        mode = Mode(record=True, candidates=sm.recorded_slots)
        record = sm.bind(sm.entry, mode, {}, sm.callee_functions(False), recorded, None)
        result = self._run(record, args)
        self._plans[key] = self._make_plan(recorded)
        self.plans_made += 1
        while len(self._plans) > sm.options.plan_cache_size:
            self._plans.popitem(last=False)
        return result

    def _make_plan(self, recorded: dict[int, Any]) -> _Plan:
        sm, opts = self.module, self.module.options
        fused, unfused_why = (
            fastpath.groups_to_fuse(sm, recorded, opts.measure_fused)
            if opts.fused_kernels
            else (frozenset(), {g.gid: "fused kernels turned off" for g in sm.groups})
        )
        interior = {
            sm.entry.slots[v]
            for g in sm.groups
            if g.gid in fused
            for n in g.nodes
            for v in n.outputs
        }
        specs = {
            s: spec
            for s in sm.candidates
            if (spec := mp.spec_of(recorded.get(s))) is not None
        }
        specs = {s: spec for s, spec in specs.items() if s not in interior}
        specs = {
            s: spec
            for s, spec in specs.items()
            if spec.nbytes >= opts.min_managed_bytes
        }
        spans = mp.lifetimes(
            {s: sm.candidates[s] for s in specs}, sm.used_at, sm.may_alias
        )
        fast = _fast_calls(sm, recorded, fused)
        inplace: dict[int, int] = {}
        if not opts.optimize_memory:  # every tensor alive for the whole run: no sharing
            last = max((end for _, end in spans.values()), default=0)
            spans = {s: (0, last) for s in spans}
        else:
            inplace = _inplace_pairs(sm, fast, specs, spans)
        memory = mp.plan(specs, spans, opts.planner, inplace)
        mp.validate(memory)
        slab, views = mp.allocate(memory)
        out_slots = tuple(
            s
            for s in sm.out_candidates
            if (spec := mp.spec_of(recorded.get(s)))
            and spec.nbytes >= opts.min_managed_bytes
            and s not in interior
        )
        out_specs = [mp.spec_of(recorded[s]) for s in out_slots]
        structure = tuple(
            (i, _arg_structure(args), guard is not None)
            for i, (_, args, guard) in sorted(fast.items())
        )
        tables = {
            i: (ufunc, [v for kind, v in args if kind == "s"], guard)
            for i, (ufunc, args, guard) in fast.items()
        }
        mode = Mode(
            managed=frozenset(views), out_managed=out_slots, fast=structure, fused=fused
        )
        outputs: list[np.ndarray] = []
        fn = sm.bind(
            sm.entry,
            mode,
            views,
            sm.callee_functions(False),
            None,
            None,
            outputs,
            tables,
        )
        arena = mp.arena(out_specs) if out_specs else []
        return _Plan(
            memory, mode, slab, views, fn, out_specs, arena, outputs, tables, unfused_why
        )

    @property
    def plans(self) -> list[mp.MemoryPlan]:
        return [p.memory for p in self._plans.values()]


@attrs.define
class _Plan:
    memory: mp.MemoryPlan
    mode: Mode
    slab: np.ndarray
    views: dict[int, np.ndarray]
    run: Any
    out_specs: list[mp.TensorSpec]
    arena: list[np.ndarray]
    outputs: list[np.ndarray] = attrs.field(factory=list)  # the OB list the code reads
    fast: dict[int, Any] = attrs.field(factory=dict)  # index -> (ufunc, scalars)
    unfused: dict[int, str] = attrs.field(factory=dict)  # group id -> why it runs as nodes


def _fast_calls(
    sm: StaticModule, recorded: Mapping[int, Any], fused: frozenset[int]
) -> dict[int, Any]:
    """node index -> (ufunc, args, guard) for the nodes this plan calls as bare ufuncs
    (``vm/static/fastpath.py``), constants of maximum/minimum filled to arrays."""
    fast, fills = {}, {}
    for pn in sm.fast_candidates:
        group = sm.entry.group_of.get(pn.node)
        if group is not None and group.gid in fused:
            continue  # inside a fused kernel: the node does not run
        choice = fastpath.choose(pn, recorded, sm.entry.constants, sm.tainted)
        if choice is not None:
            out = recorded.get(pn.outputs[0])
            fast[pn.index] = fastpath.filled(choice, out, fills)
    return fast


def _inplace_pairs(
    sm: StaticModule,
    fast: Mapping[int, Any],
    specs: Mapping[int, mp.TensorSpec],
    spans: Mapping[int, tuple[int, int]],
) -> dict[int, int]:
    """output slot -> operand slot, for unguarded bare ufuncs whose managed operand has
    the output's spec and dies at the node: the output may take its bytes (a ufunc is
    exact with ``out=`` equal to an input; see ``vm/static/memory_planner.py``)."""
    by_index = {pn.index: pn for pn in sm.entry.pnodes}
    pairs = {}
    for i, (_, args, guard) in fast.items():
        pn = by_index[i]
        out = pn.outputs[0]
        if guard is not None or out not in specs or pn.ref.name not in fastpath.ELEMENTWISE:
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
