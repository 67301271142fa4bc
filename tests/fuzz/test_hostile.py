"""Issue #25's table, one test per row: a hostile or damaged file is refused with exit 65,
1 or 66 and one clear message (no internal error, exit 70), within its bounds
(``docs/bounds.md``), and nothing the user made is overwritten.

Each reproducer is built in the test by ``tests/fuzz/hostile.py`` (no torch).  The commands
run in-process (``main(argv)`` returns the exit code).
"""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

import compiler.torchscript as ts
from compiler.cli import main as irc_main
from compiler.torchscript.limits import ReadLimits, parse
from tests.fuzz import hostile as H
from vm.cli import main as irvm_main
from vm.core.errors import BytecodeError


def irvm(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = irvm_main(list(args))
    return code, capsys.readouterr().err


def irc(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str]:
    code = irc_main(list(args))
    return code, capsys.readouterr().err


@pytest.fixture
def inputs(tmp_path: Path) -> Path:
    path = tmp_path / "in.npz"
    np.savez(path, x=np.ones(3, np.float32))
    return path


def run_archive(capsys: pytest.CaptureFixture[str], tmp_path: Path, inputs: Path, pkl: bytes | None = None, **kw) -> tuple[int, str]:
    path = H.build(tmp_path / "m.pt", pkl, **kw)
    return irvm(capsys, "run", str(path), "--inputs", str(inputs))


def test_the_plain_hand_built_archive_runs(capsys, tmp_path, inputs):
    path = H.build(tmp_path / "m.pt")
    assert irvm_main(["run", str(path), "--inputs", str(inputs)]) == 0
    assert "out0 = tensor([2., 3., 4.]" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("pkl", "words"),
    [
        (H.self_list(), "cycle (a list that contains itself)"),
        (H.self_module(), "cycle (a __torch__.M that contains itself)"),
        (H.deep_list(100_000), "over the limit depth=200"),
        (H.shared_lists(60), "over the limit entries=1,000,000"),
        (H.build_storage_type(), "BUILD of a StorageType: only __torch__ objects take a state"),
        (H.data_pkl()[:-7], "damaged archive member: not a readable pickle"),
        (H.data_pkl(w=H.weight(3, (3, 1), (1, 2**70))), "an integer outside int64 (71 bits)"),
    ],
    ids=["list-contains-itself", "module-own-attribute", "list-100000-deep", "shared-lists-2^60-paths",
         "build-on-storage-type", "pickle-cut-mid-opcode", "stride-2^70"],
)
def test_hostile_pickles_are_refused_with_exit_65(capsys, tmp_path, inputs, pkl, words):
    code, err = run_archive(capsys, tmp_path, inputs, pkl)
    assert code == 65, err
    assert words in err and "m.pt" in err and "data.pkl" in err


def test_a_truncated_debug_pickle_only_loses_source_ranges(capsys, tmp_path, inputs):
    good = H.build(tmp_path / "m.pt")
    with zipfile.ZipFile(good, "a") as zf:
        zf.writestr("m/code/__torch__.py.debug_pkl", H.P.whole(H.P.tuple_(H.P.int_(1)))[:-3])
    assert irvm(capsys, "run", str(good), "--inputs", str(inputs))[0] == 0


def test_a_stride_0_view_stays_a_view_and_is_not_written_expanded(capsys, tmp_path):
    path = H.build(tmp_path / "m.pt", H.data_pkl(w=H.weight(1, (32768, 32768), (0, 0))), storages={"0": b"\0\0\x80?"})
    weights = ts.archive_weights(path)
    w = weights["w"]
    assert w.shape == (32768, 32768) and w.strides == (0, 0) and not w.flags.writeable
    assert w.base is not None and w[123, 4567] == 1.0  # a view on the 4-byte storage, not 4 GiB
    out = tmp_path / "m.irbc"
    code, err = irc(capsys, "compile", str(path), "-o", str(out))
    assert code == 65 and "weight w" in err and "expanded_bytes" in err
    assert not out.exists() and not (tmp_path / "m.weights.npz").exists()


