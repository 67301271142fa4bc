"""The numpy fuser's block plans compute, bit for bit, what the unfused operators compute.

Random elementwise groups (``vm.fusion.plan`` turns each operator into a ufunc line where
that is exact, else into its registered out variant) run blocked, with blocks of a few
dozen elements so that block and thread boundaries fall everywhere, and are compared to
the same group run operator by operator: same dtype, same shape, same bytes (signed zero
and infinity included; a NaN must be NaN where the unfused one is, its sign bit may differ).  Mixed dtypes, Python and 0-dim constants, bool masks and
``where`` make the planner take its generic path as well as its ufunc lines.
"""

from __future__ import annotations

import json
import tracemalloc
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import compiler
import vm.fusion.kernels as fusion
from compiler.diagnostics import RunError
from tests.support.paths import CORPUS, EXAMPLES
from vm.fusion.kernels import FusedKernel
from vm.ir.fusion_spec import fusion_spec

DTYPES = {"float32": np.float32, "float64": np.float64, "int32": np.int32, "int64": np.int64, "bool": np.bool_}
SPECIALS = [np.nan, np.inf, -np.inf, -0.0, 0.0, 1e-30, 3.5, -2.0]

BINARY = ["add", "sub", "mul", "div", "maximum", "minimum", "max", "min"]
COMPARE = ["gt", "lt", "ge", "le", "eq", "ne"]
UNARY = ["relu", "sigmoid", "tanh", "exp", "neg", "abs", "floor", "sqrt"]


class _Graph:
    """IR text of an elementwise graph, built one operator at a time."""

    def __init__(self, n_inputs: int, scalar_input: bool):
        self.params = [f"%x{i} : Tensor" for i in range(n_inputs)]
        if scalar_input:
            self.params.append("%s : float")
        self.tensors = [f"%x{i}" for i in range(n_inputs)]
        self.masks: list[str] = []
        self.lines: list[str] = []
        self.k = 0

    def const(self, value: Any) -> str:
        self.k += 1
        name = f"%c{self.k}"
        if value is None:
            self.lines.append(f"{name} : NoneType = prim::Constant()")
        elif isinstance(value, bool):
            self.lines.append(f"{name} : bool = prim::Constant[value={int(value)}]()")
        elif isinstance(value, int):
            self.lines.append(f"{name} : int = prim::Constant[value={value}]()")
        else:
            text = repr(float(value)) if np.isfinite(value) else ("inf" if value > 0 else "-inf")
            self.lines.append(f"{name} : float = prim::Constant[value={text}]()")
        return name

    def node(self, text: str, mask: bool = False) -> str:
        self.k += 1
        name = f"%v{self.k}"
        self.lines.append(f"{name} : Tensor = {text}")
        (self.masks if mask else self.tensors).append(name)
        return name

    def text(self, outputs: list[str]) -> str:
        body = "\n".join(f"  {line}" for line in self.lines)
        return f"graph({', '.join(self.params)}):\n{body}\n  return ({', '.join(outputs)})\n"


