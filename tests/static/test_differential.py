"""The static runtime against the reference evaluator, under every option combination.

For each random program (``tests/support/strategies.py``) and each combination of out
variants on/off, managed outputs on/off, fusion on/off and planner, three runs A, B, A
(two input sets) must equal the reference, leave the inputs untouched, and never
overwrite the outputs an earlier run returned.  The same protocol runs over every dump in
``tests/data/corpus`` (with a shape change where the program allows one).
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tests.support.paths import DATA
from tests.support.reference import run_reference, same_value
from tests.support.strategies import graphs, input_strategy
from vm import StaticModule, StaticRuntime
from vm.static import StaticOptions

# A covering array: every pair of values of (out variants, managed outputs, planner, fusion)
# appears in some set (managed outputs need out variants; without them the planner is idle).
# The exact load-time folds (settings, in-place epilogues) are on in half of the sets and
# off in the other half; the BatchNorm and transposed-weight folds round (new weights, another
# BLAS summation order), so they are off here (test_fold_*.py cover them).
OPTION_SETS = [
    StaticOptions(
        enable_out_variant=out,
        manage_output_tensors=managed,
        planner=planner,
        fusion=fusion,
        min_managed_bytes=0,
        fold_batch_norm=False,
        fold_transposed_weights=False,
        fold_attributes=folds,
        fold_epilogues=folds,
    )
    for out, managed, planner, fusion, folds in (
        (False, False, "standard", True, True),
        (False, False, "standard", False, False),
        (True, False, "standard", True, False),
        (True, False, "precomputed", False, True),
        (True, True, "standard", False, True),
        (True, True, "precomputed", True, False),
    )
]


SMALL = StaticOptions(min_managed_bytes=0, fold_batch_norm=False, fold_transposed_weights=False)


def optimized(module: Any, fusion: bool) -> Any:
    from compiler.pipeline import optimize

    return optimize(module, fusion=fusion)[0]


def outcome(fn: Any, args: list[Any]) -> tuple[str, Any]:
    """("ok", value) or ("error", exception class name) — a raise must match a raise."""
    try:
        return "ok", fn(*args)
    except Exception as err:  # noqa: BLE001
        return "error", type(err).__name__


def check_protocol(
    static: StaticRuntime, reference: Any, run_a: list[Any], run_b: list[Any]
) -> None:
    """Runs A, B, A: equal to the reference; inputs changed only as the reference changes
    them (a graph may mutate its inputs in place, as in TorchScript); outputs returned by
    an earlier run never overwritten by a later one."""
    results = []
    for args in (run_a, run_b, run_a):
        ref_args, static_args = copy.deepcopy(args), copy.deepcopy(args)
        expected = reference(ref_args)
        status, value = outcome(static, static_args)
        assert same_value(static_args, ref_args), "the inputs were changed differently"
        if expected[0] == "error":
            assert status == "error", (
                f"reference raised {expected[1]}, static returned {value!r}"
            )
            assert value == "RunError"
            continue
        assert status == "ok", f"static raised {value}"
        assert same_value(value, expected[1]), (
            f"static {value!r} != reference {expected[1]!r}"
        )
        results.append((value, copy.deepcopy(value)))
    for returned, snapshot in results:
        assert same_value(returned, snapshot), (
            "a later run overwrote an earlier run's output"
        )


@given(graphs(), st.data(), st.sampled_from(OPTION_SETS))
def test_random_programs_match_the_reference_under_every_option_set(
    drawn: Any, data: st.DataObject, options: StaticOptions
) -> None:
    """Each example draws one option set (200 examples cover each set ~30 times), and also
    runs the program as drawn, calls not inlined, to exercise prim::CallFunction."""
    module, inputs_a = drawn
    inputs_b = data.draw(input_strategy(module.main))

    def reference(args: Any) -> Any:
        return outcome(lambda *a: run_reference(module, a), args)

    check_protocol(
        StaticRuntime(StaticModule(module, options=SMALL)),
        reference,
        inputs_a,
        inputs_b,
    )
    program = optimized(module, options.fusion)
    check_protocol(
        StaticRuntime(StaticModule(program, options=options)),
        reference,
        inputs_a,
        inputs_b,
    )


# ---------------------------------------------------------------------------------------
# the corpus of real dumps

DUMPS = [
    p
    for d in ("corpus", "dumps", "nn_models")
    for p in sorted((DATA / d).glob("*.ir"))
]


def _load_case(path: Path) -> tuple[str, list[Any] | None, Any]:
    from vm.files.npz import load_inputs, read_npz

    text = path.read_text()
    inputs_file = path.with_suffix(".inputs.npz")
    weights_file = path.with_suffix(".weights.npz")
    weights = read_npz(weights_file) if weights_file.exists() else None
    if not inputs_file.exists():
        return text, None, weights
    import compiler

    return (
        text,
        load_inputs(read_npz(inputs_file), compiler.parse(text, str(path))),
        weights,
    )


def _other_shape(inputs: list[Any]) -> list[Any]:
    """Inputs B: every tensor grown by one along its first axis (same values repeated)."""
    return [
        np.concatenate([x, x[:1]])
        if isinstance(x, np.ndarray) and x.ndim and x.shape[0]
        else x
        for x in inputs
    ]


@pytest.mark.parametrize("path", DUMPS, ids=[p.stem for p in DUMPS])
def test_dumps_match_the_interpreter_under_every_option_set(path: Path) -> None:
    """Every dump runs on the static runtime exactly as on the interpreter."""
    import compiler
    from compiler.diagnostics import CompileError
    from vm.interpreter.machine import Interpreter

    text, inputs, weights = _load_case(path)
    if inputs is None:
        pytest.skip(f"{path.name} has no inputs file")
    # Both fusion settings; a large model (the pipeline takes seconds on it) with fusion only.
    for fusion in (True, False) if text.count("\n") < 600 else (True,):
        try:
            program = compiler.compile_source(text, str(path), fusion=fusion)
        except (
            CompileError
        ):  # the operator library cannot run it: neither can the runtime
            with pytest.raises(CompileError):
                StaticModule(text, weights, StaticOptions(fusion=fusion))
            return
        interp = Interpreter(program, weights)

        def reference(args: Any, interp: Interpreter = interp) -> Any:
            return outcome(interp, args)

        run_b = _other_shape(inputs)
        if reference(run_b)[0] == "error":
            run_b = copy.deepcopy(inputs)  # the program fixes its shapes: B repeats A's
        for options in OPTION_SETS:
            if options.fusion == fusion:
                check_protocol(
                    StaticRuntime(program, weights, options),
                    reference,
                    list(inputs),
                    run_b,
                )
