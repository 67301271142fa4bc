"""Every count an ``.irbc`` allocates by is checked against the code that uses it, at load
(issue #40, ``vm.program.irbc_tables.check_counts``).

The campaign's reproducers: ``n_registers`` = 2^62 with the hash recomputed loaded, and the
interpreter's first call died of a MemoryError (exit 70); a fused kernel spec claiming 2^31
inputs loaded and ran 30 s at 2.8 GB.  Each edit here recomputes the hash, so only the
checks stand between the file and a run, for both backends (they share ``irbc.load``).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import compiler
import vm
from compiler.diagnostics import BytecodeError
from tests.support.paths import ROOT
from vm.program.bytecode import Opcode
from vm.program.irbc import MAGIC_MEMBER, _digest, load, save
from vm.program.irbc_tables import MAX_REGISTERS

EXAMPLES = ROOT / "examples"


@pytest.fixture(scope="module")
def fused_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """ratio_iou compiled with fusion: its main calls one ``prim::FusedKernel``."""
    path = tmp_path_factory.mktemp("irbc") / "ratio_iou.irbc"
    save(compiler.compile_file(EXAMPLES / "ratio_iou.ir"), path, {"fusion": True})
    return path


def _rewrite(path: Path, out: Path, member: str, edit: Any) -> Path:
    """Copy an .irbc with ``member`` edited by ``edit`` (bytes -> bytes), hash recomputed."""
    with zipfile.ZipFile(path) as zf:
        header = json.loads(zf.read(MAGIC_MEMBER))
        members = [(n, zf.read(n)) for n in zf.namelist()[1:]]
    members = [(n, edit(d) if n == member else d) for n, d in members]
    header["sha256"] = _digest(members)
    with zipfile.ZipFile(out, "w") as zf:
        zf.writestr(zipfile.ZipInfo(MAGIC_MEMBER), json.dumps(header), compress_type=zipfile.ZIP_STORED)
        for n, d in members:
            zf.writestr(n, d)
    return out


def _edit_body(path: Path, out: Path, edit: Any) -> Path:
    def on_json(data: bytes) -> bytes:
        body = json.loads(data)
        edit(body)
        return json.dumps(body).encode()

    return _rewrite(path, out, "program.json", on_json)


def _spec(body: dict[str, Any]) -> list[Any]:
    """The stored FusionSpec of main's fused kernel: [n_inputs, constants, steps, outputs, kinds]."""
    (ref,) = [r for r in body["functions"][0]["operators"] if r["name"] == "prim::FusedKernel"]
    return dict((k, v) for k, v in ref["attrs"])["spec"]["tuple"]


def test_the_campaigns_register_count_is_refused_at_load(fused_file: Path, tmp_path: Path) -> None:
    """n_registers = 2^62 (the reproducer) is a BytecodeError naming the function, for
    the interpreter and the static runtime alike (both load through ``irbc.load``)."""
    bad = _edit_body(fused_file, tmp_path / "regs.irbc", lambda b: b["functions"][0].update(n_registers=2**62))
    with pytest.raises(BytecodeError, match="function 'main' declares 4,611,686,018,427,387,904 registers, its instructions use 9"):
        load(bad)
    with pytest.raises(BytecodeError, match="registers"):
        vm.load(bad)


def test_one_register_more_than_the_code_uses_is_refused(fused_file: Path, tmp_path: Path) -> None:
    bad = _edit_body(fused_file, tmp_path / "regs.irbc", lambda b: b["functions"][0].update(n_registers=10))
    with pytest.raises(BytecodeError, match="declares 10 registers, its instructions use 9"):
        load(bad)


