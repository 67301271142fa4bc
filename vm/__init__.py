"""irvm's runtime: bytecode, the interpreter, the static runtime and the operator library.

    vm.Interpreter(program, weights=None)(*args)
    vm.StaticRuntime(program, weights=None)(*args)
    vm.load("model.irbc")
    vm.set_num_threads(1)    # BLAS, fused and compiled kernels: one thread each
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # what __getattr__ gives, spelled for type checkers (at run time they load when used)
    from vm.interpreter.machine import Interpreter
    from vm.program.bytecode import Program
    from vm.program.irbc import load, save
    from vm.static import RuntimePool, StaticModule, StaticRuntime
    from vm.threads import get_num_threads, set_num_threads


def __getattr__(name: str):
    # Lazy, so that `import vm` stays cheap and the pieces load only when used.
    if name == "version":
        from vm.command import version

        return version
    if name in ("set_num_threads", "get_num_threads"):
        from vm import threads

        return getattr(threads, name)
    if name in ("Interpreter",):
        from vm.interpreter.machine import Interpreter

        return Interpreter
    if name in ("Program",):
        from vm.program.bytecode import Program

        return Program
    if name in ("load", "save"):
        from vm.program import irbc
        return getattr(irbc, name)
    if name in ("StaticModule", "StaticRuntime", "RuntimePool"):
        from vm import static

        return getattr(static, name)
    raise AttributeError(f"module 'vm' has no attribute {name!r}")


__all__ = [
    "Interpreter", "Program", "RuntimePool", "StaticModule", "StaticRuntime", "get_num_threads", "load", "save",
    "set_num_threads",
]
