"""The .pt archive reader without PyTorch: hand-built archives, and hostile ones.

Archives here are assembled byte by byte (zip + pickle opcodes), as ``torch.jit.save``
lays them out, so these tests need no torch and can build what torch never would: a
pickle that would run a shell command, a tensor reaching past its storage.
"""

from __future__ import annotations

import os
import pickle
import struct
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

import compiler
import vm
from compiler.diagnostics import CompileError
from compiler.torchscript import ArchiveError, archive_weights, is_torchscript_archive
from compiler.torchscript.archive import MEMMAP_BYTES, Archive
from tests.support.paths import ROOT

CODE = '''class M(Module):
  __parameters__ = ["w", ]
  __buffers__ = []
  w : Tensor
  training : bool
  def forward(self: __torch__.M,
    x: Tensor) -> Tensor:
    w = self.w
    return torch.relu(torch.matmul(x, w))
'''


# -- a tiny pickle assembler (protocol 2 opcodes) -------------------------------------------


def _str(text: str) -> bytes:
    raw = text.encode()
    return b"X" + struct.pack("<I", len(raw)) + raw


def _int(n: int) -> bytes:
    return b"J" + struct.pack("<i", n)


def _global(module: str, name: str) -> bytes:
    return b"c" + module.encode() + b"\n" + name.encode() + b"\n"


def _tuple(*parts: bytes) -> bytes:
    return b"(" + b"".join(parts) + b"t"


def _tensor(key: str, numel: int, size: tuple[int, ...], stride: tuple[int, ...], offset: int = 0) -> bytes:
    storage = _tuple(_str("storage"), _global("torch", "FloatStorage"), _str(key), _str("cpu"), _int(numel)) + b"Q"
    hooks = _global("collections", "OrderedDict") + b")R"
    args = _tuple(storage, _int(offset), _tuple(*map(_int, size)), _tuple(*map(_int, stride)), b"\x89", hooks)
    return _global("torch._utils", "_rebuild_tensor_v2") + args + b"R"


def _module(attrs: bytes, cls: str = "M") -> bytes:
    return b"\x80\x02" + _global("__torch__", cls) + b")\x81}(" + attrs + b"ub."


def _write_archive(path: Path, data_pkl: bytes, storages: dict[str, bytes], code: str = CODE,
                   compress: int = zipfile.ZIP_STORED) -> Path:
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("m/version", "3\n")
        zf.writestr("m/data.pkl", data_pkl)
        zf.writestr("m/code/__torch__.py", code)
        zf.writestr("m/constants.pkl", b"\x80\x02).")
        for key, raw in storages.items():
            zf.writestr(zipfile.ZipInfo(f"m/data/{key}"), raw, compress_type=compress)
    return path


def _simple(path: Path, w: np.ndarray, code: str = CODE) -> Path:
    attrs = _str("w") + _tensor("0", w.size, w.shape, (w.shape[1], 1)) + _str("training") + b"\x89"
    return _write_archive(path, _module(attrs), {"0": w.astype("<f4").tobytes()}, code)


# -- reading and running -------------------------------------------------------------------


def test_a_handmade_archive_compiles_and_runs_on_both_backends(tmp_path: Path) -> None:
    """An archive laid out as torch.jit.save writes it (one top folder, data.pkl with a
    persistent storage reference, code/__torch__.py) reads without torch: the forward
    reads ``w`` through prim::GetAttr, and both backends compute relu(x @ w)."""
    w = np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5
    path = _simple(tmp_path / "m.pt", w)
    assert is_torchscript_archive(path)
    module, weights = compiler.load_torchscript(path)
    assert "prim::GetAttr[name=\"w\"]" in str(module)
    np.testing.assert_array_equal(weights["w"], w)
    program, weights = compiler.torchscript.compile_archive(path)
    x = np.array([[1.0, -1.0], [0.5, 2.0]], dtype=np.float32)
    want = np.maximum(x @ w, 0)
    np.testing.assert_allclose(vm.Interpreter(program, weights)(x), want, rtol=1e-6)
    np.testing.assert_allclose(vm.StaticRuntime(program, weights)(x), want, rtol=1e-6)


