"""irvm's compiler: textual graph IR -> IR objects -> passes -> bytecode.

The Python API is a contract (keep it stable)::

    module = compiler.parse(text, filename=None)     # IR objects
    program = compiler.compile_source(text)          # optimized, emitted bytecode
    program = compiler.compile_file("model.ir")
    module, weights = compiler.load_torchscript("model.pt")   # a torch.jit.save archive
    module = compiler.freeze(module, weights)        # settings folded, as compile_source(weights=)
    module = compiler.specialize(module, weights)    # the whole specialization pipeline
"""

from compiler.diagnostics import CompileError, IRError, IRSyntaxError, IRValidationError, Span


def parse(text: str, filename: str | None = None):
    """Parse graph IR text (as PyTorch prints it) into a ``vm.ir.graph.Module``."""
    from compiler.parser import parse as _parse

    return _parse(text, filename)


def compile_source(text: str, filename: str | None = None, **options):
    """Parse, optimize and emit ``text``; returns an immutable ``vm.Program``."""
    from compiler.emit import compile_source as _compile

    return _compile(text, filename, **options)


def compile_file(path, **options):
    """``compile_source`` on the contents of ``path``."""
    from compiler.emit import compile_file as _compile_file

    return _compile_file(path, **options)


def freeze(module, weights, fusion: bool = True):
    """An optimized ``vm.ir.graph.Module`` specialized for ``weights`` (its settings folded,
    the branches they decide removed), as if compiled with them; ``module`` itself when
    none of its settings is in ``weights``."""
    from compiler.pipeline import freeze as _freeze

    return _freeze(module, weights, fusion=fusion)


def specialize(module, weights, *, fusion: bool = True, skip=()):
    """An optimized ``vm.ir.graph.Module`` specialized for ``weights`` by the pass manager's
    ``SPECIALIZE_PIPELINE`` (settings folded, eval BatchNorms folded into their
    convolutions, activations written in place, small linear weights stored transposed),
    leaving out the passes named in ``skip``; the tensors the folds made are in its
    ``folded_tensors``.  ``module`` itself when nothing folds."""
    from compiler.pipeline import specialize as _specialize

    return _specialize(module, weights, fusion=fusion, skip=skip)[0]


def load_torchscript(path, method: str = "forward"):
    """``(Module, weights)`` from a ``torch.jit.save`` archive, read without PyTorch and
    without running any code from the file (``compiler.torchscript``)."""
    from compiler.torchscript import load_torchscript as _load

    return _load(path, method)


__all__ = [
    "load_torchscript",
    "freeze",
    "specialize",
    "parse",
    "compile_source",
    "compile_file",
    "IRError",
    "IRSyntaxError",
    "IRValidationError",
    "CompileError",
    "Span",
]
