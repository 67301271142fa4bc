"""Every method, one module object: ``vm.load`` of a ``.pt`` exposes the archive's other
methods (``model.reset_states()``, ``model.methods``), run on the same module object as
``forward``; ``irvm info`` lists them and ``irvm run --method NAME`` runs one.  Grad-mode
blocks compile from a ``.pt`` and ``torch.is_grad_enabled()`` answers as torch does."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip("torch")

import vm  # noqa: E402
from tests.support.stateful_models import KVCache, StreamingVAD  # noqa: E402
from vm.cli import main as irvm  # noqa: E402
from vm.core.errors import RunError  # noqa: E402


@pytest.fixture(scope="module")
def vad(tmp_path_factory: pytest.TempPathFactory) -> Path:
    torch.manual_seed(0)
    path = tmp_path_factory.mktemp("methods") / "vad.pt"
    torch.jit.script(StreamingVAD().eval()).save(str(path))
    return path


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_methods_share_the_module_object(vad: Path, backend: str) -> None:
    model = vm.load(vad, backend=backend)
    assert model.methods == ["forward", "audio_forward", "reset_states"]
    x = np.random.default_rng(0).standard_normal((2, 128)).astype(np.float32)
    model(x, 16000)
    assert model.module_object.get("_last_batch_size") == 2
    model.reset_states(3)  # written by one method, seen by the others
    assert model.module_object.get("_state").shape == (2, 3, 8)
    assert model.module_object.get("_last_batch_size") == 0
    model.reset_states()  # the source's default, batch_size=1
    assert model.module_object.get("_state").shape == (2, 1, 8)
    assert model.method("reset_states") is model.reset_states


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_audio_forward_runs_a_recording_as_torch(vad: Path, backend: str) -> None:
    """silero's ``model.audio_forward(x, sr)``: chunks through ``forward`` from a fresh state,
    then the stream goes on from the state it left, as torch's module does."""
    model, theirs = vm.load(vad, backend=backend), torch.jit.load(str(vad))
    rng = np.random.default_rng(3)
    recording = rng.standard_normal((2, 300)).astype(np.float32)
    chunk = rng.standard_normal((2, 128)).astype(np.float32)
    with torch.no_grad():
        want = theirs.audio_forward(torch.from_numpy(recording), 16000).numpy()
        after = theirs(torch.from_numpy(chunk), 16000).numpy()
    np.testing.assert_allclose(model.audio_forward(recording, 16000), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model(chunk, 16000), after, rtol=1e-5, atol=1e-6)


def test_an_unknown_method_is_refused(vad: Path) -> None:
    model = vm.load(vad, backend="interp")
    with pytest.raises(AttributeError):
        _ = model.no_such_method
    with pytest.raises(RunError, match="no method 'nope'.*forward, audio_forward, reset_states"):
        model.method("nope")


def test_a_method_returns_what_torchs_returns(tmp_path: Path) -> None:
    torch.manual_seed(0)
    path = tmp_path / "kv.pt"
    torch.jit.script(KVCache()).save(str(path))
    model, theirs = vm.load(path), torch.jit.load(str(path))
    assert model.methods == ["forward", "reset"]
    x = np.ones((1, 2, 8), np.float32)
    model(x)
    theirs(torch.from_numpy(x))
    assert model.reset() is None and theirs.reset() is None
    assert model.module_object.get("keys").shape == (1, 0, 8)


def test_irvm_info_lists_methods_and_irvm_run_runs_one(vad: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert irvm(["info", str(vad)]) == 0
    out = capsys.readouterr().out
    assert "methods: forward, audio_forward, reset_states" in out
    assert "state: _context, _last_batch_size, _last_sr, _state" in out
    np.savez(tmp_path / "in.npz", batch_size=np.array(2))
    assert irvm(["run", str(vad), "--method", "reset_states", "--inputs", str(tmp_path / "in.npz")]) == 0
    assert "out0 = None" in capsys.readouterr().out
    assert irvm(["run", str(vad), "--method", "nope"]) == 65
    assert "has no method `nope` (methods: audio_forward, forward, reset_states)" in capsys.readouterr().err


class GradModes(torch.nn.Module):
    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, bool, bool, bool, bool]:
        a = torch.is_grad_enabled()
        with torch.no_grad():
            y = x * 2
            b = torch.is_grad_enabled()
        torch.set_grad_enabled(True)
        c = torch.is_grad_enabled()
        torch.set_grad_enabled(False)
        d = torch.is_grad_enabled()
        return y + 1, a, b, c, d


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_grad_mode_blocks_compile_and_answer_as_torch(tmp_path: Path, backend: str) -> None:
    """Under torch's inference (no_grad) as irvm runs: off, off inside no_grad, on after
    set_grad_enabled(True), off again; no state, as no_grad's saved mode is its own object."""
    path = tmp_path / "grad.pt"
    torch.jit.script(GradModes()).save(str(path))
    model = vm.load(path, backend=backend)
    assert model.state == ()
    x = np.arange(3, dtype=np.float32)
    with torch.no_grad():
        want = torch.jit.load(str(path))(torch.from_numpy(x))
    for _ in range(2):
        got = model(x)
        np.testing.assert_array_equal(got[0], want[0].numpy())
        assert got[1:] == want[1:] == (False, False, True, False)
