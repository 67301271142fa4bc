"""Random operators (vm/ops/random.py, random_draws.py): statistical and property tests of
each kernel on a seeded generator, differential tests against torch for what is
deterministic (eval-mode dropout, p = 0 and p = 1, result shapes and dtypes, error
messages), and the runtimes' ownership of the generator (seed=, --seed, no CSE)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import compiler
import vm
from tests.support.nn import op
from vm.ops.random import RANDOM_KINDS, conditional_draws, make_generator, using_generator

torch = pytest.importorskip("torch")

N = 20000  # draws per statistical check: 4 sigma of a fraction is ~0.014


def seeded(fn: Callable[[], Any], seed: int = 0) -> Any:
    with using_generator(make_generator(seed)):
        return fn()


def ones(*shape: int, dtype: Any = np.float32) -> np.ndarray:
    return np.ones(shape, dtype)


# -- bernoulli ------------------------------------------------------------------------------


@pytest.mark.parametrize("p", [0.1, 0.5, 0.9])
def test_bernoulli_p_draws_zeros_and_ones_with_mean_p(p: float) -> None:
    """bernoulli.p: the input's shape and dtype, values 0/1, fraction of ones ~ p."""
    out = seeded(lambda: op("aten::bernoulli.p")(ones(N, dtype=np.float64), p, None))
    assert out.shape == (N,) and out.dtype == np.float64
    assert set(np.unique(out).tolist()) <= {0.0, 1.0}
    assert abs(out.mean() - p) < 0.015


def test_bernoulli_of_a_probability_tensor_follows_each_probability() -> None:
    """bernoulli(Tensor): element i is 1 with probability self[i]; 0 and 1 are exact."""
    probs = np.repeat(np.array([0.0, 0.3, 1.0], np.float32)[None], N, 0)
    out = seeded(lambda: op("aten::bernoulli")(probs, None))
    assert out.dtype == np.float32
    assert (out[:, 0] == 0).all() and (out[:, 2] == 1).all()
    assert abs(out[:, 1].mean() - 0.3) < 0.015


def test_bernoulli_inplace_writes_self_and_returns_it() -> None:
    """bernoulli_.float and bernoulli_.Tensor write 0/1 into self (int self too, as torch)."""
    x = np.full(N, 7, np.int64)
    assert seeded(lambda: op("aten::bernoulli_.float")(x, 0.25, None)) is x
    assert set(np.unique(x).tolist()) <= {0, 1} and abs(x.mean() - 0.25) < 0.015
    y = np.zeros((N, 2), np.float32)
    p = np.array([0.0, 1.0], np.float32)
    assert seeded(lambda: op("aten::bernoulli_.Tensor")(y, p, None)) is y
    assert (y[:, 0] == 0).all() and (y[:, 1] == 1).all()


@pytest.mark.parametrize("p", [-0.1, 1.5])
def test_bernoulli_refuses_p_outside_0_1_as_torch_does(p: float) -> None:
    """The message is torch's."""
    with pytest.raises(RuntimeError) as theirs:
        torch.ones(3).bernoulli_(p)
    with pytest.raises(RuntimeError) as ours:
        op("aten::bernoulli_.float")(ones(3), p, None)
    assert str(ours.value) == str(theirs.value)


# -- dropout --------------------------------------------------------------------------------

DROPOUTS = ["dropout", "feature_dropout", "alpha_dropout", "feature_alpha_dropout"]


