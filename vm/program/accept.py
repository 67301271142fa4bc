"""What a runtime's constructor accepts, and what to call instead when it is given something else.

``vm.Interpreter(x)`` and ``vm.StaticModule(x)`` / ``vm.StaticRuntime(x)`` take a compiled
``Program`` (the static runtime also an IR ``Module`` or a ``Graph``; ``vm.StaticModule`` and
``vm.StaticRuntime``, the front door's, IR text too, which they compile).  Given a
``vm.Model`` (what ``vm.load`` returns) they take its program and, unless weights are
given, its weights.  Given a path, or a ``vm.ir.graph.Module`` where only a program
will do, they raise a ``RunError`` naming the call that does what was meant
(``vm.load(path)``, ``compiler.compile_source``...), where Python would have said
``'str' object has no attribute 'functions'``.  The model is recognized by its
``_irvm_model_`` mark, so the runtimes need not import the front door (``vm.api``,
which imports them).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from vm.core.errors import RunError

PROGRAM_SUFFIXES = (".pt", ".pth", ".ir", ".irbc", ".zip", ".npz", ".onnx")


def unwrap_model(source: Any, weights: Any) -> tuple[Any, Any]:
    """``(program, weights)`` of a ``vm.Model`` (its own weights unless ``weights`` is given),
    else ``(source, weights)`` unchanged."""
    if getattr(type(source), "_irvm_model_", False):
        return source.program, (weights if weights is not None else (source.weights or None))
    return source, weights


def refuse_path(source: Any, who: str, backend: str) -> None:
    """A ``RunError`` when ``source`` is a file path (a ``Path``, or a one-line string that
    names an existing file or ends like a program file) given to ``who``."""
    if isinstance(source, Path) or (isinstance(source, str) and _looks_like_path(source)):
        raise RunError(
            f"{who} takes a compiled program, not a file name ({str(source)!r}): open the file with "
            f"`vm.load({str(source)!r}{backend})`, which returns a model to call, or "
            f"`vm.program.irbc.load(path)` for the Program of an .irbc"
        )


def refuse_non_program(source: Any, who: str) -> None:
    """A ``RunError`` when ``source`` is not a compiled ``Program`` (for the interpreter)."""
    from vm.program.bytecode import Program

    if isinstance(source, Program):
        return
    refuse_path(source, who, ", backend='interp'")
    kind = type(source).__name__
    if kind in ("Module", "Graph") or isinstance(source, str):
        what = "IR text" if isinstance(source, str) else f"an IR {kind}"
        raise RunError(
            f"{who} runs a compiled program, not {what}: compile it first with `compiler.compile_source(text)` "
            f"(or open a file with `vm.load(path, backend='interp')`); `vm.StaticRuntime` also takes IR"
        )
    raise RunError(f"{who} takes a compiled Program or a vm.Model (from `vm.load(path)`), not {kind}")


def _looks_like_path(text: str) -> bool:
    if "\n" in text or "graph(" in text or len(text) > 4096:
        return False
    return text.lower().endswith(PROGRAM_SUFFIXES) or Path(text).exists()


__all__ = ["PROGRAM_SUFFIXES", "refuse_non_program", "refuse_path", "unwrap_model"]
