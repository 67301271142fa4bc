"""What torch's frontend refuses, irvm refuses at the archive's line (issue #40).

Each case edits a saved archive; ``torch.jit.load`` (and the call) must refuse it, and
irvm's reading must refuse it with a clean error at the source line, never run it:

- a ``-> Tensor`` method returning ``1``;
- ``self.count = 1`` where ``count : Tensor``;
- an attribute declared twice with two types;
- an archive without ``constants.pkl``;
- ``--1`` (and ``-(-1)``) in the source, which torch's frontend cannot read (``--1.5`` it
  reads, as 0.0, and so does irvm).
"""

from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

from compiler.diagnostics import IRError
from compiler.torchscript import compile_archive

_SAVE = """
import sys, torch

class _Counter(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.count = torch.zeros(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1

torch.jit.save(torch.jit.script(_Counter()), sys.argv[1])
"""


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Saved by another process: a class scripted here would be the one torch.jit.load
    finds by name, and the edited source would never be compiled."""
    folder = tmp_path_factory.mktemp("frontend")
    (folder / "save.py").write_text(_SAVE)
    path = folder / "good.pt"
    subprocess.run([sys.executable, str(folder / "save.py"), str(path)], check=True, capture_output=True)
    return path


def _edited(good: Path, out: Path, old: bytes = b"", new: bytes = b"", drop: str | None = None) -> Path:
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(out, "w") as zout:
        for item in zin.infolist():
            if drop is not None and item.filename.endswith(drop):
                continue
            data = zin.read(item.filename)
            if old and item.filename.endswith("code/__torch__.py"):
                assert old in data
                data = data.replace(old, new)
            zout.writestr(item, data)
    return out


RETURN = b"return torch.add(x, 1)"
CASES = [
    ("return 1", dict(old=RETURN, new=b"return 1"), "Return value was annotated as having type Tensor but is actually of type int",
     r"code/__torch__.py:9:5: function forward: return value was annotated as having type Tensor but is actually of type int"),
    ("tensor attribute set to 1", dict(old=RETURN, new=b"self.count = 1\n    " + RETURN), "Wrong type for attribute assignment",
     r"code/__torch__.py:9:5: wrong type for attribute assignment: count is declared Tensor, the value assigned is int"),
    ("attribute retyped", dict(old=b"  count : Tensor\n", new=b"  count : Tensor\n  count : int\n"), "count",
     r"code/__torch__.py:7:3: class __torch__._Counter declares attribute count twice, as Tensor and as int"),
    ("no constants.pkl", dict(drop="constants.pkl"), "constants.pkl", r"the archive has no constants.pkl"),
    ("--1", dict(old=RETURN, new=b"return torch.add(x, --1)"), "stoll",
     r"code/__torch__.py:9:25: `--1`: a negated negative integer literal"),
    ("-(-1)", dict(old=RETURN, new=b"return torch.add(x, -(-1))"), "stoll", r"`--1`: a negated negative integer literal"),
]


@pytest.mark.parametrize(("edit", "torch_says", "irvm_says"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_refused_as_torch_refuses(good: Path, tmp_path: Path, edit: dict, torch_says: str, irvm_says: str) -> None:
    bad = _edited(good, tmp_path / "bad.pt", **edit)
    with pytest.raises((RuntimeError, ValueError), match=torch_says):
        torch.jit.load(str(bad))(torch.ones(2))
    with pytest.raises(IRError, match=irvm_says):
        compile_archive(bad)


def test_what_torch_reads_is_read(good: Path, tmp_path: Path) -> None:
    """``--1.5`` torch reads, as 0.0 (``strtod("--1.5")``), and so does irvm: torch's number."""
    path = _edited(good, tmp_path / "ok.pt", RETURN, b"return torch.add(x, --1.5)")
    import vm

    x = np.ones(2, np.float32)
    expected = torch.jit.load(str(path))(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(vm.load(path)(x), expected)
