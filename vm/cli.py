"""``irvm``: the runtime's command line.

    irvm run PROGRAM [--inputs IN.npz] [--weights W.npz] [--output OUT.npz]
                     [--backend interp|static] [--trace TRACE.npz] [--no-fusion]
                     [--fuser blocked|numba]
    irvm profile PROGRAM --inputs IN.npz [--weights W.npz] [--runs N]
    irvm disasm PROGRAM
    irvm info PROGRAM      the inputs and outputs: names, dtypes, shapes

PROGRAM is graph IR text (``.ir``, compiled on the fly), bytecode (``.irbc``), or a
``torch.jit.save`` archive (``.pt``, compiled on the fly, its weights read from it;
``--weights`` entries override them).
IN.npz holds one array per graph input, keyed by the input's name without ``%`` (``x.1``)
or by position (``arg0``...); an int/float/bool input takes a 0-d array.  A graph with
one input also takes an ``.npy``.  W.npz holds a
module's weights under dotted state_dict keys.  OUT.npz gets ``out0``..``outN-1``, tuples and
lists flattened as ``out0.0``, ``out0.1``...  Without ``--output`` results are printed.

``--trace`` needs the interpreter backend (the static runtime reuses its buffers).  Files
irvm writes carry a mark, and no existing file without it is replaced unless ``--force``
(vm/files/kinds.py).  Before the first operator, inputs and weights are checked as PyTorch
would check them (vm/binding/preflight.py, vm/binding/weight_checks.py).

Exit codes: 0 ok, 1 the program failed at run time (or a bad input, or an overwrite was
refused), 65 the program does not compile, the bytecode is invalid, or the file is no
program, 66 a file cannot be read, 70 an internal error.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vm.binding.weights import override
from vm.command import load_npz, run_guarded, version
from vm.files.kinds import check_writable


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    if hasattr(args, "threads"):
        from vm.threads import set_num_threads

        set_num_threads(args.threads)
    # PyTorch computes inf - inf or 0 / 0 silently; numpy would print RuntimeWarnings.
    with np.errstate(all="ignore"):
        return run_guarded("irvm", lambda: args.handler(args))


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="irvm", description="Run TorchScript graph IR (or irvm bytecode) on numpy.")
    parser.add_argument("--version", action="version", version=f"irvm {version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run a program")
    _common(r)
    r.add_argument("--output", help="write the results to this .npz instead of printing them")
    r.add_argument("--backend", choices=["interp", "static"], default="interp")
    r.add_argument("--trace", metavar="TRACE.npz", help="save every intermediate value under its IR name (interp backend)")
    r.add_argument("--force", action="store_true", help="overwrite an existing file that irvm did not write")
    r.set_defaults(handler=_cmd_run)

    p = sub.add_parser("profile", help="per-operator time and the memory plan (static runtime)")
    _common(p)
    p.add_argument("--runs", type=int, default=20, help="timed runs after one warm-up (default 20)")
    p.add_argument("--chrome-trace", metavar="FILE", help="write the last timed run as Chrome trace-event JSON (Perfetto)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --chrome-trace file that irvm did not write")
    p.set_defaults(handler=_cmd_profile)

    d = sub.add_parser("disasm", help="print the bytecode of a program")
    d.add_argument("program")
    d.add_argument("--no-fusion", action="store_true")
    d.set_defaults(handler=_cmd_disasm)

    i = sub.add_parser("info", help="the program's inputs and outputs: names, dtypes, shapes")
    i.add_argument("program")
    i.set_defaults(handler=_cmd_info)
    return parser


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("program", help=".ir (compiled on the fly) or .irbc")
    p.add_argument("--inputs", help="npz with one array per graph input")
    p.add_argument("--weights", help="npz with the module's weights (dotted state_dict keys)")
    p.add_argument("--no-fusion", action="store_true", help="compile without fusion groups (.ir only)")
    p.add_argument(
        "--seed", type=int, default=None,
        help="seed of the runtime's random generator (rand, dropout in training...); not torch's stream",
    )
    p.add_argument(
        "--fuser", choices=["blocked", "numba"], default="blocked",
        help="how fusion groups run on big tensors: cache-blocked numpy (default) or numba (pip install irvm[fast])",
    )
    p.add_argument(
        "--threads", type=_positive, default=None, metavar="N",
        help="threads for BLAS, fused and compiled kernels (default: the cores this process may use)",
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of threads, got {text}")
    return value


def load_program(path: str, fusion: bool = True, weights: Any = None):
    """A Program from ``.irbc`` (verified before use), or from ``.ir`` text or a
    ``torch.jit.save`` archive (compiled now); any other kind of file is refused by ``vm.files.kinds.expect``, saying what it is.
    ``.ir`` text given ``weights`` is specialized for their settings, as ``torch.jit.freeze`` would."""
    return load_program_and_weights(path, fusion, weights)[0]


def load_program_and_weights(path: str, fusion: bool = True, weights: Any = None) -> tuple[Any, dict[str, Any]]:
    """``load_program``, and the weights a ``torch.jit.save`` archive holds ({} for any
    other file), read in the same pass over the archive."""
    from vm.files.kinds import FileKind, expect
    from vm.program.irbc import OlderFormatError, load

    kind = expect(path, "program")
    older = None
    own: dict[str, Any] = {}
    if kind is FileKind.IRBC:
        try:
            return load(path), own
        except OlderFormatError as err:  # the VM compiles nothing; the command line may
            print(f"irvm: {err}; compiling it now", file=sys.stderr)
            older = err
    import compiler
    from compiler.progress import Progress
    from compiler.torchscript import compile_archive

    with Progress("irvm: compiling") as progress:
        progress.stage(path)
        if older is not None:
            options = {"fusion": fusion, **older.options}
            program = compiler.compile_source(older.text, path, weights=older.weights, **options)
        elif kind is FileKind.TORCHSCRIPT:  # a torch.jit.save file, with its weights
            program, own = compile_archive(path, fusion=fusion)
        else:
            from compiler.cli import read_source

            program = compiler.compile_source(read_source(path), path, fusion=fusion, weights=weights)
    if progress.elapsed > SLOW_COMPILE:
        print(
            f"irvm: compiling {path} took {progress.elapsed:.1f}s; `irc compile {path}` writes a .irbc"
            f" that starts without compiling",
            file=sys.stderr,
        )
    return program, own


SLOW_COMPILE = 1.0  # seconds: `irvm run x.ir` says so when compiling takes longer


def _cmd_run(args: argparse.Namespace) -> int:
    from vm.core.errors import RunError
    from vm.files.npz import save_marked, save_outputs

    if args.trace and args.backend == "static":
        raise RunError(
            "--trace needs the interpreter (--backend interp): the static runtime reuses one memory "
            "slab for intermediates, so they are gone by the end of the run"
        )
    given = [Path(p) for p in (args.program, args.inputs, args.weights) if p]
    if args.output and args.trace and Path(args.output).resolve() == Path(args.trace).resolve():
        raise RunError(f"refusing to write {args.output} twice: --output and --trace name the same file")
    if args.output:
        check_writable(Path(args.output), inputs=given, force=args.force, kind="outputs")
    if args.trace:
        check_writable(Path(args.trace), inputs=given, force=args.force, kind="trace")
    given = load_npz(args.weights)
    program, own = load_program_and_weights(args.program, fusion=not args.no_fusion, weights=given if args.weights else None)
    weights = override(own, given, args.program)
    inputs = read_inputs(args.inputs, program)
    if args.backend == "static":
        from vm.static import StaticOptions, StaticRuntime

        result = StaticRuntime(program, weights, StaticOptions(fuser=args.fuser), seed=args.seed)(*inputs)
        trace = None
    else:
        from vm.interpreter.machine import Interpreter

        interp = Interpreter(program, weights, fuser=args.fuser, seed=args.seed)
        if args.trace:
            result, trace = interp.run_traced(*inputs)
        else:
            result, trace = interp(*inputs), None
    if trace is not None:
        save_marked(args.trace, {name: np.asarray(v) for name, v in trace.items() if _storable(v)}, "trace")
    results = result if isinstance(result, tuple) and len(program.output_types) > 1 else (result,)
    if args.output:
        save_outputs(args.output, list(results))
    else:
        for i, value in enumerate(results):
            print(f"out{i} = {_show(value)}")
    return 0


def read_inputs(path: str | None, program: Any) -> list[Any]:
    """The argument list from ``--inputs``: an .npz (see vm/files/npz.py), or an .npy holding the
    one input of a one-input graph."""
    from vm.files.kinds import FileKind, expect
    from vm.files.npz import load_inputs

    if path is not None and expect(path, "inputs") is FileKind.NPY:
        from vm.core.errors import RunError

        names = list(program.input_names[1:] if program.takes_self else program.input_names)
        if len(names) != 1:
            listing = ", ".join(f"%{n}" for n in names) or "none"
            raise RunError(
                f"{path} is an .npy (one array), but the program takes {len(names)} inputs ({listing}): "
                f"give an .npz with one entry per input (numpy.savez)"
            )
        try:
            array = np.load(path, allow_pickle=False)
        except ValueError as err:
            raise RunError(f"{path}: not a readable .npy file ({err})") from None
        return load_inputs({names[0]: array}, program)
    return load_inputs(load_npz(path, "inputs"), program)


def _storable(value: Any) -> bool:
    if isinstance(value, np.ndarray):
        return True
    return isinstance(value, (bool, int, float, str)) or value is None


def _show(value: Any) -> str:
    if isinstance(value, np.ndarray):
        body = np.array2string(value, threshold=60, precision=6, separator=", ")
        return f"tensor({body}, dtype={value.dtype}, shape={tuple(value.shape)})"
    if isinstance(value, tuple):
        return "(" + ", ".join(_show(v) for v in value) + ("," if len(value) == 1 else "") + ")"
    if isinstance(value, list):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    return repr(value)


def _cmd_profile(args: argparse.Namespace) -> int:
    from vm.static.profile import profile

    out = Path(args.chrome_trace) if args.chrome_trace else None
    if out is not None:  # checked before the (long) profile, as every output is
        given = [Path(p) for p in (args.program, args.inputs, args.weights) if p]
        check_writable(out, inputs=given, force=args.force, kind="chrome-trace")
    given = load_npz(args.weights)
    program, own = load_program_and_weights(args.program, fusion=not args.no_fusion, weights=given if args.weights else None)
    weights = override(own, given, args.program)
    inputs = read_inputs(args.inputs, program)
    from vm.static import StaticOptions

    options = StaticOptions(fuser=args.fuser)
    report = profile(program, inputs, weights=weights, runs=args.runs, options=options, seed=args.seed)
    print(report)
    if out is not None:
        import json

        out.write_text(json.dumps(report.chrome_trace()))
        print(f"wrote {args.chrome_trace} (open it in https://ui.perfetto.dev)", file=sys.stderr)
    return 0


def _cmd_disasm(args: argparse.Namespace) -> int:
    from vm.program.bytecode import disassemble

    print(disassemble(load_program(args.program, fusion=not args.no_fusion)), end="")
    return 0


def _cmd_info(args: argparse.Namespace) -> int:
    from vm.program.signature import describe_program

    program, weights = load_program_and_weights(args.program)
    text = describe_program(program)
    if weights:  # a .pt: %self comes from the archive itself
        text = text.replace("bound from --weights", f"bound from the archive ({len(weights)} entries)")
    print(text, end="")
    return 0


if __name__ == "__main__":
    sys.exit(main())
