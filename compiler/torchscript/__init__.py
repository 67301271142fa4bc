"""Running ``torch.jit.save`` archives (``.pt``) without PyTorch.

    module, weights = compiler.load_torchscript("model.pt")          # IR + weights
    program, weights = compiler.torchscript.compile_archive("model.pt")
    vm.Interpreter(program, weights)(x)

``archive`` opens the zip and reads its pickles through the restricted unpickler of
``unpickle`` (no code from the file ever runs); ``source`` indexes the TorchScript
source of ``code/``; ``frontend`` compiles a method of the module object, with every
call inlined, to the IR the text parser produces; ``weights`` flattens the module object
into the dotted-key weights mapping the runtimes bind ``%self`` from.

Reading is bounded (``limits``: one ``ReadLimits`` record, ``IRVM_LIMITS`` to change it;
``docs/bounds.md``): member sizes and compression ratios, the pickles' nesting and paths,
the source's nesting and literal sizes are checked before the work they bound, and
``source_bounds`` parses the source within them.  A hostile or damaged archive is one
``ArchiveError`` (exit 65).
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


def weights_path(program_path: str | Path) -> Path:
    """Where ``irc compile model.pt -o model.irbc`` puts the archive's weights:
    ``model.weights.npz`` beside the ``.irbc``."""
    out = Path(program_path)
    return out.with_name(out.stem + ".weights.npz")


class PendingWeights:
    """The weights of an archive, checked and ready to write beside a program
    (``prepare_archive_weights``): every check is done, nothing is written yet."""

    def __init__(self, out: Path, arrays: dict[str, Any], program_path: str | Path) -> None:
        self.out, self.arrays, self.program_path = out, arrays, program_path

    def write(self, announce: bool = True) -> Path:
        import sys

        from vm.files.npz import save_marked

        save_marked(self.out, self.arrays, "weights")
        if announce:
            print(f"wrote {self.out} (the archive's weights: irvm run {self.program_path} --weights {self.out})", file=sys.stderr)
        return self.out


def prepare_archive_weights(
    source: str | Path, program_path: str | Path, force: bool = False, limits: Any = None, module: str | None = None
) -> PendingWeights | None:
    """The weights of archive ``source`` to write beside ``program_path`` (see
    ``weights_path``), after every check: the target may be written (``check_writable``)
    and no tensor that repeats its storage's elements (a stride-0 view) expands past
    ``limits.expanded_bytes`` (an ``.npz`` holds whole arrays: a 32768x32768 view of one
    float would be a 4 GiB file).  None when ``source`` is not an archive."""
    import numpy as np

    from compiler.torchscript.limits import current, over
    from vm.files.kinds import check_writable

    if not is_torchscript_archive(source):
        return None
    from compiler.torchscript.weights import flatten

    limits = limits or current()
    out = weights_path(program_path)
    check_writable(out, inputs=[Path(source), Path(program_path)], force=force, kind="weights")
    archive = Archive(source, limits, module=module)
    try:
        weights = flatten(archive.module(), archive.constants(), arrays_only=True)
    finally:
        archive.close()  # memory maps keep their own handle
    from vm.core.quantized import PACKED_TYPES, QTensor
    from vm.files.quantized import encode

    arrays: dict[str, np.ndarray] = {}
    for key, value in weights.items():
        if isinstance(value, (QTensor, *PACKED_TYPES)):
            encode(key, value, arrays)  # quantized entries (vm/files/quantized.py)
        else:
            arrays[key] = np.asarray(value)
    for key, array in arrays.items():
        extra = array.nbytes - _footprint(array)
        if extra > 0 and array.nbytes > limits.expanded_bytes:
            raise ArchiveError(
                f"{source}: weight {key} (shape {list(array.shape)}) repeats elements of its storage; written out, "
                f"{over('it', array.nbytes, 'expanded_bytes', limits.expanded_bytes)} bytes"
            )
    return PendingWeights(out, arrays, program_path)


def _footprint(array: Any) -> int:
    """The bytes of memory a (possibly strided) array spans."""
    if array.size == 0:
        return 0
    return sum((n - 1) * abs(s) for n, s in zip(array.shape, array.strides)) + array.itemsize


def save_archive_weights(
    source: str | Path, program_path: str | Path, force: bool = False, announce: bool = True, module: str | None = None
) -> Path | None:
    """Write the weights of archive ``source`` beside ``program_path`` (see ``weights_path``);
    nothing when ``source`` is not an archive.  Entries are arrays, as ``--weights`` reads.
    ``announce``: say so on stderr (the command line does; ``vm.Model.save`` does not)."""
    pending = prepare_archive_weights(source, program_path, force, module=module)
    return None if pending is None else pending.write(announce)


__all__ = [
    "Archive",
    "ArchiveError",
    "archive_ir_text",
    "archive_weights",
    "compile_archive",
    "is_torchscript_archive",
    "load_torchscript",
    "archive_methods",
    "method_defaults",
    "package_contents",
    "prepare_archive_weights",
    "save_archive_weights",
    "weights_path",
]
