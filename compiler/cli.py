"""``irc``: the compiler's command line.

    irc compile model.ir [-o model.irbc] [--emit ir|bytecode] [-v] [--fuser numba]
                         [--passes inline_calls,pool_constants,...] [--no-fusion]
                         [--print-after PASS] [--print-after-all [--diff]]
    irc check model.ir          parse and verify only
    irc passes                  list the passes of the default pipeline

Errors in the input print as one paragraph (``file:line:col: message``, the line and a
caret) and exit 65; a missing or unreadable file exits 66; anything else is an internal
error (exit 70), printed without a traceback unless ``IRVM_DEBUG=1``.

Writing never destroys what the user gave: ``-o`` refuses to write over the input, and
over an existing file that is not an irvm bytecode file, unless ``--force``.
"""

from __future__ import annotations

import argparse
import difflib
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from compiler.diagnostics import IRError

EXIT_COMPILE_ERROR = 65
EXIT_NO_INPUT = 66
EXIT_INTERNAL = 70


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    return run_guarded("irc", lambda: args.handler(args))


def run_guarded(tool: str, body: Callable[[], int]) -> int:
    """Run a command body, turning every failure into one paragraph and an exit code."""
    try:
        return body()
    except IRError as err:
        print(str(err), file=sys.stderr)
        from compiler.diagnostics import RunError

        return 1 if isinstance(err, RunError) else EXIT_COMPILE_ERROR
    except BrokenPipeError:  # the reader went away (`irvm run ... | head`): not an error
        sys.stderr.close()
        return 0
    except OSError as err:
        where = f" {err.filename}" if getattr(err, "filename", None) else ""
        print(f"{tool}: cannot access{where}: {err.strerror or err}", file=sys.stderr)
        return EXIT_NO_INPUT
    except KeyboardInterrupt:
        print(f"{tool}: interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # an irvm bug: say so in one paragraph, no traceback
        if os.environ.get("IRVM_DEBUG"):
            raise
        print(
            f"{tool}: internal error: {type(err).__name__}: {err} "
            f"(set IRVM_DEBUG=1 for a traceback, and please report it)",
            file=sys.stderr,
        )
        return EXIT_INTERNAL


def _build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="irc", description="Compile TorchScript graph IR to irvm bytecode.")
    sub = parser.add_subparsers(dest="command", required=True)

    c = sub.add_parser("compile", help="parse, optimize and emit bytecode (.irbc)")
    c.add_argument("file", help="graph IR text (.ir), as PyTorch prints it")
    c.add_argument("-o", "--output", help="bytecode file to write (default: FILE with .irbc)")
    c.add_argument("--emit", choices=["ir", "bytecode"], help="print the optimized IR or a disassembly instead of writing a file")
    c.add_argument("--passes", help="comma-separated pass names to run instead of the default pipeline ('' for none)")
    c.add_argument("--no-fusion", action="store_true", help="do not group elementwise ops into fusion groups")
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

    k = sub.add_parser("check", help="parse and verify only")
    k.add_argument("file")
    k.set_defaults(handler=_cmd_check)

    p = sub.add_parser("passes", help="list the passes of the default pipeline")
    p.set_defaults(handler=_cmd_passes)

    v = sub.add_parser("viz", help="draw the graph (graphviz)")
    v.add_argument("file")
    v.add_argument("-o", "--output", help="graph.svg, graph.png or graph.dot (default: FILE.svg)")
    v.add_argument("--after", metavar="PASS", help="draw the graph as it is after PASS of the pipeline")
    v.add_argument("--constants", action="store_true", help="draw constants as nodes instead of folding them into labels")
    v.add_argument("--no-fusion", action="store_true")
    v.add_argument("--force", action="store_true", help="overwrite an existing output file")
    v.set_defaults(handler=_cmd_viz)
    return parser


