"""``irvm profile``: where a static-runtime run spends its time, and what the planner saved.

Modelled on PyTorch Static Runtime's ``benchmark_individual_ops`` (``IndividualMetrics``):
the program is prepared once (setup time), run once to make the memory plan (first-run
time), then run ``runs`` times twice over: with the normal generated code (the total
time per run, what a user gets) and with code that times each node.  One statistic
throughout: the median.  The table is the median timed run (by its wall time), so its
rows add up to the total it prints; the untimed figure is the median untimed run; the
Chrome trace is that same median run.

The breakdown table has one row per operator kind and input shapes (as torch.profiler's
``group_by_input_shape``): the calls (executions, so a node in a loop counts each
iteration), the time per run and its share of the timed run, plus a row for the time
spent outside the nodes (control flow, moves, the runtime's own work), so the rows add up
to the run.  ``report.chrome_trace()`` is the median timed run as Chrome trace-event JSON
(``irvm profile --chrome-trace FILE``; open it in Perfetto or chrome://tracing).

The memory section reads the plan of the profiled input shapes: managed bytes (what the
managed intermediates would take if each were allocated), slab bytes, the number of
storage groups, and the bytes saved, plus the constants the fast path widened to arrays
for maximum/minimum (``vm/static/fastpath.py``).  It also counts out-variant fallbacks (a managed
node whose out variant returned a fresh array instead of writing its slab view) and the
fusion groups that ran as their subgraph because no fused kernel exists.

    report = profile(program, inputs, weights=None, runs=20)
    print(report)            # a table; report.per_kind etc. hold the numbers
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from typing import Any

import attrs
import numpy as np

from vm.static.model import Binding, Mode
from vm.static.module import StaticModule, StaticOptions
from vm.static.runtime import StaticRuntime


@attrs.frozen
class KindMetrics:
    kind: str
    seconds_per_run: float
    share: float  # of the summed node time
    instances: int
    managed: int  # instances writing into the slab


@attrs.frozen
class Row:
    """One line of the breakdown: an operator kind on inputs of given shapes."""

    kind: str
    shapes: str  # "[2, 3], [3], int" (empty for the outside-nodes row)
    calls_per_run: float  # executions per run (a node in a loop counts every iteration)
    seconds_per_run: float
    share: float  # of the timed run


@attrs.frozen
class TraceEvent:
    """One execution of a node in the median timed run (seconds from that run's start)."""

    name: str
    start: float
    duration: float
    node: str
    shapes: str


@attrs.frozen
class ProfileReport:
    setup_seconds: float
    first_run_seconds: float
    seconds_per_run: float  # median of the untimed runs
    node_seconds_per_run: float  # sum of the node times of the median timed run
    runs: int
    total_nodes: int
    out_nodes: int  # nodes with an out variant
    per_kind: tuple[KindMetrics, ...]
    per_node: tuple[
        tuple[str, float], ...
    ]  # the slowest nodes, "repr @ span", seconds/run
    managed_bytes: int
    slab_bytes: int
    storage_groups: int
    managed_tensors: int
    out_variant_fallbacks: tuple[str, ...]
    fusion_fallbacks: tuple[str, ...]
    planner: str
    filled_constants: int = 0  # constants widened to arrays for maximum/minimum (static_fastpath)
    filled_bytes: int = 0
    shape_only_nodes: int = 0  # nodes a plan does not run: computed once per plan (shape_only.py)
    rows: tuple[Row, ...] = ()  # by kind and input shapes, then the time outside nodes
    timed_seconds_per_run: float = 0.0  # a run with node timing on: what the rows add up to
    trace: tuple[TraceEvent, ...] = ()

    def chrome_trace(self) -> dict[str, Any]:
        """The median timed run (the table's) in Chrome's trace-event format (complete "X" events, in µs)."""
        events: list[dict[str, Any]] = [
            {"name": "process_name", "ph": "M", "pid": 1, "args": {"name": "irvm static runtime"}},
            {"name": "run", "cat": "run", "ph": "X", "pid": 1, "tid": 1, "ts": 0.0,
             "dur": round(max((e.start + e.duration for e in self.trace), default=0.0) * 1e6, 3)},
        ]  # fmt: skip
        for e in self.trace:
            events.append({
                "name": e.name, "cat": "operator", "ph": "X", "pid": 1, "tid": 1,
                "ts": round(e.start * 1e6, 3), "dur": round(e.duration * 1e6, 3),
                "args": {"node": e.node, "input shapes": e.shapes},
            })  # fmt: skip
        return {"otherData": {"producer": "irvm profile"}, "traceEvents": events, "displayTimeUnit": "ms"}

    @property
    def bytes_saved(self) -> int:
        return self.managed_bytes - self.slab_bytes

    def __str__(self) -> str:

        def us(s: float) -> str:
            return f"{s * 1e6:10.2f} us"

        lines = [
            f"static runtime profile: {self.runs} runs after one warm-up",
            f"  setup {us(self.setup_seconds)}   first run {us(self.first_run_seconds)}",
            f"  per run {us(self.timed_seconds_per_run)}: the median of {self.runs} runs timing each node, the rows"
            f" below (the median run without node timing: {us(self.seconds_per_run).strip()})",
            f"  nodes {self.total_nodes}, with an out variant {self.out_nodes},"
            f" shape-only (computed once per plan, not timed) {self.shape_only_nodes}",
            "",
            f"  {'operator':<30}{'input shapes':<28}{'time/run':>14}{'share':>8}{'calls':>7}",
        ]
        for r in self.rows:
            shapes = _wrapped(r.shapes, SHAPES_WIDTH)
            calls = f"{r.calls_per_run:g}" if r.kind != OUTSIDE else ""
            lines.append(f"  {r.kind:<30}{shapes[0]:<28}{us(r.seconds_per_run):>14}{r.share:>7.1%}{calls:>7}")
            lines += [f"  {'':<30}{more}" for more in shapes[1:]]
        lines.append(f"  {'total (the rows: a run with node timing)':<58}{us(self.timed_seconds_per_run):>14}{1:>7.1%}")
        if self.per_node:
            lines += ["", "  slowest nodes (in the median run):"]
            lines += [f"  {us(t)}  {name}" for name, t in self.per_node]
        lines += [
            "",
            f"  memory plan ({self.planner}): {self.managed_tensors} managed tensors, {self.managed_bytes} bytes;"
            f" slab {self.slab_bytes} bytes in {self.storage_groups} storage groups;"
            f" saved {self.bytes_saved} bytes",
        ]
        if self.filled_constants:
            lines.append(
                f"  constants filled to arrays for maximum/minimum: {self.filled_constants},"
                f" {self.filled_bytes} bytes"
            )
        if self.out_variant_fallbacks:
            lines.append(
                f"  out variants that allocated anyway: {', '.join(self.out_variant_fallbacks)}"
            )
        if self.fusion_fallbacks:
            lines.append(
                f"  fusion groups run as their nodes, not a fused kernel: {', '.join(self.fusion_fallbacks)}"
            )
        return "\n".join(lines)


def profile(
    program_or_module: Any,
    inputs: Sequence[Any],
    weights: Any = None,
    runs: int = 20,
    options: StaticOptions | None = None,
    seed: int | None = None,
    strict: bool = True,
    setup: float | None = None,
) -> ProfileReport:
    """Profile ``program_or_module`` (anything ``StaticModule`` accepts) on ``inputs``
    (random operators seeded by ``seed``; ``strict`` as ``StaticModule``'s).  ``setup``: the
    seconds a module given built took to build (``irvm profile``'s, from ``vm.load``), else
    the time to build it here."""
    runs = max(1, runs)
    t0 = time.perf_counter()
    sm = (
        program_or_module
        if isinstance(program_or_module, StaticModule)
        else StaticModule(program_or_module, weights, options, strict=strict)
    )
    setup = time.perf_counter() - t0 if setup is None else setup
    rt = StaticRuntime(sm, seed=seed)
    t0 = time.perf_counter()
    rt(*inputs)
    first = time.perf_counter() - t0
    totals = []
    for _ in range(runs):
        t0 = time.perf_counter()
        rt(*inputs)
        totals.append(time.perf_counter() - t0)
        rt.release_outputs()
    plan = next(reversed(rt._plans.values()), None) if rt._plans else None
    views = plan.views if plan is not None else {}
    mode = attrs.evolve(plan.mode, timed=True) if plan is not None else Mode(timed=True)
    per_run: list[list[float]] = []
    clocks: list[_Clock] = []
    walls: list[float] = []
    for _ in range(runs):
        clock = _Clock(len(sm.processed_nodes))
        arena, fast = (list(plan.arena), plan.fast) if plan is not None else ([], {})
        binding = Binding(
            views, sm.callee_functions(True), times=clock, outputs=arena, fast=fast,
            shapes=plan.layout.shapes if plan is not None else None,
        )
        timed = sm.bind(sm.entry, mode, binding)
        clock.start = t0 = time.perf_counter()
        rt._run(timed, tuple(inputs))
        walls.append(time.perf_counter() - t0)
        per_run.append(list(clock))
        clocks.append(clock)
    # one statistic throughout: the median run (by its time), whose nodes' times add up to it
    k = sorted(range(runs), key=walls.__getitem__)[runs // 2]
    shapes = _input_shapes(sm, plan, inputs, program_or_module, weights)
    extra = _breakdown(sm, [per_run[k]], [clocks[k]], [walls[k]], shapes)
    return attrs.evolve(_report(
        sm,
        plan,
        per_run[k],
        setup,
        first,
        statistics.median(totals),
        runs,
        _fallbacks(sm, plan, inputs),
    ), **extra)


OUTSIDE = "(outside nodes)"
SHAPES_WIDTH = 27  # the input-shapes column; longer shapes wrap onto more lines, never cut


def _wrapped(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` characters, broken after a shape's ``], ``."""
    lines, current = [], ""
    for part in text.replace("], ", "],\0").split("\0"):
        while len(part) > width:  # one shape longer than the column: cut it at a comma
            cut = part.rfind(", ", 0, width) + 2 or width
            if current:
                lines.append(current)
                current = ""
            lines.append(part[:cut].rstrip())
            part = part[cut:]
        if current and len(current) + 1 + len(part) > width:
            lines.append(current)
            current = part
        else:
            current = f"{current} {part}" if current else part
    return [*lines, current] if current or not lines else lines


class _Clock(list):
    """The timed code's ``T``: it runs ``T[i] += elapsed`` after node i, so each store is
    one execution; the stores are counted and kept as trace events."""

    def __init__(self, n: int) -> None:
        super().__init__([0.0] * n)
        self.counts = [0] * n
        self.events: list[tuple[int, float, float]] = []  # (node index, end, duration)
        self.start = 0.0
        self._now = time.perf_counter

    def __setitem__(self, i: Any, value: Any) -> None:
        end = self._now()
        self.events.append((i, end - self.start, value - list.__getitem__(self, i)))
        list.__setitem__(self, i, value)
        self.counts[i] += 1


def _shape_text(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return str(list(value.shape))
    if isinstance(value, (list, tuple)):
        return f"{type(value).__name__}[{len(value)}]"
    return type(value).__name__ if value is not None else "None"


def _input_shapes(sm: StaticModule, plan: Any, inputs: Sequence[Any], program: Any, weights: Any) -> dict[int, str]:
    """Node index -> the shapes of its inputs, read from one recording run (entry graph
    nodes; a node of a called function gets ""), completed by name from an interpreter run
    (values inside loops: their last iteration's shapes); "?" where neither knows."""
    code = sm.entry
    values: dict[int, Any] = dict(code.constants)
    values.update(zip(code.params, inputs))
    seen: dict[int, Any] = {}
    slots = frozenset(slot for pn in code.pnodes for slot in pn.outputs)
    base = plan.mode if plan is not None else Mode()
    mode = attrs.evolve(base, record=True, candidates=slots, skip=frozenset(), cached=frozenset())
    arena, fast = (list(plan.arena), plan.fast) if plan is not None else ([], {})
    views = plan.views if plan is not None else {}
    fn = sm.bind(code, mode, Binding(views, sm.callee_functions(False), record=seen, outputs=arena, fast=fast))
    fn(*inputs)
    values.update(seen)
    named = _traced_values(program, weights, inputs)
    missing = object()

    def shape(slot: int, value: Any) -> str:
        v = values.get(slot, missing)
        if v is missing:  # a loop-carried value or an If/Loop output: the traced run has it
            v = named.get(f"%{value.name}", missing)
        return "?" if v is missing else _shape_text(v)

    return {pn.index: ", ".join(shape(s, v) for s, v in zip(pn.inputs, pn.node.inputs)) for pn in code.pnodes}


def _traced_values(program: Any, weights: Any, inputs: Sequence[Any]) -> dict[str, Any]:
    """Every value of one interpreter run by IR name, when ``program`` is a Program."""
    from vm.core.errors import IRError
    from vm.interpreter.machine import Interpreter
    from vm.program.bytecode import Program

    if not isinstance(program, Program):
        return {}
    try:
        return Interpreter(program, weights).run_traced(*inputs)[1]
    except IRError:  # the shapes are a courtesy: without them the rows say "?"
        return {}


def _breakdown(
    sm: StaticModule, per_run: list[list[float]], clocks: list[_Clock], walls: list[float], shapes: dict[int, str]
) -> dict[str, Any]:
    """Rows by (kind, input shapes) as means over the timed runs given (profile gives
    the median one), so that with the outside-nodes row they add up to the timed run;
    and the events of the last run given, for the Chrome trace."""
    runs = len(walls)
    wall = sum(walls) / runs
    by_index = {pn.index: pn for pn in sm.processed_nodes}
    rows: dict[tuple[str, str], list[float]] = {}
    for pn in sm.processed_nodes:
        seconds = sum(times[pn.index] for times in per_run) / runs
        calls = sum(c.counts[pn.index] for c in clocks) / runs
        if calls == 0 and seconds == 0:
            continue
        entry = rows.setdefault((pn.kind, shapes.get(pn.index, "")), [0.0, 0.0])
        entry[0] += seconds
        entry[1] += calls
    inside = sum(v[0] for v in rows.values())
    table = sorted((Row(k, sh, v[1], v[0], v[0] / wall) for (k, sh), v in rows.items()), key=lambda r: -r.seconds_per_run)
    outside = max(wall - inside, 0.0)
    table.append(Row(OUTSIDE, "", 0, outside, outside / wall))
    last = clocks[-1]
    trace = tuple(
        TraceEvent(by_index[i].kind, end - dur, dur, f"{by_index[i].node!r} @ {by_index[i].node.span}", shapes.get(i, ""))
        for i, end, dur in last.events
    )
    return {"rows": tuple(table), "timed_seconds_per_run": wall, "trace": trace}


def _fallbacks(sm: StaticModule, plan: Any, inputs: Sequence[Any]) -> list[str]:
    """Managed nodes whose out variant did not return its slab view."""
    if plan is None or not plan.views:
        return []
    seen: dict[int, Any] = {}
    mode = attrs.evolve(plan.mode, record=True, candidates=frozenset(plan.views))
    binding = Binding(
        plan.views, sm.callee_functions(False), record=seen, outputs=list(plan.arena), fast=plan.fast,
        shapes=plan.layout.shapes,
    )
    fn = sm.bind(sm.entry, mode, binding)
    fn(*inputs)
    producers = {pn.outputs[0]: pn for pn in sm.entry.pnodes if len(pn.outputs) == 1}
    return [producers[s].node.kind for s, v in seen.items() if v is not plan.views[s]]


def _report(sm, plan, times, setup, first, per_run, runs, fallbacks) -> ProfileReport:
    """``times[i]``: node i's seconds in the median run."""
    nodes = sm.processed_nodes
    managed = set(plan.views) if plan is not None else set()
    kinds: dict[str, list[float]] = {}
    for pn in nodes:
        if pn.kernel is None:
            continue
        entry = kinds.setdefault(pn.kind, [0.0, 0, 0])
        entry[0] += times[pn.index]
        entry[1] += 1
        entry[2] += bool(
            pn.outputs and pn.outputs[0] in managed and pn in sm.entry.pnodes
        )
    node_total = sum(v[0] for v in kinds.values()) or 1e-12
    per_kind = tuple(
        sorted(
            (
                KindMetrics(k, v[0], v[0] / node_total, int(v[1]), int(v[2]))
                for k, v in kinds.items()
            ),
            key=lambda m: -m.seconds_per_run,
        )
    )
    slow = sorted(
        (pn for pn in nodes if pn.kernel is not None), key=lambda pn: -times[pn.index]
    )[:8]
    per_node = tuple((f"{pn.node!r} @ {pn.node.span}", times[pn.index]) for pn in slow)
    memory = plan.memory if plan is not None else None
    filled = {
        id(a): a
        for _, scalars, _ in (plan.fast.values() if plan is not None else ())
        for a in scalars
        if type(a) is np.ndarray
    }
    return ProfileReport(
        setup_seconds=setup,
        first_run_seconds=first,
        seconds_per_run=per_run,
        node_seconds_per_run=sum(times),
        runs=runs,
        total_nodes=sum(1 for pn in nodes if pn.kernel is not None),
        out_nodes=sum(1 for pn in nodes if pn.out is not None),
        per_kind=per_kind,
        per_node=per_node,
        managed_bytes=memory.managed_bytes if memory else 0,
        slab_bytes=memory.slab_bytes if memory else 0,
        storage_groups=len(memory.groups) if memory else 0,
        managed_tensors=len(memory.offsets) if memory else 0,
        out_variant_fallbacks=tuple(fallbacks),
        fusion_fallbacks=tuple(f"{span} ({n} nodes)" for span, n in sm.fusion_fallbacks)
        + tuple(
            f"{g.span} ({len(g.nodes)} nodes, {plan.unfused.get(g.gid, 'no plan') if plan else 'no plan'})"
            for g in sm.groups
            if plan is None or g.gid not in plan.mode.fused
        ),
        planner=sm.options.planner,
        filled_constants=len(filled),
        filled_bytes=sum(a.nbytes for a in filled.values()),
        shape_only_nodes=len(sm.shape_skip) if plan is not None else 0,
    )
