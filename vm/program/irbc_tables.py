"""Checking the tables of an ``.irbc`` beside its bytecode, at load.

``vm.program.irbc.verify`` checks the instructions (operands, jumps, stack depths); the file
carries more tables, which a run reads later: ``self_reads`` (the GetAttr chain binding
``%self`` walks, ``vm.program.self_reads``), the spans of the optimized IR's nodes, the
input defaults.  An entry out of shape there would pass the hash (it is recomputed by
whoever edits the file) and fail only at run time, as an ``IndexError`` deep in the
binding code.  ``check_tables`` checks each entry at load: ``self_reads`` parents refer
to an earlier entry (or -1, ``%self``), names are strings, types parse, spans are
``(file, line, column[, text])``; and a program that reads ``%self`` declares a ``%self``
of a class type.  Every failure is a ``BytecodeError`` naming the file, the table and the
entry.
"""

from __future__ import annotations

from typing import Any

from vm.core.errors import BytecodeError


def check_tables(program: Any, where: str) -> None:
    """Refuse ``program`` (just read from ``where``) when a table is out of shape."""
    for k, span in enumerate(program.node_spans):
        if not _span_ok(span):
            raise BytecodeError(f"{where}: node span {k} is malformed: {_brief(span)}")
    reads = program.self_reads
    if reads and not (program.input_types and _type_ok(program.input_types[0])):
        raise BytecodeError(f"{where}: the program reads %self's attributes but takes no %self of a known type")
    for k, entry in enumerate(reads):
        parent, name, type_text, _required, span = entry
        if type(parent) is not int or not -1 <= parent < k:
            raise BytecodeError(f"{where}: self_reads entry {k} reads from entry {_brief(parent)}, not an earlier one")
        if not name:
            raise BytecodeError(f"{where}: self_reads entry {k} has no attribute name")
        if type_text and not _type_ok(type_text):
            raise BytecodeError(f"{where}: self_reads entry {k} has a malformed type {_brief(type_text)}")
        if not _span_ok(span):
            raise BytecodeError(f"{where}: self_reads entry {k} has a malformed span {_brief(span)}")


def _type_ok(text: str) -> bool:
    from vm.core.type_text import parse_type_text

    try:
        parse_type_text(text)
    except Exception:  # noqa: BLE001 - any failure to read a stored type is a malformed table
        return False
    return True


def _span_ok(span: Any) -> bool:
    if span is None:
        return True
    if not isinstance(span, (tuple, list)) or len(span) not in (3, 4):
        return False
    file, line, col, *rest = span
    return (isinstance(file, str) and type(line) is int and type(col) is int
            and all(r is None or isinstance(r, str) for r in rest))


def _brief(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def read_checks(raw: bytes, where: str) -> Any:
    """The check table of ``checks.json`` (``vm.program.check_graph``): a JSON object, else a
    ``BytecodeError``."""
    import json

    try:
        table = json.loads(raw)
    except ValueError as err:
        raise BytecodeError(f"{where}: malformed check table ({err})") from None
    if not isinstance(table, dict):
        raise BytecodeError(f"{where}: malformed check table (not an object)")
    return table
