"""Strict weights against the model's own keys (vm/binding/strict.py, issue #35): a complete
state_dict is never refused because the optimized program does not read some of its keys.

Each model is exported by ``tools/export_torch.py`` (which records the module's keys in the
weights, ``__keys__``) and run by ``irvm run model.ir --weights model.weights.npz`` on both
backends, against torch's output; a misspelled, a missing and a foreign key are still refused,
each named with its closest key.
"""

from __future__ import annotations

import os
import subprocess
import sys
import types
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from tests.support.paths import ROOT, TOOLS
from vm.files.npz import flatten_outputs

sys.path.insert(0, str(TOOLS))

BACKENDS = ("interp", "static")


def _irvm(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "vm.cli", *args], capture_output=True, text=True, timeout=900,
                          cwd=ROOT, env=env)


def _export(model: nn.Module, args: tuple[torch.Tensor, ...], tmp: Path, *, trace: bool = False) -> dict[str, Path]:
    import export_torch

    exp = export_torch.export(model.eval(), "model", args, trace=trace)
    assert exp.error is None, exp.error
    paths = export_torch.write(exp, tmp, mark=True)
    assert exp.outputs is not None
    np.savez(tmp / "expected.npz", **flatten_outputs(exp.outputs))
    return paths


def _run_matches_torch(paths: dict[str, Path], tmp: Path, backend: str, atol: float = 1e-4) -> None:
    out = tmp / f"out.{backend}.npz"
    done = _irvm("run", str(paths["ir"]), "--weights", str(paths["weights"]), "--inputs", str(paths["inputs"]),
                 "--backend", backend, "--output", str(out), "--force")
    assert done.returncode == 0, done.stderr[-3000:]
    with np.load(out) as got, np.load(tmp / "expected.npz") as want:
        assert sorted(k for k in got.files if k != "__irvm__") == sorted(want.files)
        for key in want.files:
            if want[key].dtype.kind in "fc":
                np.testing.assert_allclose(got[key], want[key], rtol=1e-4, atol=atol, err_msg=key)
            else:
                np.testing.assert_array_equal(got[key], want[key], err_msg=key)


# -- models whose state_dict holds keys the optimized program does not read ----------------


class _Encoder(nn.Module):
    def __init__(self, embed: nn.Embedding) -> None:
        super().__init__()
        self.embed_tokens = embed
        self.proj = nn.Linear(8, 8)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.proj(self.embed_tokens(ids))


class TiedEncoder(nn.Module):
    """T5's shape: ``shared`` and ``encoder.embed_tokens`` are one Embedding, two state_dict
    keys; the encoder reads only the second."""

    def __init__(self) -> None:
        super().__init__()
        self.shared = nn.Embedding(20, 8)
        self.encoder = _Encoder(self.shared)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.encoder(ids)


class Mixer(nn.Module):
    """An MLP-mixer's stem (timm's ``PatchEmbed``) whose ``patch_size`` is read only in a
    branch folding removes (the check of the image size against it)."""

    def __init__(self) -> None:
        super().__init__()
        _no_torchvision_meta()
        from timm.layers import PatchEmbed

        self.stem = PatchEmbed(img_size=16, patch_size=4, in_chans=3, embed_dim=6)
        self.norm = nn.LayerNorm(6)
        self.head = nn.Linear(6, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.norm(self.stem(x)).mean(1))


class QuantizedNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.quant = torch.ao.quantization.QuantStub()
        self.fc = nn.Linear(6, 4)
        self.relu = nn.ReLU()
        self.dequant = torch.ao.quantization.DeQuantStub()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dequant(self.relu(self.fc(self.quant(x))))


def _quantized() -> nn.Module:
    torch.backends.quantized.engine = "fbgemm"
    model = QuantizedNet().eval()
    model.qconfig = torch.ao.quantization.get_default_qconfig("fbgemm")
    prepared = torch.ao.quantization.prepare(model)
    torch.manual_seed(1)
    prepared(torch.randn(16, 6))
    return torch.ao.quantization.convert(prepared)


def _no_torchvision_meta() -> None:
    """torchvision's meta registrations fail to import beside this torch: an empty module."""
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))


