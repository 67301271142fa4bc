"""The static runtime's attribute fold (``StaticOptions.fold_attributes``): a program compiled
without its weights is specialized for the settings they hold when a module is built with
them (``compiler.freeze``), as ``compile_source(weights=)`` would have done.

Goldens in ``tests/static/freeze/fold_attributes/*.ir``: each case's first line is
``# WEIGHTS: <json>`` (its settings by dotted path), the FileCheck directives pin the IR
the static module runs.  Each case also runs with the fold on and off and on the
interpreter: the results are the same (the fold removes only what the settings decide).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import compiler
from compiler import types as T
from compiler.verify import verify
from tests.support.filecheck_runner import Case, golden_cases, has_checks, strip_checks
from tests.support.paths import TOOLS
from vm import StaticModule, StaticRuntime
from vm.interpreter.machine import Interpreter
from vm.ir.printer import print_module
from vm.static import StaticOptions

CASES = golden_cases(Path(__file__).parent / "freeze")
OFF = StaticOptions(fold_attributes=False)


def _case(case: Case) -> tuple[Any, dict[str, Any], list[np.ndarray]]:
    """(program compiled without weights, the case's weights, seeded inputs)."""
    header = case.text.splitlines()[0]
    assert header.startswith("# WEIGHTS:"), f"{case.path}: a case opens with its weights"
    weights = json.loads(header.split(":", 1)[1])
    program = compiler.compile_source(strip_checks(case.text), case.path.name)
    rng = np.random.default_rng(case.index)
    args = [
        rng.standard_normal(v.type.sizes).astype(np.float32)
        for v in program.module.main.inputs
        if isinstance(v.type, T.TensorType) and v.type.sizes is not None
    ]
    return program, weights, args


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_golden(case: Case) -> None:
    """The IR the static module runs once built with the weights: settings folded, the
    branches they decide gone (FileCheck)."""
    assert has_checks(case.text), "a golden case without CHECK lines cannot fail"
    program, weights, _ = _case(case)
    module = StaticModule(program, weights)
    verify(module.ir)
    case.check(print_module(module.ir))


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_fold_on_and_off_and_the_interpreter_agree(case: Case) -> None:
    """With the fold on and off the static runtime gives the interpreter's result, exactly."""
    program, weights, args = _case(case)
    want = Interpreter(program, weights)(*args)
    on = StaticRuntime(program, weights)(*args)
    off = StaticRuntime(program, weights, options=OFF)(*args)
    np.testing.assert_array_equal(on, want)
    np.testing.assert_array_equal(off, want)


def test_off_keeps_the_branches() -> None:
    """``fold_attributes=False`` runs the program's own IR: the settings are still read."""
    program, weights, _ = _case(CASES[0])
    kinds = {n.kind for n in StaticModule(program, weights, OFF).ir.main.walk()}
    assert {"prim::If", "prim::GetAttr"} <= kinds


def test_a_program_compiled_with_its_weights_is_not_folded_again() -> None:
    """A program whose settings were folded by the compiler (``Module.attributes``) is run
    as it is: the module's IR is the program's."""
    case = CASES[0]
    _, weights, _ = _case(case)
    program = compiler.compile_source(strip_checks(case.text), case.path.name, weights=weights)
    assert print_module(StaticModule(program, weights).ir) == print_module(program.module)


def test_shufflenet_block_matches_torch_with_the_fold_on_and_off() -> None:
    """torchvision's ShuffleNetV2 unit (a stride decides its branches, channel_shuffle reads
    sizes), scripted: the static runtime matches torch with the fold on and off, and with
    it on no ``prim::If`` is left to run."""
    torch = pytest.importorskip("torch")
    import types

    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("x"))
    from torchvision.models.shufflenetv2 import InvertedResidual

    sys.path.insert(0, str(TOOLS))
    import export_torch

    torch.manual_seed(0)
    model = torch.nn.Sequential(InvertedResidual(8, 16, 2), InvertedResidual(16, 16, 1)).eval()
    x = torch.randn(2, 8, 12, 12)
    exp = export_torch.export(model, "shuffle", (x,))
    program = compiler.compile_source(exp.ir, "shuffle.ir")
    with torch.no_grad():
        want = model(x).numpy()
    for options in (StaticOptions(), OFF):
        runtime = StaticRuntime(program, exp.weights, options=options)
        np.testing.assert_allclose(runtime(x.numpy()), want, rtol=1e-4, atol=1e-5)
    kinds = {n.kind for n in StaticModule(program, exp.weights).ir.main.walk()}
    assert "prim::If" not in kinds and "prim::If" in {n.kind for n in program.module.main.walk()}


def test_every_fold_switch_is_listed() -> None:
    """Every ``fold_*`` switch of StaticOptions is in ``LOAD_TIME_FOLDS`` (the list the zoo
    test turns off), and every listed name is a switch that defaults to on."""
    import attrs

    from vm.static.module_ir import LOAD_TIME_FOLDS

    switches = {f.name for f in attrs.fields(StaticOptions) if f.name.startswith("fold_")}
    assert switches == set(LOAD_TIME_FOLDS)
    assert all(getattr(StaticOptions(), name) is True for name in LOAD_TIME_FOLDS)


FUSABLE = """graph(%self : __torch__.Net, %x : Float(64, 64)):
  %one : int = prim::Constant[value=1]()
  %two : float = prim::Constant[value=2.]()
  %t : bool = prim::GetAttr[name="training"](%self)
  %y : Tensor = prim::If(%t)
    block0():
      -> (%x)
    block1():
      %a : Tensor = aten::mul(%x, %two)
      -> (%a)
  %b : Tensor = aten::add(%y, %x, %one)
  %c : Tensor = aten::tanh(%b)
  %d : Tensor = aten::mul(%c, %y)
  return (%d)
"""


@pytest.mark.parametrize("fusion", [True, False])
def test_the_fold_groups_again_only_a_program_compiled_with_fusion(fusion: bool) -> None:
    """After the settings fold, elementwise chains are grouped again (one fused kernel) when
    the program was compiled with fusion, and a program compiled without keeps none."""
    program = compiler.compile_source(FUSABLE, "fusable.ir", fusion=fusion)
    module = StaticModule(program, {"training": False})
    assert "prim::If" not in {n.kind for n in module.ir.main.walk()}
    assert len(module.groups) == (1 if fusion else 0)
    x = np.linspace(-1, 1, 64 * 64, dtype=np.float32).reshape(64, 64)
    np.testing.assert_array_equal(StaticRuntime(module)(x), Interpreter(program, {"training": False})(x))
