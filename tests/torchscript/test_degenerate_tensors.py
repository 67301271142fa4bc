"""Zero-size tensors in an archive (issue #40): refused where torch refuses them, in
torch's words, and never an internal error on the way.

The campaign's reproducer: a convolution weight of size (4, 1, 3, 0) in front of a
BatchNorm.  ``fold_batch_norm`` digested the folded weight with ``memoryview.cast``, which
refuses zero strides: exit 70, "internal error".  torch loads the file and refuses it at
run, "kernel size should be greater than zero"; so does irvm now, in both backends.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import vm
from compiler.diagnostics import RunError
from vm.binding.folded import digest
from vm.ops.nn.conv import conv_nd, conv_transpose_nd


class _ConvBN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(1, 4, 3)
        self.bn = torch.nn.BatchNorm2d(4)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.conv(x))


@pytest.fixture(scope="module")
def empty_kernel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    model = _ConvBN().eval()
    model.conv.weight = torch.nn.Parameter(torch.empty(4, 1, 3, 0))
    path = tmp_path_factory.mktemp("degenerate") / "empty_kernel.pt"
    torch.jit.save(torch.jit.script(model), str(path))
    return path


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_an_empty_conv_kernel_is_refused_at_run_as_torch_refuses_it(empty_kernel: Path, backend: str) -> None:
    x = np.ones((1, 1, 8, 8), np.float32)
    with pytest.raises(RuntimeError, match="kernel size should be greater than zero, but got kernel_height: 3 kernel_width: 0"):
        torch.jit.load(str(empty_kernel))(torch.from_numpy(x))
    model = vm.load(empty_kernel, backend=backend)  # loads, folds and digests, as torch loads
    with pytest.raises(RunError, match="aten::conv2d.*\n.*kernel size should be greater than zero, but got kernel_height: 3 kernel_width: 0"):
        model(x)


@pytest.mark.parametrize(
    ("x", "w", "conv"),
    [
        ((1, 1, 8), (4, 1, 0), F.conv1d),
        ((1, 1, 8, 8), (4, 1, 0, 3), F.conv2d),
        ((1, 1, 8, 8, 8), (4, 1, 3, 0, 2), F.conv3d),
        ((1, 1, 8, 8), (1, 4, 0, 3), F.conv_transpose2d),
    ],
    ids=["conv1d", "conv2d", "conv3d", "conv_transpose2d"],
)
def test_every_convolution_refuses_an_empty_kernel_in_torchs_words(x, w, conv) -> None:
    xs, ws = np.ones(x, np.float32), np.ones(w, np.float32)
    with pytest.raises(RuntimeError) as torch_error:
        conv(torch.from_numpy(xs), torch.from_numpy(ws))
    expected = str(torch_error.value).splitlines()[0]
    nsp = len(w) - 2
    with pytest.raises(ValueError) as ours:
        if conv is F.conv_transpose2d:
            conv_transpose_nd(xs, ws, None, 1, 0, 0, 1, 1)
        else:
            conv_nd(xs, ws, None, (1,) * nsp, (0,) * nsp, (1,) * nsp, 1)
    assert str(ours.value) == expected


@pytest.mark.parametrize("shape", [(0,), (4, 1, 3, 0), (0, 5), ()])
def test_the_digest_of_folded_weights_takes_any_shape(shape: tuple[int, ...]) -> None:
    """Zero-size arrays digest (by dtype and shape) and differ from each other; non-empty
    ones keep the digest of their bytes (the one stored .irbc files hold)."""
    a = np.zeros(shape, np.float32)
    assert digest(a) != digest(np.zeros(shape, np.float64))
    if a.size == 0:
        assert digest(a) != digest(np.zeros((0, *shape[1:], 1), np.float32))
    b = np.arange(6, dtype=np.float32)[::2]
    old = hashlib.blake2b(f"{b.dtype.str}{b.shape}".encode() + b.tobytes(), digest_size=16).hexdigest()
    assert digest(b) == old
