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
from typing import Any

import attrs
import numpy as np

from vm.binding.inputs import with_defaults
from vm.binding.session import Engines
from vm.core.errors import RunError
from vm.static import memory_planner as mp
from vm.static.layout import Layout
from vm.static.model import Binding, Mode
from vm.static.module import StaticModule, StaticOptions


class StaticRuntime:
    """Runs a StaticModule: ``StaticRuntime(program, weights=None)(*args)``.

    Returns one value, or a tuple when the graph returns several (as ``vm.Interpreter``).
    Not thread-safe: use one per thread, or a ``RuntimePool``.  Random operators draw
    from ``self.generator``, this runtime's numpy Generator seeded by ``seed``.  ``strict``
    (the default) refuses weights with keys the program does not read (``vm.binding.strict``).
    """

    def __init__(
        self,
        module_or_program: Any,
        weights: Any = None,
        options: StaticOptions | None = None,
        *,
        seed: int | None = None,
        strict: bool = True,
        quantized_engine: str | None = None,
        quantized_kernel: str | None = None,
    ):
        if isinstance(module_or_program, StaticModule):
            if weights is not None or options is not None:
                raise ValueError("weights and options belong to the StaticModule")
            self.module = module_or_program
        else:
            self.module = StaticModule(module_or_program, weights, options, strict=strict)
        sm = self.module
        # the binding session's last step (vm.binding.session.Engines): random operators draw
        # from this runtime's own generator, quantized kernels round as this engine and fbgemm
        # kernel do (see vm.Interpreter); the module bound the weights, once for every runtime
        self.engines = Engines(seed, quantized_engine, quantized_kernel, sm.draws)
        self.generator, self.quantized = self.engines.generator, self.engines.quantized
        self._engines = None if self.engines.idle else self.engines
        self._plain = (
            None if sm.plannable else sm.bind(sm.entry, Mode(), Binding(callees=sm.callee_functions(False)))
        )
        # the recording function, bound now: a first call with a new key only runs it
        self._recorder = sm.recorder() if sm.plannable else None
        # and the globals its first plan binds into (bind copies none of them on a call)
        self._spare_globals = sm.spare_globals() if sm.plannable else None
        self._plans: OrderedDict[Any, _Plan] = OrderedDict()
        self._last_key: Any = object()  # never equal to a key: the first run looks up
        self._last_plan: Any = None  # the _Plan of _last_key
        self._arena_in_use = False
        self.plans_made = self.plan_hits = self.arenas = 0
        for key, layout in sm.layouts():  # plans the module made already: bound now
            self._add_plan(key, layout)

    def __call__(self, *args: Any) -> Any:
        engines = self._engines  # this runtime's generator and quantized arithmetic (None: nothing to enter)
        if engines is not None and not engines.current():
            with engines.entered():
                return self(*args)
        sm = self.module
        if len(args) != sm.n_inputs:
            args = tuple(with_defaults(sm.input_defaults, args, sm.n_inputs))
        if len(args) != sm.n_inputs:
            names = ", ".join(f"%{v.name}" for v in sm.inputs)
            raise RunError(
                f"the program takes {sm.n_inputs} input(s) ({names}), got {len(args)}"
            )
        key, args = sm._enter(*args)
        if sm.dtype_guard is not None:
            sm.dtype_guard(args)
        if key == self._last_key:  # the steady state: same shapes as the last run
            plan = self._last_plan
        elif not sm.plannable:
            return self._run(self._plain, args)
        else:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
            else:
                layout = sm.layout(key)
                if layout is None:  # a new shape: record this run, plan from it
                    return self._first_run(key, args)
                plan = self._add_plan(key, layout)
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
        """Run with allocating kernels, recording sizes; the module makes the layout."""
        try:
            result, layout = self.module.record(key, args, self._recorder)
        except Exception as exc:  # noqa: BLE001  (every kernel failure becomes a RunError)
            raise self.module.wrap_error(exc) from None
        self._add_plan(key, layout)
        self.plans_made += 1
        return result

    def _add_plan(self, key: Any, layout: Layout) -> _Plan:
        plan = self._plans[key] = self._make_plan(layout)
        while len(self._plans) > self.module.options.plan_cache_size:
            self._plans.popitem(last=False)
        return plan

    def _make_plan(self, layout: Layout) -> _Plan:
        """This runtime's instance of ``layout``: its own slab, arena and bound code."""
        sm = self.module
        slab, views = mp.allocate(layout.memory)
        slab[::PAGE] = 0  # touch every page now: the first run should not take the faults
        outputs: list[np.ndarray] = []
        table = sm.callee_functions(False)
        spare = self._spare_globals
        if spare is not None and sm.generic_mode is not None and layout.factory is sm.entry.factory(sm.generic_mode):
            self._spare_globals = None  # one binding per dict: later plans copy their own
        else:
            spare = None
        binding = Binding(
            views, table, outputs=outputs, fast=layout.fast, fused=layout.mode.fused, globals_=spare, shapes=layout.shapes
        )
        fn = sm.bind(sm.entry, layout.mode, binding, layout.factory)
        arena = mp.arena(layout.out_specs) if layout.out_specs else []
        return _Plan(layout, slab, views, fn, arena, outputs)

    @property
    def plans(self) -> list[mp.MemoryPlan]:
        return [p.memory for p in self._plans.values()]


PAGE = 4096


@attrs.define
class _Plan:
    """A layout of the module (``vm/static/layout.py``) with this runtime's buffers."""

    layout: Layout
    slab: np.ndarray
    views: dict[int, np.ndarray]
    run: Any
    arena: list[np.ndarray]
    outputs: list[np.ndarray]  # the OB list the code reads

    @property
    def memory(self) -> mp.MemoryPlan:
        return self.layout.memory

    @property
    def mode(self) -> Mode:
        return self.layout.mode

    @property
    def out_specs(self) -> list[mp.TensorSpec]:
        return self.layout.out_specs

    @property
    def fast(self) -> dict[int, Any]:
        return self.layout.fast

    @property
    def unfused(self) -> dict[int, str]:
        return self.layout.unfused
