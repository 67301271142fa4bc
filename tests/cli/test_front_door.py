"""``irvm run`` and ``irvm profile`` open their model through the front door (issue #37):
one ``vm.load`` call each, whose ``bound_weights`` is the one merge of ``--weights`` over
a ``.pt``'s own weights and its strict check; ``irvm info`` reads the program with the
front door's reader.  The command line builds no runtime itself."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

import vm.api.open
from tests.support.paths import EXAMPLES
from vm.cli import main


def _count(monkeypatch: pytest.MonkeyPatch, name: str) -> list[Any]:
    calls: list[Any] = []
    real = getattr(vm.api.open, name)

    def counted(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        calls.append(result)
        return result

    monkeypatch.setattr(vm.api.open, name, counted)
    return calls


@pytest.mark.parametrize("backend", ["interp", "static"])
def test_run_opens_the_model_with_vm_load(backend: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """One ``vm.load`` (with the command line's backend), one weight merge; the result is the model's."""
    loads, merges = _count(monkeypatch, "load"), _count(monkeypatch, "bound_weights")
    out = tmp_path / "out.npz"
    assert main(["run", str(EXAMPLES / "cnn.ir"), "--inputs", str(EXAMPLES / "cnn.inputs.npz"),
                 "--weights", str(EXAMPLES / "cnn.weights.npz"), "--backend", backend, "--output", str(out)]) == 0
    assert len(loads) == 1 and len(merges) == 1
    assert loads[0].backend == backend
    want = np.load(EXAMPLES / "cnn.expected.npz")
    np.testing.assert_allclose(np.load(out)["out0"], want[next(iter(want.keys()))], rtol=1e-4, atol=1e-5)


def test_run_with_weights_over_a_pt_merges_and_checks_them_in_the_front_door(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--weights`` over a ``.pt``: a misspelled key is refused by the front door's strict
    check (``vm.binding.strict.check_given``, from ``bound_weights``), with ``--weights-partial``
    the merge runs and so does the model."""
    weights = dict(np.load(EXAMPLES / "cnn.weights.npz"))
    weights["fc.wieght"] = weights.pop("fc.weight")
    np.savez(tmp_path / "w.npz", **weights)
    merges = _count(monkeypatch, "bound_weights")
    argv = ["run", str(EXAMPLES / "cnn.pt"), "--inputs", str(EXAMPLES / "cnn.inputs.npz"), "--weights", str(tmp_path / "w.npz")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "unexpected key(s) (1):\n  fc.wieght (closest: fc.weight)" in err and "missing key(s) (1):" in err
    assert main([*argv, "--weights-partial"]) == 0
    assert len(merges) == 1  # the refused run raised inside it


def test_profile_opens_the_model_with_vm_load(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """``irvm profile`` profiles the static module ``vm.load`` built (the model's own)."""
    loads = _count(monkeypatch, "load")
    import vm.static.profile as P

    seen: list[Any] = []
    real = P.profile

    def watched(module: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(module)
        return real(module, *args, **kwargs)

    monkeypatch.setattr(P, "profile", watched)
    assert main(["profile", str(EXAMPLES / "cnn.ir"), "--inputs", str(EXAMPLES / "cnn.inputs.npz"),
                 "--weights", str(EXAMPLES / "cnn.weights.npz"), "--runs", "1"]) == 0
    assert len(loads) == 1 and seen == [loads[0].static_module]
    assert "setup" in capsys.readouterr().out


def test_info_reads_the_program_with_the_front_doors_reader(monkeypatch: pytest.MonkeyPatch,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """``irvm info`` of a program whose weights are not given: read, described, never run
    (no vm.load: a model that cannot run fails at load)."""
    reads, loads = _count(monkeypatch, "read_program"), _count(monkeypatch, "load")
    import vm.cli

    monkeypatch.setattr(vm.cli, "read_program", vm.api.open.read_program)
    assert main(["info", str(EXAMPLES / "cnn.ir")]) == 0
    assert len(reads) == 1 and loads == []
    assert "x.1" in capsys.readouterr().out
