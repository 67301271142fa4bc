"""One binding session for both backends (``vm.binding.session``, issue #37): the steps run
in one order, each backend's constructor runs them once, and the two backends refuse the
same weights with the same message."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import compiler
import vm.interpreter.machine
import vm.static.module
from tests.support.paths import EXAMPLES
from vm.binding import session
from vm.binding.strict import Reads
from vm.core.errors import RunError

CNN = (EXAMPLES / "cnn.ir").read_text()


class _Recorder:
    """A Bindable that records the steps the session asks of it."""

    def __init__(self, folded_from: dict[str, str] | None = None) -> None:
        self.steps: list[str] = []
        self.folded_from = folded_from or {}
        self.folded_tensors = {"folded.0": np.ones(2, np.float32)}

    def reads(self) -> Reads:
        self.steps.append("strict keys")
        reads = Reads()
        reads.required.add("w")
        return reads

    def bind_self(self, weights: Any, shared: Any) -> Any:
        self.steps.append("%self")
        return shared

    def bind_constants(self, flat: Any) -> Any:
        self.steps.append("constants")
        assert set(flat) == {"w", "folded.0"}  # the folds' tensors beside the weights given
        return "constants"

    def guard(self, self_object: Any, flat: Any) -> Any:
        self.steps.append("dtype guard")
        return "guard"


def test_the_session_runs_its_steps_in_one_order() -> None:
    """Strict keys, then the folded check (a weight other than the folded one is refused
    before %self is bound), %self, constants, dtype guard."""
    program = _Recorder()
    bound = session.bind(program, {"w": np.zeros(2, np.float32)}, shared="self")
    assert program.steps == ["strict keys", "%self", "constants", "dtype guard"]
    assert (bound.self_object, bound.constants, bound.dtype_guard) == ("self", "constants", "guard")
    folded = _Recorder({"w": "a digest of other values"})
    with pytest.raises(RunError, match="is not the one this program was compiled with"):
        session.bind(folded, {"w": np.zeros(2, np.float32)})
    assert folded.steps == ["strict keys"]
    loose = _Recorder()
    with pytest.raises(RunError, match="unexpected key"):
        session.bind(loose, {"w": np.zeros(2, np.float32), "v": np.zeros(1)})
    session.bind(_Recorder(), {"w": np.zeros(2, np.float32)}, strict=False)


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_each_backend_binds_once_through_the_session(backend: str, monkeypatch: pytest.MonkeyPatch) -> None:
    program = compiler.compile_source(CNN)
    weights = dict(np.load(EXAMPLES / "cnn.weights.npz"))
    where = vm.interpreter.machine if backend == "interp" else vm.static.module
    calls: list[Any] = []

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(args[0])
        return session.bind(*args, **kwargs)

    monkeypatch.setattr(where, "bind", counted)
    if backend == "interp":
        vm.interpreter.machine.Interpreter(program, weights)
    else:
        vm.static.module.StaticModule(program, weights)
    assert len(calls) == 1


def _refusal(make: Any) -> str:
    with pytest.raises(RunError) as info:
        make()
    return str(info.value)


@pytest.mark.parametrize("case", ["misspelled", "folded"])
def test_both_backends_refuse_the_same_weights_with_the_same_message(case: str) -> None:
    """A misspelled key (strict keys); other values for a weight the program folded in (it
    stores the linear's weight transposed: the folded check)."""
    weights = dict(np.load(EXAMPLES / "cnn.weights.npz"))
    program = compiler.compile_source(CNN, weights=weights if case == "folded" else None)
    if case == "misspelled":
        weights["fc.wieght"] = weights.pop("fc.weight")
    else:
        assert "fc.weight" in program.folded_from
        weights["fc.weight"] = weights["fc.weight"] * 2
    interp = _refusal(lambda: vm.interpreter.machine.Interpreter(program, weights))
    static = _refusal(lambda: vm.static.module.StaticModule(program, weights))
    assert interp == static
    assert ("fc.wieght" if case == "misspelled" else "fc.weight") in interp


def test_engines_are_entered_only_when_the_callers_differ() -> None:
    """Step 6: a runtime with random operators runs on its own generator, one with a quantized
    setting on that arithmetic; one with neither has nothing to enter (``idle``)."""
    from vm.ops.quantized.arith import current_setting
    from vm.ops.random import generator, using_generator

    assert session.Engines(0, None, None, draws=False).idle
    engines = session.Engines(7, "qnnpack", None, draws=True)
    assert not engines.idle and not engines.current()
    with engines.entered():
        assert engines.current() and generator() is engines.generator
        assert current_setting() == engines.quantized
        with using_generator(np.random.default_rng(1)):
            assert not engines.current()
    assert not engines.current()
