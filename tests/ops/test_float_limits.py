"""Reductions and pools at float32's limits, against torch (issue #40).

torch accumulates a float32 sum in float32, so four 2e38s sum to inf (and a following
softmax gives NaN); it runs var/std's Welford recurrence in double; it propagates NaN and
inf.  irvm's adaptive average pools divided before summing (2e38 where torch has inf, 0
where torch keeps a denormal) and its var/std overflowed a float32 mean (inf where torch
has 0).  Each operator here is scripted by torch, its printed graph compiled by irvm and run
on both backends over values near the limits, NaN and inf; the results must be torch's
bit for bit (NaN where torch has NaN).

What is not compared: a sum whose overflow depends on the order of its terms (2e38, 2e38,
-2e38, -2e38, 3e38, ...: torch's vectorized lanes add them in an order of their own,
which irvm does not reproduce); the inputs below overflow, or not, in every order.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import compiler
import vm

BIG, MAX, TINY = 2e38, 3.4e38, 1e-45
INPUTS = {
    "big": np.full((2, 8), BIG, np.float32),
    "max": np.full((2, 8), MAX, np.float32),
    "negative max": np.full((2, 8), -MAX, np.float32),
    "tiny": np.full((2, 8), TINY, np.float32),
    "nan": np.array([[np.nan, 1, 2, 3, 4, 5, 6, 7], [1, 2, 3, 4, 5, 6, 7, 8]], np.float32),
    "inf": np.array([[np.inf, 1, 2, 3, 4, 5, 6, 7], [-np.inf, 2, 3, 4, 5, 6, 7, np.inf]], np.float32),
    "cancelling": np.array([[BIG, -BIG] * 4, [MAX, -MAX] * 4], np.float32),
}


def f_sum(x: torch.Tensor) -> torch.Tensor:
    return torch.sum(x, [1])


def f_sum_all(x: torch.Tensor) -> torch.Tensor:
    return torch.sum(x)


def f_mean(x: torch.Tensor) -> torch.Tensor:
    return torch.mean(x, [1])


def f_amax(x: torch.Tensor) -> torch.Tensor:
    return torch.amax(x, [1])


def f_amin(x: torch.Tensor) -> torch.Tensor:
    return torch.amin(x, [1])


def f_max(x: torch.Tensor) -> torch.Tensor:
    return torch.max(x)


def f_logsumexp(x: torch.Tensor) -> torch.Tensor:
    return torch.logsumexp(x, [1])


def f_var(x: torch.Tensor) -> torch.Tensor:
    return torch.var(x, [1])


def f_std(x: torch.Tensor) -> torch.Tensor:
    return torch.std(x, [1])


def f_norm(x: torch.Tensor) -> torch.Tensor:
    return torch.norm(x)


def f_avg_pool1d(x: torch.Tensor) -> torch.Tensor:
    return F.avg_pool1d(x.reshape(1, 2, 8), 4)


def f_avg_pool2d(x: torch.Tensor) -> torch.Tensor:
    return F.avg_pool2d(x.reshape(1, 2, 2, 4), 2)


def f_adaptive_avg_pool1d(x: torch.Tensor) -> torch.Tensor:
    return F.adaptive_avg_pool1d(x.reshape(1, 2, 8), 3)


def f_adaptive_avg_pool2d(x: torch.Tensor) -> torch.Tensor:
    return F.adaptive_avg_pool2d(x.reshape(1, 2, 2, 4), 1)


def f_adaptive_avg_pool2d_bins(x: torch.Tensor) -> torch.Tensor:
    return F.adaptive_avg_pool2d(x.reshape(1, 1, 4, 4), [3, 2])


def f_adaptive_avg_pool3d(x: torch.Tensor) -> torch.Tensor:
    return F.adaptive_avg_pool3d(x.reshape(1, 1, 2, 2, 4), 1)


def f_max_pool1d(x: torch.Tensor) -> torch.Tensor:
    return F.max_pool1d(x.reshape(1, 2, 8), 4)


def f_max_pool2d(x: torch.Tensor) -> torch.Tensor:
    return F.max_pool2d(x.reshape(1, 2, 2, 4), 2)


def f_max_pool3d(x: torch.Tensor) -> torch.Tensor:
    return F.max_pool3d(x.reshape(1, 1, 2, 2, 4), 2)


def f_pool_then_softmax(x: torch.Tensor) -> torch.Tensor:
    """The campaign's chain: torch's pooled inf makes the softmax NaN."""
    return torch.softmax(F.adaptive_avg_pool2d(x.reshape(1, 4, 2, 2), 1).reshape(1, 4), 1)


FUNCTIONS = [f_sum, f_sum_all, f_mean, f_amax, f_amin, f_max, f_logsumexp, f_var, f_std, f_norm,
             f_avg_pool1d, f_avg_pool2d, f_adaptive_avg_pool1d, f_adaptive_avg_pool2d,
             f_adaptive_avg_pool2d_bins, f_adaptive_avg_pool3d, f_max_pool1d, f_max_pool2d, f_max_pool3d,
             f_pool_then_softmax]
ORDER_DEPENDENT = {(f_sum_all, "cancelling"), (f_norm, "cancelling")}  # see the module docstring


CASES = [(fn, values) for fn in FUNCTIONS for values in INPUTS if (fn, values) not in ORDER_DEPENDENT]
_PROGRAMS: dict[Any, Any] = {}


def _program(fn: Any) -> Any:
    if fn not in _PROGRAMS:
        _PROGRAMS[fn] = compiler.compile_source(str(torch.jit.script(fn).graph))
    return _PROGRAMS[fn]


@pytest.mark.parametrize("backend", ["interp", "static"])
@pytest.mark.parametrize(("fn", "values"), CASES, ids=[f"{fn.__name__[2:]}-{values}" for fn, values in CASES])
def test_torchs_numbers_at_the_limits(fn: Any, values: str, backend: str) -> None:
    program = _program(fn)
    x = INPUTS[values]
    expected = fn(torch.from_numpy(x.copy())).numpy()
    runtime = vm.Interpreter(program) if backend == "interp" else vm.StaticRuntime(program)
    got = np.asarray(runtime(x.copy()))
    assert got.dtype == expected.dtype and got.shape == expected.shape
    np.testing.assert_array_equal(got, expected, err_msg=f"{fn.__name__} of {values}")
