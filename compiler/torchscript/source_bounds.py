"""Parsing an archive's TorchScript source within bounds.

The frontend walks the source's syntax tree recursively, and compiles each element of a
literal into a node of its own: a 50,000-term expression would exhaust Python's stack (a
``RecursionError``, which even ``ast.parse`` can raise) and a 300,000-element list takes
half a minute.  So ``parse`` checks the tree before anyone walks it, in one iterative pass
(an explicit stack, linear in the tree): its nesting depth (``limits.expr_depth``, counted
from the module through classes, functions and statements down to the innermost
expression) and the elements of each list, tuple, set or dict literal
(``limits.literal_elements``).  A tree past a bound, or one Python's own parser cannot
build, is an ``ArchiveError`` naming the member, the line and the limit.
"""

from __future__ import annotations

import ast

from compiler.diagnostics import Span
from compiler.torchscript.limits import ReadLimits, current, over
from compiler.torchscript.unpickle import ArchiveError


def parse(text: str, member: str, lines: list[str], limits: ReadLimits | None = None) -> ast.Module:
    """``ast.parse(text)``, refused past the bounds (see the module docstring)."""
    limits = limits or current()
    try:
        tree = ast.parse(text, filename=member)
    except SyntaxError as err:
        line = err.lineno or 0
        raise ArchiveError(
            f"not TorchScript source: {err.msg}",
            Span(member, line, err.offset or 0, lines[line - 1] if 0 < line <= len(lines) else None),
        ) from None
    except (RecursionError, MemoryError):
        raise ArchiveError(f"{member}: the source nests deeper than Python's parser can read "
                           f"(irvm reads at most expr_depth={limits.expr_depth} levels)") from None
    check(tree, member, lines, limits)
    return tree


def check(tree: ast.AST, member: str, lines: list[str], limits: ReadLimits) -> None:
    """Refuse ``tree`` when it nests deeper than ``expr_depth`` or holds a literal of more
    than ``literal_elements`` elements."""
    work: list[tuple[ast.AST, int]] = [(tree, 0)]
    while work:
        node, depth = work.pop()
        if depth > limits.expr_depth:
            raise ArchiveError(over("its nesting depth", depth, "expr_depth", limits.expr_depth), _span(member, lines, node))
        if isinstance(node, (ast.List, ast.Tuple, ast.Set, ast.Dict)):
            n = len(node.keys) if isinstance(node, ast.Dict) else len(node.elts)
            if n > limits.literal_elements:
                raise ArchiveError(
                    over(f"the size of a {type(node).__name__.lower()} literal", n, "literal_elements", limits.literal_elements),
                    _span(member, lines, node),
                )
        work.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def _span(member: str, lines: list[str], node: ast.AST) -> Span:
    line = getattr(node, "lineno", 0)
    col = getattr(node, "col_offset", -1) + 1
    return Span(member, line, col, lines[line - 1] if 0 < line <= len(lines) else None)
