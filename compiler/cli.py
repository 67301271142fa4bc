"""``irc``: the compiler's command line.

    irc compile model.ir|model.pt [-o model.irbc] [--emit ir|bytecode] [-v] [--fuser numba]
                         [--passes inline_calls,pool_constants,...] [--no-fusion]
                         [--print-after PASS] [--print-after-all [--diff]]
    irc check model.ir          everything compile checks, writing nothing
    irc passes                  list the passes of the default pipeline

A usage error (an unknown option, a missing argument) exits 2.  Errors in the input print
as one paragraph (``file:line:col: message``, the line and a caret) and exit 65; a missing or unreadable file exits 66; anything else is an internal
error (exit 70), printed without a traceback unless ``IRVM_DEBUG=1``.

``--passes``, ``--print-after`` and ``--print-after-all`` are for looking at the passes:
with them ``irc compile`` writes no ``.irbc`` unless ``-o`` names one.

Writing never destroys what the user gave: ``-o`` refuses to write over the input, and
over an existing file that is not an irvm bytecode file (or picture irc drew), unless
``--force``; a refusal exits 1.
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from vm.command import run_guarded, version


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    return run_guarded("irc", lambda: args.handler(args))


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="irc", description="Compile TorchScript graph IR to irvm bytecode.")
    parser.add_argument("--version", action="version", version=f"irc (irvm) {version()}")
    sub = parser.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="parse, optimize and emit bytecode (.irbc)")
    c.add_argument("file", help="the program: graph IR text (.ir, as PyTorch prints it) or a torch.jit.save archive (.pt)")
    c.add_argument(
        "-o", "--output",
        help="bytecode file to write (default: FILE with .irbc; with --passes or --print-after*, nothing unless -o)",
    )
    c.add_argument("--module", metavar="NAME",
                   help="of a torch.package archive, the TorchScript module to compile (models/net.pkl)")
    c.add_argument("--emit", choices=["ir", "bytecode"], help="print the optimized IR or a disassembly instead of writing a file")
    c.add_argument("--passes", help="comma-separated pass names to run instead of the default pipeline ('' for none)")
    c.add_argument("--no-fusion", action="store_true", help="do not group elementwise ops into fusion groups")
    c.add_argument(
        "--weights", metavar="W.npz",
        help="compile for these weights: module settings (training, modes...) become constants (docs/weights.md)",
    )
    c.add_argument(
        "--example-inputs", metavar="IN.npz",
        help="inputs as irvm run takes them: their dtypes and shapes are recorded in the .irbc (irvm info, vm.load)",
    )
    c.add_argument("--print-after", action="append", default=[], metavar="PASS", help="print the IR after PASS (repeatable)")
    c.add_argument("--print-after-all", action="store_true", help="print the IR after every pass")
    c.add_argument("--diff", action="store_true", help="with --print-after*, print a unified diff against the previous stage")
    c.add_argument("-v", "--verbose", action="store_true", help="print what each pass changed")
    c.add_argument("--force", action="store_true", help="overwrite an existing output file that is not irvm bytecode")
    c.add_argument(
        "--fuser", choices=["blocked", "numba"], default="blocked",
        help="with numba: compile the fusion groups' numba kernels now, into the cache, so runs load them",
    )
    c.set_defaults(handler=_cmd_compile)

    k = sub.add_parser("check", help="check everything compile checks, writing nothing")
    k.add_argument("file", help="the program: graph IR text (.ir) or a torch.jit.save archive (.pt)")
    k.add_argument("--no-fusion", action="store_true", help="check without fusion groups")
    k.set_defaults(handler=_cmd_check)

    p = sub.add_parser("passes", help="list the passes of the default pipeline")
    p.set_defaults(handler=_cmd_passes)

    v = sub.add_parser("viz", help="draw the graph (graphviz)")
    v.add_argument("file", help="the program: graph IR text (.ir) or a torch.jit.save archive (.pt)")
    v.add_argument("-o", "--output", help="graph.svg, graph.png or graph.dot (default: FILE.svg)")
    v.add_argument("--after", metavar="PASS", help="draw the graph as it is after PASS of the pipeline")
    v.add_argument("--constants", action="store_true", help="draw constants as nodes instead of folding them into labels")
    v.add_argument("--no-fusion", action="store_true", help="with --after: draw without fusion groups")
    v.add_argument("--expand", action="store_true", help="draw every node of a large graph (default: one box per module)")
    v.add_argument("--force", action="store_true", help="overwrite an existing output file")
    v.set_defaults(handler=_cmd_viz)
    return parser


def read_source(path: str) -> str:
    """The text of the program at ``path``: a ``torch.jit.save`` archive's ``forward``
    compiled to IR, else the file's text (``vm.files.kinds.read_program_text``)."""
    from compiler.torchscript import archive_ir_text
    from vm.files.kinds import read_program_text

    text = archive_ir_text(path)
    if text is not None:
        return text
    return read_program_text(path)


