"""Running ``torch.jit.save`` archives (``.pt``) without PyTorch.

    module, weights = compiler.load_torchscript("model.pt")          # IR + weights
    program, weights = compiler.torchscript.compile_archive("model.pt")
    vm.Interpreter(program, weights)(x)

``archive`` opens the zip and reads its pickles through the restricted unpickler of
``unpickle`` (no code from the file ever runs); ``source`` indexes the TorchScript
source of ``code/``; ``frontend`` compiles a method of the module object, with every
call inlined, to the IR the text parser produces; ``weights`` flattens the module object
into the dotted-key weights mapping the runtimes bind ``%self`` from; ``load`` puts these
together (``load_torchscript``, ``compile_archive``, and what an archive says of itself
without compiling); ``saved_weights`` writes an archive's weights beside the program
compiled from it (``model.weights.npz``).

Reading is bounded (``limits``: one ``ReadLimits`` record, ``IRVM_LIMITS`` to change it;
``docs/bounds.md``): member sizes and compression ratios, the pickles' nesting and paths,
the source's nesting and literal sizes are checked before the work they bound, and
``source_bounds`` parses the source within them.  A hostile or damaged archive is one
``ArchiveError`` (exit 65).

This file is the package's face: it names what the package offers and holds no logic.
"""

from compiler.torchscript.archive import Archive, is_torchscript_archive
from compiler.torchscript.load import (
    archive_ir_text,
    archive_methods,
    archive_weights,
    compile_archive,
    load_torchscript,
    method_defaults,
    package_contents,
)
from compiler.torchscript.saved_weights import (
    PendingWeights,
    prepare_archive_weights,
    save_archive_weights,
    weights_path,
)
from compiler.torchscript.unpickle import ArchiveError

__all__ = [
    "Archive",
    "ArchiveError",
    "PendingWeights",
    "archive_ir_text",
    "archive_methods",
    "archive_weights",
    "compile_archive",
    "is_torchscript_archive",
    "load_torchscript",
    "method_defaults",
    "package_contents",
    "prepare_archive_weights",
    "save_archive_weights",
    "weights_path",
]
