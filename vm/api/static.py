"""The static runtime's front door: IR text compiled, and a program compiled without its
weights specialized for them, before a ``StaticModule`` is built.

``vm.static`` runs what the compiler made and calls no compiler stage (DESIGN.md: the
front door and the command lines are the only callers of the compiler).  Two things a
caller may hand the static runtime are compiler work still, and they are done here, in
the room above both packages:

- **IR text** in place of a program is compiled (``compiler.compile_source``, with
  ``StaticOptions.fusion``);
- **a program compiled without weights that meets weights** is specialized for them, once,
  by the compiler's specialization pipeline (``compiler.specialize``: settings folded, eval
  BatchNorms folded into their convolutions, activations written in place, small linear
  weights stored transposed), leaving out each pass whose ``StaticOptions`` switch is off
  (``vm.static.module_ir.SPECIALIZE_SWITCHES``).  The weights' keys are checked first, as
  the binding session checks them (``vm.binding.strict``), so that weights of another
  model are refused by name before a fold reads them.  A program compiled with its
  weights (``Module.specialized``) is left as it is: no switch can undo what it folded.

``static_source`` does both; ``vm.Model`` calls it for every static module it builds, and
``StaticModule`` / ``StaticRuntime`` here are ``vm.static``'s with it in front: they are
what ``vm.StaticModule`` and ``vm.StaticRuntime`` name, so ``vm.StaticRuntime(text_or_program,
weights)`` is a front-door convenience, as ``vm.load`` is.  ``vm.static.StaticModule`` takes
a Program, an IR Module or a Graph and runs it as compiled.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from vm.static import StaticOptions
from vm.static import module as _module
from vm.static import runtime as _runtime


def static_source(source: Any, weights: Any, options: StaticOptions | None, strict: bool = True) -> tuple[Any, Any]:
    """``(source, weights)`` ready for ``vm.static.StaticModule``: a ``vm.Model`` unwrapped,
    IR text compiled, a program compiled without weights specialized for ``weights``
    (see the module docstring); anything else as given."""
    from vm.program.accept import refuse_path, unwrap_model

    source, weights = unwrap_model(source, weights)
    refuse_path(source, "vm.StaticModule", "")
    options = options or StaticOptions()
    if isinstance(source, str):
        import compiler

        source = compiler.compile_source(source, fusion=options.fusion)
    if weights is None:
        return source, weights
    from vm.static.module_ir import as_module

    module = as_module(source)
    if module.specialized:
        return source, weights
    from vm.binding.session import strict_keys
    from vm.binding.strict import module_reads

    strict_keys(lambda: module_reads(module), weights, strict)  # the session's step 1, before any fold reads them
    folded = specialize(module, weights, options)
    if folded is module:
        return source, weights
    if not folded.input_defaults:  # a program read from a file carries them; its IR does not
        folded.input_defaults = tuple(getattr(source, "input_defaults", ()) or ())
    return folded, weights


def specialize(module: Any, weights: Any, options: StaticOptions) -> Any:
    """``module`` specialized for ``weights`` by ``compiler.specialize``, the passes whose
    ``StaticOptions`` switch is off left out; ``module`` itself when nothing folds."""
    import compiler
    from vm.static.module_ir import SPECIALIZE_SWITCHES

    kinds = {n.kind for g in (module.main, *module.functions.values()) for n in g.walk()}
    skip = [name for switch, name in SPECIALIZE_SWITCHES.items() if not getattr(options, switch)]
    # fusion groups again only for a program compiled with them
    return compiler.specialize(module, weights, fusion=options.fusion and "prim::FusionGroup" in kinds, skip=skip)


class StaticModule(_module.StaticModule):
    """``vm.StaticModule``: ``vm.static.StaticModule`` of ``static_source(source, weights)``
    (IR text compiled, a program compiled without its weights specialized for them)."""

    def __init__(
        self,
        source: Any,
        weights: Any = None,
        options: StaticOptions | None = None,
        *,
        example_inputs: Sequence[Any] | None = None,
        strict: bool = True,
        self_object: Any = None,
        example_shapes: Sequence[Any] | None = None,
    ):
        source, weights = static_source(source, weights, options, strict)
        super().__init__(source, weights, options, example_inputs=example_inputs, strict=strict,
                         self_object=self_object, example_shapes=example_shapes)


class StaticRuntime(_runtime.StaticRuntime):
    """``vm.StaticRuntime``: ``vm.static.StaticRuntime`` over a ``StaticModule`` (this
    module's) of a program, a model or IR text, or over a module already built."""

    def __init__(
        self,
        module_or_program: Any,
        weights: Any = None,
        options: StaticOptions | None = None,
        *,
        seed: int | None = None,
        strict: bool = True,
        quantized_engine: str | None = None,
        quantized_kernel: str | None = None,
    ):
        if not isinstance(module_or_program, _module.StaticModule):
            module_or_program = StaticModule(module_or_program, weights, options, strict=strict)
            weights = options = None
        super().__init__(module_or_program, weights, options, seed=seed, strict=strict,
                         quantized_engine=quantized_engine, quantized_kernel=quantized_kernel)


__all__ = ["StaticModule", "StaticRuntime", "specialize", "static_source"]
