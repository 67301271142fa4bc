"""Building a runtime is linear in the model: four times the layers (and weights) cost
about four times the work, never sixteen.

Wall-clock time is never asserted (the machine is shared); the Python function calls are
counted instead, as ``tests/passes/test_compile_scaling.py`` counts the compiler's.  The
model is a chain of linear layers whose weights ``%self`` holds, each read by its own
``prim::GetAttr``: the shape of every real model, and the one on which asking "may this
weight be written?" once per weight, each answer walking every attribute read, made
building a static runtime quadratic (mobilenet_v2: 3 of 3.1 s).
"""

from __future__ import annotations

import cProfile
import pstats

import numpy as np
import pytest

import compiler
import vm


def _model(n_layers: int) -> tuple[str, dict[str, np.ndarray]]:
    lines = ["graph(%self : __torch__.Chain, %x : Float(2, 8)):"]
    weights: dict[str, np.ndarray] = {}
    rng = np.random.default_rng(0)
    last = "%x"
    for i in range(n_layers):
        lines += [
            f"  %w{i} : Tensor = prim::GetAttr[name=\"w{i}\"](%self)",
            f"  %b{i} : Tensor = prim::GetAttr[name=\"b{i}\"](%self)",
            f"  %h{i} : Tensor = aten::linear({last}, %w{i}, %b{i})",
            f"  %r{i} : Tensor = aten::relu(%h{i})",
        ]
        weights[f"w{i}"] = (rng.standard_normal((8, 8)) / 3).astype(np.float32)
        weights[f"b{i}"] = rng.standard_normal(8).astype(np.float32)
        last = f"%r{i}"
    lines.append(f"  return ({last})")
    return "\n".join(lines) + "\n", weights


def _calls(build) -> int:
    build()  # imports, caches: not part of the measured work
    profile = cProfile.Profile()
    profile.enable()
    build()
    profile.disable()
    return pstats.Stats(profile).total_calls  # type: ignore[attr-defined]


@pytest.mark.parametrize("backend", ["static", "interp"])
def test_building_a_runtime_is_linear_in_the_model(backend) -> None:
    """A runtime over a program compiled for its weights (what ``vm.load`` builds): 4x the
    layers cost at most 4.6x the calls, and the model still runs."""
    work = {}
    for n in (30, 120):
        text, weights = _model(n)
        program = compiler.compile_source(text, weights=weights)
        make = vm.StaticRuntime if backend == "static" else vm.Interpreter
        work[n] = _calls(lambda program=program, weights=weights, make=make: make(program, weights))
        x = np.ones((2, 8), np.float32)
        assert make(program, weights)(x).shape == (2, 8)
    assert work[120] <= 4.6 * work[30], f"{work[120]} calls for 120 layers against {work[30]} for 30: not linear"