def _inception() -> nn.Module:
    _no_torchvision_meta()
    import torchvision

    torch.manual_seed(0)
    return torchvision.models.inception_v3(weights=None, aux_logits=True, init_weights=False).eval()


def _small_models() -> dict[str, tuple[nn.Module, tuple[torch.Tensor, ...], bool]]:
    torch.manual_seed(0)
    ids = torch.randint(0, 20, (2, 5))
    return {
        "tied.script": (TiedEncoder(), (ids,), False),
        "tied.trace": (TiedEncoder(), (ids,), True),
        "mixer.script": (Mixer(), (torch.randn(2, 3, 16, 16),), False),
    }


@pytest.mark.parametrize("name", sorted(_small_models()))
def test_a_complete_state_dict_runs_on_both_backends(name: str, tmp_path: Path) -> None:
    model, args, trace = _small_models()[name]
    paths = _export(model, args, tmp_path, trace=trace)
    for backend in BACKENDS:
        _run_matches_torch(paths, tmp_path, backend)


@pytest.mark.parametrize("trace", [False, True], ids=["script", "trace"])
def test_a_quantized_model_runs_strict(trace: bool, tmp_path: Path) -> None:
    paths = _export(_quantized(), (torch.randn(3, 6),), tmp_path, trace=trace)
    for backend in BACKENDS:
        _run_matches_torch(paths, tmp_path, backend, atol=1e-5)


@pytest.mark.parametrize("trace", [False, True], ids=["script", "trace"])
def test_inception_v3_with_its_unused_aux_head_runs(trace: bool, tmp_path: Path) -> None:
    torch.manual_seed(0)
    paths = _export(_inception(), (torch.randn(1, 3, 299, 299),), tmp_path, trace=trace)
    for backend in BACKENDS:
        _run_matches_torch(paths, tmp_path, backend, atol=1e-3)


# -- and what strict weights still refuse --------------------------------------------------


def _edited(paths: dict[str, Path], tmp: Path, edit: dict[str, str | None]) -> Path:
    """The exported weights with keys renamed (old -> new) or dropped (old -> None), the
    ``__keys__`` record kept: what a hand-edited or foreign state_dict looks like."""
    with np.load(paths["weights"]) as data:
        weights = {k: data[k] for k in data.files if k != "__irvm__"}
    for old, new in edit.items():
        value = weights.pop(old)
        if new is not None:
            weights[new] = value
    out = tmp / "edited.npz"
    np.savez(out, **weights)
    return out


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        ({"encoder.proj.weight": "encoder.proj.wieght"},
         ["unexpected key(s) (1):\n  encoder.proj.wieght (closest: encoder.proj.weight)",
          "missing key(s) (1):\n  encoder.proj.weight (closest: encoder.proj.wieght)"]),
        ({"shared.weight": None}, ["missing key(s) (1):\n  shared.weight"]),
        ({"encoder.proj.bias": "decoder.proj.bias"},
         ["unexpected key(s) (1):\n  decoder.proj.bias (closest: encoder.proj.bias)"]),
    ],
    ids=["misspelled", "missing", "foreign"],
)
def test_wrong_keys_are_still_refused_naming_the_closest(
    edit: dict[str, str | None], expected: list[str], tmp_path: Path
) -> None:
    model, args, _ = _small_models()["tied.script"]
    paths = _export(model, args, tmp_path)
    bad = _edited(paths, tmp_path, edit)
    for backend in BACKENDS:
        done = _irvm("run", str(paths["ir"]), "--weights", str(bad), "--inputs", str(paths["inputs"]),
                     "--backend", backend)
        assert done.returncode != 0
        for text in expected:
            assert text in done.stderr, done.stderr


