"""``StaticModule``: everything the static runtime decides once per model.

Modelled on PyTorch's ``StaticModule`` (``torch/csrc/jit/runtime/static/impl.h``): built
once from a compiled program and its weights, then only read, so any number of
``StaticRuntime`` objects (``vm/static/runtime.py``), one per thread, share it.  Building
one:

* takes the optimized IR of the program as compiled (``vm/static/module_ir.py``): fusion
  groups expanded into their nodes, each top-level group keeping its fused kernel (IR text,
  and the specialization of a program compiled without its weights, are the front door's:
  ``vm/api/static.py``; nothing here compiles);
* binds the weights through the binding session both backends share (``vm.binding.session``:
  strict keys, folded check, ``%self``, tensor constants, the weights torch would refuse, the
  dtype guard); binds every operator (as the compiler resolved it) and converts every constant;
* flattens each graph into slots and processed nodes (``vm/static/codegen.py``), and
  computes the slot-level facts the memory planner needs (``vm/static/plannable.py``);
* builds the entry check, which refuses a bad input and computes the plan key;
* decides what a plan reads of a recording (``fastpath.Probe`` per fast candidate, the
  recorded slots), and plans now when the input types fix every shape and dtype.

Per-run state (plans, slabs, the generated functions bound to them) lives in the runtime.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from vm.binding.inputs import example_zeros
from vm.binding.session import bind
from vm.core.errors import RunError
from vm.core.gc_pause import gc_paused
from vm.ir.effects import WriteIndex
from vm.ir.module_state import ANYTHING, state_reads, written_attributes
from vm.ops import registry
from vm.ops.random import RANDOM_KINDS, make_generator, using_generator
from vm.static import fastpath
from vm.static.codegen import LINEMAPS, GraphCode
from vm.static.entry_check import input_checker, typed_inputs
from vm.static.layout import Layout, make_layout
from vm.static.model import Binding, Mode, PlanningFacts
from vm.static.module_ir import Prepared, bind_self, bound_constants, constant, prepare
from vm.static.plannable import analyze, value_bound_loops
from vm.static.shape_only import shape_only


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
    fusion: bool = True  # the front door's (vm/api/static.py), compiling IR text: group elementwise ops
    plan_cache_size: int = 8  # plans kept per module and runtime (one per input-shape key)
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
    # the specialization passes the front door runs for a program compiled without its weights
    # (vm/api/static.py, compiler.specialize; module_ir.SPECIALIZE_SWITCHES)
    fold_attributes: bool = True  # %self's settings as constants, the branches they decide gone
    fold_batch_norm: bool = True  # conv/linear + eval BatchNorm -> one conv/linear, folded weights
    fold_epilogues: bool = True  # an activation of a fresh conv/matmul result written in place
    fold_transposed_weights: bool = True  # small linear weights stored transposed (column-major)
    # plan at construction when the input types fix every input's shape and dtype (a
    # traced graph's ``Long(1, 16, ...)``): one recording run on zeros of those shapes
    plan_from_types: bool = True
    # values that depend only on the input shapes computed once per plan, their nodes not
    # run by the plan's code (vm/static/shape_only.py)
    fold_shapes: bool = True


class _ModuleBinding:
    """The IR a StaticModule runs, as the binding session asks it (``vm.binding.session.Bindable``):
    the reads of the IR as given, its folds, %self from its entry graph, tensor constants
    bound by name, the weights' checks and the dtype guard on its entry graph."""

    def __init__(self, prepared: Prepared, state: Any) -> None:
        self.prepared, self.state = prepared, state
        source = prepared.source_module or prepared.module
        self.folded_from, self.folded_tensors = source.folded_from, prepared.added

    def reads(self) -> Any:
        from vm.binding.strict import module_reads

        return module_reads(self.prepared.source_module or self.prepared.module)

    def bind_self(self, weights: Any, shared: Any) -> Any:
        module = self.prepared.module
        return next(iter(bind_self(module.main, weights, module.attributes, shared).values()), None)

    def bind_constants(self, flat: Any) -> dict[str, Any]:
        return bound_constants(self.prepared.module, flat)

    def guard(self, self_object: Any, flat: Any) -> Any:
        from vm.binding.preflight import check_weights, make_guard

        main, labels, takes_self = self.prepared.module.main, self.prepared.labels, self_object is not None
        check_weights(main, self_object, flat, takes_self, labels=labels)
        return make_guard(main, self_object, flat, takes_self, labels=labels, state=self.state)


