"""One family of errors for everything irvm reports about the user's input.

It lives in the VM, which the compiler builds on: ``compiler.diagnostics`` re-exports it.

An error carries a ``Span`` (file, line, column, and the source line when known) and
renders as ``FILE:LINE:COL: message`` followed by the line and a caret, so every layer
(parser, verifier, overload resolution, VM) reports the same way::

    model.ir:3:14: undefined value %y
      %z : Tensor = aten::mul(%y, %x)
                              ^
"""

from __future__ import annotations

from typing import Any

import attrs


@attrs.frozen
class Span:
    """A place in an IR file. Lines and columns count from 1."""

    file: str = "<string>"
    line: int = 0
    col: int = 0
    source_line: str | None = attrs.field(default=None, eq=False, repr=False)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"

    def excerpt(self) -> str:
        """The source line and a caret under the column, or '' when the line is unknown."""
        if self.source_line is None:
            return ""
        line = self.source_line.rstrip("\n")
        if len(line) > 200:  # a 1 MB line is shown around the column, not whole
            start = max(0, self.col - 100)
            line, caret_col = line[start : start + 200], self.col - start
        else:
            caret_col = self.col
        return f"  {line}\n  {' ' * max(caret_col - 1, 0)}^"


def span_in(text: str, file: str, line: int, col: int) -> Span:
    """A span at line/col of ``text``, carrying that source line for the excerpt."""
    lines = text.splitlines()
    source = lines[line - 1] if 0 < line <= len(lines) else None
    return Span(file, line, col, source)


class IRError(Exception):
    """Base of every error irvm reports about its input (IR text, bytecode, run inputs)."""

    def __init__(self, message: str, span: Span | None = None):
        super().__init__(message)
        self.message = message
        self.span = span

    def __str__(self) -> str:
        if self.span is None:
            return self.message
        head = f"{self.span}: {self.message}"
        excerpt = self.span.excerpt()
        return f"{head}\n{excerpt}" if excerpt else head


class IRSyntaxError(IRError):
    """The text is not the graph IR format."""


class IRValidationError(IRError):
    """The text parses, but the graph is not well formed (SSA, arity, types)."""


class CompileError(IRError):
    """The graph is well formed but cannot be compiled (unknown operator, no overload)."""

    errors: list[CompileError]  # set when this one error reports several nodes (resolve, emit)


class BytecodeError(IRError):
    """An .irbc file is malformed, corrupt, or from an unsupported format version."""


class RunError(IRError):
    """Running a program failed: a bad input, a raised exception or a failing kernel."""

    cause: BaseException  # the interpreter's: the exception the failing instruction raised
    static_node: Any  # the static runtime's: the node that failed (its wrap_error reads it)
