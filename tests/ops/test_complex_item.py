"""A complex one-element tensor converted to int or float, against TorchScript.

PyTorch's checked conversion takes the real part when the imaginary part is 0 and raises
"value cannot be converted to type int64_t/double without overflow" otherwise; Python's
``int(complex)`` would raise a TypeError in both cases.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from tests.support.prim_torch import Scripted

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")

torch = pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch==2.13.0)")

SOURCES = {
    "int": "def f(a: torch.Tensor):\n    return int(a)",
    "float": "def f(a: torch.Tensor):\n    return float(a)",
}
VALUES = [3 + 0j, -2.5 + 0j, 1.5 + 2j, 0 - 1j]


def _outcome(fn: Callable[..., object], *args: object) -> tuple[str, object]:
    try:
        return "ok", fn(*args)
    except RuntimeError as e:
        return "error", str(e).strip().splitlines()[-1].removeprefix("RuntimeError: ")


@pytest.mark.parametrize("target", sorted(SOURCES))
@pytest.mark.parametrize("value", VALUES, ids=str)
@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_to_scalar_matches_torchscript(target: str, value: complex, dtype: type) -> None:
    """``int(t)``/``float(t)`` of a complex tensor: the real part (same value and Python type)
    when the imaginary part is 0, else the same RuntimeError message as PyTorch."""
    fn = Scripted(SOURCES[target])
    a = np.array(value, dtype=dtype)
    theirs, ours = _outcome(fn.theirs, a), _outcome(fn.ours, a)
    assert theirs == ours and type(theirs[1]) is type(ours[1]), f"{target}({value}): torch {theirs}, irvm {ours}"