@st.composite
def groups(draw: st.DrawFn) -> tuple[str, int, bool]:
    n_inputs = draw(st.integers(1, 4))
    scalar_input = draw(st.booleans())
    g = _Graph(n_inputs, scalar_input)
    pick = lambda pool: pool[draw(st.integers(0, len(pool) - 1))]  # noqa: E731
    scalar = st.one_of(st.integers(-3, 3), st.sampled_from([0.5, -1.25, 1e-5, 0.0, -0.0, 2.0]))
    for _ in range(draw(st.integers(1, 8))):
        kind = draw(st.sampled_from(["binary", "binary_scalar", "compare", "unary", "clamp", "where"]))
        a = pick(g.tensors)
        if kind == "binary":
            op, b = draw(st.sampled_from(BINARY)), pick(g.tensors)
            if op in ("add", "sub"):
                g.node(f"aten::{op}({a}, {b}, {g.const(draw(st.sampled_from([1, 1, 2])))})")
            else:
                g.node(f"aten::{op}({a}, {b})")
        elif kind == "binary_scalar":
            op = draw(st.sampled_from(["add", "sub", "mul", "div"]))
            c = "%s" if scalar_input and draw(st.booleans()) else g.const(draw(scalar))
            g.node(f"aten::{op}({a}, {c}, {g.const(1)})" if op in ("add", "sub") else f"aten::{op}({a}, {c})")
        elif kind == "compare":
            other = pick(g.tensors) if draw(st.booleans()) else g.const(draw(scalar))
            g.node(f"aten::{draw(st.sampled_from(COMPARE))}({a}, {other})", mask=True)
        elif kind == "unary":
            g.node(f"aten::{draw(st.sampled_from(UNARY))}({a})")
        elif kind == "clamp":
            lo = draw(st.one_of(st.none(), scalar))
            hi = draw(st.one_of(st.none(), scalar)) if lo is not None else draw(scalar)
            g.node(f"aten::clamp({a}, {g.const(lo)}, {g.const(hi)})")
        elif g.masks:
            g.node(f"aten::where({pick(g.masks)}, {a}, {pick(g.tensors)})")
    produced = [v for v in g.tensors + g.masks if v.startswith("%v")]
    if not produced:
        produced = [g.node(f"aten::mul({g.tensors[0]}, {g.tensors[0]})")]
    outputs = [produced[-1]] + ([produced[0]] if len(produced) > 1 and draw(st.booleans()) else [])
    return g.text(outputs), n_inputs, scalar_input


def _input(rng: np.random.Generator, dtype: Any, shape: tuple[int, ...]) -> np.ndarray:
    if dtype == np.bool_:
        return rng.random(shape) < 0.5
    if np.issubdtype(dtype, np.integer):
        return rng.integers(-4, 5, shape).astype(dtype)
    values = (rng.standard_normal(shape) * 3).astype(dtype)
    flat = values.reshape(-1)
    spots = rng.integers(0, flat.size, size=min(4, flat.size))
    flat[spots] = rng.choice(np.array(SPECIALS, dtype=dtype), size=spots.size)
    return values


def _same(fused: Any, unfused: Any) -> None:
    fused = fused if isinstance(fused, tuple) else (fused,)
    unfused = unfused if isinstance(unfused, tuple) else (unfused,)
    assert len(fused) == len(unfused)
    for a, b in zip(fused, unfused):
        a, b = np.asarray(a), np.asarray(b)
        assert (a.dtype, a.shape) == (b.dtype, b.shape)
        if a.dtype.kind == "f":  # NaN where unfused has NaN (its sign and payload follow numpy's
            nan = np.isnan(b)    # choice of SIMD loop, which depends on the length), else same bits
            assert np.array_equal(np.isnan(a), nan), (a, b)
            a, b = a[~nan], b[~nan]
        assert a.tobytes() == b.tobytes(), (a, b)


def _outcome(fn: Any, args: list[Any]) -> tuple[str, Any]:
    try:
        return "ok", fn(*args)
    except RunError as exc:
        return "error", exc


