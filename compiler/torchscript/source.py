"""The archive's TorchScript source, indexed: classes, functions, and their types.

``code/__torch__/a/b.py`` defines the names ``__torch__.a.b.<Name>``; ``code/__torch__.py``
defines ``__torch__.<Name>``.  Each file is parsed with Python's ``ast`` (the serialized
source is Python syntax) into:

- ``ClassInfo``: a module class ``class M(Module)`` (attribute annotations, ``Final``
  constants, methods), a NamedTuple, an interface, an enum, or a plain TorchScript class;
- ``FunctionInfo``: a free function ``def f(...)``.

``SourceIndex.type_of(expr)`` turns an annotation (``Optional[List[Tensor]]``,
``__torch__.m.Point``) into a ``compiler.types.Type``; a NamedTuple becomes a
``TupleType`` with field names, a class or interface a ``ClassType``.
"""

from __future__ import annotations

import ast
from typing import Any

import attrs

from compiler import types as T
from compiler.diagnostics import Span
from compiler.torchscript import source_bounds
from compiler.torchscript.unpickle import ArchiveError

_LEAVES: dict[str, T.Type] = {
    "Tensor": T.TENSOR,
    "int": T.INT,
    "float": T.FLOAT,
    "bool": T.BOOL,
    "str": T.STR,
    "NoneType": T.NONE,
    "None": T.NONE,
    "Device": T.DEVICE,
    "Any": T.ANY,
    "number": T.SCALAR,
    "Scalar": T.SCALAR,
    "complex": T.NamedType("complex"),
    "Generator": T.GENERATOR,
    "Layout": T.LAYOUT,
    "ScalarType": T.SCALAR_TYPE,
    "MemoryFormat": T.MEMORY_FORMAT,
}


@attrs.define(eq=False)
class FunctionInfo:
    qualname: str
    node: ast.FunctionDef
    file: str
    lines: list[str]


@attrs.define(eq=False)
class ClassInfo:
    qualname: str
    kind: str  # "module", "namedtuple", "interface", "enum", "class"
    file: str
    lines: list[str]
    node: ast.ClassDef
    attributes: dict[str, ast.expr] = attrs.field(factory=dict)  # name -> annotation
    constants: dict[str, Any] = attrs.field(factory=dict)  # Final[...] = value
    methods: dict[str, FunctionInfo] = attrs.field(factory=dict)
    fields: list[tuple[str, ast.expr]] = attrs.field(factory=list)  # NamedTuple fields in order
    state: list[str] = attrs.field(factory=list)  # a module's ``__parameters__`` and ``__buffers__``: its state_dict


