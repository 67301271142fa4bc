"""irvm's runtime: bytecode, the interpreter, the static runtime and the operator library.

    model = vm.load("model.pt")          # .pt, .ir or .irbc -> a vm.Model (vm/api/)
    model(x)  /  model(x=x)  /  model.run(None, {"x": x})
    vm.Interpreter(program, weights=None)(*args)     # the backends themselves
    vm.StaticRuntime(program, weights=None)(*args)   # (IR text compiled, a program specialized
                                                     # for its weights first: vm/api/static.py)
    vm.save(program_or_model, "model.irbc")
    vm.set_num_threads(1)    # BLAS, fused and compiled kernels: one thread each

Everything loads lazily, so that ``import vm`` stays cheap: ``vm.load`` imports the
compiler only to compile a ``.pt`` or ``.ir``.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what __getattr__ gives, spelled for type checkers (at run time they load when used)
    from vm.api import Model, NodeArg, load
    from vm.api.static import StaticModule, StaticRuntime
    from vm.interpreter.machine import Interpreter
    from vm.program.bytecode import Program
    from vm.static import RuntimePool
    from vm.threads import get_num_threads, set_num_threads


def save(program: Any, path: str | Path, options: dict[str, Any] | None = None) -> None:
    """Write a ``Program`` (or a ``vm.Model``'s program) to ``path`` as an ``.irbc``
    (``vm.program.irbc.save``; ``Model.save`` also refuses to replace a file it did not make)."""
    from vm.program.accept import unwrap_model
    from vm.program.irbc import save as save_program

    save_program(unwrap_model(program, None)[0], path, options)


def __getattr__(name: str):
    # Lazy, so that `import vm` stays cheap and the pieces load only when used.
    if name == "version":
        from vm.command import version

        return version
    if name in ("load", "Model", "NodeArg"):
        import vm.api

        return getattr(vm.api, name)
    if name in ("set_num_threads", "get_num_threads"):
        from vm import threads

        return getattr(threads, name)
    if name in ("Interpreter",):
        from vm.interpreter.machine import Interpreter

        return Interpreter
    if name in ("Program",):
        from vm.program.bytecode import Program

        return Program
    if name in ("StaticModule", "StaticRuntime"):  # the front door's: IR text compiled, weights specialized
        from vm.api import static as front

        return getattr(front, name)
    if name == "RuntimePool":
        from vm.static import RuntimePool

        return RuntimePool
    raise AttributeError(f"module 'vm' has no attribute {name!r}")


__all__ = [
    "Interpreter", "Model", "NodeArg", "Program", "RuntimePool", "StaticModule", "StaticRuntime", "get_num_threads",
    "load", "save", "set_num_threads",
]
