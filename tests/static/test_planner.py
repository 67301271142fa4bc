"""The memory planner: valid plans, bounded slabs, allocation-free steady state, new shapes.

Unit properties run the two planners on random lifetimes; the runtime tests use IR text
(ratio_iou from the seed notebook, a chain with a view and an in-place op).
"""

from __future__ import annotations

import tracemalloc

import attrs
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

import compiler
from tests.support.paths import EXAMPLES
from vm import StaticModule, StaticRuntime
from vm.static import StaticOptions
from vm.static import memory_planner as mp
from vm.static.profile import profile

RATIO_IOU = (EXAMPLES / "ratio_iou.ir").read_text()

# Only ops whose out variant writes the buffer directly (no temporary inside the kernel).
CHAIN = """
graph(%x : Tensor, %y : Tensor):
  %one : int = prim::Constant[value=1]()
  %a : Tensor = aten::mul(%x, %y)
  %b : Tensor = aten::add(%a, %x, %one)
  %c : Tensor = aten::mul(%b, %b)
  %d : Tensor = aten::sub(%c, %a, %one)
  %e : Tensor = aten::maximum(%d, %y)
  %f : Tensor = aten::mul(%e, %c)
  %g : Tensor = aten::add(%f, %b, %one)
  return (%g)
"""

VIEWS = """
graph(%x : Tensor):
  %one : int = prim::Constant[value=1]()
  %minus : int = prim::Constant[value=-1]()
  %nn : NoneType = prim::Constant()
  %shape : int[] = prim::ListConstruct(%minus)
  %a : Tensor = aten::mul(%x, %x)
  %v : Tensor = aten::view(%a, %shape)
  %b : Tensor = aten::add(%x, %x, %one)
  %c : Tensor = aten::add_(%b, %x, %one)
  %d : Tensor = aten::mul(%c, %c)
  %e : Tensor = aten::sum(%v, %nn)
  %f : Tensor = aten::add(%d, %e, %one)
  return (%f)
"""


SMALL = StaticOptions(min_managed_bytes=0)  # plan even tiny tensors


def iou_reference(x1, y1, w1, h1, x2, y2, w2, h2):
    xi, yi = np.maximum(x1, x2), np.maximum(y1, y2)
    wi = np.clip(np.minimum(x1 + w1, x2 + w2) - xi, 0, None)
    hi = np.clip(np.minimum(y1 + h1, y2 + h2) - yi, 0, None)
    area_i = wi * hi
    return area_i / np.clip(w1 * h1 + w2 * h2 - area_i, 1e-5, None)


def boxes(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.random(n, dtype=np.float32) + 0.1 for _ in range(8)]


# ---------------------------------------------------------------------------------------
# planner units


@st.composite
def tensor_lifetimes(draw):
    n = draw(st.integers(1, 25))
    specs, spans = {}, {}
    for slot in range(n):
        start = draw(st.integers(0, 20))
        spans[slot] = (start, start + draw(st.integers(0, 8)))
        specs[slot] = mp.TensorSpec(
            (draw(st.integers(0, 300)),),
            np.dtype(draw(st.sampled_from(["f4", "f8", "u1"]))),
        )
    return specs, spans


@given(tensor_lifetimes(), st.sampled_from(["standard", "precomputed"]))
def test_every_plan_is_valid_and_the_slab_is_bounded(drawn, algorithm) -> None:
    """No two tensors alive together share a byte; standard slabs are exactly the sum of
    their groups' largest (aligned) tensors, precomputed ones never larger than that."""
    specs, spans = drawn
    plan = mp.plan(specs, spans, algorithm)
    mp.validate(plan)
    groups = mp.plan(specs, spans, "standard").groups
    bound = sum(mp.align(max(specs[s].nbytes for s in g)) for g in groups)
    assert plan.slab_bytes <= max(
        bound, sum(mp.align(s.nbytes) for s in specs.values())
    )
    if algorithm == "standard":
        assert plan.slab_bytes == bound
    slab, views = mp.allocate(plan)
    assert len(slab) == plan.slab_bytes and (
        not len(slab) or slab.ctypes.data % mp.ALIGN == 0
    )
    for slot, view in views.items():
        assert view.shape == specs[slot].shape and view.dtype == specs[slot].dtype


def test_validation_rejects_a_broken_plan() -> None:
    """Two tensors alive at the same step placed at the same offset is caught."""
    spec = mp.TensorSpec((16,), np.dtype("f4"))
    good = mp.plan({0: spec, 1: spec}, {0: (0, 2), 1: (1, 3)}, "standard")
    mp.validate(good)
    broken = mp.MemoryPlan(
        "standard", {0: 0, 1: 0}, good.specs, good.lifetimes, ((0, 1),), 64
    )
    with pytest.raises(mp.PlanError, match="alive together"):
        mp.validate(broken)
    outside = mp.MemoryPlan(
        "standard", {0: 0, 1: 64}, good.specs, good.lifetimes, ((0,), (1,)), 64
    )
    with pytest.raises(mp.PlanError, match="outside the slab"):
        mp.validate(outside)