def test_large_stored_storages_are_memory_mapped_and_compressed_ones_read(tmp_path: Path) -> None:
    """A storage of MEMMAP_BYTES or more, stored uncompressed, is a copy-on-write memory
    map of the archive file at the member's data offset (an archive bigger than memory
    still loads); a compressed one is read into memory; both hold the right numbers."""
    n = MEMMAP_BYTES // 4 + 16
    w = np.linspace(-1, 1, n, dtype=np.float32).reshape(1, n)
    stored = _simple(tmp_path / "stored.pt", w)
    archive = Archive(stored)
    array = archive.module().attributes["w"]
    base = array
    while not isinstance(base, np.memmap) and getattr(base, "base", None) is not None:
        base = base.base
    assert isinstance(base, np.memmap)
    np.testing.assert_array_equal(array, w)
    archive.close()  # the map keeps its own handle: the weights stay readable
    np.testing.assert_array_equal(array, w)
    attrs = _str("w") + _tensor("0", n, (1, n), (n, 1)) + _str("training") + b"\x89"
    packed = _write_archive(tmp_path / "deflated.pt", _module(attrs), {"0": w.tobytes()}, compress=zipfile.ZIP_DEFLATED)
    array = Archive(packed).module().attributes["w"]
    assert not isinstance(array, np.memmap) and not isinstance(array.base, np.memmap)
    np.testing.assert_array_equal(array, w)


# -- refusing what is not a TorchScript archive -------------------------------------------


class _Shell:
    def __init__(self, command: str) -> None:
        self.command = command

    def __reduce__(self):  # what a hostile model file would carry
        return (os.system, (self.command,))


class _Eval:
    def __reduce__(self):
        return (eval, ("__import__('os').system('true')",))


@pytest.mark.parametrize(("where", "protocol"), [("root", 2), ("root", 4), ("attribute", 2)])
def test_a_pickle_that_would_run_code_is_refused_and_nothing_runs(tmp_path: Path, where: str, protocol: int) -> None:
    """data.pkl whose GLOBAL (protocol 2) or STACK_GLOBAL (4) names os.system, with a
    command that would create a file, is refused with an error naming the global -- as the
    whole object or nested in a module's attributes -- and the command never runs."""
    marker = tmp_path / "pwned"
    evil = pickle.dumps(_Shell(f"touch {marker}"), protocol=protocol)
    data = _module(_str("w") + evil[2:-1]) if where == "attribute" else evil
    path = _write_archive(tmp_path / "evil.pt", data, {})
    with pytest.raises(ArchiveError) as info:
        compiler.load_torchscript(path)
    assert f"{os.system.__module__}.system" in str(info.value)
    assert "refusing" in str(info.value)
    assert not marker.exists()


def test_cli_refuses_a_hostile_archive_with_a_one_paragraph_error(tmp_path: Path) -> None:
    """`irvm run evil.pt` exits 65 with the refusal as one paragraph, no traceback, and the
    command in the pickle never runs."""
    marker = tmp_path / "pwned"
    path = _write_archive(tmp_path / "evil.pt", pickle.dumps(_Shell(f"touch {marker}"), protocol=2), {})
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-m", "vm.cli", "run", str(path)], capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 65, proc.stderr
    assert "refusing to load global" in proc.stderr and "Traceback" not in proc.stderr
    assert not marker.exists()


def test_other_callables_are_refused_too(tmp_path: Path) -> None:
    """builtins.eval is no more welcome than os.system: only the rebuild helpers of a
    TorchScript archive are ever resolved."""
    path = _write_archive(tmp_path / "evil.pt", pickle.dumps(_Eval(), protocol=2), {})
    with pytest.raises(ArchiveError, match=r"(__builtin__|builtins)\.eval"):
        archive_weights(path)


def test_a_tensor_reaching_past_its_storage_is_refused(tmp_path: Path) -> None:
    """size/stride/offset are checked against the storage: a tensor claiming 4x4 elements
    of a 6-element storage would read foreign memory through as_strided; it is an error
    that says which element it reaches."""
    attrs = _str("w") + _tensor("0", 6, (4, 4), (4, 1)) + _str("training") + b"\x89"
    path = _write_archive(tmp_path / "oob.pt", _module(attrs), {"0": np.zeros(6, np.float32).tobytes()})
    with pytest.raises(ArchiveError, match="reaches element 15 of a storage of 6"):
        compiler.load_torchscript(path)