def test_a_tensor_reaching_past_its_storage_is_refused(capsys, tmp_path, inputs):
    code, err = run_archive(capsys, tmp_path, inputs, H.data_pkl(w=H.weight(3, (2, 2), (2, 1))))
    assert code == 65 and "reaches element 3 of a storage of 3" in err


@pytest.mark.parametrize(
    ("source", "words"),
    [(H.long_expression(50_000), "nests deeper"), (H.big_list_literal(300_000), "literal_elements=10,000")],
    ids=["50000-term-expression", "300000-element-list"],
)
def test_huge_source_is_refused_with_its_limit(capsys, tmp_path, inputs, source, words):
    code, err = run_archive(capsys, tmp_path, inputs, source=source)
    assert code == 65 and words in err and "code/__torch__.py" in err


@pytest.mark.parametrize(
    ("record", "words"),
    [(b"1" * 5000, "longer than 64 bytes"), (b"99", "newer than any torch writes"), (b"x3", "unreadable version"),
     (b"1", "too old")],
)
def test_bad_version_records_are_refused(capsys, tmp_path, inputs, record, words):
    code, err = run_archive(capsys, tmp_path, inputs, records={"version": record})
    assert code == 65 and words in err


def test_version_is_read_as_torch_reads_it(tmp_path):
    """``.data/version`` first, blanks and trailing text allowed (C's stoull)."""
    path = H.build(tmp_path / "m.pt", records={"version": b"1", ".data/version": b"  4abc"})
    archive = ts.Archive(path)
    try:
        assert archive.version == 4
    finally:
        archive.close()


@pytest.mark.parametrize("member", ["data.pkl", "data/0"])
def test_zip_bombs_are_refused_before_inflating(capsys, tmp_path, inputs, member):
    if member == "data.pkl":
        code, err = run_archive(capsys, tmp_path, inputs, H.data_pkl() + b"\0" * (16 << 20), compressed=["data.pkl"])
    else:
        n = 4 << 20
        code, err = run_archive(capsys, tmp_path, inputs, H.data_pkl(w=H.weight(n, (n,), (1,))),
                                storages={"0": b"\0" * (4 * n)}, compressed=["data/0"])
    assert code == 65 and f"{member}: a zip bomb?" in err and "ratio=200" in err


def test_a_big_byteorder_record_is_ignored_as_torch_jit_load_ignores_it(capsys, tmp_path, inputs):
    code, _ = run_archive(capsys, tmp_path, inputs, records={"byteorder": b"big"})
    assert code == 0
    np.testing.assert_array_equal(ts.archive_weights(tmp_path / "m.pt")["w"], [1, 2, 3])


def test_big_byteorder_matches_torch(tmp_path):
    torch = pytest.importorskip("torch")
    path = H.build(tmp_path / "m.pt", records={"byteorder": b"big"})
    expected = torch.jit.load(str(path)).w.numpy()
    np.testing.assert_array_equal(ts.archive_weights(path)["w"], expected)


def test_a_bad_crc_is_a_damaged_archive_naming_the_member(capsys, tmp_path, inputs):
    path = H.build(tmp_path / "m.pt")
    H.flip_crc(path, "m/data.pkl")
    code, err = irvm(capsys, "run", str(path), "--inputs", str(inputs))
    assert code == 65 and "damaged archive: member data.pkl" in err and "CRC" in err