def read_module(path: str, packaged: str | None = None) -> tuple[str, Any, dict[str, Any] | None]:
    """``(text, module, weights)`` of the program at ``path``: a ``torch.jit.save`` archive's
    ``forward`` (compiled from its source in one read of the archive, so the module keeps
    what printed IR cannot carry, such as the defaults of its arguments) with the archive's
    weights (``packaged``: the module of a torch.package archive); else the file's text
    parsed, and None."""
    from compiler.torchscript import is_torchscript_archive, load_torchscript
    from vm.ir.printer import print_module

    if is_torchscript_archive(path):
        module, weights = load_torchscript(path, module=packaged)
        return print_module(module), module, weights
    from compiler.parser import parse

    text = read_source(path)
    return text, parse(text, path), None


def _cmd_check(args: argparse.Namespace) -> int:
    """Everything ``irc compile`` checks (parse, verify, the pipeline, operator resolution,
    emitting into memory), writing nothing."""
    from compiler import pipeline
    from compiler.emit import emit
    from compiler.verify import verify

    source, module, _ = read_module(args.file)
    verify(module)
    optimized, _ = pipeline.optimize(module, None, fusion=not args.no_fusion, verified=True)
    emit(optimized, source=source)
    n = sum(1 for _ in module.main.walk())
    print(f"{args.file}: ok ({n} nodes, {len(module.functions)} functions)")
    return 0


def _cmd_passes(args: argparse.Namespace) -> int:
    from compiler import pipeline

    for name in pipeline.DEFAULT_PIPELINE:
        print(name)
    return 0


def _stage_printer(diff: bool) -> Callable[[str, str], None]:
    previous: dict[str, str] = {}

    def show(name: str, text: str) -> None:
        if diff and "text" in previous:
            lines = difflib.unified_diff(
                previous["text"].splitlines(keepends=True),
                text.splitlines(keepends=True),
                fromfile=f"before {name}",
                tofile=f"after {name}",
            )
            body = "".join(lines) or "(no change)\n"
            print(f"=== after {name} (diff) ===\n{body}", end="")
        else:
            print(f"=== after {name} ===\n{text}", end="" if text.endswith("\n") else "\n")
        previous["text"] = text

    return show


def _cmd_compile(args: argparse.Namespace) -> int:
    from compiler.progress import Progress

    with Progress("irc") as progress:
        return _compile(args, progress)