@pytest.mark.parametrize("name", DROPOUTS)
@pytest.mark.parametrize("inplace", [False, True])
def test_dropout_deterministic_cases_match_torch(name: str, inplace: bool) -> None:
    """Eval mode and p = 0 return the input itself; p = 1 gives torch's result (zeros, or
    alpha dropout's constant); a p outside [0, 1] is torch's error even in eval mode."""
    kind = f"aten::{name}_" if inplace else f"aten::{name}"
    fn = getattr(torch, f"{name}_" if inplace else name)
    x = np.random.default_rng(0).standard_normal((2, 3, 4)).astype(np.float32)
    for p, train in [(0.5, False), (0.0, True), (1.0, True), (1.0, False)]:
        ours_in = x.copy()
        ours = op(kind)(ours_in, p, train)
        theirs = fn(torch.from_numpy(x.copy()), p, train)
        np.testing.assert_allclose(ours, theirs.numpy(), rtol=1e-6, atol=1e-6)
        if not train or p == 0:
            assert ours is ours_in
    with pytest.raises(RuntimeError) as theirs_err:
        fn(torch.ones(2, 2), 1.5, False)
    with pytest.raises(RuntimeError) as ours_err:
        op(kind)(ones(2, 2), 1.5, False)
    assert str(ours_err.value) == str(theirs_err.value)


@pytest.mark.parametrize("p", [0.2, 0.6])
def test_training_dropout_keeps_1_minus_p_scaled_by_its_inverse(p: float) -> None:
    """dropout(train=True): each element is 0 or x / (1 - p), kept with probability 1 - p."""
    x = np.random.default_rng(1).uniform(1, 2, N).astype(np.float32)
    out = seeded(lambda: op("aten::dropout")(x, p, True))
    kept = out != 0
    assert abs(kept.mean() - (1 - p)) < 0.015
    np.testing.assert_allclose(out[kept], x[kept] / np.float32(1 - p), rtol=1e-6)


def test_feature_dropout_drops_whole_channels() -> None:
    """feature_dropout draws one mask value per (batch, channel); a rank-1 input is torch's error."""
    x = ones(50, 40, 3, 3)
    out = seeded(lambda: op("aten::feature_dropout")(x, 0.5, True))
    per_channel = out.reshape(50, 40, -1)
    assert (per_channel == per_channel[..., :1]).all()
    assert abs((per_channel[..., 0] != 0).mean() - 0.5) < 0.05
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions"):
        op("aten::feature_dropout")(ones(3), 0.5, True)


@pytest.mark.parametrize("name", ["alpha_dropout", "feature_alpha_dropout"])
def test_alpha_dropout_takes_torchs_two_values_and_keeps_mean_and_variance(name: str) -> None:
    """On a constant input the output has torch's two values (kept, dropped); on standard
    normal input it keeps mean 0 and variance 1, the point of alpha dropout."""
    theirs = getattr(torch, name)(torch.ones(400, 50, 1), 0.3, True)
    ours = seeded(lambda: op(f"aten::{name}")(ones(400, 50, 1), 0.3, True))
    np.testing.assert_allclose(np.unique(ours), np.unique(theirs.numpy()), rtol=1e-6)
    z = np.random.default_rng(2).standard_normal((N, 1)).astype(np.float32)
    out = seeded(lambda: op("aten::alpha_dropout")(z, 0.3, True))
    assert abs(out.mean()) < 0.05 and abs(out.var() - 1) < 0.05


def test_inplace_training_dropout_writes_its_input() -> None:
    """dropout_(train=True) returns self, with the mask applied in place."""
    x = ones(1000)
    assert seeded(lambda: op("aten::dropout_")(x, 0.5, True)) is x
    assert set(np.unique(x).tolist()) == {0.0, 2.0}


# -- factories and distributions ------------------------------------------------------------

NONE5 = (None, None, None, None)


