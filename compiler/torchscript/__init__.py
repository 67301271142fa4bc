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


def load_torchscript(path: str | Path, method: str = "forward") -> tuple[Any, dict[str, Any]]:
    """``(Module, weights)`` for ``method`` of the archive's module (see the module docstring)."""
    from compiler.torchscript.frontend import compile_method
    from compiler.torchscript.source import SourceIndex
    from compiler.torchscript.weights import flatten

    archive = Archive(path)
    try:
        index = SourceIndex(archive.code_files())
        root = archive.module()
        constants = archive.constants()
    finally:
        archive.zip.close()
    module = compile_method(index, root, constants, method, str(path))
    return module, flatten(root, constants)


def compile_archive(path: str | Path, method: str = "forward", **options: Any) -> tuple[Any, dict[str, Any]]:
    """``(Program, weights)``: ``load_torchscript``, verified, optimized and emitted.
    ``options`` are those of ``compiler.pipeline.optimize`` and ``emit`` (``fusion``...)."""
    from compiler.emit import emit
    from compiler.pipeline import optimize
    from compiler.verify import verify

    module, weights = load_torchscript(path, method)
    verify(module)
    fused = options.pop("fused_kernels", True)
    optimized, _ = optimize(module, options.pop("passes", None), **options)
    return emit(optimized, fused_kernels=fused), weights


__all__ = ["load_torchscript", "compile_archive", "is_torchscript_archive", "ArchiveError", "Archive"]
