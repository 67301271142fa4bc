"""Running ``torch.jit.save`` archives (``.pt``) without PyTorch.

    module, weights = compiler.load_torchscript("model.pt")          # IR + weights
    program, weights = compiler.torchscript.compile_archive("model.pt")
    vm.Interpreter(program, weights)(x)

``archive`` opens the zip and reads its pickles through the restricted unpickler of
``unpickle`` (no code from the file ever runs); ``source`` indexes the TorchScript
source of ``code/``; ``frontend`` compiles a method of the module object, with every
call inlined, to the IR the text parser produces; ``weights`` flattens the module object
into the dotted-key weights mapping the runtimes bind ``%self`` from.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compiler.torchscript.archive import Archive, is_torchscript_archive
from compiler.torchscript.unpickle import ArchiveError


def load_torchscript(path: str | Path, method: str = "forward", *, scopes: bool = False) -> tuple[Any, dict[str, Any]]:
    """``(Module, weights)`` for ``method`` of the archive's module (see the module docstring);
    ``scopes``: nodes inlined from a submodule carry its scope (``irc viz``)."""
    from compiler.torchscript.frontend import compile_method
    from compiler.torchscript.source import SourceIndex
    from compiler.torchscript.weights import flatten

    archive = Archive(path)
    try:
        index = SourceIndex(archive.code_files(), archive.debug_tables())
        root = archive.module()
        constants = archive.constants()
    finally:
        archive.close()  # memory maps keep their own handle
    module = compile_method(index, root, constants, method, str(path), scopes)
    return module, flatten(root, constants)


def compile_archive(
    path: str | Path, method: str = "forward", *, freeze: bool = True, **options: Any
) -> tuple[Any, dict[str, Any]]:
    """``(Program, weights)``: ``load_torchscript``, verified, optimized and emitted.
    With ``freeze`` the program is specialized for the archive's own settings (its
    ``self.training``, strides, flags...), as ``torch.jit.freeze`` would and as
    ``compile_source(weights=)`` does: the archive holds both the program and its
    weights, so they are known now, and a runtime that binds weights with other
    settings is refused by name.  ``options`` are those of ``compiler.pipeline.optimize``
    and ``emit`` (``fusion``...)."""
    from compiler.emit import emit
    from compiler.pipeline import optimize
    from compiler.verify import verify

    module, weights = load_torchscript(path, method)
    verify(module)
    fused = options.pop("fused_kernels", True)
    options.setdefault("weights", weights if freeze else None)
    optimized, _ = optimize(module, options.pop("passes", None), verified=True, **options)
    return emit(optimized, fused_kernels=fused), weights


def method_defaults(path: str | Path, method: str = "forward") -> list[Any]:
    """The default values of ``method``'s trailing parameters, as the archive's source
    writes them (``attn_mask: Optional[Tensor]=None`` gives None): what torch passes
    when a caller leaves them out (``frontend.literal_defaults``); [] when there are none."""
    from compiler.torchscript.frontend import literal_defaults
    from compiler.torchscript.source import SourceIndex

    archive = Archive(path)
    try:
        index = SourceIndex(archive.code_files())
        root = archive.module()
    finally:
        archive.close()
    info = index.classes.get(root.qualname)
    fn = info.methods.get(method) if info is not None else None
    if fn is None:
        return []
    return list(literal_defaults(fn.node))


def archive_weights(path: str | Path) -> dict[str, Any]:
    """The weights mapping of the archive at ``path``; {} when ``path`` is no archive."""
    from compiler.torchscript.weights import flatten

    if not is_torchscript_archive(path):
        return {}
    archive = Archive(path)
    try:
        return flatten(archive.module(), archive.constants())
    finally:
        archive.close()  # memory maps keep their own handle


def archive_ir_text(path: str | Path, *, scopes: bool = False) -> str | None:
    """The IR text of the archive's ``forward`` (what ``irc`` reads), or None when
    ``path`` is not a TorchScript archive; ``scopes`` as in ``load_torchscript``."""
    if not is_torchscript_archive(path):
        return None
    from compiler.printer import print_module

    module, _ = load_torchscript(path, scopes=scopes)
    return print_module(module)


def weights_path(program_path: str | Path) -> Path:
    """Where ``irc compile model.pt -o model.irbc`` puts the archive's weights:
    ``model.weights.npz`` beside the ``.irbc``."""
    out = Path(program_path)
    return out.with_name(out.stem + ".weights.npz")


def save_archive_weights(
    source: str | Path, program_path: str | Path, force: bool = False, announce: bool = True
) -> Path | None:
    """Write the weights of archive ``source`` beside ``program_path`` (see ``weights_path``);
    nothing when ``source`` is not an archive.  Entries are arrays, as ``--weights`` reads.
    ``announce``: say so on stderr (the command line does; ``vm.Model.save`` does not)."""
    import sys

    import numpy as np

    from vm.files.kinds import check_writable

    if not is_torchscript_archive(source):
        return None
    from compiler.torchscript.weights import flatten

    archive = Archive(source)
    try:
        weights = flatten(archive.module(), archive.constants(), arrays_only=True)
    finally:
        archive.close()  # memory maps keep their own handle
    out = weights_path(program_path)
    check_writable(out, inputs=[Path(source)], force=force, kind="weights")
    from vm.files.npz import save_marked

    save_marked(out, {k: np.asarray(v) for k, v in weights.items()}, "weights")
    if announce:
        print(f"wrote {out} (the archive's weights: irvm run {program_path} --weights {out})", file=sys.stderr)
    return out


__all__ = [
    "Archive",
    "ArchiveError",
    "archive_ir_text",
    "archive_weights",
    "compile_archive",
    "is_torchscript_archive",
    "load_torchscript",
    "method_defaults",
    "save_archive_weights",
    "weights_path",
]