def test_a_zip_that_is_no_torchscript_archive_is_named_as_such(tmp_path: Path) -> None:
    """Two top folders, or a torch.save checkpoint (data.pkl, no code/), are not archives
    irvm runs; the error says what was found."""
    two = tmp_path / "two.pt"
    with zipfile.ZipFile(two, "w") as zf:
        zf.writestr("a/data.pkl", b"")
        zf.writestr("b/data.pkl", b"")
    assert not is_torchscript_archive(two)
    with pytest.raises(ArchiveError, match="one top folder"):
        Archive(two)
    ckpt = tmp_path / "ckpt.pt"
    with zipfile.ZipFile(ckpt, "w") as zf:
        zf.writestr("ckpt/data.pkl", b"\x80\x02}.")
        zf.writestr("ckpt/version", "3")
    assert not is_torchscript_archive(ckpt)
    with pytest.raises(ArchiveError, match="torch.save checkpoint"):
        Archive(ckpt)


# -- compile errors point into the archive ---------------------------------------------


def test_an_unknown_operator_is_reported_at_the_archive_member_line_and_column(tmp_path: Path) -> None:
    """An operator irvm lacks fails the compile at ``code/__torch__.py:LINE:COL`` with the
    source line and a caret, before anything runs."""
    code = CODE.replace("torch.relu(", "torch.no_such_op(")
    path = _simple(tmp_path / "m.pt", np.ones((2, 2), np.float32), code)
    with pytest.raises(CompileError) as info:
        compiler.load_torchscript(path)
    text = str(info.value)
    assert text.startswith("code/__torch__.py:9:12: unknown operator aten::no_such_op(Tensor)")
    assert text.endswith("\n      return torch.no_such_op(torch.matmul(x, w))\n" + " " * 13 + "^")


def test_an_unsupported_statement_names_itself(tmp_path: Path) -> None:
    """Python that torch.jit.save never prints (a ``del``) is a compile error that names the
    construct at its line; a ``with`` on a tensor (no ``__enter__``) says so at its line."""
    code = CODE.replace("    w = self.w\n", "    del x\n    w = self.w\n")
    path = _simple(tmp_path / "m.pt", np.ones((2, 2), np.float32), code)
    with pytest.raises(CompileError, match=r"code/__torch__\.py:8:5: unsupported statement `del`"):
        compiler.load_torchscript(path)
    code = CODE.replace("    w = self.w\n", "    with x:\n      pass\n    w = self.w\n")
    path = _simple(tmp_path / "w.pt", np.ones((2, 2), np.float32), code)
    with pytest.raises(CompileError, match=r"code/__torch__\.py:8:10: method __enter__ called on a value of type Tensor"):
        compiler.load_torchscript(path)



ENUM_CODE = '''class Format(Enum):
  NCHW = "NCHW"
  NHWC = "NHWC"
class M(Module):
  __parameters__ = []
  __buffers__ = []
  fmt : __torch__.Format
  training : bool
  def forward(self: __torch__.M,
    x: Tensor) -> Tensor:
    _0 = __torch__.Format.NHWC
    fmt = self.fmt
    if torch.eq(fmt, _0):
      y = torch.permute(x, [0, 2, 3, 1])
    else:
      y = x
    return y
'''


@pytest.mark.parametrize("member", ["NCHW", "NHWC"])
def test_an_enum_attribute_reads_as_its_value(tmp_path: Path, member: str) -> None:
    """TorchScript pickles an enum member as REDUCE of its class with the bare value (no
    argument tuple); it reads as that value, and code comparing it with a member of the
    enum class runs the right branch."""
    attrs = _str("fmt") + _global("__torch__", "Format") + _str(member) + b"R" + _str("training") + b"\x89"
    path = _write_archive(tmp_path / "m.pt", _module(attrs), {}, ENUM_CODE)
    program, weights = compiler.torchscript.compile_archive(path)
    assert str(weights["fmt"]) == member
    x = np.arange(24, dtype=np.float32).reshape(1, 2, 3, 4)
    want = x.transpose(0, 2, 3, 1) if member == "NHWC" else x
    np.testing.assert_array_equal(vm.Interpreter(program, weights)(x), want)


def test_method_defaults_are_the_literals_the_source_writes(tmp_path: Path) -> None:
    """``method_defaults`` gives a method's trailing default arguments (what torch passes
    when a caller leaves them out), here ``scale: Optional[float]=None, k: int=2``."""
    from compiler.torchscript import method_defaults

    code = CODE.replace("    x: Tensor) -> Tensor:", "    x: Tensor,\n    scale: Optional[float]=None,\n    k: int=2) -> Tensor:")
    path = _simple(tmp_path / "m.pt", np.ones((2, 2), np.float32), code)
    assert method_defaults(path) == [None, 2]
    assert method_defaults(path, "missing") == []