def test_without_a_keys_record_the_reads_before_folding_decide(tmp_path: Path) -> None:
    """A state_dict saved by hand (``numpy.savez``, no ``__keys__``) falls back to the program's
    reads, counted before the passes fold a branch away: the mixer's ``stem.patch_size``, read
    only in the removed size check, is read; a misspelled key is still refused."""
    model, args, _ = _small_models()["mixer.script"]
    paths = _export(model, args, tmp_path)
    with np.load(paths["weights"]) as data:
        plain = {k: data[k] for k in data.files if k not in ("__irvm__", "__keys__")}
    assert "stem.patch_size.0" in plain
    np.savez(paths["weights"], **plain)
    for backend in BACKENDS:
        _run_matches_torch(paths, tmp_path, backend)
    plain["head.wieght"] = plain.pop("head.weight")
    np.savez(tmp_path / "bad.npz", **plain)
    done = _irvm("run", str(paths["ir"]), "--weights", str(tmp_path / "bad.npz"), "--inputs", str(paths["inputs"]))
    assert done.returncode != 0
    assert "unexpected key(s) (1):\n  head.wieght (closest: head.weight)" in done.stderr, done.stderr


class WithState(nn.Module):
    """A module with state beyond its state_dict: a plain tensor attribute and a float list
    (TorchScript attributes, no parameter or buffer), and a BatchNorm's integer buffer."""

    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(3, 3)
        self.bn = nn.BatchNorm1d(3)
        self.offset = torch.ones(3)
        self.scales = [0.5, 2.0]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.bn(self.fc(x)) * self.scales[1] + self.offset


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_pt_given_torchs_own_state_dict_runs(backend: str, tmp_path: Path) -> None:
    """``irvm run model.pt --weights sd.npz`` with exactly ``state_dict()`` (other values than
    the archive's): the attributes outside the state_dict stay the archive's, as
    ``load_state_dict(strict=True)`` leaves them; a misspelled key is refused."""
    torch.manual_seed(0)
    model = WithState().eval()
    torch.jit.script(model).save(str(tmp_path / "m.pt"))
    with torch.no_grad():
        for p in model.parameters():
            p.add_(0.5)
        model.bn.running_mean.add_(0.25)
    state = {k: v.numpy() for k, v in model.state_dict().items()}
    assert set(state) == {"fc.weight", "fc.bias", "bn.weight", "bn.bias", "bn.running_mean", "bn.running_var",
                          "bn.num_batches_tracked"}
    np.savez(tmp_path / "sd.npz", **state)
    x = torch.randn(4, 3)
    np.savez(tmp_path / "in.npz", arg0=x.numpy())
    with torch.no_grad():
        np.savez(tmp_path / "expected.npz", **flatten_outputs([model(x).numpy()]))
    paths = {"ir": tmp_path / "m.pt", "weights": tmp_path / "sd.npz", "inputs": tmp_path / "in.npz"}
    _run_matches_torch(paths, tmp_path, backend)
    state["fc.bais"] = state.pop("fc.bias")
    np.savez(tmp_path / "bad.npz", **state)
    done = _irvm("run", str(tmp_path / "m.pt"), "--weights", str(tmp_path / "bad.npz"), "--inputs", str(tmp_path / "in.npz"),
                 "--backend", backend)
    assert done.returncode != 0
    assert "unexpected key(s) (1):\n  fc.bais (closest: fc.bias)" in done.stderr, done.stderr
    assert "missing key(s) (1):\n  fc.bias (closest: fc.bais)" in done.stderr, done.stderr


class Calls(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3)
        self.fc = nn.Linear(4, 2)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.fc(self.conv(x).mean((2, 3)))


def test_a_misspelling_is_refused_in_a_dump_that_calls_its_submodules(tmp_path: Path) -> None:
    """A ``.graph`` dump (``prim::CallMethod`` on each submodule, irvm's bodies added) with a
    hand-saved state_dict: the reads are counted once the calls are inlined, so a misspelled key
    of a called submodule is refused, not taken as part of a whole submodule."""
    import export_torch

    torch.manual_seed(0)
    exp = export_torch.export(Calls().eval(), "model", (torch.randn(1, 3, 6, 6),), inline=False)
    paths = export_torch.write(exp, tmp_path, mark=True)
    with np.load(paths["weights"]) as data:
        plain = {k: data[k] for k in data.files if k not in ("__irvm__", "__keys__")}
    plain["conv.wieght"] = plain.pop("conv.weight")
    np.savez(tmp_path / "bad.npz", **plain)
    done = _irvm("run", str(paths["ir"]), "--weights", str(tmp_path / "bad.npz"), "--inputs", str(paths["inputs"]))
    assert done.returncode != 0
    assert "conv.wieght (closest: conv.weight)" in done.stderr, done.stderr
