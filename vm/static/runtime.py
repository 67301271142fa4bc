"""The static runtime: pre-resolved kernels, generated straight-line code, one memory slab.

Modelled on PyTorch's Static Runtime (``torch/csrc/jit/runtime/static``) and AITemplate's
``ModelContainer``.  Three objects, as there:

* ``StaticModule`` is prepared once and then only read: the optimized IR (fusion groups
  expanded into their nodes unless a fused kernel exists), every operator resolved and
  bound (``vm/static/codegen.py``), constants converted, ``%self`` bound to the weights, and
  the facts the memory planner needs (``vm/static/analysis.py``).  Many runtimes share it.
* ``StaticRuntime`` owns what changes per run: its plans, each with a slab and the views
  into it, and the generated function bound to those views.  One per thread.
* ``RuntimePool(static_module, n)`` hands each call a free runtime, or waits for one.

A run first checks the inputs against the graph's declared types (a ``RunError`` naming
the input) and computes the plan key: the shapes and dtypes of the tensor inputs.  The
first run for a key executes the allocating kernels and records the size of every
managed tensor; the planner (``vm/static/memory_planner.py``) then groups tensors that are never
alive together, validates the plan and allocates one slab.  Later runs with that key call
the out variants with the slab views, so a steady-state run allocates no managed
intermediate.  Plans live in a bounded LRU cache, like ONNX Runtime's memory patterns.
Graph outputs are never slab memory: with ``manage_output_tensors`` they come from an
output arena that the runtime reuses only after ``release_outputs()``.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Mapping
from typing import Any

import attrs
import numpy as np

from vm.static import memory_planner as mp
from vm.static import fastpath
from vm.errors import CompileError, RunError
from vm.ops import registry
from vm.ops.random import RANDOM_KINDS, generator, make_generator, using_generator
from vm.static.analysis import analyze
from vm.static.codegen import LINEMAPS, GraphCode, Mode
from vm.static.inputs import input_checker
from vm.static.prepare import (
    as_module,
    bind_self,
    bound_constants,
    constant,
    expand_fusion_groups,
    flat_weights,
    fold_weights,
)


@attrs.frozen
class StaticOptions:
    """As PyTorch's ``StaticModuleOptions``, plus the planner choice and cache bounds."""

    enable_out_variant: bool = True  # run ops with out variants into planned buffers
    optimize_memory: bool = True  # let tensors with disjoint lifetimes share storage
    manage_output_tensors: bool = (
        False  # graph outputs from an arena the caller releases
    )
    planner: str = (
        "standard"  # "standard" (storage groups) or "precomputed" (greedy by size)
    )
    fusion: bool = True  # when compiling IR text: group elementwise ops
    plan_cache_size: int = 8  # plans kept per runtime (one per input-shape key)
    # Tensors smaller than this run their allocating kernel: numpy's own allocator caches
    # small blocks, and an out variant's checks cost more than it saves (measured: out=
    # buys nothing below ~64 KiB; fresh pages are what hurt, from ~256 KiB up).
    min_managed_bytes: int = 16384
    specialize: bool = (
        True  # call a few float pointwise ops as bare ufuncs (vm/static/fastpath.py)
    )
    fused_kernels: bool = True  # run big fusion groups with vm.fusion.kernels's fused kernel
    # below MEASURE_BELOW elements, time the fused kernel against its group's own nodes
    # when a plan is made, and keep the faster (vm/static/fastpath.py)
    measure_fused: bool = True
    fuser: str = "blocked"  # "numba": compile the fused kernels with numba when the module is built
    max_call_depth: int = 200  # prim::CallFunction nesting before a RunError
    # load-time rewrites once weights are bound (compiler/passes/fold_*.py)
    fold_batch_norm: bool = True  # conv + eval BatchNorm -> one conv with folded weights


