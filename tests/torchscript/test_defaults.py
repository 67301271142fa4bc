"""Default arguments of a ``torch.jit.save`` archive's ``forward``: a caller (a Python
call, an inputs file, ``irvm run``) may leave them out, as with torch, on both backends
and after a ``.irbc`` round trip.  Archives are hand-built (``test_reader``): no torch."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import vm
from compiler.torchscript import compile_archive
from compiler.torchscript.archive import Archive
from tests.torchscript.test_reader import CODE, _int, _module, _simple, _str, _tensor, _write_archive
from vm.core.errors import RunError
from vm.files.npz import load_inputs
from vm.program import irbc

# forward(x, scale=2.0, shift=None): relu(x @ w) * scale (+ shift)
DEFAULTS_CODE = CODE.replace(
    "    x: Tensor) -> Tensor:\n    w = self.w\n    return torch.relu(torch.matmul(x, w))\n",
    "    x: Tensor,\n    scale: float=2.,\n    shift: Optional[float]=None) -> Tensor:\n"
    "    w = self.w\n    y = torch.mul(torch.relu(torch.matmul(x, w)), scale)\n"
    "    if torch.__is__(shift, None):\n      z = y\n    else:\n      z = torch.add(y, unchecked_cast(float, shift))\n"
    "    return z\n",
)
W = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
X = np.array([[1.0, -1.0], [0.5, 2.0]], dtype=np.float32)
BASE = np.maximum(X @ W, 0)


@pytest.fixture
def archive(tmp_path: Path) -> Path:
    path = _simple(tmp_path / "m.pt", W, DEFAULTS_CODE)
    assert "scale: float=2." in DEFAULTS_CODE
    return path


@pytest.mark.parametrize("make", [vm.Interpreter, vm.StaticRuntime], ids=["interp", "static"])
@pytest.mark.parametrize("round_trip", [False, True], ids=["compiled", "irbc"])
def test_trailing_arguments_left_out_take_the_sources_defaults(
    archive: Path, tmp_path: Path, make: type, round_trip: bool
) -> None:
    """``forward(x)`` runs as ``forward(x, 2.0, None)``, ``forward(x, 3.0)`` as
    ``forward(x, 3.0, None)``; given arguments win; too few for the defaults is an error."""
    program, weights = compile_archive(archive)
    assert program.input_defaults == (2.0, None)
    if round_trip:
        irbc.save(program, tmp_path / "m.irbc")
        program = irbc.load(tmp_path / "m.irbc")
        assert program.input_defaults == (2.0, None)
    run = make(program, weights)
    np.testing.assert_allclose(run(X), BASE * 2, rtol=1e-6)
    np.testing.assert_allclose(run(X, 3.0), BASE * 3, rtol=1e-6)
    np.testing.assert_allclose(run(X, 3.0, 1.0), BASE * 3 + 1, rtol=1e-6)
    with pytest.raises(RunError, match="takes 3 input"):
        run()


def test_an_inputs_file_may_leave_defaulted_inputs_out(archive: Path) -> None:
    """An inputs file with only ``x`` gets the defaults for ``scale`` and ``shift``; one
    naming ``scale`` keeps its value; a missing input without a default is still refused."""
    program, _ = compile_archive(archive)
    assert load_inputs({"x": X}, program)[1:] == [2.0, None]
    assert load_inputs({"x": X, "scale": np.array(5.0)}, program)[1:] == [5.0, None]
    with pytest.raises(RunError, match="input 'x' is missing"):
        load_inputs({"scale": np.array(5.0)}, program)


def test_irvm_run_applies_defaults_and_reads_the_archive_once(
    archive: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``irvm run m.pt --inputs x.npz`` with only ``x`` prints ``forward(x)``'s result on
    both backends, unpickling the archive's module once (its weights come with the
    compile); ``irvm info`` lists the defaults."""
    from vm.cli import main

    np.savez(tmp_path / "in.npz", x=X)
    unpickled = []
    real = Archive.module
    monkeypatch.setattr(Archive, "module", lambda self: unpickled.append(1) or real(self))
    for backend in ("interp", "static"):
        unpickled.clear()
        out = tmp_path / f"{backend}.npz"
        assert main(["run", str(archive), "--inputs", str(tmp_path / "in.npz"), "--backend", backend,
                     "--output", str(out)]) == 0
        np.testing.assert_allclose(np.load(out)["out0"], BASE * 2, rtol=1e-6)
        assert len(unpickled) == 1
    assert main(["info", str(archive)]) == 0
    assert "defaults: scale = 2.0, shift = None" in capsys.readouterr().out


def test_irc_compile_of_an_archive_keeps_its_defaults(archive: Path, tmp_path: Path) -> None:
    """``irc compile m.pt`` writes a .irbc whose inputs keep the source's defaults, so
    ``irvm run m.irbc`` with only ``x`` runs ``forward(x)``."""
    from compiler.cli import main as irc
    from vm.cli import main as irvm

    out = tmp_path / "m.irbc"
    assert irc(["compile", str(archive), "-o", str(out)]) == 0
    assert irbc.load(out).input_defaults == (2.0, None)
    np.savez(tmp_path / "in.npz", x=X)
    result = tmp_path / "out.npz"
    assert irvm(["run", str(out), "--weights", str(tmp_path / "m.weights.npz"), "--inputs", str(tmp_path / "in.npz"),
                 "--output", str(result)]) == 0
    np.testing.assert_allclose(np.load(result)["out0"], BASE * 2, rtol=1e-6)


SETTING_CODE = CODE.replace("  training : bool\n", "  training : bool\n  k : int\n").replace(
    "    return torch.relu(torch.matmul(x, w))\n",
    "    if torch.eq(self.k, 2):\n      y = torch.relu(torch.matmul(x, w))\n    else:\n      y = torch.matmul(x, w)\n"
    "    return y\n",
)


def test_an_archive_compiles_for_its_own_settings(tmp_path: Path) -> None:
    """``compile_archive`` folds the archive's settings (here an int attribute ``k = 2``),
    as torch.jit.freeze would: the branch it decides is gone; with ``freeze=False`` it
    stays; both compute the archive's result, and weights with another ``k`` are refused
    by the frozen program."""
    attrs = _str("w") + _tensor("0", W.size, W.shape, (W.shape[1], 1)) + _str("training") + b"\x89" + _str("k") + _int(2)
    path = _write_archive(tmp_path / "k.pt", _module(attrs), {"0": W.astype("<f4").tobytes()}, SETTING_CODE)
    frozen, weights = compile_archive(path)
    kept, _ = compile_archive(path, freeze=False)
    assert weights["k"] == 2
    assert "prim::If" not in frozen.optimized_text() and "prim::If" in kept.optimized_text()
    for program in (frozen, kept):
        np.testing.assert_allclose(vm.Interpreter(program, weights)(X), BASE, rtol=1e-6)
    with pytest.raises(RunError, match="k = 2 in the program, 3 in these weights"):
        vm.Interpreter(frozen, {**weights, "k": 3})(X)