@settings(deadline=None)
@given(
    group=groups(),
    dtypes=st.lists(st.sampled_from(list(DTYPES)), min_size=4, max_size=4),
    zero_dim=st.integers(-1, 3),
    n=st.integers(33, 700),
    rows=st.sampled_from([1, 3]),
    seed=st.integers(0, 2**16),
    threads=st.booleans(),
)
def test_blocked_group_equals_unfused_bit_for_bit(group, dtypes, zero_dim, n, rows, seed, threads) -> None:
    """Any group of the menu, any dtype mix, an optional 0-dim input, 1-D or 2-D inputs,
    blocks of 16 elements, with and without the thread split: the blocked result has the
    unfused dtype, shape and bytes; where the unfused run raises, the fused one raises a
    RunError too."""
    text, n_inputs, scalar_input = group
    kernel = FusedKernel(fusion_spec(compiler.parse(text, "group.ir").main), min_block=8, max_block=16)
    rng = np.random.default_rng(seed)
    shape = (rows, n // rows)
    args: list[Any] = [
        _input(rng, DTYPES[dtypes[i]], () if i == zero_dim and n_inputs > 1 else shape) for i in range(n_inputs)
    ]
    if scalar_input:
        args.append(float(rng.choice([0.5, -0.0, np.nan, 3.0])))
    expected = _outcome(kernel.run_unfused, args)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(fusion, "PARALLEL_WORK", 1 if threads else 1 << 60)
        got = _outcome(kernel, args)
    assert got[0] == expected[0], (text, got, expected)
    if expected[0] == "ok":
        _same(got[1], expected[1])
        assert kernel.stats["fused"] + kernel.stats["unfused"] == 1


RATIO_IOU = (EXAMPLES / "ratio_iou.ir").read_text()


def _ratio_iou_kernel(**options: Any) -> FusedKernel:
    from compiler.pipeline import optimize

    optimized, _ = optimize(compiler.parse(RATIO_IOU, "ratio_iou.ir"))
    (node,) = [n for n in optimized.main.walk() if "Subgraph" in n.attrs]
    return FusedKernel(fusion_spec(node.attrs["Subgraph"]), **options)


def test_ratio_iou_plan_is_all_ufunc_lines_over_few_buffers() -> None:
    """Every ratio_iou operator (add, sub, mul, div, max, min, clamp) becomes a ufunc line
    in float32, its intermediates share four scratch buffers, and the clamps read constant
    blocks: the plan is compiled when the kernel is built, before any call."""
    kernel = _ratio_iou_kernel()
    (plan,) = kernel.plans.values()
    assert plan.direct == len(kernel.steps) == 19
    assert len(plan.scratch) <= 4 and all(d == np.float32 for d in plan.scratch)
    assert sorted(float(v) for _, v in plan.constants) == [0.0, np.float32(1e-5)]
    assert "P[" not in plan.source  # nothing of the call is looked up per block


def test_steady_state_blocked_call_allocates_only_its_result(monkeypatch) -> None:
    """After a first call, a blocked call allocates its result array and nothing the size
    of a block: scratch and constant blocks are reused."""
    monkeypatch.setattr(fusion, "PARALLEL_WORK", 1 << 60)  # one thread: tracemalloc sees it all
    block = 16384
    kernel = _ratio_iou_kernel(min_block=block, max_block=block)
    rng = np.random.default_rng(0)
    args = [rng.random(8 * block, dtype=np.float32) + 0.1 for _ in range(8)]
    kernel(*args)
    tracemalloc.start()
    try:
        kernel(*args)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    result_bytes = 8 * block * 4
    assert kernel.stats["fused"] == 2
    assert result_bytes <= peak < result_bytes + block * 4 // 2  # not even half a block more


def test_unknown_signature_is_planned_once_and_cached() -> None:
    """A dtype signature the sub-graph does not declare gets its plan on its first call,
    and keeps it."""
    kernel = _ratio_iou_kernel(min_block=16, max_block=64)
    args = [np.linspace(0.5, 2, 500) for _ in range(8)]  # float64
    first = kernel(*args)
    assert len(kernel.plans) == 2
    plan = kernel.plans[tuple(("<f8", True) for _ in range(8))]
    second = kernel(*args)
    assert kernel.plans[tuple(("<f8", True) for _ in range(8))] is plan
    _same(first, kernel.run_unfused(*args))
    _same(second, first)


def test_a_signature_without_plan_runs_unfused_and_says_why() -> None:
    """Bool boxes cannot be subtracted: there is no plan, the call runs unfused and raises
    PyTorch's error at the operator's line; the reason is counted."""
    kernel = _ratio_iou_kernel(min_block=16, max_block=64)
    args = [np.ones(100, dtype=bool) for _ in range(8)]
    with pytest.raises(RunError) as info:
        kernel(*args)
    assert "Subtraction" in str(info.value) and info.value.span is not None
    assert any(reason.startswith("no block plan") for reason in kernel.fallback_reasons)


MANIFEST = json.loads((CORPUS / "manifest.json").read_text())


def _corpus_with_groups() -> list[str]:
    names = []
    for rec in MANIFEST:
        text = (CORPUS / f"{rec['name']}.ir").read_text()
        if rec["error"] is None and "aten::" in text:
            names.append(rec["name"])
    return names


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_every_corpus_fusion_group_blocked_equals_unfused(backend: str) -> None:
    """Every corpus program (real torch dumps), with its fusion groups forced onto the
    blocked path (blocks of 8 elements, the thread split on), returns what the same
    program returns without fused kernels: same kinds, dtypes, shapes and values."""
    import vm
    from vm.files.npz import flatten_outputs, load_inputs, outputs_as_list, read_npz

    ran = 0
    for name in _corpus_with_groups():
        path = CORPUS / f"{name}.ir"
        program = compiler.compile_source(path.read_text(), str(path))
        if not any(ref.name == "prim::FusedKernel" for f in program.functions for ref in f.operators):
            continue
        weights_path = CORPUS / f"{name}.weights.npz"
        weights = read_npz(weights_path) if weights_path.exists() else None
        inputs = load_inputs(CORPUS / f"{name}.inputs.npz", program)
        runtime = vm.Interpreter if backend == "interp" else vm.StaticRuntime
        plain = runtime(compiler.compile_source(path.read_text(), str(path), fused_kernels=False), weights)
        with pytest.MonkeyPatch.context() as patch:
            for constant, value in (("MIN_BLOCK", 2), ("MAX_BLOCK", 8), ("PARALLEL_WORK", 1)):
                patch.setattr(fusion, constant, value)
            blocked = runtime(program, weights)
            blocked(*inputs)  # the static runtime records sizes, then plans with fused kernels
            got = blocked(*inputs)
            kernels = _fused_kernels(blocked)
        want = plain(*inputs)
        ran += sum(k.stats["fused"] for k in kernels)
        n = program.n_outputs
        for a, b in zip(flatten_outputs(outputs_as_list(got, n)), flatten_outputs(outputs_as_list(want, n))):
            if isinstance(a, np.ndarray):
                _same(a, b)
            else:
                assert type(a) is type(b) and (a == b or a != a), (name, a, b)
    assert ran >= 5, f"only {ran} blocked calls over the corpus: the test no longer exercises the fuser"


def _fused_kernels(runtime: Any) -> list[FusedKernel]:
    """The fused kernels a runtime holds (interpreter: in its decoded code; static: in
    its module's fusion groups)."""
    found: dict[int, FusedKernel] = {}
    for decoded in getattr(runtime, "decoded", ()):
        for ins in decoded.code:
            for item in ins:
                if isinstance(item, FusedKernel):
                    found[id(item)] = item
    module = getattr(runtime, "module", None)
    for group in getattr(module, "groups", ()):
        kernel = getattr(group, "kernel", None)
        if isinstance(kernel, FusedKernel):
            found[id(kernel)] = kernel
    return list(found.values())


def test_scratch_in_steady_use_survives_many_other_groups() -> None:
    """The per-thread scratch cache evicts the least recently used entries: a group that
    runs every call keeps its buffers however many other groups' entries pass through
    (it was cleared whole once it held 64 entries, so a model with many groups
    reallocated its scratch on every call)."""
    kernel = _ratio_iou_kernel(min_block=16, max_block=64)
    plan = next(iter(kernel.plans.values()))
    mine, _ = fusion._thread_buffers(plan, 64)
    for cap in range(1, 3 * fusion.SCRATCH_ENTRIES):
        fusion._thread_buffers(plan, 1000 + cap)  # another size: other entries
        again, _ = fusion._thread_buffers(plan, 64)
        assert all(a is b for a, b in zip(again, mine))
    assert len(fusion._scratch.buffers) <= fusion.SCRATCH_ENTRIES