def test_rand_randn_randint_shapes_dtypes_and_ranges() -> None:
    """rand in [0, 1) float32 (or the dtype asked), randn ~ N(0, 1), randint in [low, high)
    int64, as torch's defaults."""
    r = seeded(lambda: op("aten::rand")([N], *NONE5[:4]))
    assert r.dtype == np.float32 and r.shape == (N,) and r.min() >= 0 and r.max() < 1
    assert abs(r.mean() - 0.5) < 0.01
    r64 = seeded(lambda: op("aten::rand")([2, 3], 7, None, None, None))
    assert r64.dtype == np.float64 and r64.shape == (2, 3)
    n = seeded(lambda: op("aten::randn")([N], *NONE5[:4]))
    assert n.dtype == np.float32 and abs(n.mean()) < 0.03 and abs(n.std() - 1) < 0.03
    i = seeded(lambda: op("aten::randint.low")(-3, 4, [N], 4, None, None, None))
    assert i.dtype == np.int64 and set(np.unique(i).tolist()) == set(range(-3, 4))
    f = seeded(lambda: op("aten::randint")(5, [10], 6, None, None, None))
    assert f.dtype == np.float32 and set(np.unique(f).tolist()) <= {0.0, 1.0, 2.0, 3.0, 4.0}


@pytest.mark.parametrize(
    ("call", "ours"),
    [
        (lambda: torch.rand(3, dtype=torch.int64), lambda: op("aten::rand")([3], 4, None, None, None)),
        (lambda: torch.randint(3, 1, (2,)), lambda: op("aten::randint.low")(3, 1, [2], 4, None, None, None)),
        (lambda: torch.normal(0.0, -1.0, (2,)), lambda: op("aten::normal.float_float")(0.0, -1.0, [2], *NONE5)),
        (lambda: torch.ones(3).uniform_(2, 1), lambda: op("aten::uniform_")(ones(3), 2.0, 1.0, None)),
        (lambda: torch.ones(3).exponential_(-1), lambda: op("aten::exponential_")(ones(3), -1.0, None)),
        (lambda: torch.ones(3, dtype=torch.int64).normal_(), lambda: op("aten::normal_")(ones(3, dtype=np.int64), 0.0, 1.0, None)),
    ],
)
def test_bad_arguments_get_torchs_errors(call: Callable[[], Any], ours: Callable[[], Any]) -> None:
    """Integer dtypes for float draws, empty ranges and negative scales fail with torch's message."""
    with pytest.raises(RuntimeError) as theirs_err:
        call()
    with pytest.raises(RuntimeError) as ours_err:
        ours()
    assert str(ours_err.value) == str(theirs_err.value)


LIKE = [
    ("rand_like", lambda t: torch.rand_like(t), lambda a: op("aten::rand_like")(a, *NONE5, None)),
    ("randn_like", lambda t: torch.randn_like(t, dtype=torch.float64),
     lambda a: op("aten::randn_like")(a, 7, None, None, None, None)),
    ("randint_like", lambda t: torch.randint_like(t, 5), lambda a: op("aten::randint_like")(a, 5, *NONE5, None)),
    ("normal.Tensor_float", lambda t: torch.normal(t, 2.0), lambda a: op("aten::normal.Tensor_float")(a, 2.0, None)),
    ("normal.float_Tensor", lambda t: torch.normal(1.0, t.abs()),
     lambda a: op("aten::normal.float_Tensor")(1.0, np.abs(a), None)),
    ("normal.Tensor_Tensor", lambda t: torch.normal(t, t[:1].abs()),
     lambda a: op("aten::normal.Tensor_Tensor")(a, np.abs(a[:1]), None)),
    ("uniform", lambda t: torch.ones_like(t).uniform_(2, 3), lambda a: op("aten::uniform")(a, 2.0, 3.0, None)),
    ("bernoulli.Tensor", lambda t: torch.ops.aten.bernoulli.Tensor(t, torch.full((3,), 0.5)),
     lambda a: op("aten::bernoulli.Tensor")(a, np.full(3, 0.5, np.float32), None)),
]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("name", "theirs", "ours"), LIKE, ids=[c[0] for c in LIKE])
def test_like_and_tensor_overloads_have_torchs_shape_and_dtype(name: str, theirs: Any, ours: Any, dtype: Any) -> None:
    """Each overload's result has the shape and dtype torch gives for the same arguments."""
    a = np.random.default_rng(0).standard_normal((2, 3)).astype(dtype)
    expected = theirs(torch.from_numpy(a))
    got = seeded(lambda: ours(a))
    assert got.shape == tuple(expected.shape) and got.dtype == expected.numpy().dtype


