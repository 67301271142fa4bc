"""irvm's runtime: bytecode, the interpreter, the static runtime and the operator library.

    vm.Interpreter(program, weights=None)(*args)
    vm.StaticRuntime(program, weights=None)(*args)
    vm.load("model.irbc")
"""


def version() -> str:
    """The installed irvm's version (from the distribution's metadata)."""
    from importlib.metadata import PackageNotFoundError
    from importlib.metadata import version as dist_version

    try:
        return dist_version("irvm")
    except PackageNotFoundError:
        return "(not installed)"


def __getattr__(name: str):
    # Lazy, so that `import vm` stays cheap and the pieces load only when used.
    if name in ("Interpreter",):
        from vm.interpreter import Interpreter

        return Interpreter
    if name in ("Program",):
        from vm.bytecode import Program

        return Program
    if name in ("load", "save"):
        import vm.irbc as irbc

        return getattr(irbc, name)
    if name in ("StaticModule", "StaticRuntime", "RuntimePool"):
        import vm.static as sr

        return getattr(sr, name)
    raise AttributeError(f"module 'vm' has no attribute {name!r}")


__all__ = ["Interpreter", "Program", "load", "save", "StaticModule", "StaticRuntime", "RuntimePool"]