class StaticModule:
    """A program prepared once for the static runtime; read-only, shared by runtimes."""

    def __init__(
        self, source: Any, weights: Any = None, options: StaticOptions | None = None
    ):
        self.options = options = options or StaticOptions()
        if options.planner not in ("standard", "precomputed"):
            raise ValueError(
                f"unknown planner {options.planner!r} (standard or precomputed)"
            )
        module = as_module(source, options.fusion)
        added: dict[str, Any] = {}  # arrays of the constants the load-time folds made
        if weights is not None and options.fold_batch_norm:
            module, added = fold_weights(module, weights)
        module, self.fusion_fallbacks, groups = expand_fusion_groups(module)
        self.groups = groups
        from vm.fusion.kernels import enable_fuser

        self.fuser_problems = enable_fuser(options.fuser, (g.kernel for g in groups))
        self.ir = module
        from compiler.resolve import resolve_all

        refs, errors = resolve_all(module)
        if (
            errors
        ):  # every unsupported node at once, as compiler.resolve.check_all reports them
            if len(errors) == 1:
                raise errors[0]
            raise CompileError(
                f"{len(errors)} nodes cannot be compiled:\n"
                + "\n".join(map(str, errors))
            )
        flat = flat_weights(weights)
        if added:
            flat = {**flat, **added}
        names = list(module.functions)
        self.functions = {name: i for i, name in enumerate(names)}
        common = dict(
            refs=refs,
            bind=registry.bind,
            functions=self.functions,
            max_depth=options.max_call_depth,
        )
        tensors = bound_constants(module, flat)
        common["constant"] = lambda node: (
            tensors.get(node.outputs[0].name)
            if node.outputs[0].name in tensors
            else constant(node, flat)
        )
        common["bind_out"] = (
            registry.bind_out if options.enable_out_variant else (lambda ref: None)
        )
        main = module.main
        self.draws = any(
            n.kind in RANDOM_KINDS for g in (main, *module.functions.values()) for n in g.walk()
        )
        bound = bind_self(main, weights, module.attributes)
        from vm.preflight import check_weights, make_guard

        self_object = next(iter(bound.values()), None)
        check_weights(main, self_object, flat, bool(bound))
        self.dtype_guard = make_guard(main, self_object, flat, bool(bound))
        # %self's attributes are constants of the module unless the program assigns one
        common["fold_attributes"] = not any(
            n.kind == "prim::SetAttr"
            for g in (main, *module.functions.values())
            for n in g.walk()
        )
        self.entry = GraphCode(
            main,
            "main",
            first_index=0,
            bound_params=bound,
            is_entry=True,
            groups=groups,
            **common,
        )
        self.callees: list[GraphCode] = []
        index = len(self.entry.pnodes)
        for name in names:
            code = GraphCode(
                module.functions[name],
                name,
                first_index=index,
                bound_params={},
                is_entry=False,
                **common,
            )
            index += len(code.pnodes)
            self.callees.append(code)
        self.inputs = [v for v in main.inputs if v not in bound]
        self.n_outputs = len(main.outputs)
        self.n_inputs = len(self.inputs)
        self._enter = input_checker(self.inputs)
        self._prepare_planning(refs)
        self._shared_callees: dict[bool, list[Any]] = {}
        self._lock = threading.Lock()
        self._default_runtime: StaticRuntime | None = None

    @property
    def processed_nodes(self) -> list:
        return [pn for code in (self.entry, *self.callees) for pn in code.pnodes]

    def _prepare_planning(self, refs: dict) -> None:
        """Slot-level facts for the planner (empty when out variants are off)."""
        code, opts = self.entry, self.options

        def has_out(node: Any) -> bool:
            pn = code.by_node.get(node)  # None for a folded attribute read
            return opts.enable_out_variant and pn is not None and pn.out is not None

        facts = self.facts = analyze(code.graph, refs, has_out)
        s = code.slots
        self.candidates = {s[v]: step for v, step in facts.produced_at.items()}
        self.out_candidates = (
            tuple(s[v] for v in facts.output_candidates)
            if opts.manage_output_tensors
            else ()
        )
        self.used_at = {s[v]: steps for v, steps in facts.used_at.items() if v in s}
        self.may_alias = {
            s[v]: [s[a] for a in alias if a in s]
            for v, alias in facts.may_alias.items()
            if v in s
        }
        self.tainted = frozenset(s[v] for v in facts.tainted if v in s)
        self.fast_candidates = [
            pn
            for pn in code.pnodes
            if opts.specialize and pn.ref is not None and pn.ref.name in fastpath.NAMES
        ]
        self.recorded_slots = frozenset(self.candidates) | frozenset(
            self.out_candidates
        )
        self.recorded_slots |= frozenset(
            slot for pn in code.pnodes for slot in pn.outputs
        )  # every result (the pieces of a ListUnpack too): what the fast path reads
        # values not defined in the entry block (loop bodies, branches) vary per run: guard them
        block_values = {v for n in facts.steps for v in n.outputs} | set(
            code.graph.inputs
        )
        self.tainted |= frozenset(
            slot for v, slot in s.items() if v not in block_values
        )

    @property
    def plannable(self) -> bool:
        return bool(self.candidates or self.out_candidates or self.fast_candidates)

    def callee_functions(self, timed: bool) -> list[Any]:
        """The callees' functions (shared by every runtime: they hold no per-run state)."""
        with self._lock:
            table = self._shared_callees.get(timed)
            if table is None:
                table = self._shared_callees[timed] = []
                table.extend(
                    self.bind(code, Mode(timed=timed), {}, table, None, None)
                    for code in self.callees
                )
            return table

    def bind(
        self,
        code: GraphCode,
        mode: Mode,
        views: Mapping[int, np.ndarray],
        table: list,
        rec: Any,
        times: Any,
        outputs: list | None = None,
        fast: Mapping[int, Any] | None = None,
    ) -> Any:
        """``code``'s function for ``mode``, closed over kernels, constants and buffers
        (``fast``: index -> (ufunc, scalars, guard dtype) for the nodes ``mode.fast`` names)."""
        kernels = {pn.index: pn.kernel for pn in code.pnodes}
        outs = {pn.index: pn.out for pn in code.pnodes}
        made = code.factory(mode)
        return made(
            kernels,
            outs,
            code.constants,
            views,
            outputs,
            table,
            rec,
            times,
            fast,
            time.perf_counter,
            _deep,
        )

    def runtime(self) -> StaticRuntime:
        """A cached runtime, for single-threaded use (as PyTorch's ``StaticModule::runtime``)."""
        if self._default_runtime is None:
            self._default_runtime = StaticRuntime(self)
        return self._default_runtime

    def __call__(self, *args: Any) -> Any:
        return self.runtime()(*args)

    def wrap_error(self, exc: BaseException) -> BaseException:
        """A kernel failure as a RunError naming the op, the node, its span and the IR
        call stack (read back from the traceback's generated-code lines)."""
        if getattr(exc, "static_node", None) is not None:
            return exc
        frames = []
        tb = exc.__traceback__
        while tb is not None:
            filename = tb.tb_frame.f_code.co_filename
            node = LINEMAPS.get(filename, {}).get(tb.tb_lineno)
            if node is not None:
                frames.append((filename.split(":")[1], node))
            tb = tb.tb_next
        if not frames:
            return exc
        node = frames[-1][1]
        pn = next(
            (c.by_node[node] for c in (self.entry, *self.callees) if node in c.by_node),
            None,
        )
        op = pn.ref.name if pn is not None and pn.ref is not None else node.kind
        what = str(exc) if isinstance(exc, RunError) else f"{type(exc).__name__}: {exc}"
        stack = "".join(f"\n  {label} at {n.span}: {n!r}" for label, n in frames[-8:])
        err = RunError(
            f"the following operation failed in the irvm static runtime: {op}\n  while executing {node!r}"
            f"\n  {what}\nIR call stack (most recent call last):{stack}",
            node.span,
        )
        err.static_node = node  # type: ignore[attr-defined]
        err.__cause__ = exc
        return err


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


class RuntimePool:
    """N runtimes over one StaticModule; a call takes a free one or waits (AITemplate's
    ModelContainer)."""

    def __init__(self, static_module: StaticModule, n: int, *, seed: int | None = None):
        if n < 1:
            raise ValueError("a RuntimePool needs at least one runtime")
        self.module = static_module
        # each runtime draws its own stream: seeds spawned from ``seed`` (None: from the OS)
        seeds = [int(s.generate_state(1)[0]) for s in np.random.SeedSequence(seed).spawn(n)]
        self._free = [StaticRuntime(static_module, seed=s) for s in seeds]
        self._available = threading.Condition()

    def __call__(self, *args: Any) -> Any:
        with self._available:
            while not self._free:
                self._available.wait()
            runtime = self._free.pop()
        try:
            return runtime(*args)
        finally:
            with self._available:
                self._free.append(runtime)
                self._available.notify()


def _deep(label: str, depth: int) -> None:
    raise RunError(f"maximum call depth ({depth - 1}) exceeded calling {label}")
