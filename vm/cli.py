"""``irvm``: the runtime's command line.

    irvm run PROGRAM [--inputs IN.npz] [--weights W.npz] [--output OUT.npz]
                     [--backend interp|static] [--trace TRACE.npz] [--no-fusion]
                     [--fuser blocked|numba] [--method NAME]
    irvm profile PROGRAM --inputs IN.npz [--weights W.npz] [--runs N]
    irvm disasm PROGRAM
    irvm info PROGRAM      the inputs and outputs: names, dtypes, shapes; a .pt's methods
    irvm serve MODEL...    serve models over the Open Inference Protocol v2 (vm/serve/command.py)

PROGRAM is graph IR text (``.ir``, compiled on the fly), bytecode (``.irbc``), or a
``torch.jit.save`` archive (``.pt``, compiled on the fly, its weights read from it;
``--weights`` entries override them).
IN.npz holds one array per graph input, keyed by the input's name without ``%`` (``x.1``)
or by position (``arg0``...); an int/float/bool input takes a 0-d array.  A graph with
one input also takes an ``.npy``.  W.npz holds a
module's weights under dotted state_dict keys.  OUT.npz gets ``out0``..``outN-1``, tuples and
lists flattened as ``out0.0``, ``out0.1``...  Without ``--output`` results are printed.

``run`` and ``profile`` open the program with ``vm.load`` (vm/api/open.py: the weights merged
and checked there, once) and call the model; ``info`` reads it with the same front door's
``read_program``.  ``--trace`` needs the interpreter backend (the static runtime reuses its buffers).  Files
irvm writes carry a mark, and no existing file without it is replaced unless ``--force``
(vm/files/kinds.py).  Before the first operator, inputs and weights are checked as PyTorch
would check them (vm/binding/preflight.py, vm/binding/weight_checks.py).

Exit codes: 0 ok, 2 a usage error (an unknown option, a missing argument), 1 the program failed at run time (or a bad input, or an overwrite was
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

from vm.api.open import archive_methods, package_listing, read_program
from vm.command import load_npz, run_guarded, version
from vm.files.kinds import FileKind, check_writable


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

    r = sub.add_parser("run", help="run a program (.pt, .ir or .irbc)")
    _common(r)
    r.add_argument("--output", metavar="OUT.npz", help="write the results to this .npz (out0, out1...) instead of printing them")
    r.add_argument(
        "--backend", choices=["interp", "static"], default="interp",
        help="interp: the interpreter VM (bytecode; the default, and what --trace needs); static: the static runtime "
             "(generated code and a memory plan: faster on repeated calls)",
    )
    r.add_argument("--trace", metavar="TRACE.npz", help="save every intermediate value under its IR name (interp backend)")
    r.add_argument("--method", default="forward", metavar="NAME",
                   help="run this method of a .pt's module (`irvm info` lists them), on the archive's own state")
    r.add_argument("--force", action="store_true", help="overwrite an existing file that irvm did not write")
    r.set_defaults(handler=_cmd_run)

    p = sub.add_parser("profile", help="time per operator and the memory plan of a program (.pt, .ir or .irbc) on the static runtime")
    _common(p)
    p.add_argument("--runs", type=int, default=20, help="timed runs after one warm-up (default 20)")
    p.add_argument("--chrome-trace", metavar="FILE", help="write the profiled run (the median one, as the table) as Chrome trace-event JSON (Perfetto)")
    p.add_argument("--force", action="store_true", help="overwrite an existing --chrome-trace file that irvm did not write")
    p.set_defaults(handler=_cmd_profile)

    d = sub.add_parser("disasm", help="print the bytecode of a program")
    d.add_argument("program", help="the program: a torch.jit.save archive (.pt, its weights inside), graph IR text (.ir; both compiled now) or irvm bytecode (.irbc)")
    d.add_argument("--no-fusion", action="store_true", help="compile without fusion groups (a .pt or .ir)")
    d.set_defaults(handler=_cmd_disasm)

    i = sub.add_parser("info", help="the program's inputs and outputs: names, dtypes, shapes")
    i.add_argument(
        "--weights", metavar="W.npz", help="the module's weights, whose layers imply input dtypes and shapes",
    )
    i.add_argument("program", help="the program: a torch.jit.save archive (.pt, its weights inside), graph IR text (.ir; both compiled now) or irvm bytecode (.irbc)")
    _module_option(i)
    i.set_defaults(handler=_cmd_info)

    from vm.serve.command import add_parser as add_serve_parser

    add_serve_parser(sub)
    return parser


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("program", help="the program: a torch.jit.save archive (.pt, its weights inside), graph IR text (.ir; both compiled now) or irvm bytecode (.irbc)")
    _module_option(p)
    p.add_argument(
        "--inputs", metavar="IN.npz",
        help="an .npz with one array per input, keyed by name (x) or position (arg0); an .npy for a one-input model",
    )
    p.add_argument(
        "--weights", metavar="W.npz",
        help="an .npz of the module's weights under dotted state_dict keys (for a .pt: entries replacing its own)",
    )
    p.add_argument(
        "--weights-partial", action="store_true",
        help="accept weights whose keys do not match what the model reads (load_state_dict(strict=False))",
    )
    p.add_argument(
        "--no-fusion", action="store_true",
        help="run elementwise operators one by one, not as fusion groups (a .pt or .ir is compiled so; an .irbc "
             "keeps what it was compiled with)",
    )
    p.add_argument(
        "--seed", type=int, default=None,
        help="seed of the runtime's random generator (rand, dropout in training...); not torch's stream",
    )
    p.add_argument(
        "--quantized-engine", choices=["fbgemm", "qnnpack"], default="fbgemm",
        help="whose arithmetic quantized operators follow: fbgemm (torch's default on x86) or qnnpack (ARM, mobile)",
    )
    p.add_argument(
        "--quantized-kernel", choices=["vnni", "avx512", "avx2"], default=None,
        help="fbgemm's int8 kernel to reproduce (default: the one torch runs on this CPU; they differ where "
             "8-bit products saturate, docs/quantized.md)",
    )
    p.add_argument(
        "--fuser", choices=["blocked", "numba"], default="blocked",
        help="how fusion groups run on big tensors: cache-blocked numpy (default) or numba (pip install irvm[fast])",
    )
    p.add_argument(
        "--threads", type=_positive, default=None, metavar="N",
        help="threads for BLAS, fused and compiled kernels (default: the cores this process may use)",
    )


def _module_option(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--module", metavar="NAME",
        help="of a torch.package archive, the TorchScript module to run, by its path in the package "
             "(models/net.pkl; `irvm info PACKAGE` lists them)",
    )


def _positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a positive number of threads, got {text}")
    return value


def load_program(path: str, fusion: bool = True, weights: Any = None) -> Any:
    """A Program from ``.irbc`` (verified before use), or from ``.ir`` text or a
    ``torch.jit.save`` archive (compiled now); any other kind of file is refused by ``vm.files.kinds.expect``, saying what it is.
    ``.ir`` text given ``weights`` is specialized for their settings, as ``torch.jit.freeze`` would
    (``vm.api.open.read_program``, the one reader of program files)."""
    return read_program(path, fusion=fusion, weights=weights, note=_note).program


def _note(message: str) -> None:
    print(f"irvm: {message}", file=sys.stderr)


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
    model = _open(args, "static" if args.backend == "static" else "interp", method=args.method)
    inputs = read_inputs(args.inputs, model.program)
    if args.trace:
        result, trace = model.run_traced(*inputs)
    else:
        result, trace = model(*inputs), None
    program = model.program
    if trace is not None:
        save_marked(args.trace, {name: np.asarray(v) for name, v in trace.items() if _storable(v)}, "trace")
    results = result if isinstance(result, tuple) and len(program.output_types) > 1 else (result,)
    if args.output:
        save_outputs(args.output, list(results))
    else:
        for i, value in enumerate(results):
            print(f"out{i} = {_show(value)}")
    return 0


def _open(args: argparse.Namespace, backend: str, method: str = "forward") -> Any:
    """The model of ``irvm run``/``profile``: ``vm.load`` with the command line's options (the
    front door: the one merge of ``--weights`` over a ``.pt``'s own and its strict check)."""
    from vm.api.open import load

    return load(
        args.program, args.weights, backend=backend, strict=not args.weights_partial, fusion=not args.no_fusion,
        fuser=args.fuser, seed=args.seed, quantized_engine=args.quantized_engine,
        quantized_kernel=args.quantized_kernel, module=args.module, method=method, note=_note,
    )


