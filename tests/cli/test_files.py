"""The command lines and the user's files: nothing the user made is overwritten without
``--force``, and files of the wrong kind (PyTorch's archives and checkpoints, an .npy, a
directory, ONNX) are named for what they are, with what to do instead.

The commands run in-process (``main(argv)`` returns the exit code) to keep the suite fast;
tests/cli/test_cli.py runs them as subprocesses.
"""

from __future__ import annotations

import shutil
import struct
import zipfile
import zlib
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from compiler.cli import main as irc_main
from tests.support.paths import ROOT
from vm.cli import main as irvm_main
from vm.files.kinds import FileKind, is_ours, mark_picture, sniff

EXAMPLES = ROOT / "examples"


def irc(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = irc_main(list(args))
    return code, capsys.readouterr().err


def irvm(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = irvm_main(list(args))
    return code, capsys.readouterr().err


def run_x2(capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str]:
    return irvm(capsys, "run", str(EXAMPLES / "x2.ir"), "--inputs", str(EXAMPLES / "x2.inputs.npz"), *extra)


def assert_refused(code: int, err: str, path: Path) -> None:
    assert code == 1, err
    assert str(path) in err and "--force" in err and len(err.strip().splitlines()) == 1


# -- never overwriting ----------------------------------------------------------------------


def test_output_refuses_a_foreign_npz_such_as_a_weights_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 17: `--output w.npz` replaced somebody's weights file (every PK zip passed as ours)."""
    weights = tmp_path / "w.npz"
    shutil.copy(EXAMPLES / "mlp.weights.npz", weights)
    before = weights.read_bytes()
    code, err = run_x2(capsys, "--output", str(weights))
    assert_refused(code, err, weights)
    assert weights.read_bytes() == before
    assert run_x2(capsys, "--output", str(weights), "--force")[0] == 0
    with np.load(weights) as data:
        assert "out0" in data.files


def test_output_replaces_its_own_previous_result(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A file irvm wrote as outputs (it carries the `__irvm__` mark) is rewritten on a rerun."""
    out = tmp_path / "out.npz"
    assert run_x2(capsys, "--output", str(out))[0] == 0
    assert is_ours(out, "outputs")
    assert run_x2(capsys, "--output", str(out))[0] == 0


def test_output_writes_exactly_the_name_given(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 17: `--output notes.txt` silently replaced `notes.txt.npz` (numpy adds the
    suffix after the check).  irvm writes the very path it checked."""
    sibling = tmp_path / "notes.txt.npz"
    np.savez(sibling, mine=np.arange(3))
    before = sibling.read_bytes()
    target = tmp_path / "notes.txt"
    assert run_x2(capsys, "--output", str(target))[0] == 0
    assert sibling.read_bytes() == before
    with np.load(target) as data:
        assert "out0" in data.files
    foreign = tmp_path / "diary.txt"
    foreign.write_text("dear diary")
    assert_refused(*run_x2(capsys, "--output", str(foreign)), foreign)
    assert foreign.read_text() == "dear diary"


def test_trace_refuses_a_foreign_file_and_replaces_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """--trace is checked like --output, before the run, with its own mark."""
    trace = tmp_path / "t.npz"
    np.savez(trace, mine=np.arange(3))
    assert_refused(*run_x2(capsys, "--trace", str(trace)), trace)
    trace.unlink()
    assert run_x2(capsys, "--trace", str(trace))[0] == 0
    assert is_ours(trace, "trace") and not is_ours(trace, "outputs")
    assert run_x2(capsys, "--trace", str(trace))[0] == 0
    code, err = run_x2(capsys, "--output", str(trace))  # a trace is not an outputs file
    assert_refused(code, err, trace)


def test_output_never_replaces_an_input_even_with_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inputs = tmp_path / "in.npz"
    shutil.copy(EXAMPLES / "x2.inputs.npz", inputs)
    code, err = irvm(capsys, "run", str(EXAMPLES / "x2.ir"), "--inputs", str(inputs), "--output", str(inputs), "--force")
    assert code == 1 and "input of this command" in err
    assert inputs.read_bytes() == (EXAMPLES / "x2.inputs.npz").read_bytes()


def test_compile_refuses_a_foreign_zip_and_replaces_its_own_bytecode(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """-o over a zip that is not irvm bytecode (a .pt, an .npz) is refused; over .irbc it is not."""
    foreign = tmp_path / "model.irbc"
    with zipfile.ZipFile(foreign, "w") as zf:
        zf.writestr("archive/data.pkl", b"\x80\x02}q\x00.")
    before = foreign.read_bytes()
    assert_refused(*irc(capsys, "compile", str(EXAMPLES / "x2.ir"), "-o", str(foreign)), foreign)
    assert foreign.read_bytes() == before
    ours = tmp_path / "x2.irbc"
    assert irc(capsys, "compile", str(EXAMPLES / "x2.ir"), "-o", str(ours))[0] == 0
    assert irc(capsys, "compile", str(EXAMPLES / "x2.ir"), "-o", str(ours))[0] == 0


def test_viz_refuses_a_hand_written_picture_and_replaces_its_own(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 17: `irc viz -o mine.svg` overwrote a hand-written XML file."""
    mine = tmp_path / "mine.svg"
    mine.write_text('<?xml version="1.0"?>\n<svg xmlns="http://www.w3.org/2000/svg"><!-- by hand --></svg>\n')
    before = mine.read_text()
    assert_refused(*irc(capsys, "viz", str(EXAMPLES / "x2.ir"), "-o", str(mine)), mine)
    assert mine.read_text() == before
    dot = tmp_path / "g.dot"
    assert irc(capsys, "viz", str(EXAMPLES / "x2.ir"), "-o", str(dot))[0] == 0
    assert is_ours(dot, "viz") and "digraph" in dot.read_text()
    assert irc(capsys, "viz", str(EXAMPLES / "x2.ir"), "-o", str(dot))[0] == 0
    hand = tmp_path / "hand.dot"
    hand.write_text("digraph { a -> b }\n")
    assert_refused(*irc(capsys, "viz", str(EXAMPLES / "x2.ir"), "-o", str(hand)), hand)


@pytest.mark.skipif(shutil.which("dot") is not None, reason="with graphviz the picture itself is written")
def test_viz_without_graphviz_writes_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without `dot`, asking for g.svg is refused with the install hint (exit 1), and
    nothing is written: neither the picture nor a g.dot beside it."""
    hand = tmp_path / "g.dot"
    hand.write_text("digraph { a -> b }\n")
    code, err = irc(capsys, "viz", str(EXAMPLES / "x2.ir"), "-o", str(tmp_path / "g.svg"))
    assert code == 1 and "apt-get install graphviz" in err
    assert hand.read_text() == "digraph { a -> b }\n" and not (tmp_path / "g.svg").exists()


def _png(width: int = 1, height: int = 1) -> bytes:
    def chunk(kind: bytes, body: bytes) -> bytes:
        return struct.pack(">I", len(body)) + kind + body + struct.pack(">I", zlib.crc32(kind + body))

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    raw = b"".join(b"\x00" + b"\x00" * width for _ in range(height))
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def _png_chunks(data: bytes) -> list[bytes]:
    kinds, pos = [], 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind, body = data[pos + 4 : pos + 8], data[pos + 8 : pos + 8 + length]
        assert struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])[0] == zlib.crc32(kind + body)
        kinds.append(kind)
        pos += 12 + length
    return kinds


@pytest.mark.parametrize("suffix", [".png", ".svg", ".dot"])
def test_pictures_carry_a_mark_that_keeps_them_valid(tmp_path: Path, suffix: str) -> None:
    """mark_picture makes a picture recognizable as irvm's; a PNG stays a valid PNG (its
    chunks' CRCs check) and a hand-made one is not taken for irvm's."""
    path = tmp_path / f"p{suffix}"
    path.write_bytes({".png": _png(), ".svg": b'<?xml version="1.0"?>\n<svg/>\n', ".dot": b"digraph { }\n"}[suffix])
    assert not is_ours(path, "viz")
    mark_picture(path)
    assert is_ours(path, "viz")
    if suffix == ".png":
        assert _png_chunks(path.read_bytes()) == [b"IHDR", b"tEXt", b"IDAT", b"IEND"]


# -- recognizing files --------------------------------------------------------------------


def _torchscript_like(path: Path) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("cnn/data.pkl", b"\x80\x02}q\x00.")
        zf.writestr("cnn/code/__torch__/cnn.py", "class CNN(Module):\n  pass\n")
        zf.writestr("cnn/version", "3\n")
    return path


def test_a_malformed_torchscript_archive_as_the_program_is_read_as_an_archive(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 17: a torch.jit.save archive got `cnn.pt:2:38: the file is not UTF-8 text`; now
    archives are programs (issue 19), and a broken one is refused for what is wrong in it."""
    pt = _torchscript_like(tmp_path / "cnn.pt")
    assert sniff(pt) is FileKind.TORCHSCRIPT
    for code, err in (irvm(capsys, "run", str(pt)), irc(capsys, "compile", str(pt)), irc(capsys, "check", str(pt))):
        assert code == 65, err
        assert "data.pkl" in err and "UTF-8" not in err


def test_a_torchscript_archive_as_weights_says_to_run_it_as_the_program(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """An archive given as --weights is named as what it is, with the command that runs it."""
    pt = _torchscript_like(tmp_path / "cnn.pt")
    code, err = irvm(capsys, "run", str(EXAMPLES / "mlp.ir"), "--inputs", str(EXAMPLES / "mlp.inputs.npz"),
                     "--weights", str(pt))
    assert code == 1, err
    assert "TorchScript archive" in err and f"irvm run {pt}" in err and "tools/export_torch.py" not in err


def test_a_checkpoint_as_weights_says_what_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 17: a torch.save(state_dict) .pth as --weights got 'the weights lack 20 attribute(s)'."""
    torch = pytest.importorskip("torch")
    pth = tmp_path / "cnn.pth"
    torch.save(torch.nn.Linear(16, 32).state_dict(), pth)
    legacy = tmp_path / "legacy.pth"
    torch.save(torch.nn.Linear(16, 32).state_dict(), legacy, _use_new_zipfile_serialization=False)
    for path in (pth, legacy):
        assert sniff(path) is FileKind.CHECKPOINT
        code, err = irvm(capsys, "run", str(EXAMPLES / "mlp.ir"), "--inputs", str(EXAMPLES / "mlp.inputs.npz"),
                         "--weights", str(path))
        assert code == 1, err
        assert "PyTorch checkpoint" in err and "numpy.savez" in err and "lack" not in err


def test_a_real_torchscript_archive_is_recognized(tmp_path: Path) -> None:
    """What torch.jit.save writes is a TORCHSCRIPT archive, not a checkpoint."""
    torch = pytest.importorskip("torch")
    pt = tmp_path / "m.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 3)), str(pt))
    assert sniff(pt) is FileKind.TORCHSCRIPT


def test_an_npy_is_the_input_of_a_one_input_graph(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Issue 17: a .npy as --inputs was an internal TypeError (exit 70)."""
    npy = tmp_path / "x.npy"
    np.save(npy, np.arange(5, dtype=np.float32))
    out = tmp_path / "out.npz"
    code, err = irvm(capsys, "run", str(EXAMPLES / "x2.ir"), "--inputs", str(npy), "--output", str(out))
    assert code == 0, err
    with np.load(out) as data:
        np.testing.assert_array_equal(data["out0"], np.arange(5, dtype=np.float32) * 2)


def test_an_npy_for_a_graph_of_several_inputs_lists_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    npy = tmp_path / "x.npy"
    np.save(npy, np.ones(4, np.float32))
    code, err = irvm(capsys, "run", str(EXAMPLES / "ratio_iou.ir"), "--inputs", str(npy))
    assert code == 1 and ".npy" in err and "%" in err and "numpy.savez" in err


@pytest.mark.parametrize("role", ["program", "inputs", "weights"])
def test_a_directory_is_named_as_one(tmp_path: Path, capsys: pytest.CaptureFixture[str], role: str) -> None:
    args = {"program": [str(tmp_path)], "inputs": [str(EXAMPLES / "x2.ir"), "--inputs", str(tmp_path)],
            "weights": [str(EXAMPLES / "x2.ir"), "--inputs", str(EXAMPLES / "x2.inputs.npz"), "--weights", str(tmp_path)]}
    code, err = irvm(capsys, "run", *args[role])
    assert code == (65 if role == "program" else 1), err
    assert f"{tmp_path} is a directory" in err


def test_an_onnx_model_is_named_as_one(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    onnx = pytest.importorskip("onnx")
    model = onnx.helper.make_model(onnx.helper.make_graph(
        [onnx.helper.make_node("Relu", ["x"], ["y"])], "g",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [2])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [2])]))
    path = tmp_path / "model.bin"
    path.write_bytes(model.SerializeToString())
    assert sniff(path) is FileKind.ONNX
    code, err = irvm(capsys, "run", str(path))
    assert code == 65 and "ONNX model" in err


def test_an_npz_as_the_program_and_ir_text_as_inputs_are_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = irvm(capsys, "run", str(EXAMPLES / "x2.inputs.npz"))
    assert code == 65 and "numpy .npz archive, not a program" in err
    code, err = irvm(capsys, "run", str(EXAMPLES / "x2.ir"), "--inputs", str(EXAMPLES / "x2.ir"))
    assert code == 1 and "is a text file, not an inputs file" in err


def test_compiling_an_archive_twice_replaces_its_own_weights_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`irc compile model.pt` writes model.weights.npz beside the .irbc, marked as irvm's
    weights: a second compile replaces it, a foreign file of that name is refused."""
    torch = pytest.importorskip("torch")
    pt = tmp_path / "lin.pt"
    torch.jit.save(torch.jit.script(torch.nn.Linear(2, 3)), str(pt))
    out = tmp_path / "lin.irbc"
    assert irc(capsys, "compile", str(pt), "-o", str(out))[0] == 0
    weights = tmp_path / "lin.weights.npz"
    assert is_ours(weights, "weights")
    assert irc(capsys, "compile", str(pt), "-o", str(out))[0] == 0
    x = tmp_path / "x.npy"
    np.save(x, np.ones((4, 2), np.float32))
    code, err = irvm(capsys, "run", str(out), "--inputs", str(x), "--weights", str(weights))
    assert code == 0, err
    weights.unlink()
    np.savez(weights, mine=np.arange(2))
    assert_refused(*irc(capsys, "compile", str(pt), "-o", str(out)), weights)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(
    st.binary(max_size=300),
    st.binary(max_size=300).map(lambda b: b"PK\x03\x04" + b),
    st.binary(max_size=300).map(lambda b: b"\x08" + b),
    st.binary(max_size=300).map(lambda b: b"\x80\x02" + b),
    st.binary(max_size=300).map(lambda b: b"\x93NUMPY" + b),
))
def test_sniff_names_any_bytes_and_never_fails(tmp_path: Path, data: bytes) -> None:
    """Whatever the bytes (damaged zips, protobuf-like, pickle-like, npy-like), sniff gives a
    kind and reading the file as a program is an irvm error, never an internal one."""
    from compiler.diagnostics import IRError
    from vm.files.kinds import read_program_text

    path = tmp_path / "f.bin"
    path.write_bytes(data)
    assert isinstance(sniff(path), FileKind)
    try:
        read_program_text(path)
    except IRError:
        pass
