"""``compiler.freeze``: a module optimized without its weights, specialized for them later,
is the module ``compile_source(weights=)`` makes (the static runtime relies on it when it
is built with weights; tests/static/test_fold_attributes.py runs it there)."""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

import pytest

import compiler
import vm.ir.graph
from compiler.verify import verify
from tests.support.filecheck_runner import Case, golden_cases, strip_checks
from tests.support.paths import TOOLS
from vm.ir.printer import print_module

CASES = golden_cases(Path(__file__).parent.parent / "static" / "freeze")


def _weights(text: str) -> dict:
    return json.loads(text.splitlines()[0].split(":", 1)[1])


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_freeze_prints_as_compiling_with_the_weights(case: Case) -> None:
    """On the settings goldens, freezing the program compiled without weights prints the
    very module compiled with them, and records the same attribute values."""
    text, weights = strip_checks(case.text), _weights(case.text)
    frozen = compiler.freeze(compiler.compile_source(text, "a.ir").module, weights)
    verify(frozen)
    direct = compiler.compile_source(text, "a.ir", weights=weights).module
    assert print_module(frozen) == print_module(direct)
    assert frozen.attributes == direct.attributes


def test_freeze_without_any_setting_in_the_weights_is_the_identity() -> None:
    """Weights holding none of the settings the graph reads (only tensors) fold nothing:
    ``freeze`` returns its argument."""
    text = strip_checks(CASES[0].text)
    module = compiler.compile_source(text, "a.ir").module
    assert compiler.freeze(module, {"w": 1.0}) is module


def test_specialize_on_a_scripted_shufflenet_unit_matches_compiling_with_the_weights() -> None:
    """A scripted torchvision ShuffleNetV2 unit: the module specialized after compiling
    (``compiler.specialize``: settings, then BatchNorms folded into their convolutions...)
    has the node kinds, node count, recorded settings and folded tensors of the module
    compiled with the weights (value names and constant order may differ); ``freeze``,
    the settings alone, leaves the BatchNorms."""
    pytest.importorskip("torch")
    import types

    import torch

    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("x"))
    from torchvision.models.shufflenetv2 import InvertedResidual

    sys.path.insert(0, str(TOOLS))
    import export_torch

    model = torch.nn.Sequential(InvertedResidual(8, 16, 2), InvertedResidual(16, 16, 1)).eval()
    exp = export_torch.export(model, "shuffle", (torch.randn(1, 8, 8, 8),))
    compiled = compiler.compile_source(exp.ir, "s.ir").module
    frozen = compiler.freeze(compiled, exp.weights)
    specialized = compiler.specialize(compiled, exp.weights)
    direct = compiler.compile_source(exp.ir, "s.ir", weights=exp.weights).module
    verify(specialized)

    def kinds(module: vm.ir.graph.Module) -> Counter[str]:
        return Counter(n.kind for n in module.main.walk())

    assert kinds(specialized) == kinds(direct) and "prim::If" not in kinds(specialized)
    assert specialized.attributes == direct.attributes == frozen.attributes
    assert len(specialized.folded_tensors) == len(direct.folded_tensors) > 0 and specialized.specialized
    assert "aten::batch_norm" in kinds(frozen) and "aten::batch_norm" not in kinds(direct)