class SourceIndex:
    """Every class and function of an archive's ``code/`` folder, by qualified name.

    ``debug`` maps a code member to its ``.debug_pkl`` records (see ``origin``)."""

    def __init__(self, files: dict[str, str], debug: dict[str, Any] | None = None) -> None:
        self.classes: dict[str, ClassInfo] = {}
        self.functions: dict[str, FunctionInfo] = {}
        self.lines: dict[str, list[str]] = {}
        self._origins = {m: _DebugTable(files[m], table) for m, table in (debug or {}).items() if m in files}
        self._origin_cache: dict[tuple[str, int, int], str | None] = {}
        for member, text in files.items():
            self._add_file(member, text)

    def origin(self, span: Span | None) -> str | None:
        """``file.py:LINE:COL`` of the user's Python that ``span`` (in the archive's code) was
        compiled from, when the archive has the debug pickle; else None."""
        if span is None:
            return None
        key = (span.file, span.line, span.col)
        if key not in self._origin_cache:
            table = self._origins.get(span.file)
            self._origin_cache[key] = table.lookup(span.line, span.col) if table is not None else None
        return self._origin_cache[key]

    def span(self, file: str, node: ast.AST) -> Span:
        line = getattr(node, "lineno", 0)
        col = getattr(node, "col_offset", -1) + 1
        lines = self.lines.get(file, [])
        return Span(file, line, col, lines[line - 1] if 0 < line <= len(lines) else None)

    def _add_file(self, member: str, text: str) -> None:
        path = member[len("code/") : -len(".py")]
        prefix = path.replace("/", ".")
        lines = text.split("\n")
        self.lines[member] = lines
        tree = source_bounds.parse(text, member, lines)  # bounded depth and literal sizes (docs/bounds.md)
        for stmt in tree.body:
            if isinstance(stmt, ast.ClassDef):
                info = self._class(f"{prefix}.{stmt.name}", stmt, member, lines)
                self.classes[info.qualname] = info
            elif isinstance(stmt, ast.FunctionDef):
                qualname = f"{prefix}.{stmt.name}"
                self.functions[qualname] = FunctionInfo(qualname, stmt, member, lines)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom, ast.Expr, ast.Pass)):
                continue
            else:
                raise ArchiveError(
                    f"unexpected top-level statement {type(stmt).__name__} in TorchScript source",
                    self.span(member, stmt),
                )

    def _class(self, qualname: str, node: ast.ClassDef, file: str, lines: list[str]) -> ClassInfo:
        bases = [b.id for b in node.bases if isinstance(b, ast.Name)]
        kind = {"Module": "module", "NamedTuple": "namedtuple", "Interface": "interface",
                "ModuleInterface": "interface", "Enum": "enum"}.get(bases[0] if bases else "", "class")
        info = ClassInfo(qualname, kind, file, lines, node)
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef):
                info.methods[stmt.name] = FunctionInfo(f"{qualname}.{stmt.name}", stmt, file, lines)
            elif isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
                name, ann = stmt.target.id, stmt.annotation
                if isinstance(ann, ast.Subscript) and isinstance(ann.value, ast.Name) and ann.value.id == "Final":
                    info.constants[name] = _literal(stmt.value, self.span(file, stmt))
                else:
                    known = info.attributes.get(name)
                    if known is not None and ast.dump(known) != ast.dump(ann):
                        raise ArchiveError(
                            f"class {qualname} declares attribute {name} twice, as {ast.unparse(known)} and as "
                            f"{ast.unparse(ann)} (torch.jit.load refuses this file)", self.span(file, stmt))
                    info.attributes[name] = ann
                    info.fields.append((name, ann))
            elif isinstance(stmt, ast.Assign) and len(stmt.targets) == 1:
                target = stmt.targets[0]
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.value, ast.Name)
                    and target.value.id == "__annotations__"
                    and isinstance(target.slice, ast.Constant)
                ):
                    info.attributes[str(target.slice.value)] = stmt.value
                elif isinstance(target, ast.Name) and target.id in ("__parameters__", "__buffers__"):
                    if isinstance(stmt.value, ast.List):
                        info.state += [str(e.value) for e in stmt.value.elts if isinstance(e, ast.Constant)]
                elif isinstance(target, ast.Name) and kind == "enum":
                    info.constants[target.id] = _literal(stmt.value, self.span(file, stmt))
        return info

    # ------------------------------------------------------------------ types

    def type_of(self, expr: ast.expr, file: str) -> T.Type:
        """The type an annotation denotes; ArchiveError at the annotation otherwise."""
        if isinstance(expr, ast.Constant) and expr.value is None:
            return T.NONE
        if isinstance(expr, ast.Name):
            leaf = _LEAVES.get(expr.id)
            if leaf is not None:
                return leaf
        name = dotted(expr)
        if name is not None and name.startswith("__torch__."):
            return self.class_type(name)
        if isinstance(expr, ast.Subscript) and isinstance(expr.value, ast.Name):
            head = expr.value.id
            args = list(expr.slice.elts) if isinstance(expr.slice, ast.Tuple) else [expr.slice]
            if head == "Tuple" and len(args) == 1 and isinstance(args[0], ast.Tuple) and not args[0].elts:
                return T.TupleType(())
            elems = [self.type_of(a, file) for a in args]
            if head == "Optional" and len(elems) == 1:
                return T.OptionalType(elems[0])
            if head == "List" and len(elems) == 1:
                return T.ListType(elems[0])
            if head == "Tuple":
                return T.TupleType(tuple(elems))
            if head == "Dict" and len(elems) == 2:
                return T.DictType(elems[0], elems[1])
            if head == "Union":
                unique = list(dict.fromkeys(elems))
                return unique[0] if len(unique) == 1 else T.UnionType(tuple(unique))
            if head == "Future" and len(elems) == 1:
                return T.FutureType(elems[0])
            if head == "Final" and len(elems) == 1:
                return elems[0]
        raise ArchiveError(f"unsupported type annotation `{ast.unparse(expr)}`", self.span(file, expr))

    def class_type(self, qualname: str) -> T.Type:
        """The type of values of class ``qualname``: a NamedTuple is a tuple type, an enum
        the type of its members' values (irvm holds an enum member as its value)."""
        info = self.classes.get(qualname)
        if info is not None and info.kind == "enum":
            kinds = {type(v) for v in info.constants.values()}
            return {str: T.STR, int: T.INT, float: T.FLOAT}.get(kinds.pop(), T.ANY) if len(kinds) == 1 else T.ANY
        if info is not None and info.kind == "namedtuple":
            names = tuple(n for n, _ in info.fields)
            return T.TupleType(tuple(self.type_of(a, info.file) for _, a in info.fields), names)
        return T.ClassType(qualname)


