"""A weight-bearing operator is named in its family module, not in tables elsewhere.

What the checks and weight passes need of a convolution or a linear layer (its dtype
rule, where it keeps its weight, the sizes its weight shares with its values, whether it
takes an epilogue or folds a BatchNorm) is declared on its registration and read through
``vm.ops.facts`` (issue #37), so adding such an operator touches its family module, its
test and the generated docs.  This test fails when a conv-like or linear operator name
reappears in a Python file of ``compiler/`` or ``vm/`` outside the files allowed below,
each allowed for a reason that is not a table of its facts.
"""

from __future__ import annotations

import re

import pytest

from tests.support.paths import ROOT

# torch.nn's module bodies as irvm writes them: IR text that calls the operator, as a model does
MODULE_BODIES = "compiler/known/layers.py"
# PyTorch's out= schemas, written by tools/gen_out_schemas.py from torch itself
OUT_SCHEMAS = "vm/ops/_out_schemas.py"

NAMES = {
    # aten::conv1d, aten::_convolution, aten::conv_transpose2d, quantized::conv2d, f"aten::conv{d}d"...
    "conv": (re.compile(r"\b(aten|quantized)::_?conv"), {"vm/ops/nn/conv.py", "vm/ops/quantized/layers.py"},
             {MODULE_BODIES, OUT_SCHEMAS}),
    "linear": (re.compile(r"\b(aten|quantized)::linear"), {"vm/ops/linalg.py", "vm/ops/quantized/layers.py"},
               {OUT_SCHEMAS}),
}


def _naming(pattern: re.Pattern[str]) -> set[str]:
    found = set()
    for package in ("compiler", "vm"):
        for path in (ROOT / package).rglob("*.py"):
            if pattern.search(path.read_text()):
                found.add(path.relative_to(ROOT).as_posix())
    return found


@pytest.mark.parametrize("family", sorted(NAMES))
def test_an_operator_is_named_only_in_its_family_and_the_allowed_files(family: str) -> None:
    pattern, families, allowed = NAMES[family]
    assert families <= _naming(pattern)  # the search sees the registrations themselves
    assert _naming(pattern) - families <= allowed


def test_a_new_table_is_found() -> None:
    """The pattern catches the forms the old tables used."""
    pattern = NAMES["conv"][0]
    for text in ('_CONVS = {"aten::conv1d": 3}', 'f"aten::conv{d}d"', '"aten::_convolution": (0, 1, 2)',
                 '"quantized::conv2d_relu"', '"aten::convolution"'):
        assert pattern.search(text), text
    assert not pattern.search("a convolution's weight") and not pattern.search("Conv2dPackedParamsBase")
