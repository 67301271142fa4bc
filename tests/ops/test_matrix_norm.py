"""Matrix norms (vm/ops/matrix_norm.py) against torch: ``linalg_matrix_norm`` with numeric and
string orders, ``linalg_norm`` choosing vector or matrix as torch does, and the legacy
``frobenius_norm`` / ``nuclear_norm``; then ``torch.norm(x, dim=1, keepdim=True)`` in a
scripted model, whose inlined library code must fold its ``p="fro"`` branch before operators
are resolved (compiler/torchscript/fold.py, compiler/passes/propagate_constants.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.against_torch import assert_matches
from tests.support.paths import ROOT, TOOLS
from tests.support.tensor_ops import check_against_torch

MATRIX_ORDS = [1, -1, 2, -2, float("inf"), float("-inf")]


@st.composite
def _matrices(draw: st.DrawFn) -> tuple[np.ndarray, list[int], bool]:
    ndim = draw(st.integers(2, 4))
    shape = [draw(st.integers(1, 4)) for _ in range(ndim)]
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    x = rng.standard_normal(shape).astype(draw(st.sampled_from([np.float32, np.float64])))
    d0 = draw(st.integers(-ndim, ndim - 1))
    d1 = draw(st.integers(-ndim, ndim - 1).filter(lambda d: d % ndim != d0 % ndim))
    return x, [d0, d1], draw(st.booleans())


def _close(ours: object, theirs: object) -> None:
    assert_matches(ours, theirs, rtol=1e-4, atol=1e-5)


def _compared(name: str, strategy: st.SearchStrategy[tuple[object, ...]]) -> None:
    """Every example of ``strategy`` through ``check_against_torch``; some must compare (not
    raise on both sides), or the test would test nothing."""
    compared: list[bool] = []

    @settings(max_examples=60)
    @given(strategy)
    def check(args: tuple[object, ...]) -> None:
        compared.append(check_against_torch(name, args, _close) is not None)

    check()
    assert sum(compared) > len(compared) // 2, f"{name}: most examples raised on both sides"


def test_matrix_norm_numeric_orders_match_torch() -> None:
    _compared("aten::linalg_matrix_norm", st.tuples(_matrices(), st.sampled_from(MATRIX_ORDS)).map(
        lambda c: (c[0][0], c[1], c[0][1], c[0][2], None)))


def test_matrix_norm_string_orders_match_torch() -> None:
    _compared("aten::linalg_matrix_norm.str_ord", st.tuples(_matrices(), st.sampled_from(["fro", "nuc"])).map(
        lambda c: (c[0][0], c[1], c[0][1], c[0][2], None)))


def _norm_args(case: tuple[np.ndarray, list[int], bool], ord: float | None, how: int) -> tuple[object, ...]:
    x, dim, keepdim = case
    dims = [None, dim[:1], dim][how]
    if ord == 0.5 and dims is not None and len(dims) == 2:
        ord = 1  # 0.5 is no matrix order: torch refuses it, and so does irvm (tested below)
    return x, ord, dims, keepdim, None


def test_linalg_norm_picks_vector_or_matrix_as_torch() -> None:
    orders = st.sampled_from([None, 1, 2, float("inf"), 0.5])
    _compared("aten::linalg_norm", st.tuples(_matrices(), orders, st.integers(0, 2)).map(lambda c: _norm_args(*c)))


def test_norms_refuse_what_torch_refuses() -> None:
    x = np.ones((3, 3), np.float32)
    for args in [(x, 0.5, [0, 1], False, None), (np.ones(3, np.float32), 1, [0, 0], False, None),
                 (np.ones((2, 2), np.int64), 1, [0, 1], False, None)]:
        assert check_against_torch("aten::linalg_matrix_norm", args) is None  # both raised
    assert check_against_torch("aten::linalg_norm", (np.ones((2, 2, 2), np.float32), 2, None, False, None)) is None


@pytest.mark.parametrize("name", ["aten::frobenius_norm.dim", "aten::nuclear_norm.dim"])
def test_legacy_norms_match_torch(name: str) -> None:
    rng = np.random.default_rng(0)
    x = rng.standard_normal((2, 3, 4)).astype(np.float32)
    for keepdim in (False, True):
        check_against_torch(name, (x, [2, 1], keepdim), _close)
    check_against_torch("aten::nuclear_norm", (x[0], True), _close)


# -- torch.norm's library branch, folded -------------------------------------------------

SPEAKER = '''
import torch
from torch import nn


class SpeakerEncoder(nn.Module):
    """A 3-layer LSTM speaker embedding, normalized by torch.norm (GE2E's d-vector)."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(40, 64, 3, batch_first=True)
        self.linear = nn.Linear(64, 32)
        self.relu = nn.ReLU()

    def forward(self, x):
        out, (h, c) = self.lstm(x)
        e = self.relu(self.linear(h[-1]))
        return e / torch.norm(e, dim=1, keepdim=True)


def example_inputs():
    return (torch.randn(2, 7, 40),)
'''


def _irvm(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "vm.cli", *args], capture_output=True, text=True, timeout=600,
                          cwd=ROOT, env=env)


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_a_scripted_speaker_encoder_normalized_by_torch_norm_runs(backend: str, tmp_path: Path) -> None:
    """From the ``torch.jit.save`` archive and from the printed graph (tools/export_torch.py)."""
    torch = pytest.importorskip("torch")
    source = tmp_path / "speaker.py"
    source.write_text(SPEAKER)
    sys.path.insert(0, str(TOOLS))
    import export_torch

    module = export_torch.load_file(source)
    torch.manual_seed(0)
    eager = module.SpeakerEncoder().eval()
    x = torch.randn(2, 7, 40)
    with torch.no_grad():
        want = eager(x).numpy()
    torch.jit.script(eager).save(str(tmp_path / "speaker.pt"))
    np.savez(tmp_path / "in.npz", arg0=x.numpy())
    paths = export_torch.write(export_torch.export(eager, "SpeakerEncoder", (x,)), tmp_path / "ir", mark=True)
    runs = {
        "pt": ["run", str(tmp_path / "speaker.pt"), "--inputs", str(tmp_path / "in.npz")],
        "ir": ["run", str(paths["ir"]), "--weights", str(paths["weights"]), "--inputs", str(paths["inputs"])],
    }
    for kind, args in runs.items():
        out = tmp_path / f"out.{kind}.npz"
        done = _irvm(*args, "--backend", backend, "--output", str(out))
        assert done.returncode == 0, done.stderr[-2000:]
        with np.load(out) as data:
            got = data["out0"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5, err_msg=kind)
        np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, rtol=1e-5)


LIBRARY = '''
import torch
import torch.nn.functional as F
from torch import nn


class Library(nn.Module):
    """Library functions whose inlined code branches on their constant arguments."""

    def forward(self, x):
        y = F.interpolate(x, scale_factor=2.0, mode="bilinear", align_corners=False)
        z = F.pad(y, (1, 1, 2, 0), mode="reflect")
        w = F.pad(F.interpolate(z, size=(5, 7), mode="nearest"), [1, 2], value=0.5)
        return (F.normalize(w, dim=1), torch.norm(w, p=1, dim=1), torch.norm(w),
                torch.linalg.norm(w, dim=(2, 3)), torch.linalg.matrix_norm(w, ord="nuc"))
'''


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_library_functions_with_constant_arguments_run_from_an_archive(backend: str, tmp_path: Path) -> None:
    torch = pytest.importorskip("torch")
    source = tmp_path / "library.py"
    source.write_text(LIBRARY)
    sys.path.insert(0, str(TOOLS))
    import export_torch

    model = torch.jit.script(export_torch.load_file(source).Library())
    model.save(str(tmp_path / "library.pt"))
    x = torch.randn(1, 3, 4, 4)
    np.savez(tmp_path / "in.npz", arg0=x.numpy())
    done = _irvm("run", str(tmp_path / "library.pt"), "--inputs", str(tmp_path / "in.npz"), "--backend", backend,
                 "--output", str(tmp_path / "out.npz"))
    assert done.returncode == 0, done.stderr[-2000:]
    with np.load(tmp_path / "out.npz") as data:
        for i, want in enumerate(model(x)):
            np.testing.assert_allclose(data[f"out0.{i}"], want.numpy(), rtol=1e-4, atol=1e-5, err_msg=f"output {i}")
