"""Print the bytecode of a program, and optionally the interpreter's decoded form.

    python tools/disasm.py PROGRAM.ir|PROGRAM.irbc [--decoded] [--no-fusion]

The listing is ``vm.program.bytecode.disassemble``: offset, ``line:col`` of the emitting node
(``|`` when unchanged), opcode, operands and what they name (operator, constant,
register's IR name, jump target), one function after another, like clox's
``disassembleChunk``.  ``--decoded`` adds the register-form code the interpreter runs
(``vm.interpreter.decode``), with the superinstructions it formed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from compiler.diagnostics import IRError
from vm.program.bytecode import disassemble


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Disassemble an irvm program.")
    parser.add_argument("program", help=".ir text (compiled now) or .irbc bytecode")
    parser.add_argument(
        "--decoded",
        action="store_true",
        help="also show the interpreter's register form",
    )
    parser.add_argument("--no-fusion", action="store_true", help="compile without fusion groups")
    options = parser.parse_args(argv)
    try:
        from vm.cli import load_program

        program = load_program(options.program, fusion=not options.no_fusion)
        print(disassemble(program), end="")
        if options.decoded:
            from vm.interpreter.decode import listing
            from vm.interpreter.machine import Interpreter

            interp = Interpreter(program, _stub_weights(program))
            for function, decoded in zip(program.functions, interp.decoded):
                print(f"\n== {function.name} (decoded, starts at {decoded.start}) ==")
                print(listing(decoded, function))
    except IRError as err:
        print(err, file=sys.stderr)
        return 65
    return 0


def _stub_weights(program: object) -> dict[str, object]:
    """Placeholder arrays for ``<Tensor>`` constants: the listing needs no real weights."""
    import numpy as np

    from vm.ir.resolve import UnboundTensor

    stub: dict[str, object] = {}
    for function in getattr(program, "functions", ()):
        for value in function.constants:
            if isinstance(value, UnboundTensor):
                stub[value.name] = np.zeros(0, np.float32)
    return stub


if __name__ == "__main__":
    sys.exit(main())