def read_source(path: str) -> str:
    from compiler.torchscript import archive_ir_text

    text = archive_ir_text(path)  # a torch.jit.save archive: its forward, compiled to IR
    if text is not None:
        return text
    data = Path(path).read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        from compiler.diagnostics import IRSyntaxError, Span

        line = data[: err.start].count(b"\n") + 1
        col = err.start - (data.rfind(b"\n", 0, err.start) + 1) + 1
        raise IRSyntaxError("the file is not UTF-8 text (binary data?)", Span(path, line, col)) from None


def _cmd_check(args: argparse.Namespace) -> int:
    from compiler.parser import parse
    from compiler.verify import verify

    module = parse(read_source(args.file), args.file)
    verify(module)
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
    from compiler import pipeline
    from compiler.emit import emit
    from compiler.parser import parse
    from compiler.printer import print_module
    from compiler.verify import verify

    source = read_source(args.file)
    module = parse(source, args.file)
    verify(module)
    passes = None if args.passes is None else [p.strip() for p in args.passes.split(",") if p.strip()]
    print_after = ("all",) if args.print_after_all else tuple(args.print_after)
    printer = _stage_printer(args.diff)
    if print_after and args.diff:
        printer("input", print_module(module))
    optimized, records = pipeline.optimize(
        module, passes, fusion=not args.no_fusion, print_after=print_after, printer=printer
    )
    if args.verbose:
        for record in records:
            print(f"[{record}]", file=sys.stderr)
    if args.emit == "ir":
        print(print_module(optimized), end="")
        return 0
    program = emit(optimized, source=source)
    if args.emit == "bytecode":
        from vm.bytecode import disassemble

        print(disassemble(program), end="")
        return 0
    from vm.irbc import save

    out = Path(args.output) if args.output else Path(args.file).with_suffix(".irbc")
    check_writable(out, inputs=[Path(args.file)], force=args.force, kind="irbc")
    save(program, out, options={"fusion": not args.no_fusion, "passes": passes})
    from compiler.torchscript import save_archive_weights

    save_archive_weights(args.file, out, force=args.force)  # a .pt's weights go beside the .irbc
    if args.fuser == "numba":
        from vm.interpreter import Interpreter

        problems = Interpreter(program, fuser="numba").fuser_problems  # fills the numba cache
        for problem in problems:
            print(f"irc: numba: {problem} (that group runs blocked)", file=sys.stderr)
    print(f"wrote {out}", file=sys.stderr)
    return 0


def check_writable(out: Path, inputs: Sequence[Path], force: bool, kind: str) -> None:
    """Refuse to destroy what the user gave: an input file, or a foreign existing file.

    An existing file we made ourselves (irvm bytecode, an npz of outputs) is regenerated.
    """
    from compiler.diagnostics import IRError

    for given in inputs:
        if given.exists() and out.exists() and out.resolve() == given.resolve():
            raise IRError(f"refusing to write {out}: it is an input of this command")
    if not out.exists() or force:
        return
    head = out.read_bytes()[:8] if out.is_file() else b""
    pictures = (b"<?xml", b"<svg", b"\x89PNG", b"digraph", b"%PDF")
    ours = {"irbc": head.startswith(b"PK"), "npz": head.startswith(b"PK"), "viz": head.startswith(pictures)}[kind]
    if kind == "irbc" and ours:
        from vm.irbc import is_irbc

        ours = is_irbc(out)
    if not ours:
        raise IRError(f"refusing to overwrite {out}: it exists and is not an irvm {kind} file (use --force)")


def _cmd_viz(args: argparse.Namespace) -> int:
    from compiler.viz import render

    out = Path(args.output) if args.output else Path(args.file).with_suffix(".svg")
    check_writable(out, inputs=[Path(args.file)], force=args.force, kind="viz")
    message = render(
        read_source(args.file), args.file, out, after=args.after, fold_constants=not args.constants, fusion=not args.no_fusion
    )
    print(message, file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