def test_a_register_index_past_the_limit_is_refused(fused_file: Path, tmp_path: Path) -> None:
    """Naming a huge register in the code as well (so the count matches the code) meets
    the fixed limit: a frame is a list of that many slots."""

    def edit(body: dict[str, Any]) -> None:
        f = body["functions"][0]
        f["n_registers"] = 2**40
        loads = [ins for ins in f["code"] if ins[0] in (Opcode.LOAD, Opcode.MOVE)]
        loads[0][1] = 2**40 - 1  # one LOAD reads the last register: the count matches the code

    bad = _edit_body(fused_file, tmp_path / "regs.irbc", edit)
    with pytest.raises(BytecodeError, match=f"more than irvm's limit of {MAX_REGISTERS:,}"):
        load(bad)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda s: s.__setitem__(0, 2**31), "declares 2,147,483,648 inputs"),  # the reproducer
        (lambda s: s[1]["tuple"][0]["tuple"].__setitem__(0, 2**31), "constant 0 is in slot 2,147,483,648"),
        (lambda s: s[2]["tuple"][0]["tuple"].__setitem__(2, 2**31), "step 0 .* into slot 2,147,483,648"),
        (lambda s: s[2]["tuple"][0]["tuple"][1]["tuple"].__setitem__(0, 10**6), "step 0 .* reads slots \\[1000000"),
        (lambda s: s[3]["tuple"].__setitem__(0, 2**31), "returns slots \\[2147483648\\]"),
        (lambda s: s[2]["tuple"][0]["tuple"][0]["tuple"].__setitem__(1, 3), "step 0 passes 2 values to aten::max.other taking 3"),
        (lambda s: s[4]["tuple"].pop(), "declares 8 inputs \\(7 kinds\\)"),
        (lambda s: s.pop(), "malformed spec"),
    ],
    ids=["inputs", "constant-slot", "step-slot", "step-reads-later", "output-slot", "step-arity", "kinds", "shape"],
)
def test_a_fused_kernel_spec_must_be_the_one_its_code_calls(fused_file: Path, tmp_path: Path, edit: Any, message: str) -> None:
    bad = _edit_body(fused_file, tmp_path / "spec.irbc", lambda b: edit(_spec(b)))
    with pytest.raises(BytecodeError, match=f"fused kernel prim::FusionGroup.*{message}"):
        load(bad)


def test_an_operator_pushing_more_values_than_its_schema_returns_is_refused(fused_file: Path, tmp_path: Path) -> None:
    def edit(body: dict[str, Any]) -> None:
        (ref,) = [r for r in body["node_operators"] if r["name"] == "aten::max.other"][:1]
        ref["n_outputs"] = 2**20

    bad = _edit_body(fused_file, tmp_path / "outs.irbc", edit)
    with pytest.raises(BytecodeError, match="aten::max.other takes 2 inputs and returns 1,048,576: irvm's limit is 65,536"):
        load(bad)


def test_a_tensor_constant_claiming_more_than_its_member_is_refused(tmp_path: Path) -> None:
    """A .npy member whose header claims 2^40 elements is refused before numpy allocates."""
    text = "graph(%x.1 : Tensor):\n  %c : Tensor = prim::Constant[value={2.5}]()\n  %one : int = prim::Constant[value=1]()\n" \
           "  %y : Tensor = aten::add(%x.1, %c, %one)\n  return (%y)\n"
    good = tmp_path / "c.irbc"
    save(compiler.compile_source(text), good)
    with zipfile.ZipFile(good) as zf:
        (member,) = [n for n in zf.namelist() if n.startswith("arrays/")]
    huge = io.BytesIO()
    np.lib.format.write_array_header_1_0(huge, {"descr": "<f4", "fortran_order": False, "shape": (2**40,)})
    bad = _rewrite(good, tmp_path / "bad.irbc", member, lambda data: huge.getvalue() + data[-4:])
    with pytest.raises(BytecodeError, match=f"constant {member}: the header claims an array of shape \\[1099511627776\\]"):
        load(bad)
    assert vm.Interpreter(load(good))(np.ones(2, np.float32)).tolist() == [3.5, 3.5]