def test_a_broken_planner_is_stopped_before_any_run_uses_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The runtime validates each plan it makes: a planner that overlaps live tensors
    raises PlanError instead of computing wrong results."""

    def overlapping(specs, spans, algorithm="standard", inplace=None):
        size = max((mp.align(s.nbytes) for s in specs.values()), default=0)
        return mp.MemoryPlan(
            algorithm,
            {s: 0 for s in specs},
            dict(specs),
            dict(spans),
            (tuple(specs),),
            size,
        )

    monkeypatch.setattr(mp, "plan", overlapping)
    with pytest.raises(mp.PlanError):
        StaticRuntime(RATIO_IOU, options=SMALL)(*boxes(32))


def test_lifetimes_extend_through_aliases() -> None:
    """A view or a list holding a tensor keeps it alive until their own last use."""
    spans = mp.lifetimes(
        {0: 0, 5: 3}, {0: [1], 1: [4], 2: [7], 5: [4]}, {0: [1], 1: [2]}
    )
    assert spans == {0: (0, 7), 5: (3, 4)}


# ---------------------------------------------------------------------------------------
# the runtime with a plan


@pytest.mark.parametrize("planner", ["standard", "precomputed"])
def test_ratio_iou_is_planned_and_correct_across_shapes(planner: str) -> None:
    """Shapes A, B, A: one plan per shape, results equal to numpy's each time."""
    rt = StaticRuntime(
        RATIO_IOU, options=StaticOptions(planner=planner, min_managed_bytes=0)
    )
    for n in (100, 37, 100):
        args = boxes(n, seed=n)
        np.testing.assert_allclose(rt(*args), iou_reference(*args), rtol=1e-6)
    assert rt.stats["plans_made"] == 2 and rt.stats["plan_hits"] == 1
    plan = rt.plans[0]
    assert len(plan.offsets) == 18  # every intermediate but the output
    assert plan.slab_bytes < plan.managed_bytes


def test_a_steady_state_run_allocates_no_managed_intermediate() -> None:
    """After the warm-up, every managed node writes its slab view (counted through the
    planner), and tracemalloc sees no allocation beyond the output.  (Fused kernels are
    off: at this size the chain's fusion group would otherwise run as one kernel.)"""
    n = 1 << 16
    x, y = (np.random.default_rng(1).random(n, dtype=np.float32) for _ in range(2))
    rt = StaticRuntime(CHAIN, options=StaticOptions(fused_kernels=False))
    expected = rt(x, y)
    report = profile(rt.module, [x, y], runs=1)
    assert report.managed_tensors == 6 and not report.out_variant_fallbacks
    rt(x, y)
    tracemalloc.start()
    try:
        result = rt(x, y)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    np.testing.assert_array_equal(result, expected)
    assert peak < 2 * x.nbytes, f"peak {peak} bytes: more than the output was allocated"
    unplanned = StaticRuntime(CHAIN, options=StaticOptions(enable_out_variant=False))
    tracemalloc.start()
    try:
        unplanned(x, y)
        _, unplanned_peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert unplanned_peak >= 3 * x.nbytes  # the same program allocates without a plan


def test_views_and_in_place_ops_share_no_storage_they_should_not() -> None:
    """A view keeps its base alive; an in-place result is its input; results are right."""
    x = np.arange(12, dtype=np.float32).reshape(3, 4)
    for planner in ("standard", "precomputed"):
        rt = StaticRuntime(
            VIEWS, options=StaticOptions(planner=planner, min_managed_bytes=0)
        )
        expected = (2 * x + x) ** 2 + (x * x).sum()
        for _ in range(3):
            np.testing.assert_allclose(rt(x), expected)
        mp.validate(rt.plans[0])


def test_outputs_are_never_slab_memory_and_managed_outputs_wait_for_release() -> None:
    """Without manage_output_tensors two runs return distinct arrays; with it, the arena
    is reused only after release_outputs()."""
    x, y = np.ones(64, np.float32), np.full(64, 2, np.float32)
    rt = StaticRuntime(CHAIN, options=SMALL)
    first, second = rt(x, y), rt(x, y)
    assert not np.shares_memory(first, second)
    assert all(not np.shares_memory(first, p.slab) for p in rt._plans.values())
    managed = StaticRuntime(
        CHAIN, options=StaticOptions(manage_output_tensors=True, min_managed_bytes=0)
    )
    managed(x, y)
    a = managed(x, y)
    b = managed(x, y)  # a is still held: a fresh arena
    assert not np.shares_memory(a, b)
    managed.release_outputs()
    c = managed(x, y)
    assert np.shares_memory(b, c)  # released: the arena is reused
    np.testing.assert_array_equal(c, first)


