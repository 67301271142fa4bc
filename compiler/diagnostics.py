"""The error family and spans: defined in ``vm.core.errors`` (the VM reports errors without the
compiler), re-exported here for the compiler's modules."""

from vm.core.errors import (
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