def test_normal_distributions_have_the_asked_mean_and_std() -> None:
    """normal(mean, std) for tensor and float arguments, and normal_ in place."""
    mean = np.full(N, 3.0, np.float32)
    out = seeded(lambda: op("aten::normal.Tensor_float")(mean, 2.0, None))
    assert abs(out.mean() - 3) < 0.06 and abs(out.std() - 2) < 0.06
    x = np.zeros(N, np.float64)
    assert seeded(lambda: op("aten::normal_")(x, -1.0, 0.5, None)) is x
    assert abs(x.mean() + 1) < 0.02 and abs(x.std() - 0.5) < 0.02


def test_uniform_and_exponential_inplace() -> None:
    """uniform_ fills [from, to); exponential_ has mean 1 / lambda and no negative value."""
    x = np.zeros(N, np.float32)
    seeded(lambda: op("aten::uniform_")(x, -2.0, 3.0, None))
    assert x.min() >= -2 and x.max() < 3 and abs(x.mean() - 0.5) < 0.05
    e = np.zeros(N, np.float64)
    seeded(lambda: op("aten::exponential_")(e, 4.0, None))
    assert e.min() >= 0 and abs(e.mean() - 0.25) < 0.01


def test_multinomial_with_and_without_replacement() -> None:
    """Frequencies follow the weights (with replacement); without replacement the indices
    of a row are distinct and zero-weight classes come last, as torch's exponential trick."""
    w = np.array([1.0, 0.0, 3.0], np.float32)
    draws = seeded(lambda: op("aten::multinomial")(w, N, True, None))
    assert draws.dtype == np.int64 and draws.shape == (N,)
    assert (draws != 1).all() and abs((draws == 2).mean() - 0.75) < 0.015
    rows = np.abs(np.random.default_rng(0).standard_normal((50, 6))).astype(np.float32)
    picked = seeded(lambda: op("aten::multinomial")(rows, 6, False, None))
    assert picked.shape == (50, 6) and all(sorted(r) == list(range(6)) for r in picked.tolist())
    assert seeded(lambda: op("aten::multinomial")(np.array([0.0, 1.0, 0.0]), 2, False, None))[0] == 1
    with pytest.raises(RuntimeError, match="without replacement"):
        op("aten::multinomial")(w, 4, False, None)


def test_randperm_is_a_permutation() -> None:
    """randperm(n): every index once, int64 by default (float32 when asked, as torch)."""
    p = seeded(lambda: op("aten::randperm")(100, 4, None, None, None))
    assert p.dtype == np.int64 and sorted(p.tolist()) == list(range(100))
    assert seeded(lambda: op("aten::randperm")(4, 6, None, None, None)).dtype == np.float32


def test_a_torch_generator_argument_is_refused_clearly() -> None:
    """Only generator=None is accepted: irvm draws from the runtime's generator."""
    with pytest.raises(RuntimeError, match="runtime's generator"):
        op("aten::bernoulli.p")(ones(3), 0.5, object())


def test_every_random_operator_is_impure() -> None:
    """DCE, CSE, folding and fusion read purity from the registry: every random kind is
    impure (those that draw only for some arguments are decided per call, below)."""
    from vm.ops.registry import overloads

    infos = [info for kind in RANDOM_KINDS - set(conditional_draws()) for info in overloads(kind)]
    assert len(infos) > 40 and not any(info.pure or info.elementwise for info in infos)


# -- the runtimes own the generator ---------------------------------------------------------