def test_small_tensors_run_their_allocating_kernels_by_default() -> None:
    """Below min_managed_bytes nothing is planned; above it everything eligible is."""
    small, large = boxes(100), boxes(8192)
    rt = StaticRuntime(RATIO_IOU)
    rt(*small)
    rt(*large)
    assert [len(p.offsets) for p in rt.plans] == [0, 18]


def test_plan_cache_is_bounded() -> None:
    rt = StaticRuntime(
        CHAIN, options=StaticOptions(plan_cache_size=2, min_managed_bytes=0)
    )
    for n in (4, 5, 6, 4):
        x = np.ones(n, np.float32)
        rt(x, x)
    assert len(rt.plans) == 2 and rt.stats["plans_made"] == 4


def test_profile_reports_time_per_operator_and_the_memory_plan() -> None:
    report = profile(compiler.compile_source(RATIO_IOU), boxes(1000), runs=3, options=SMALL)
    kinds = {k.kind: k for k in report.per_kind}
    assert kinds["aten::add"].instances == 5 and kinds["aten::clamp"].instances == 3
    assert abs(sum(k.share for k in report.per_kind) - 1) < 1e-6
    # 5 storage groups without in-place reuse: the clamp after each sub writes over it
    assert report.managed_tensors == 18 and report.storage_groups == 4
    assert report.bytes_saved == report.managed_bytes - report.slab_bytes > 0
    text = str(report)
    assert "aten::clamp" in text and "storage groups" in text


def test_optimize_memory_off_gives_every_tensor_its_own_storage() -> None:
    rt = StaticRuntime(
        RATIO_IOU, options=StaticOptions(optimize_memory=False, min_managed_bytes=0)
    )
    args = boxes(50)
    rt(*args)
    np.testing.assert_allclose(rt(*args), iou_reference(*args), rtol=1e-6)
    plan = rt.plans[0]
    assert len(plan.groups) == len(plan.offsets)


def test_one_module_shared_read_only() -> None:
    """Runtimes built on one StaticModule have their own plans and slabs."""
    sm = StaticModule(CHAIN, options=SMALL)
    a, b = StaticRuntime(sm), StaticRuntime(sm)
    x = np.ones(8, np.float32)
    a(x, x), b(x, x), a(x, x), b(x, x)
    assert a._plans and b._plans
    assert not np.shares_memory(
        next(iter(a._plans.values())).slab, next(iter(b._plans.values())).slab
    )


def test_in_place_chains_share_one_offset_and_pass_validation() -> None:
    """An output named in-place of an input that dies at its node takes the input's bytes
    (the whole chain is placed as one tensor); a pair whose lifetimes do not touch, or
    whose specs differ, is planned normally; validate rejects a chain split over offsets."""
    f = np.dtype(np.float32)
    specs = {s: mp.TensorSpec((256,), f) for s in (1, 2, 3, 4)} | {5: mp.TensorSpec((8,), f)}
    spans = {1: (0, 1), 2: (1, 2), 3: (2, 3), 4: (0, 3), 5: (3, 4)}
    for algorithm in ("standard", "precomputed"):
        p = mp.plan(specs, spans, algorithm, {2: 1, 3: 2, 5: 3})
        mp.validate(p)
        assert p.offsets[1] == p.offsets[2] == p.offsets[3] != p.offsets[4]
        assert p.inplace == {1: 1, 2: 1, 3: 1}, "5 differs in shape: not part of the chain"
        assert p.slab_bytes == 2 * mp.align(1024) + mp.align(32)  # 5 meets the chain at step 3
    broken = attrs.evolve(p, offsets={**p.offsets, 3: p.offsets[4]})
    with pytest.raises(mp.PlanError):
        mp.validate(broken)
    far = mp.plan(specs, {**spans, 2: (2, 2)}, "standard", {2: 1})
    assert not far.inplace


@given(tensor_lifetimes(), st.data(), st.sampled_from(["standard", "precomputed"]))
def test_plans_with_in_place_pairs_are_valid_and_never_larger(drawn, data, algorithm) -> None:
    """Any in-place requests (qualifying or not) give a valid plan whose chains share one
    offset, and a standard slab that is the sum of its groups' largest tensors.  (Not
    always smaller than without them: merging a chain can change the free-list walk.)"""
    specs, spans = drawn
    slots = sorted(specs)
    inplace = data.draw(st.dictionaries(st.sampled_from(slots), st.sampled_from(slots), max_size=len(slots)))
    inplace = {o: i for o, i in inplace.items() if o != i}
    plan = mp.plan(specs, spans, algorithm, inplace)
    mp.validate(plan)
    for slot, root in plan.inplace.items():
        assert plan.offsets[slot] == plan.offsets[root] and specs[slot] == specs[root]
    if algorithm == "standard":
        assert plan.slab_bytes == sum(mp.align(max(specs[s].nbytes for s in g)) for g in plan.groups)
