"""The emitted bytecode of small functions, against golden listings.

The listings are data: ``tests/emit/goldens/*.test``, mypyc-style ``[case]`` / ``[out]``
files whose comments say what each listing shows (MOVE on a last use, DROPR of a dead
value, LOADC, the LOOP and If shapes).  Each case is compiled with ``passes=[]`` so that
its listing depends on the emitter alone.  After an intended change,
``pytest tests/emit --regen-goldens`` rewrites the ``[out]`` sections.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from compiler import compile_source
from compiler.diagnostics import CompileError
from tests.support.goldens import GoldenCase, read_cases
from vm.program.bytecode import Opcode, disassemble

GOLDENS = sorted((Path(__file__).parent / "goldens").glob("*.test"))
CASES = [case for path in GOLDENS for case in read_cases(path)]
SOURCE = next(c.source for c in CASES if c.name == "loop_and_branch")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_disassembly_matches_golden(case: GoldenCase, regen_goldens: bool) -> None:
    """The listing of each golden case is exactly its ``[out]`` section."""
    case.check(disassemble(compile_source(case.source, "golden.ir", passes=[])), regen_goldens)


def test_every_register_is_stored_once_and_freed() -> None:
    """Each register is written by exactly one STORE/STOREN, and every register of a
    tensor value is released by a MOVE or a DROPR somewhere (none leaks to the end)."""
    program = compile_source(SOURCE, "golden.ir", passes=[])
    main = program.main
    stored: list[int] = []
    freed: set[int] = set()
    for ins in main.instructions:
        if ins.op is Opcode.STORE:
            stored.append(ins.x)
        elif ins.op is Opcode.STOREN:
            stored.extend(range(ins.x, ins.x + ins.n))
        elif ins.op in (Opcode.MOVE, Opcode.DROPR):
            freed.add(ins.x)
    assert sorted(stored) == list(range(main.n_registers))
    assert freed == set(range(main.n_registers))


def test_all_unresolvable_ops_reported_at_once() -> None:
    text = (
        "graph(%x : Tensor):\n"
        "  %a : Tensor = aten::frobnicate(%x)\n"
        "  %b : Tensor = aten::mul(%a, %x)\n"
        "  %c : Tensor = aten::relu(%b, %b, %b)\n"
        "  %d : Tensor = foo::bar(%c)\n"
        "  return (%d)\n"
    )
    try:
        compile_source(text, "bad.ir", passes=[])
    except CompileError as err:
        message = str(err)
    else:
        raise AssertionError("expected a CompileError")
    assert "3 nodes cannot be compiled" in message
    for line, what in ((2, "aten::frobnicate"), (4, "aten::relu"), (5, "foo::bar")):
        assert re.search(rf"bad\.ir:{line}:\d+: .*{re.escape(what)}", message), (
            line,
            message,
        )
