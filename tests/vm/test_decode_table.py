"""The decoded instruction set (vm/interpreter/decode.py ``DecodedOp``) is the one table the decoder,
the interpreter's dispatch loop and the decoded listing share.

The loop tests ``op <= OPGM`` for the register-form operators and ``op >= LOOPE`` for the
superinstructions, so the codes must stay in those ranges; every tuple the decoder makes
must have exactly the operands its table row names, or a handler would read the wrong
slot.
"""

from __future__ import annotations

import pytest

from compiler import compile_file
from tests.support.paths import EXAMPLES
from vm.interpreter import decode as D
from vm.interpreter.decode import DecodedOp
from vm.interpreter.machine import Interpreter


def test_codes_are_dense_and_ranged_as_the_loop_tests_them() -> None:
    """Codes are 0..N-1; the register-form operators come first, the superinstructions last,
    and the plain ints the loop compares are the table's values."""
    assert [op.value for op in DecodedOp] == list(range(len(DecodedOp)))
    register_ops = {DecodedOp.OP1, DecodedOp.OP1M, DecodedOp.OP2, DecodedOp.OP2M, DecodedOp.OPG, DecodedOp.OPGM}
    supers = {DecodedOp.LOOPE, DecodedOp.LOOPB, DecodedOp.CALLR, DecodedOp.RET1, DecodedOp.COPY}
    assert {op for op in DecodedOp if op.value <= D.OPGM} == register_ops
    assert {op for op in DecodedOp if op.value >= D.LOOPE} == supers
    for op in DecodedOp:
        value = getattr(D, op.name)
        assert type(value) is int and value == op.value, op.name


@pytest.mark.parametrize("name", ["fib", "control_flow", "dim_loop", "lstm_cell", "ratio_iou"])
def test_decoded_tuples_have_the_operands_their_row_names(name: str) -> None:
    """Every decoded instruction of an example is ``(code, *operands)`` with as many
    operands as ``DecodedOp`` lists for its code, and the listing names it by the table."""
    program = compile_file(EXAMPLES / f"{name}.ir")
    interp = Interpreter(program)
    for decoded, function in zip(interp.decoded, program.functions):
        for ins in decoded.code:
            op = DecodedOp(ins[0])
            assert len(ins) == 1 + len(op.operands), (op.name, ins)
        lines = D.listing(decoded, function).splitlines()
        assert [line.split()[1] for line in lines] == [DecodedOp(ins[0]).name for ins in decoded.code]
