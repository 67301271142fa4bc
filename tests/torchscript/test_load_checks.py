"""A ``.pt`` is checked as ``torch.jit.load`` checks it: a function whose body does not
produce its declared return type is refused with its source line (both refuse the file)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from compiler.diagnostics import CompileError
from compiler.torchscript import compile_archive

torch = pytest.importorskip("torch")


class _Add(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + 1


def _edited(tmp_path: Path, old: bytes, new: bytes) -> Path:
    good, bad = tmp_path / "good.pt", tmp_path / "bad.pt"
    torch.jit.save(torch.jit.script(_Add()), str(good))
    with zipfile.ZipFile(good) as zin, zipfile.ZipFile(bad, "w") as zout:
        for item in zin.infolist():
            data = zin.read(item.filename)
            if item.filename.endswith(".py") and b"def forward" in data:
                assert old in data
                data = data.replace(old, new)
            zout.writestr(item, data)
    return bad


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (b"return torch.add(x, 1)", b"y = torch.add(x, 1)", "declared to return Tensor but does not return"),
        (b"return torch.add(x, 1)", b"y = torch.add(x, 1)\n    return None", "annotated as having type Tensor but"),
    ],
)
def test_a_body_that_does_not_produce_its_return_type_is_refused(
    tmp_path: Path, old: bytes, new: bytes, message: str
) -> None:
    bad = _edited(tmp_path, old, new)
    with pytest.raises(RuntimeError):
        torch.jit.load(str(bad))
    with pytest.raises(CompileError, match=message) as err:
        compile_archive(bad)
    assert err.value.span is not None and err.value.span.line > 0
    assert "torch.add(x, 1)" in str(err.value) or "return None" in str(err.value)  # the source line


def test_the_unedited_archive_loads(tmp_path: Path) -> None:
    good = _edited(tmp_path, b"x", b"x")
    program, own = compile_archive(good)
    assert program.output_types and isinstance(own, dict)