TWO_RANDS = """
graph(%x.1 : Tensor):
  %none : NoneType = prim::Constant()
  %size : int[] = prim::Constant[value=[1000]]()
  %a : Tensor = aten::rand(%size, %none, %none, %none, %none)
  %b : Tensor = aten::rand(%size, %none, %none, %none, %none)
  %unused : Tensor = aten::rand(%size, %none, %none, %none, %none)
  %one : int = prim::Constant[value=1]()
  %c : Tensor = aten::add(%a, %x.1, %one)
  return (%c, %b)
"""


def test_two_identical_rand_calls_are_not_merged() -> None:
    """CSE does not merge two rand calls with equal arguments: they draw different numbers."""
    program = compiler.compile_source(TWO_RANDS)
    assert str(program.module).count("aten::rand(") >= 2
    for make in (vm.Interpreter, vm.StaticRuntime):
        c, b = make(program, seed=0)(np.zeros(1000, np.float32))
        assert not np.array_equal(c, b)


TWO_ATTENTIONS = """
graph(%q : Float(1, 2, 8, 4), %p : float):
  %none : NoneType = prim::Constant()
  %false : bool = prim::Constant[value=0]()
  %drop : float = prim::Constant[value=DROP]()
  %a : Tensor = aten::scaled_dot_product_attention(%q, %q, %q, %none, %drop, %false, %none, %false)
  %b : Tensor = aten::scaled_dot_product_attention(%q, %q, %q, %none, %drop, %false, %none, %false)
  return (%a, %b)
"""


@pytest.mark.parametrize("drop", ["0.5", "%p"])
def test_attention_with_dropout_is_random_per_call(drop: str) -> None:
    """Two equal scaled_dot_product_attention calls whose dropout_p is not a constant 0 are
    not merged (each draws its own mask), and a runtime's seed decides their draws."""
    source = TWO_ATTENTIONS.replace("%drop : float = prim::Constant[value=DROP]()\n", "" if drop == "%p" else
                                    f"%drop : float = prim::Constant[value={drop}]()\n").replace("%drop,", f"{'%p' if drop == '%p' else '%drop'},")
    program = compiler.compile_source(source)
    assert str(program.module).count("aten::scaled_dot_product_attention(") == 2
    q = np.random.default_rng(0).standard_normal((1, 2, 8, 4)).astype(np.float32)
    for make in (vm.Interpreter, vm.StaticRuntime):
        a, b = make(program, seed=3)(q, 0.5)
        assert not np.array_equal(a, b)
        again = make(program, seed=3)(q, 0.5)
        assert np.array_equal(a, again[0]) and np.array_equal(b, again[1])


def test_attention_without_dropout_is_pure() -> None:
    """With dropout_p the constant 0.0 nothing is drawn: the two equal calls are one."""
    differences = TWO_ATTENTIONS.replace("DROP", "DROP_").replace(
        "  return (%a, %b)", "  %one : int = prim::Constant[value=1]()\n  %c : Tensor = aten::sub(%a, %b, %one)\n  return (%c)")
    merged = compiler.compile_source(differences.replace("DROP_", "0."))
    assert str(merged.module).count("aten::scaled_dot_product_attention(") == 1
    kept = compiler.compile_source(differences.replace("DROP_", "0.25"))
    assert str(kept.module).count("aten::scaled_dot_product_attention(") == 2


@pytest.mark.parametrize("make", [vm.Interpreter, vm.StaticRuntime])
def test_the_same_seed_repeats_and_another_seed_differs(make: Any) -> None:
    """A runtime's draws depend on its seed only: two runtimes with one seed agree call for
    call, another seed gives other numbers, and successive calls draw fresh numbers."""
    program = compiler.compile_source(TWO_RANDS)
    x = np.zeros(1000, np.float32)
    one, two, other = make(program, seed=5), make(program, seed=5), make(program, seed=6)
    first, second = one(x), one(x)
    assert not np.array_equal(first[1], second[1])
    assert all(np.array_equal(a, b) for a, b in zip(first, two(x)))
    assert all(np.array_equal(a, b) for a, b in zip(second, two(x)))
    assert not np.array_equal(first[1], other(x)[1])


