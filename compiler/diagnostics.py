"""The error family and spans: defined in ``vm.errors`` (the VM reports errors without the
compiler), re-exported here for the compiler's modules."""

from vm.errors import (
    BytecodeError,
    CompileError,
    IRError,
    IRSyntaxError,
    IRValidationError,
    RunError,
    Span,
    span_in,
)

__all__ = ["BytecodeError", "CompileError", "IRError", "IRSyntaxError", "IRValidationError", "RunError", "Span", "span_in"]