def test_a_truncated_archive_is_named_damaged(capsys, tmp_path, inputs):
    data = H.build(tmp_path / "m.pt").read_bytes()
    cut = tmp_path / "cut.pt"
    cut.write_bytes(data[: len(data) // 2])
    code, err = irvm(capsys, "run", str(cut), "--inputs", str(inputs))
    assert code == 65 and "damaged zip archive" in err and "truncated or corrupt" in err
    assert irc(capsys, "compile", str(cut))[0] == 65


def test_an_edited_self_reads_table_is_refused_at_load(capsys, tmp_path, inputs):
    pt = H.build(tmp_path / "m.pt")
    program, _ = ts.compile_archive(pt)
    assert program.self_reads
    path = tmp_path / "m.irbc"
    import vm.program.irbc as irbc

    irbc.save(program, path)
    with zipfile.ZipFile(path) as zf:
        members = {n: zf.read(n) for n in zf.namelist()}
    body = json.loads(members["program.json"])
    body["self_reads"][0][0] = 7  # reads from an entry that does not exist
    members["program.json"] = json.dumps(body).encode()
    rest = [(n, d) for n, d in members.items() if n != irbc.MAGIC_MEMBER]
    header = json.loads(members[irbc.MAGIC_MEMBER])
    header["sha256"] = irbc._digest(rest)
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr(zipfile.ZipInfo(irbc.MAGIC_MEMBER), json.dumps(header))
        for name, data in rest:
            zf.writestr(name, data)
    with pytest.raises(BytecodeError, match="self_reads entry 0 reads from entry 7"):
        irbc.load(path)
    code, err = irvm(capsys, "run", str(path), "--inputs", str(inputs))
    assert code == 65 and "self_reads" in err


@pytest.mark.parametrize("kind", ["npy", "npz"])
def test_an_inputs_header_claiming_32_tib_is_refused(capsys, tmp_path, kind):
    import io

    buf = io.BytesIO()
    np.lib.format.write_array_header_1_0(buf, {"descr": "<f4", "fortran_order": False, "shape": (1 << 43,)})
    data = buf.getvalue() + b"\0" * 16
    path = tmp_path / f"in.{kind}"
    if kind == "npy":
        path.write_bytes(data)
    else:
        with zipfile.ZipFile(path, "w") as zf:
            zf.writestr("x.npy", data)
    code, err = irvm(capsys, "run", str(H.build(tmp_path / "m.pt")), "--inputs", str(path))
    assert code == 1 and "35,184,372,088,832 bytes" in err and "16 bytes" in err


@pytest.mark.parametrize("planted", ["file", "symlink"])
def test_a_foreign_tmp_file_or_symlink_beside_the_output_is_untouched(capsys, tmp_path, planted):
    pt = H.build(tmp_path / "m.pt")
    out = tmp_path / "X.irbc"
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    tmp = Path(str(out) + ".tmp")
    if planted == "file":
        tmp.write_text("precious")
    else:
        tmp.symlink_to(victim)
    code, err = irc(capsys, "compile", str(pt), "-o", str(out))
    assert code == 0, err
    assert victim.read_text() == "precious" and tmp.read_text() == "precious"
    assert tmp.is_symlink() == (planted == "symlink")
    assert out.exists() and not [p for p in tmp_path.iterdir() if p.name.startswith(".X.irbc.")]


def test_a_foreign_weights_file_is_refused_before_anything_is_written(capsys, tmp_path):
    pt = H.build(tmp_path / "m.pt")
    foreign = tmp_path / "pw.weights.npz"
    np.savez(foreign, mine=np.ones(2))
    before = foreign.read_bytes()
    code, err = irc(capsys, "compile", str(pt), "-o", str(tmp_path / "pw.irbc"))
    assert code == 1 and "refusing to overwrite" in err and "pw.weights.npz" in err
    assert not (tmp_path / "pw.irbc").exists() and foreign.read_bytes() == before


def test_limits_can_be_raised_for_a_trusted_file(tmp_path, monkeypatch):
    path = H.build(tmp_path / "m.pt", H.deep_list(300))
    with pytest.raises(ts.ArchiveError, match="depth=200"):
        ts.archive_weights(path)
    monkeypatch.setenv("IRVM_LIMITS", "depth=400")
    assert "w" in ts.archive_weights(path)


def test_limits_parse_names_and_units():
    assert parse("depth=5, member_bytes=2MiB") == ReadLimits(depth=5, member_bytes=2 << 20)
    with pytest.raises(ts.ArchiveError.__mro__[1], match="expected name=integer"):
        parse("depht=5")