def test_irvm_run_seed_makes_runs_repeatable(tmp_path: Any) -> None:
    """`irvm run --seed N` writes the same outputs for the same N and others for another N."""
    from vm.cli import main

    (tmp_path / "r.ir").write_text(TWO_RANDS)
    np.savez(tmp_path / "in.npz", **{"x.1": np.zeros(1000, np.float32)})
    outs = []
    for i, seed in enumerate([1, 1, 2]):
        out = tmp_path / f"out{i}.npz"
        args = ["run", str(tmp_path / "r.ir"), "--inputs", str(tmp_path / "in.npz"), "--output", str(out)]
        assert main([*args, "--seed", str(seed)]) == 0
        outs.append(np.load(out)["out0.1"] if "out0.1" in np.load(out).files else np.load(out)["out1"])
    assert np.array_equal(outs[0], outs[1]) and not np.array_equal(outs[0], outs[2])


def test_a_seed_must_be_a_non_negative_int() -> None:
    with pytest.raises(ValueError, match="non-negative int"):
        make_generator(-1)


def test_a_runtime_pool_gives_each_runtime_its_own_stream_from_one_seed() -> None:
    """RuntimePool(module, n, seed=N): its runtimes draw different streams, and a second
    pool with the same seed repeats the first one's draws."""
    module = vm.StaticModule(compiler.compile_source(TWO_RANDS))
    x = np.zeros(1000, np.float32)
    first, second = vm.RuntimePool(module, 2, seed=9), vm.RuntimePool(module, 2, seed=9)
    streams = [rt(x)[1] for rt in first._free]
    assert not np.array_equal(streams[0], streams[1])
    assert all(np.array_equal(a, rt(x)[1]) for a, rt in zip(streams, second._free))


def test_native_dropout_returns_the_output_and_torchs_keep_mask() -> None:
    """native_dropout: eval gives a copy and an all-True mask, p = 1 zeros and all-False,
    as torch; in training the output is the input scaled by 2 where the mask is True."""
    x = np.random.default_rng(0).standard_normal((40, 50)).astype(np.float32)
    for p, train in [(0.5, False), (1.0, True), (0.0, True)]:
        out, mask = op("aten::native_dropout")(x, p, train)
        t_out, t_mask = torch.native_dropout(torch.from_numpy(x), p, train)
        np.testing.assert_allclose(out, t_out.numpy(), rtol=1e-6)
        assert mask.dtype == np.bool_ and np.array_equal(mask, t_mask.numpy()) and out is not x
    out, mask = seeded(lambda: op("aten::native_dropout")(x, 0.5, None))
    np.testing.assert_allclose(out, np.where(mask, x * 2, 0), rtol=1e-6)
    assert abs(mask.mean() - 0.5) < 0.05


def test_training_rrelu_scales_non_positive_elements_by_slopes_in_lower_upper() -> None:
    """rrelu(training=True): positives pass, each negative is scaled by its own slope drawn
    from U(lower, upper) (spread over the range), as torch's; rrelu_ writes self."""
    x = np.concatenate([np.full(N, -1.0, np.float32), np.full(10, 2.0, np.float32)])
    out = seeded(lambda: op("aten::rrelu")(x, 0.1, 0.3, True, None))
    theirs = torch.rrelu(torch.from_numpy(x), 0.1, 0.3, True).numpy()
    for slopes, result in ((-out[:N], out), (-theirs[:N], theirs)):
        assert (result[N:] == 2).all() and slopes.min() >= 0.1 and slopes.max() <= 0.3
        assert abs(slopes.mean() - 0.2) < 0.005 and slopes.std() > 0.05
    y = x.copy()
    assert seeded(lambda: op("aten::rrelu_")(y, 0.1, 0.3, True, None)) is y and (y[:N] > -0.31).all()
