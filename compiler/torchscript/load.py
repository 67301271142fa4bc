"""Reading a ``torch.jit.save`` archive into IR and weights, and compiling it.

    module, weights = load_torchscript("model.pt")        # IR + the flattened weights
    program, weights = compile_archive("model.pt")        # verified, optimized, emitted

``load_torchscript`` opens the archive (``archive``), indexes its source (``source``) and
compiles one method with every call inlined (``frontend``); ``compile_archive`` runs the
pipeline on it, specialized for the archive's own weights.  The rest answer questions of an
archive without compiling it: its methods and their defaults, its weights, its IR text, the
pickles of a torch.package archive.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from compiler.torchscript.archive import Archive, is_torchscript_archive
from compiler.torchscript.unpickle import ArchiveError


def load_torchscript(
    path: str | Path, method: str = "forward", *, scopes: bool = False, module: str | None = None
) -> tuple[Any, dict[str, Any]]:
    """``(Module, weights)`` for ``method`` of the archive's module (see the module docstring);
    ``scopes``: nodes inlined from a submodule carry its scope (``irc viz``); ``module``: of a
    torch.package archive, the TorchScript module to read (``compiler.torchscript.package``)."""
    from compiler.torchscript.frontend import compile_method
    from compiler.torchscript.source import SourceIndex
    from compiler.torchscript.weights import flatten, model_keys

    archive = Archive(path, module=module)
    try:
        index = SourceIndex(archive.code_files(), archive.debug_tables())
        root = archive.module()
        constants = archive.constants()
    finally:
        archive.close()  # memory maps keep their own handle
    try:
        compiled = compile_method(index, root, constants, method, str(path), scopes)
    except RecursionError:  # calls inlined into calls past Python's stack: source_bounds bounds one tree, not the chain
        raise ArchiveError(f"{path}: the source's calls nest deeper than irvm can inline") from None
    weights = flatten(root, constants)
    compiled.model_keys = model_keys(root, index.classes, weights)  # strict weights' reference (vm.binding.strict)
    return compiled, weights


def compile_archive(
    path: str | Path, method: str = "forward", *, freeze: bool = True, module: str | None = None, **options: Any
) -> tuple[Any, dict[str, Any]]:
    """``(Program, weights)``: ``load_torchscript``, verified, optimized and emitted.
    With ``freeze`` the program is specialized for the archive's own settings (its
    ``self.training``, strides, flags...), as ``torch.jit.freeze`` would and as
    ``compile_source(weights=)`` does: the archive holds both the program and its
    weights, so they are known now, and a runtime that binds weights with other
    settings is refused by name.  ``options`` are those of ``compiler.pipeline.optimize``
    and ``emit`` (``fusion``...); ``module`` as in ``load_torchscript``."""
    from compiler.emit import emit
    from compiler.pipeline import optimize
    from compiler.verify import verify
    from vm.binding.strict import ArchiveState

    loaded, weights = load_torchscript(path, method, module=module)
    verify(loaded)
    fused = options.pop("fused_kernels", True)
    given = options.pop("weights", None)  # entries over the archive's (irvm run --weights): folded as they are run
    options["weights"] = ({**weights, **given} if given else weights) if freeze else None
    optimized, _ = optimize(loaded, options.pop("passes", None), verified=True, **options)
    # the module's own state: every key is the model's, read or not (vm.binding.strict)
    return emit(optimized, fused_kernels=fused), ArchiveState(weights)


def archive_methods(path: str | Path) -> list[str]:
    """The methods of the archive's module object (``forward`` first, then the others
    ``torch.jit.load``'s module has: exported ones, and those ``forward`` calls)."""
    from compiler.torchscript.frontend import method_names
    from compiler.torchscript.source import SourceIndex

    archive = Archive(path)
    try:
        index = SourceIndex(archive.code_files())
        root = archive.module()
    finally:
        archive.close()
    return method_names(index, root)


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


def archive_weights(path: str | Path, module: str | None = None) -> dict[str, Any]:
    """The weights mapping of the archive at ``path`` (of ``module``, in a torch.package
    archive); {} when ``path`` is no archive."""
    from compiler.torchscript.weights import flatten

    if module is None and not is_torchscript_archive(path):
        return {}
    archive = Archive(path, module=module)
    try:
        return flatten(archive.module(), archive.constants())
    finally:
        archive.close()  # memory maps keep their own handle


def archive_ir_text(path: str | Path, *, scopes: bool = False) -> str | None:
    """The IR text of the archive's ``forward`` (what ``irc`` reads), or None when
    ``path`` is not a TorchScript archive; ``scopes`` as in ``load_torchscript``."""
    if not is_torchscript_archive(path):
        return None
    from vm.ir.printer import print_module

    module, _ = load_torchscript(path, scopes=scopes)
    return print_module(module)


def package_contents(path: str | Path) -> list[Any] | None:
    """The pickles a torch.package archive holds (``compiler.torchscript.package.Packaged``:
    name, whether it is a TorchScript module, why not), or None when ``path`` is no package."""
    archive = Archive(path, listing=True)
    try:
        return archive.contents
    finally:
        archive.zip.close()


__all__ = [
    "archive_ir_text",
    "archive_methods",
    "archive_weights",
    "compile_archive",
    "load_torchscript",
    "method_defaults",
    "package_contents",
]