def _compile(args: argparse.Namespace, progress: Any) -> int:
    import time

    from compiler import pipeline
    from compiler.emit import emit
    from compiler.verify import verify
    from vm.ir.printer import print_module

    timings: list[tuple[str, float]] = []

    def timed(name: str, work: Callable[[], Any]) -> Any:
        progress.stage(name)
        start = time.perf_counter()
        result = work()
        timings.append((name, time.perf_counter() - start))
        return result

    source, module, own = timed("parse", lambda: read_module(args.file, args.module))
    timed("verify", lambda: verify(module))
    passes = None if args.passes is None else [p.strip() for p in args.passes.split(",") if p.strip()]
    print_after = ("all",) if args.print_after_all else tuple(args.print_after)
    printer = _stage_printer(args.diff)
    if print_after and args.diff:
        printer("input", print_module(module))
    weights = None
    if args.weights:
        from vm.command import load_npz

        weights = load_npz(args.weights)
    if own is not None:  # a .pt: specialized for its own settings (or --weights over them), as irvm run does
        from vm.binding.weights import override

        weights = override(own, weights or {}, args.file)
    optimized, records = pipeline.optimize(
        module, passes, fusion=not args.no_fusion, print_after=print_after, printer=printer, weights=weights,
        on_pass=progress.stage, verified=True,
    )
    if args.verbose:
        for name, seconds in timings:
            print(f"[{name}: {_ms(seconds)}]", file=sys.stderr)
        for record in records:
            print(f"[{record}; {_ms(record.seconds)}]", file=sys.stderr)
    if args.emit == "ir":
        print(print_module(optimized), end="")
        return 0
    program = timed("emit", lambda: emit(optimized, source=source))
    if args.emit == "bytecode":
        from vm.program.bytecode import disassemble

        print(disassemble(program), end="")
        return 0
    if _debugging(args) and not args.output:  # a look at the passes, not a build: write nothing
        print("irc: no .irbc written (--passes/--print-after* show the passes; add -o FILE to write one)",
              file=sys.stderr)
        return 0
    from vm.files.kinds import check_writable
    from vm.program.irbc import save

    out = Path(args.output) if args.output else Path(args.file).with_suffix(".irbc")
    given = [Path(p) for p in (args.file, args.weights, args.example_inputs) if p]
    check_writable(out, inputs=given, force=args.force, kind="irbc")
    from compiler.torchscript import prepare_archive_weights

    options: dict[str, Any] = {"fusion": not args.no_fusion, "passes": passes}
    if args.example_inputs:
        options["example_inputs"] = _example_specs(args.example_inputs, program)

    # every output is checked before any is written: a .pt's weights go beside the .irbc
    pending = prepare_archive_weights(args.file, out, force=args.force, module=args.module)
    timed("save", lambda: save(program, out, options=options))
    if pending is not None:
        pending.write()
    if args.verbose:
        for name, seconds in timings[2:]:
            print(f"[{name}: {_ms(seconds)}]", file=sys.stderr)
        print(f"[total: {_ms(progress.elapsed)}]", file=sys.stderr)
    if args.fuser == "numba":
        from vm.interpreter.machine import Interpreter

        progress.stage("numba kernels")
        problems = Interpreter(program, fuser="numba").fuser_problems  # fills the numba cache
        for problem in problems:
            print(f"irc: numba: {problem} (that group runs blocked)", file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def _example_specs(path: str, program: Any) -> list[Any]:
    """Per input of ``program``, ``[dtype name, shape]`` of the tensor the ``.npz`` at
    ``path`` gives it (read as ``irvm run --inputs`` reads it), None for any other value."""
    import numpy as np

    from vm.command import load_npz
    from vm.files.npz import load_inputs

    values = load_inputs(load_npz(path, "inputs"), program)
    return [[v.dtype.name, list(v.shape)] if isinstance(v, np.ndarray) else None for v in values]


def _debugging(args: argparse.Namespace) -> bool:
    """True when a debug flag asks to see the passes (a chosen pipeline, IR printed after passes)."""
    return bool(args.print_after_all or args.print_after or args.passes is not None)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.0f} ms"


def _cmd_viz(args: argparse.Namespace) -> int:
    from compiler.viz import render
    from vm.files.kinds import check_writable

    out = Path(args.output) if args.output else Path(args.file).with_suffix(".svg")
    check_writable(out, inputs=[Path(args.file)], force=args.force, kind="viz")
    text, shapes = _viz_source(args.file)
    message = render(  # marks the picture and writes it in one atomic write
        text, args.file, out, after=args.after, fold_constants=not args.constants,
        fusion=not args.no_fusion, collapse=False if args.expand else None, shapes=shapes,
    )
    print(message, file=sys.stderr)
    return 0


def _viz_source(path: str) -> tuple[str, dict[str, str]]:
    """The text ``irc viz`` draws and the shapes for its edges: for a ``torch.jit.save``
    archive, its IR with each node's module as its scope (so a node is drawn in the module
    that owns it) and the shapes of a run on its traced example inputs; else the file's
    text and no measured shapes (a traced dump's types carry its shapes)."""
    from compiler.torchscript import archive_ir_text, is_torchscript_archive

    if not is_torchscript_archive(path):
        return read_source(path), {}
    from compiler.torchscript import load_torchscript
    from compiler.torchscript.examples import traced_examples
    from compiler.viz import measured_shapes

    text = archive_ir_text(path, scopes=True) or ""
    _, weights = load_torchscript(path)
    return text, measured_shapes(text, path, weights, traced_examples(path))


if __name__ == "__main__":
    sys.exit(main())