class StaticModule:
    """A program prepared once for the static runtime; read-only, shared by runtimes."""

    # building one makes ~10^5 small objects (an IR copy, slots, generated code): with the
    # collector paused they go to the oldest generation at once, so neither construction
    # nor the first call's young collections traverse them again (vm.core.gc_pause)
    @gc_paused()
    def __init__(
        self,
        source: Any,
        weights: Any = None,
        options: StaticOptions | None = None,
        *,
        example_inputs: Sequence[Any] | None = None,
        strict: bool = True,
        self_object: Any = None,
        example_shapes: Sequence[Any] | None = None,
    ):
        """``example_inputs``: plan for inputs of these shapes now, so that a runtime's
        first call with such inputs is a steady call (``plan_for``).  ``example_shapes``:
        ``(dtype name, shape)`` per input (what a traced archive or ``irc compile
        --example-inputs`` recorded), planned for now when it is safe to run the program
        on zeros (as from the declared types: ``_plan_ahead``), else left to the first call.  ``strict``: weights with
        keys the program does not read are refused (``vm.binding.strict``).  ``self_object``:
        the ``vm.binding.weights.ModuleObject`` ``%self`` is (shared with other methods of
        the same model), else one built from the weights."""
        from vm.program.accept import refuse_path, unwrap_model

        source, weights = unwrap_model(source, weights)  # a vm.Model: its program and weights
        refuse_path(source, "vm.StaticModule", "")
        self.options = options = options or StaticOptions()
        if options.planner not in ("standard", "precomputed"):
            raise ValueError(
                f"unknown planner {options.planner!r} (standard or precomputed)"
            )
        prepared = prepare(source)
        module, refs = prepared.module, prepared.refs
        self.ir, self.groups, self.fusion_fallbacks = module, prepared.groups, prepared.fallbacks
        main = module.main
        # %self's attributes are constants of the module, but for its state: those some
        # method writes (vm.ir.module_state), read on every call
        self.state = written_attributes(module)
        # the binding session (vm.binding.session): strict keys, folded check, %self, constants,
        # dtype guard, in that order; each runtime adds its engines
        bound = bind(_ModuleBinding(prepared, self.state), weights, strict=strict, shared=self_object)
        self_params = {main.inputs[0]: bound.self_object} if bound.self_object is not None else {}
        self.dtype_guard = bound.dtype_guard
        from vm.fusion.kernels import enable_fuser

        self.fuser_problems = enable_fuser(options.fuser, (g.kernel for g in self.groups))
        names = list(module.functions)
        self.functions = {name: i for i, name in enumerate(names)}
        common: dict[str, Any] = {
            "refs": refs,
            "bind": registry.bind,
            "functions": self.functions,
            "max_depth": options.max_call_depth,
        }
        flat, tensors = bound.flat, bound.constants
        common["constant"] = lambda node: (
            tensors.get(node.outputs[0].name)
            if node.outputs[0].name in tensors
            else constant(node, flat)
        )
        common["bind_out"] = (
            registry.bind_out if options.enable_out_variant else (lambda ref: None)
        )
        # what may be written, for every weight and constant at once (one linear pass)
        self.writes = WriteIndex((main, *module.functions.values()))
        common["written"] = self.writes.may_be_written
        self.draws = any(
            n.kind in RANDOM_KINDS for g in (main, *module.functions.values()) for n in g.walk()
        )
        self.assigns_attributes = bool(self.state)
        common["fold_attributes"] = ANYTHING not in self.state
        common["live"] = frozenset(
            n for i, g in enumerate((main, *module.functions.values()))
            for n in state_reads(g, self.state, entry=i == 0)
        )
        self.entry = GraphCode(
            main,
            "main",
            first_index=0,
            bound_params=self_params,
            is_entry=True,
            groups=self.groups,
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
        self.inputs = [v for v in main.inputs if v not in self_params]
        self.n_outputs = len(main.outputs)
        self.n_inputs = len(self.inputs)
        # what callers may leave out (a Program read from a file carries them; its IR does not)
        self.input_defaults = tuple(getattr(source, "input_defaults", None) or module.input_defaults)
        self._enter = input_checker(self.inputs)
        self._prepare_planning(refs)
        self._shared_callees: dict[bool, list[Any]] = {}
        self._lock = threading.Lock()
        self._layouts: OrderedDict[Any, Layout] = OrderedDict()
        # everything a call runs is compiled now: the callees, and the planned code, one
        # function for every plan (model.Mode.generic), so that a new input shape costs a
        # recording run and a layout, no code generation.  Bound with nothing planned and a
        # recording dict, the generic code is the recording code too: one code object to
        # compile, which the first call runs as later calls do.  (A module that manages
        # graph outputs compiles a recording function, and code per plan; one with nothing
        # to plan, the plain function.)
        self.generic_mode: Mode | None = None
        self.record_mode = Mode(record=True, candidates=self.recorded_slots)
        if self.plannable and self.generic_possible:
            self.generic_mode = self.record_mode = Mode(
                candidates=frozenset(self.candidates),
                fast=tuple((i, *shape) for i, shape in sorted(self.fast_shapes.items())),
                generic=True,
                recorded=frozenset() if self.shape_skip else self.recorded_slots,
                skip=self.shape_skip,
                cached=self.shape_cached,
            )
            if self.shape_skip:  # the planned code skips the shape-only nodes: record apart
                self.record_mode = Mode(record=True, candidates=self.recorded_slots)
                self.entry.factory(self.generic_mode)
        self.entry.factory(self.record_mode if self.plannable else Mode())
        self.planning = PlanningFacts(
            options, self.entry, self.groups, self.candidates, self.out_candidates, self.used_at, self.may_alias,
            self.tainted, self.fast_probes, self.by_index, self.shape_skip, self.shape_cached, self.generic_mode,
        )
        self.callee_functions(False)
        self.layouts_made = 0  # recording runs planned from (a count for tests and profiles)
        self.planned_from_types = False
        self.planned_inputs: tuple[np.ndarray, ...] = ()  # the zeros _plan_ahead planned with
        if example_inputs is not None:
            self.plan_for(*example_inputs)
        elif options.plan_from_types:
            self._plan_ahead(example_zeros(example_shapes, len(self.inputs)) or typed_inputs(self.inputs))

    @property
    def processed_nodes(self) -> list:
        return [pn for code in (self.entry, *self.callees) for pn in code.pnodes]

    def _prepare_planning(self, refs: dict) -> None:
        """Slot-level facts for the planner (empty when out variants are off)."""
        code, opts = self.entry, self.options

        def has_out(node: Any) -> bool:
            pn = code.by_node.get(node)  # None for a folded attribute read
            return opts.enable_out_variant and pn is not None and pn.out is not None

        facts = self.facts = analyze(code.graph, refs, has_out, self.state)
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
        # shape-only values: computed by the recording run, bound per plan as constants
        self.shape_skip: frozenset[int] = frozenset()
        self.shape_cached: frozenset[int] = frozenset()
        if opts.fold_shapes:
            bound = {v for v, slot in s.items() if slot in code.constants}
            found = shape_only(
                code.graph, facts, refs, [g.nodes for g in code.groups.values()], bound, self.writes.may_be_written
            )
            self.shape_skip = frozenset(code.by_node[n].index for n in found.nodes if n in code.by_node)
            self.shape_cached = frozenset(s[v] for v in found.cached)
            skipped_slots = {slot for n in found.nodes for v in n.outputs if (slot := s.get(v)) is not None}
            self.candidates = {slot: step for slot, step in self.candidates.items() if slot not in skipped_slots}
        self.fast_candidates = [
            pn
            for pn in code.pnodes
            if opts.specialize and pn.ref is not None and pn.ref.name in fastpath.NAMES
            and pn.index not in self.shape_skip
        ]
        # values not defined in the entry block (loop bodies, branches) vary per run: guard them
        block_values = {v for n in facts.steps for v in n.outputs} | set(
            code.graph.inputs
        )
        self.tainted |= frozenset(
            slot for v, slot in s.items() if v not in block_values
        )
        shapes = (
            (pn.index, fastpath.call_shape(pn, code.constants, self.tainted))
            for pn in self.fast_candidates
        )
        self.fast_shapes = {i: shape for i, shape in shapes if shape is not None}
        # what a plan reads of a recording, decided here rather than on a first call:
        # the nodes the planned code can call fast (the generic code calls only those
        # with a call shape), each with the fusion group that may stand for it, ...
        self.fast_probes: list[tuple[fastpath.Probe, int | None]] = []
        for pn in self.fast_candidates:
            probe = fastpath.probe(pn, code.constants, self.tainted)
            if probe is None or (self.generic_possible and self.fast_shapes.get(pn.index) != probe.structure):
                continue  # never fast, or not in the form the generic code calls
            group = code.group_of.get(pn.node)
            self.fast_probes.append((probe, group.gid if group is not None else None))
        self.by_index = {pn.index: pn for pn in self.fast_candidates}
        # ... and the slots it reads: candidates' sizes, fast nodes' operands and results,
        # fusion groups' inputs (nothing else is kept alive by the recording run)
        self.recorded_slots = frozenset(
            {*self.candidates, *self.out_candidates}
            | {slot for probe, _ in self.fast_probes for slot in probe.slots()}
            | {s[v] for g in self.groups for v in g.inputs if v in s}
            | self.shape_cached
        )

    @property
    def generic_possible(self) -> bool:
        """Whether the planned code is the generic code (``Mode.generic``): one function
        for every plan, unless graph outputs are managed."""
        return not self.out_candidates

    @property
    def plannable(self) -> bool:
        return bool(self.candidates or self.out_candidates or self.fast_candidates or self.shape_skip)

    def layout(self, key: Any) -> Layout | None:
        """The plan layout made for input key ``key``, if any."""
        with self._lock:
            layout = self._layouts.get(key)
            if layout is not None:
                self._layouts.move_to_end(key)
            return layout

    def layouts(self) -> list[tuple[Any, Layout]]:
        with self._lock:
            return list(self._layouts.items())

    def recorder(self) -> tuple[Any, dict[int, Any]]:
        """The recording function bound to a dict of its own, which it fills (slot ->
        value) on each run: a runtime binds one when it is built, not on a first call."""
        recorded: dict[int, Any] = {}
        # (the generic code runs its nodes' kernels when no view, fast call or fused group is bound)
        binding = Binding(callees=self.callee_functions(False), record=recorded, fused=frozenset())
        return self.bind(self.entry, self.record_mode, binding), recorded

    def record(self, key: Any, args: Sequence[Any], recorder: tuple[Any, dict[int, Any]] | None = None) -> tuple[Any, Layout]:
        """Run ``args`` with the allocating kernels, recording every candidate's value:
        the result, and the layout planned from what was recorded (also kept by key,
        LRU-bounded, for the other runtimes).  ``recorder``: one from ``recorder()``,
        else one is bound now."""
        run, recorded = recorder or self.recorder()
        recorded.update(zip(self.entry.params, args))
        try:
            result = run(*args)
            layout = make_layout(self.planning, recorded)
        finally:
            recorded.clear()  # the recorded values are not kept alive past the plan
        with self._lock:
            self.layouts_made += 1
            self._layouts[key] = layout
            while len(self._layouts) > self.options.plan_cache_size:
                self._layouts.popitem(last=False)
        return result, layout

    def plan_for(self, *example_inputs: Any) -> None:
        """Make the plan for inputs shaped like ``example_inputs`` now, by one recording
        run (random operators draw from a generator of their own); runtimes built after
        this start with that plan bound.  A plan holds for any inputs of the same shapes
        and dtypes, whatever their values (``vm/static/plannable.py``).  Refused for a
        program that writes module state: the run would change it (it plans on its first
        call, which is a real call)."""
        if self.assigns_attributes:
            raise RunError(
                f"cannot plan ahead for a module with state ({', '.join(sorted(self.state))}): "
                "a planning run would change it; its first call plans instead"
            )
        key, args = self._enter(*example_inputs)
        if self.dtype_guard is not None:  # checked once per input dtypes: now, not on the first call
            self.dtype_guard(args)
        if self.plannable and self.layout(key) is None:
            with using_generator(make_generator(0)):
                try:
                    self.record(key, args)
                except Exception as exc:  # noqa: BLE001  (a kernel failure becomes a RunError)
                    raise self.wrap_error(exc) from None

    def _writes_module_state(self) -> bool:
        """Whether some node may write a tensor read from ``%self`` or a tensor constant."""
        from vm.ir.effects import is_mutable_type

        written = self.writes.may_be_written
        return any(
            n.kind in ("prim::GetAttr", "prim::Constant") and is_mutable_type(v.type) and written(v)
            for g in (self.ir.main, *self.ir.functions.values())
            for n in g.walk()
            for v in n.outputs
        )

    def _plan_ahead(self, made: Sequence[np.ndarray] | None) -> None:
        """``plan_for`` zeros shaped as the example inputs recorded, else as the declared
        input types when they fix every shape and dtype (``inputs.typed_inputs``).  A plan
        holds whatever the values, so zeros serve; a run that zeros make fail (a check on values, say) leaves the
        planning to the first call, as without types.  A program that assigns a module
        attribute or may write one in place (batch norm in training mode updates its
        running statistics) is not run here: the run would change the module's state; nor is one with
        a loop whose trip count or condition may follow from tensor contents
        (``plannable.value_bound_loops``): on zeros it could run for any time, or forever."""
        if not self.plannable or self.assigns_attributes:
            return
        if made is None or self._writes_module_state() or value_bound_loops((self.ir.main, *self.ir.functions.values())):
            return
        try:
            with np.errstate(all="ignore"):  # log(0) of a stand-in is not the caller's warning
                self.plan_for(*made)
        except Exception:  # noqa: BLE001  (only an early plan is lost; the first call plans)
            return
        self.planned_from_types = True
        self.planned_inputs = tuple(made)

    def callee_functions(self, timed: bool) -> list[Any]:
        """The callees' functions (shared by every runtime: they hold no per-run state)."""
        with self._lock:
            table = self._shared_callees.get(timed)
            if table is None:
                table = self._shared_callees[timed] = []
                table.extend(
                    self.bind(code, Mode(timed=timed), Binding(callees=table))
                    for code in self.callees
                )
            return table

    def bind(self, code: GraphCode, mode: Mode, binding: Binding, factory: Any = None) -> Any:
        """``code``'s function for ``mode`` (``factory``: its compiled code, else compiled or
        looked up now), bound to the module's kernels and constants and to ``binding``."""
        made = factory or code.factory(mode)
        return made((code.kernels, code.outs, code.constants), binding)

    def spare_globals(self) -> dict[str, Any] | None:
        """A fresh globals dict for the generic planned code (``bind(globals_=)``), or
        None when plans compile code of their own: a runtime makes one when it is built,
        so that binding its first plan copies nothing (transformer12: ~6*10^4 names)."""
        if self.generic_mode is None:
            return None
        code = self.entry
        return code.factory(self.generic_mode).globals_for(code.kernels, code.outs, code.constants)

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
        err.static_node = node
        err.__cause__ = exc
        return err
