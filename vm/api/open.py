"""Opening a program file of any kind: the one reader behind ``vm.load``, ``irvm`` and ``irc``.

The kind comes from ``vm.files.kinds.expect`` (the file's first bytes, never its name),
once per file, and decides how the program is made:

    .irbc   read and verified (``vm.program.irbc.load``): no pass, no parse, and nothing
            imported from ``compiler`` (an older format is compiled again from the IR
            text the file carries, and the caller is told so);
    .pt     a ``torch.jit.save`` archive, compiled now with its own weights
            (``compiler.torchscript.compile_archive``), and the example inputs a traced
            archive holds (``compiler.torchscript.examples``); or one TorchScript module
            of a torch.package archive, chosen by ``module`` (``compiler.torchscript.package``);
    .ir     graph IR text, compiled now, specialized for ``weights`` when they are given
            (their settings folded, as ``torch.jit.freeze`` folds them).

A long compile shows its progress on a terminal (``compiler.progress``), never in a pipe.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import attrs

from vm.files.kinds import FileKind, expect

if TYPE_CHECKING:
    from vm.api.model import Model

Note = Callable[[str], None]


@attrs.frozen
class Opened:
    """A program file read: the program, the weights it holds itself ({} but for a ``.pt``),
    its kind, and the example inputs it records (a traced ``.pt``'s; None when none)."""

    program: Any
    own_weights: dict[str, Any]
    kind: FileKind
    examples: list[Any] | None = None
    module: str | None = None  # the module of a torch.package archive that was read
    methods: list[str] | None = None  # a .pt module's methods, when known without reading its source again
    implied: dict[str, Any] | None = None  # what the weights imply of the inputs, when known ahead
    cache_entry: Any = None  # the program cache's entry it came from or went to (vm.api.program_cache.Entry)


def read_program(
    path: str | Path,
    *,
    fusion: bool = True,
    weights: Mapping[str, Any] | None = None,
    note: Note | None = None,
    tool: str = "irvm",
    method: str = "forward",
    module: str | None = None,
) -> Opened:
    """``path`` read as a program (see the module docstring); ``weights`` specialize IR
    text for their settings; ``note`` hears what the caller should be told (an older
    ``.irbc`` compiled again); ``method``: that method of a ``.pt``'s module (another file
    holds only its entry).  A file of another kind is refused saying what it is."""
    from vm.program.irbc import OlderFormatError, load

    kind = expect(path, "program")
    if method != "forward" and kind is not FileKind.TORCHSCRIPT:
        from vm.core.errors import RunError

        raise RunError(f"{path} holds one program, not methods: --method {method} needs a torch.jit.save archive (.pt)")
    older = None
    if kind is FileKind.IRBC:
        try:
            from vm.program.irbc import recorded_examples

            return Opened(load(path), {}, kind, recorded_examples(path))
        except OlderFormatError as err:  # the VM compiles nothing; the front door may
            if note is not None:
                note(f"{err}; compiling it now")
            older = err
    if older is None and kind in ARCHIVES:  # compiled once per machine (vm.api.program_cache)
        from vm.api.program_cache import cache_dir, compiled_archive

        if cache_dir() is not None:
            return _archive_program(path, kind, method, fusion, weights, module, note, tool, compiled_archive)
    import compiler
    from compiler.progress import Progress

    own: dict[str, Any] = {}
    examples = None
    with Progress(f"{tool}: compiling {Path(path).name}") as progress:
        progress.stage("read")
        if older is not None:
            options = {"fusion": fusion, **older.options}
            program = compiler.compile_source(older.text, str(path), weights=older.weights, on_pass=progress.stage,
                                              **options)
        elif kind in ARCHIVES:
            from compiler.torchscript import compile_archive
            from compiler.torchscript.examples import traced_examples

            program, own = compile_archive(path, method, fusion=fusion, weights=weights, on_pass=progress.stage,
                                           module=module)
            examples = traced_examples(path, module=module)
        else:
            from vm.files.kinds import read_program_text

            program = compiler.compile_source(read_program_text(path), str(path), fusion=fusion, weights=weights,
                                              on_pass=progress.stage)
    if progress.elapsed > SLOW_COMPILE and note is not None and progress.enabled:  # advice for a person at a terminal
        note(f"compiling {path} took {progress.elapsed:.1f}s; `irc compile {path}` writes a .irbc that starts "
             f"without compiling")
    return Opened(program, own, kind, examples, module)


def _archive_program(path: str | Path, kind: FileKind, method: str, fusion: bool, weights: Mapping[str, Any] | None,
                     module: str | None, note: Note | None, tool: str, compiled_archive: Any) -> Opened:
    """A TorchScript archive's program through the program cache: compiled (with the
    progress line) only when the cache has no entry for this file and these options."""
    from compiler.progress import Progress
    from compiler.torchscript import compile_archive
    from compiler.torchscript.examples import traced_examples

    progress = Progress(f"{tool}: compiling {Path(path).name}")
    took = [0.0]

    def compile_it() -> tuple[Any, dict[str, Any]]:
        with progress:
            progress.stage("read")
            try:
                return compile_archive(path, method, fusion=fusion, weights=weights, on_pass=progress.stage,
                                       module=module)
            finally:
                took[0] = progress.elapsed

    program, own, facts, entry = compiled_archive(path, method, compile_it, module=module, options={"fusion": fusion},
                                                  weights=weights)
    methods, implied = facts.get("methods"), facts.get("implied")
    if took[0] > SLOW_COMPILE and note is not None and progress.enabled:
        note(f"compiling {path} took {took[0]:.1f}s; later loads of it read the compiled program "
             f"from irvm's cache")
    return Opened(program, own, kind, traced_examples(path, module=module), module,
                  methods if isinstance(methods, list) else None, implied if isinstance(implied, dict) else None, entry)


ARCHIVES = (FileKind.TORCHSCRIPT, FileKind.PACKAGE)  # what compiler.torchscript reads
SLOW_COMPILE = 1.0  # seconds: a command line says so when compiling takes longer


def load(
    path: str | Path,
    weights: str | Path | Mapping[str, Any] | None = None,
    *,
    backend: str = "static",
    threads: int | None = None,
    strict: bool = True,
    fusion: bool = True,
    fuser: str | None = None,
    seed: int | None = None,
    quantized_engine: str | None = None,
    quantized_kernel: str | None = None,
    module: str | None = None,
    method: str = "forward",
    note: Note | None = None,
) -> Model:
    """Open ``path`` (``.pt``, ``.ir`` or ``.irbc``) as a ``vm.Model``.

    ``weights``: a mapping of dotted state_dict keys, or the path of an ``.npz`` of them;
    for a ``.pt`` they replace the archive's own entries.  ``backend``: ``"static"`` (the
    static runtime, the default) or ``"interp"`` (the interpreter VM).  ``threads``: the
    threads irvm's kernels may use (a process-wide setting, as ``torch.set_num_threads``).
    ``strict``: refuse weights the model does not have (as ``load_state_dict(strict=True)``
    refuses unexpected keys; a ``.pt`` names its own keys).  ``fusion``: group elementwise
    operators (``False``: run them one by one).  ``fuser``: ``"blocked"`` (numpy, the
    default) or ``"numba"``.  ``seed``: the random generator of random operators (dropout in
    training, ``rand``...), not torch's stream.  ``quantized_engine``: whose arithmetic
    quantized operators follow, ``"fbgemm"`` (torch's default on x86) or ``"qnnpack"``;
    ``quantized_kernel``: fbgemm's kernel, ``"vnni"``, ``"avx512"`` or ``"avx2"`` (default:
    the one torch runs on this CPU; vm/ops/quantized/cpu.py).
    ``module``: for a torch.package archive,
    the TorchScript module to run, by its path in the package (``"models/net.pkl"``;
    ``irvm info`` lists them).  ``method``: of a ``.pt``, the method a call of the model
    runs (``irvm run --method``; the others stay attributes).  ``note`` hears what a person
    should be told (an older ``.irbc`` compiled again, a slow compile): ``irvm`` prints it.
    """
    from vm.api.model import Model
    from vm.core.errors import RunError

    if backend not in BACKENDS:
        raise RunError(f"unknown backend {backend!r}: {' or '.join(map(repr, BACKENDS))}")
    if fuser not in (None, "blocked", "numba"):
        raise RunError(f"unknown fuser {fuser!r}: 'blocked' or 'numba'")
    from vm.ops.quantized.arith import quantized_setting

    quantized_setting(quantized_engine, quantized_kernel)  # a misspelled one refused before the compile
    given = _weights(weights)
    opened = read_program(path, fusion=fusion, weights=given if weights is not None else None, note=note,
                          method=method, module=module)
    bound = bound_weights(opened, given, strict, path)
    if threads is not None:
        set_threads(threads)
    methods: Callable[[], list[str]] = list  # no method but the one compiled
    compile_method: Callable[[str], Any] | None = None
    if opened.kind is FileKind.TORCHSCRIPT:  # the module's other methods, listed and compiled when first asked for
        from compiler.torchscript import compile_archive

        known, entry = opened.methods, opened.cache_entry

        def listed() -> list[str]:  # a second read of the archive, when asked for (once: the cache keeps them)
            if known is not None:
                return list(known)
            names = archive_methods(path)
            if entry is not None:
                entry.remember(methods=names)
            return names

        methods = listed
        over = given if weights is not None else None

        def compile_other(name: str) -> Any:
            return compile_archive(path, name, fusion=fusion, weights=over)[0]

        compile_method = compile_other

    return Model(
        opened.program, bound, backend=backend, fuser=fuser or "blocked", seed=seed, threads=threads,
        examples=opened.examples if method == "forward" else None,  # a trace records forward's
        path=Path(path), strict=strict, methods=methods, compile_method=compile_method,
        quantized_engine=quantized_engine, quantized_kernel=quantized_kernel, module=module, method=method,
        implied=opened.implied if method == "forward" else None,
    )


BACKENDS = ("static", "interp")


def set_threads(n: int) -> None:
    """The process-wide thread switch (``vm.threads.set_num_threads``): numpy's BLAS, the
    fused kernels' pool and numba's, one call."""
    from vm.threads import set_num_threads

    set_num_threads(n)


def _weights(weights: str | Path | Mapping[str, Any] | None) -> dict[str, Any]:
    if weights is None:
        return {}
    if isinstance(weights, (str, Path)):
        from vm.command import load_npz

        return load_npz(str(weights))
    if isinstance(weights, Mapping):
        return dict(weights)
    from vm.core.errors import RunError

    raise RunError(f"weights are a mapping of state_dict keys or the path of an .npz, not {type(weights).__name__}")


def bound_weights(opened: Opened, given: dict[str, Any], strict: bool, path: str | Path) -> dict[str, Any]:
    """The weights a model opened from ``path`` binds: ``given`` over the file's own (a
    ``.pt``'s), compared with them key by key first unless ``strict`` is off, as
    ``load_state_dict(strict=True)`` compares (``vm.binding.strict.check_given``: against the
    program's model keys); a tensor of another shape than the one it replaces is refused
    (``vm.binding.weights.override``).  The one merge of weights and its strict check:
    ``vm.load`` makes it, for the API and both command lines."""
    if strict and opened.kind in ARCHIVES and given:
        from vm.binding.strict import check_given

        check_given(opened.own_weights, given, str(path), opened.program.model_keys)
    if not opened.own_weights:
        return given
    from vm.binding.weights import override

    return override(opened.own_weights, given, str(path))


def archive_methods(path: str | Path) -> list[str]:
    """The methods of a ``torch.jit.save`` archive's module (``forward`` first), for ``irvm info``."""
    from compiler.torchscript import archive_methods as methods

    return methods(path)


def package_listing(path: str | Path) -> str:
    """What ``irvm info`` says of a torch.package archive: each pickle it holds, and whether
    it is a TorchScript module irvm runs (``--module NAME``) or why not."""
    from compiler.torchscript import package_contents

    found = package_contents(path) or []
    runnable = [p for p in found if p.script_id is not None]
    lines = [f"{path}: a torch.package archive, {len(runnable)} TorchScript module(s) of {len(found)} pickle(s)"]
    for p in found:
        lines.append(f"  {p.name}: TorchScript module (irvm run {path} --module {p.name})" if p.script_id is not None
                     else f"  {p.name}: cannot run: {p.reason}")
    return "\n".join(lines) + "\n"


__all__ = ["BACKENDS", "Opened", "archive_methods", "bound_weights", "load", "package_listing", "read_program",
           "set_threads"]