def read_inputs(path: str | None, program: Any) -> list[Any]:
    """The argument list from ``--inputs``: an .npz (see vm/files/npz.py), or an .npy holding the
    one input of a one-input graph."""
    from vm.files.kinds import expect
    from vm.files.npz import load_inputs

    if path is None:
        _refuse_no_inputs(program)
    if path is not None and expect(path, "inputs") is FileKind.NPY:
        from vm.core.errors import RunError

        names = list(program.input_names[1:] if program.takes_self else program.input_names)
        if len(names) != 1:
            listing = ", ".join(f"%{n}" for n in names) or "none"
            raise RunError(
                f"{path} is an .npy (one array), but the program takes {len(names)} inputs ({listing}): "
                f"give an .npz with one entry per input (numpy.savez)"
            )
        from vm.files.arrays import check_npy

        check_npy(path)  # the header against the file's size, before numpy allocates
        try:
            array = np.load(path, allow_pickle=False)
        except ValueError as err:
            raise RunError(f"{path}: not a readable .npy file ({err})") from None
        return load_inputs({names[0]: array}, program)
    return load_inputs(load_npz(path, "inputs"), program)


def _refuse_no_inputs(program: Any) -> None:
    """A RunError listing the inputs when the program needs some and ``--inputs`` is not given."""
    from vm.core.errors import RunError

    names = list(program.input_names[1:] if program.takes_self else program.input_names)
    types = list(program.input_types[1:] if program.takes_self else program.input_types)
    needed = len(names) - len(tuple(getattr(program, "input_defaults", ())))
    if needed <= 0:
        return
    listing = ", ".join(f"{n} ({t})" for n, t in zip(names, types))
    raise RunError(
        f"the program takes {len(names)} input(s): {listing}; give them with --inputs IN.npz, one array per input "
        f"under its name (numpy.savez('IN.npz', {names[0]}=...)), or an .npy for a one-input program"
        + ("; `irvm info PROGRAM` lists their dtypes and shapes" if names else "")
    )


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
    model = _open(args, "static")
    inputs = read_inputs(args.inputs, model.program)
    forward = model.method(model.entry)
    # the module the model built (specialized for the weights by the front door), timed as it was built
    report = profile(forward.static_module, inputs, runs=args.runs, seed=args.seed, setup=forward.setup_seconds)
    print(report)
    if out is not None:
        import json

        from vm.files.atomic import atomic_write_bytes

        atomic_write_bytes(out, json.dumps(report.chrome_trace()).encode())
        print(f"wrote {args.chrome_trace} (open it in https://ui.perfetto.dev)", file=sys.stderr)
    return 0