class _DebugTable:
    """A ``.debug_pkl``: ``("FORMAT_WITH_STRING_TABLE", strings, records)``, each record
    ``(byte offset in the printed code, ((text parts, file index, first line), start,
    end), debug handle)``: the printed code from that offset on came from bytes
    ``start:end`` of the text (the string-table parts joined), whose first line is line
    ``first line`` of the file."""

    def __init__(self, text: str, table: Any) -> None:
        self.line_starts = [0]
        for line in text.encode("utf-8").split(b"\n"):
            self.line_starts.append(self.line_starts[-1] + len(line) + 1)
        self.records: list[tuple[int, str, int, int]] = []
        self.texts: list[str] = []
        ok = isinstance(table, tuple) and len(table) == 3 and table[0] == "FORMAT_WITH_STRING_TABLE"
        strings, records = (table[1], table[2]) if ok else ((), ())
        for record in records:
            try:
                offset, ((parts, file_index, first_line), start, _end), _handle = record
                source = "".join(str(strings[i]) for i in parts)
                if not source:
                    continue
                before = source[:start]
                line = first_line + before.count("\n")
                col = start - (before.rfind("\n") + 1)  # 0-based, as torch's dumps print it
                self.records.append((int(offset), str(strings[file_index]), line, col))
            except (TypeError, ValueError, IndexError):
                continue  # an entry of another format: no origin for that stretch

    def lookup(self, line: int, col: int) -> str | None:
        if not 0 < line < len(self.line_starts):
            return None
        pos = self.line_starts[line - 1] + col - 1
        best = None
        for offset, file, orig_line, orig_col in self.records:
            if offset > pos:
                break
            best = f"{file}:{orig_line}:{orig_col}"
        return best


def dotted(expr: ast.expr) -> str | None:
    """``a.b.c`` for a chain of attribute accesses on a name, else None."""
    parts: list[str] = []
    while isinstance(expr, ast.Attribute):
        parts.append(expr.attr)
        expr = expr.value
    if not isinstance(expr, ast.Name):
        return None
    parts.append(expr.id)
    return ".".join(reversed(parts))


def _literal(expr: ast.expr | None, span: Span) -> Any:
    """A ``Final`` constant's value: Python literals, ``float("inf")``, tuples/lists of them."""
    if expr is None:
        return None
    try:
        return ast.literal_eval(expr)
    except ValueError:
        pass
    if (
        isinstance(expr, ast.Call)
        and isinstance(expr.func, ast.Name)
        and expr.func.id == "float"
        and len(expr.args) == 1
        and isinstance(expr.args[0], ast.Constant)
        and isinstance(expr.args[0].value, str)
    ):
        return float(expr.args[0].value)
    if isinstance(expr, (ast.Tuple, ast.List)):
        items = [_literal(e, span) for e in expr.elts]
        return tuple(items) if isinstance(expr, ast.Tuple) else items
    return _Unknown(ast.unparse(expr))


class _Unknown:
    """A class constant whose value is no literal (a device, a dtype object...)."""

    def __init__(self, text: str) -> None:
        self.text = text
