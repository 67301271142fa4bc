"""The emitted bytecode of a small function, against a golden listing.

The listing shows the emitter's memory discipline (TorchScript's ``emitUse``): a value's
last use is a MOVE (``%y`` into the loop, ``%acc`` into the add, ``%n`` into the compare),
earlier uses are LOADs (``%x``); a value nobody reads is DROPR'd right after its
definition (``%unused``, the loop index ``%i``); a value whose last use is inside a
branch or a loop body is LOADed there and DROPR'd after the If/Loop (``%z``, ``%x``).
Constants are LOADC from the function's table; the loop is LOOP/STOREN/.../JMP and the If
is JF/JMP with the branch outputs stored at the join.  Compiled with ``passes=[]`` so
that the listing depends on the emitter alone.

To update after an intended change: ``IRVM_UPDATE_GOLDENS=1 pytest tests/test_emit_golden.py``
rewrites the expected text in this file.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from compiler import compile_source
from compiler.diagnostics import CompileError
from vm.bytecode import Opcode, disassemble

SOURCE = """\
graph(%x : Tensor, %n : int):
  %one : int = prim::Constant[value=1]()
  %true : bool = prim::Constant[value=1]()
  %y : Tensor = aten::mul(%x, %x)
  %unused : Tensor = aten::neg(%x)
  %z : Tensor = prim::Loop(%n, %true, %y)
    block0(%i : int, %acc : Tensor):
      %next : Tensor = aten::add(%acc, %x, %one)
      -> (%true, %next)
  %big : bool = aten::gt(%n, %one)
  %r : Tensor = prim::If(%big)
    block0():
      %w : Tensor = aten::relu(%z)
      -> (%w)
    block1():
      -> (%x)
  return (%r)
"""

EXPECTED = """\
== main (2 inputs, 1 outputs, 11 registers) ==
0000     1:1 STOREN 0 2       %x .. %n
0001     4:3 LOAD   0         %x
0002       | LOAD   0         %x
0003       | OP     0         aten::mul.Tensor
0004       | STORE  2         %y
0005     5:3 LOAD   0         %x
0006       | OP     1         aten::neg
0007       | STORE  3         %unused
0008       | DROPR  3         %unused
0009     6:3 LOADC  0         0
0010       | LOAD   1         %n
0011       | LOADC  1         True
0012       | MOVE   2         %y
0013       | LOOP   24 3      -> 24
0014       | STOREN 4 2       %i .. %acc
0015       | DROPR  4         %i
0016     8:7 MOVE   5         %acc
0017       | LOAD   0         %x
0018       | LOADC  2         1
0019       | OP     2         aten::add.Tensor
0020       | STORE  6         %next
0021     6:3 LOADC  1         True
0022       | MOVE   6         %next
0023       | JMP    13        -> 13
0024       | STORE  7         %z
0025    10:3 MOVE   1         %n
0026       | LOADC  2         1
0027       | OP     3         aten::gt.int
0028       | STORE  8         %big
0029    11:3 MOVE   8         %big
0030       | JF     36        -> 36
0031    13:7 LOAD   7         %z
0032       | OP     4         aten::relu
0033       | STORE  9         %w
0034    11:3 MOVE   9         %w
0035       | JMP    37        -> 37
0036       | LOAD   0         %x
0037       | STORE  10        %r
0038       | DROPR  7         %z
0039       | DROPR  0         %x
0040       | MOVE   10        %r
0041     1:1 RET
"""


def test_disassembly_matches_golden() -> None:
    got = disassemble(compile_source(SOURCE, "golden.ir", passes=[]))
    if os.environ.get("IRVM_UPDATE_GOLDENS"):
        path = Path(__file__)
        text = path.read_text()
        start = text.index('EXPECTED = """\\\n') + len('EXPECTED = """\\\n')
        end = text.index('"""', start)
        path.write_text(text[:start] + got + text[end:])
        return
    assert got == EXPECTED


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