def _cmd_disasm(args: argparse.Namespace) -> int:
    from vm.program.bytecode import disassemble

    print(disassemble(load_program(args.program, fusion=not args.no_fusion)), end="")
    return 0


def _example_text(example: Any) -> str:
    """``float32 [2, 3, 8, 8]`` for a recorded example (an array or a (dtype, shape) pair)."""
    if isinstance(example, np.ndarray):
        return f"{example.dtype} {list(example.shape)}"
    return f"{example[0]} {list(example[1])}"


def _cmd_info(args: argparse.Namespace) -> int:
    from vm.api.model import quantized_arithmetic
    from vm.api.signature import input_args
    from vm.files.kinds import sniff
    from vm.program.signature import describe_program

    if args.module is None and sniff(args.program) is FileKind.PACKAGE:
        print(package_listing(args.program), end="")
        return 0
    # the front door's reader, not vm.load: info describes a program whose weights may not be
    # given (what --weights needs is part of what it says), and a vm.Model that cannot run fails at load
    opened = read_program(args.program, note=_note, module=args.module)
    program, weights = opened.program, opened.own_weights
    given = load_npz(args.weights) if args.weights else {}
    known = [(a.dtype.name if a.dtype is not None else None, a.shape)
             for a in input_args(program, opened.examples, {**weights, **given}, None if given else opened.implied)]
    text = describe_program(program, known)
    if weights:  # a .pt: %self comes from the archive itself
        text = text.replace("bound from --weights", f"bound from the archive ({len(weights)} entries)")
    if opened.kind is FileKind.TORCHSCRIPT:  # its other methods: `irvm run --method NAME`
        text += f"methods: {', '.join(archive_methods(args.program))}\n"
    state = getattr(program, "state", ())
    if state:
        text += f"state: {', '.join(state)} (attributes a method writes: calls run one at a time)\n"
    print(text, end="")
    examples = [e for e in (opened.examples or getattr(program, "example_inputs", None) or ())]
    if examples and len(examples) == len(known):
        names = [a.name for a in input_args(program)]
        shown = ", ".join(f"{n} {_example_text(e)}" for n, e in zip(names, examples) if e is not None)
        print(f"example inputs (they fix dtypes and ranks, not sizes): {shown}")
    arithmetic = quantized_arithmetic(program, None)
    if arithmetic:
        kernel = arithmetic["quantized_kernel"]
        print(f"quantized: {arithmetic['quantized_engine']} arithmetic (--quantized-engine qnnpack for qnnpack's), "
              f"fbgemm's {kernel!r} kernel, this CPU's (--quantized-kernel pins another)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
