"""Quantization parameters of an archive's tensors, against torch.jit.load (issue #40).

The campaign's reproducers: per-channel scales of nan, 0, inf and -1, zero points of 2048
and 2^63-1, edited into a saved archive.  torch loads them all; it computes with any
scale (dequantize is ``(q - zero_point) * scale``), and refuses every use of a zero point
outside the dtype's range ("zero_point 2048 is above upper bound").  irvm computes torch's
numbers with the scales, and refuses the zero points when the archive is read, naming the
member, the tensor's shape and the dtype's range.
"""

from __future__ import annotations

import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch

import vm
from compiler.torchscript.unpickle import ArchiveError

SCALES = np.array([0.5, 0.25, 0.125])
ZERO_POINTS = np.array([1, 2, 3], np.int64)


class _Dequantized(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            q = torch.quantize_per_channel(torch.ones(3, 2), torch.from_numpy(SCALES), torch.from_numpy(ZERO_POINTS), 0, torch.qint8)
        self.register_buffer("q", q)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.dequantize(self.q) + x


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("qparams") / "q.pt"
    torch.jit.save(torch.jit.script(_Dequantized()), str(path))
    return path


def _edited(saved: Path, out: Path, old: np.ndarray, new: np.ndarray) -> Path:
    """``saved`` with the storage holding ``old`` replaced by ``new``'s bytes."""
    with zipfile.ZipFile(saved) as zin, zipfile.ZipFile(out, "w") as zout:
        found = False
        for item in zin.infolist():
            data = zin.read(item.filename)
            if data == old.tobytes():
                data, found = new.tobytes(), True
            zout.writestr(item, data)
    assert found, "the storage to edit is in the archive"
    return out


@pytest.mark.parametrize("scale", [float("nan"), 0.0, float("inf"), -1.0])
def test_odd_scales_compute_what_torch_computes(saved: Path, tmp_path: Path, scale: float) -> None:
    path = _edited(saved, tmp_path / "s.pt", SCALES, np.array([scale, *SCALES[1:]]))
    x = np.zeros((3, 2), np.float32)
    expected = torch.jit.load(str(path))(torch.from_numpy(x)).numpy()
    np.testing.assert_array_equal(vm.load(path)(x), expected)


@pytest.mark.parametrize("zero_point", [2048, 2**63 - 1, -129])
def test_zero_points_outside_the_dtype_are_refused_at_read(saved: Path, tmp_path: Path, zero_point: int) -> None:
    path = _edited(saved, tmp_path / "z.pt", ZERO_POINTS, np.array([zero_point, 2, 3], np.int64))
    model = torch.jit.load(str(path))
    with pytest.raises(RuntimeError, match=f"zero_point {zero_point} is (above upper|below lower) bound"):
        model(torch.zeros(3, 2))
    with pytest.raises(ArchiveError, match=f"data.pkl: a quantized tensor of shape \\[3, 2\\] is malformed: zero point "
                                           f"{zero_point} \\(channel 0 of axis 0\\) is outside torch.qint8's range \\[-128, 127\\]"):
        vm.load(path)


def test_the_edge_of_the_range_is_read(saved: Path, tmp_path: Path) -> None:
    """127 is qint8's largest zero point: read, and computed as torch computes it."""
    path = _edited(saved, tmp_path / "z.pt", ZERO_POINTS, np.array([127, -128, 3], np.int64))
    x = np.zeros((3, 2), np.float32)
    np.testing.assert_array_equal(vm.load(path)(x), torch.jit.load(str(path))(torch.from_numpy(x)).numpy())
