"""Expressions of serialized TorchScript, compiled to IR values.

An expression evaluates to a *thing*: an IR ``Value`` most of the time, or a compile-time
object the printed code names without it being a run-time value -- a tuple written out
(``(a, b)``, unpacked by ``x, y = a, b`` without a ``TupleConstruct``), an operator
(``torch.add``, ``ops.prim.NumToTensor``), a function of the archive (``_0 =
__torch__.torch.nn.functional.relu``), a class (for NamedTuple construction and
``__new__``), or a method bound to a module object.  ``value()`` turns a thing into a
Value where one is needed (a tuple becomes ``prim::TupleConstruct``).

The forms are those of PyTorch's ``python_print.cpp``: ``torch.X(...)`` is ``aten::X``,
``ops.NS.X(...)`` is ``NS::X``, ``int(x)``/``float``/``bool``/``str`` are ``aten::Int``...,
``annotate(T, e)``, ``unchecked_cast(T, e)``, ``uninitialized(T)``, ``x[i]``
(``__getitem__``, or ``TupleIndex`` on a tuple), ``getattr(m, "0")``, ``obj.attr``
(``prim::GetAttr``), ``(m).forward(x, )`` (a method, inlined), ``CONSTANTS.cN``.
"""

from __future__ import annotations

import abc
import ast
from typing import Any

import attrs

from compiler import types as T
from compiler.diagnostics import CompileError, Span
from compiler.torchscript.builder import GraphBuilder, unify
from compiler.torchscript.fold import NOT_FOLDED, constant_of, fold
from compiler.torchscript.quantized import quantized_type
from compiler.torchscript.source import SourceIndex, dotted
from compiler.torchscript.unpickle import Record
from vm.core.quantized import PACKED_TYPES, QTensor
from vm.ir.graph import Value


@attrs.define(eq=False)
class TupleLit:
    items: list[Any]


@attrs.define(eq=False)
class OpName:
    kind: str


@attrs.define(eq=False)
class FuncRef:
    qualname: str


@attrs.define(eq=False)
class ClassRef:
    qualname: str


@attrs.define(eq=False)
class Selection:
    """An element of a ``ModuleList`` / ``ModuleDict`` chosen by an index or key known only at
    run time (TorchScript's ``prim::ModuleContainerIndex``, behind a module interface): a method
    called on it runs the element's method that the key selects (``ExprCompiler.dispatch``)."""

    choices: list[tuple[int | str, Value]]  # (index or key, the element read from the container)
    key: Value
    is_list: bool  # a ModuleList's index (torch looks up the element named str(index): none for -1)


@attrs.define(eq=False)
class BoundMethod:
    obj: Value | ClassRef | Selection  # a ClassRef for ``Class.__new__``
    name: str


@attrs.define(eq=False)
class Context:
    """One inlined function: its file, variables and declared variable types."""

    file: str
    env: dict[str, Any]
    declared: dict[str, T.Type] = attrs.field(factory=dict)


_CONTAINERS = ("ModuleList", "ModuleDict")  # indexed by a run-time key: ``Selection``
_CASTS = {"int": "aten::Int", "float": "aten::Float", "bool": "aten::Bool", "str": "aten::str",
          "print": "prim::Print", "sorted": "aten::sorted", "len": "aten::len"}
_FLOAT_NAMES = ("inf", "nan")
_IMPLICIT: dict[T.Type, str] = {T.INT: "aten::IntImplicit", T.FLOAT: "aten::FloatImplicit", T.SCALAR: "aten::ScalarImplicit"}


class ExprCompiler(abc.ABC):
    """Expression half of the frontend; ``Frontend`` adds statements and (inlined) calls."""

    index: SourceIndex
    b: GraphBuilder
    records: dict[int, Record]
    paths: dict[int, str]
    constants: tuple[Any, ...]
    training_assigned: bool
    _constant_values: dict[int, Value]

    @abc.abstractmethod
    def call_function(self, info: Any, args: list[Any], kwargs: dict[str, Any], span: Span | None) -> Any:
        """The result of calling function ``info`` of the archive (``Frontend`` inlines it)."""

    @abc.abstractmethod
    def call_method(self, obj: Value, name: str, args: list[Any], kwargs: dict[str, Any], span: Span | None) -> Any:
        """The result of method ``name`` of object ``obj`` (``Frontend`` inlines it)."""

    def span(self, ctx: Context, node: ast.AST) -> Span:
        return self.index.span(ctx.file, node)

    def error(self, ctx: Context, node: ast.AST, message: str) -> CompileError:
        return CompileError(message, self.span(ctx, node))

    # ------------------------------------------------------------------ things -> values

    def value(self, ctx: Context, e: ast.expr) -> Value:
        return self.materialize(ctx, self.expr(ctx, e), e)

    def materialize(self, ctx: Context, thing: Any, where: ast.AST) -> Value:
        if isinstance(thing, Value):
            return thing
        if isinstance(thing, TupleLit):
            items = [self.materialize(ctx, t, where) for t in thing.items]
            out = T.TupleType(tuple(v.type or T.TENSOR for v in items))
            return self.b.node("prim::TupleConstruct", items, [out], self.span(ctx, where)).output
        what = {OpName: "an operator", FuncRef: "a function", ClassRef: "a class", BoundMethod: "a method"}
        raise self.error(ctx, where, f"{what.get(type(thing), type(thing).__name__)} cannot be used as a value here")

    # ------------------------------------------------------------------ expressions

    def expr(self, ctx: Context, e: ast.expr) -> Any:
        span = self.span(ctx, e)
        if isinstance(e, ast.Constant):
            value = e.value
            if not (value is None or isinstance(value, (bool, int, float, str, complex))):
                raise self.error(ctx, e, f"unsupported constant {value!r}")
            return self.b.constant(value, span)
        if isinstance(e, ast.UnaryOp) and isinstance(e.op, (ast.USub, ast.Not)):
            return self.unary(ctx, e)
        if isinstance(e, ast.Name):
            if e.id in ctx.env:
                return ctx.env[e.id]
            if e.id in _FLOAT_NAMES:  # python_print writes inf and nan bare
                return self.b.constant(float(e.id), span)
            raise self.error(ctx, e, f"undefined name `{e.id}`")
        if isinstance(e, ast.Attribute):
            return self.attribute(ctx, e)
        if isinstance(e, ast.Call):
            return self.call(ctx, e)
        if isinstance(e, ast.Tuple):
            return TupleLit([self.expr(ctx, x) for x in e.elts])
        if isinstance(e, ast.List):
            return self.list_literal(ctx, e, None)
        if isinstance(e, ast.Dict):
            return self.dict_literal(ctx, e, None)
        if isinstance(e, ast.Subscript):
            return self.subscript(ctx, e)
        raise self.error(ctx, e, f"unsupported expression `{ast.unparse(e)}` ({type(e).__name__}) in serialized TorchScript")

    def unary(self, ctx: Context, e: ast.UnaryOp) -> Any:
        """``-c`` of a constant folds (``-1``, ``-inf``); otherwise ``aten::neg`` / ``aten::__not__``.

        A negated negative literal is read as torch's frontend reads it, which folds ``-1``
        into the literal's text and negates that text again: ``--1`` (also ``- -1``,
        ``-(-1)``) is refused, as ``stoll("--1")`` fails and ``torch.jit.load`` refuses the
        file; ``--1.5`` is 0.0, what ``strtod("--1.5")`` gives torch."""
        inner = e.operand
        if (isinstance(e.op, ast.USub) and isinstance(inner, ast.UnaryOp) and isinstance(inner.op, ast.USub)
                and isinstance(inner.operand, ast.Constant) and type(inner.operand.value) in (int, float)):
            if type(inner.operand.value) is int:
                raise self.error(ctx, e, f"`{ast.unparse(e)}`: a negated negative integer literal, which torch's "
                                         "frontend cannot read (torch.jit.load refuses this file: stoll)")
            return self.b.constant(0.0, self.span(ctx, e), T.FLOAT)
        operand = self.value(ctx, e.operand)
        node = operand.node
        if isinstance(e.op, ast.USub) and node is not None and node.kind == "prim::Constant" and not operand.uses:
            value = node.attrs.get("value")
            if (isinstance(value, (int, float)) and not isinstance(value, bool) and operand.type in (T.INT, T.FLOAT)
                    and node.owner is not None):
                node.owner.nodes.remove(node)
                return self.b.constant(-value, self.span(ctx, e), operand.type)
        kind = "aten::neg" if isinstance(e.op, ast.USub) else "aten::__not__"
        return self.b.op(kind, [operand], {}, self.span(ctx, e))[0]

    def attribute(self, ctx: Context, e: ast.Attribute) -> Any:
        name = dotted(e)
        root = name.split(".", 1)[0] if name else None
        if name is not None and root not in ctx.env:
            return self.qualified(ctx, e, name)
        base = self.expr(ctx, e.value)
        if isinstance(base, (ClassRef, Selection)):
            return BoundMethod(base, e.attr)  # Class.__new__, or a method of a chosen element
        if not isinstance(base, Value):
            raise self.error(ctx, e, f"cannot read attribute `{e.attr}` of {ast.unparse(e.value)}")
        return self.get_attr(ctx, e, base, e.attr)

    def qualified(self, ctx: Context, e: ast.expr, name: str) -> Any:
        parts = name.split(".")
        if parts[0] == "torch" and len(parts) == 2:
            return OpName(f"aten::{parts[1]}")
        if parts[0] == "ops" and len(parts) == 3:
            return OpName(f"{parts[1]}::{parts[2]}")
        if parts[0] == "CONSTANTS" and len(parts) == 2 and parts[1][:1] == "c" and parts[1][1:].isdigit():
            return self.archive_constant(ctx, e, int(parts[1][1:]))
        if parts[0] == "__torch__":
            if name in self.index.functions:
                return FuncRef(name)
            if name in self.index.classes:
                return ClassRef(name)
            owner, _, attr = name.rpartition(".")
            info = self.index.classes.get(owner)
            if info is not None and attr == "__new__":
                return BoundMethod(ClassRef(owner), attr)
            if info is not None and info.kind == "enum" and attr in info.constants:
                return self.b.constant(info.constants[attr], self.span(ctx, e))
        raise self.error(ctx, e, f"unknown name `{name}` (not an operator, nor a class or function of the archive)")

    def archive_constant(self, ctx: Context, e: ast.expr, i: int) -> Any:
        if i >= len(self.constants):
            raise self.error(ctx, e, f"CONSTANTS.c{i}: the archive's constants.pkl has {len(self.constants)} entries")
        cached = self._constant_values.get(i)
        if cached is not None:
            return cached
        value = self.constants[i]
        import numpy as np

        if isinstance(value, np.ndarray):
            out = self.b.tensor_constant(f"CONSTANTS.c{i}")
        elif isinstance(value, (QTensor, *PACKED_TYPES)):  # bound from the weights by name, as a tensor is
            out = self.b.tensor_constant(f"CONSTANTS.c{i}", quantized_type(value))
        elif isinstance(value, (bool, int, float, str)) or value is None:
            saved = self.b.block
            self.b.block = self.b.graph.block
            try:
                out = self.b.constant(value, None)
                node = out.node
                assert node is not None
                self.b.graph.block.nodes.remove(node)
                self.b.graph.block.insert(0, node)
            finally:
                self.b.block = saved
        else:
            raise self.error(ctx, e, f"CONSTANTS.c{i} is a {type(value).__name__}, which irvm cannot hold as a constant")
        self._constant_values[i] = out
        return out

    def get_attr(self, ctx: Context, e: ast.AST, obj: Value, name: str) -> Any:
        span = self.span(ctx, e)
        if isinstance(obj.type, T.TupleType) and obj.type.names is not None:
            if name not in obj.type.names:
                raise self.error(ctx, e, f"NamedTuple {obj.type} has no field `{name}`")
            i = obj.type.names.index(name)
            return self.b.node("prim::TupleIndex", [obj, self.b.constant(i, span)], [obj.type.elems[i]], span).output
        if name == "value" and obj.type in (T.STR, T.INT, T.FLOAT):
            return obj  # `(member).value` of an enum member, which irvm holds as its value
        if not isinstance(obj.type, T.ClassType):
            return BoundMethod(obj, name)
        record = self.records.get(id(obj))
        qualname = record.qualname if record is not None else obj.type.qualname
        info = self.index.classes.get(qualname)
        if info is None:
            raise self.error(ctx, e, f"class {qualname} is not defined in the archive")
        if name in info.methods:
            return BoundMethod(obj, name)
        if name in info.constants:
            return self.b.constant(info.constants[name], span)
        sub = record.attributes.get(name) if record is not None else None
        if isinstance(sub, Record) and getattr(self.index.classes.get(sub.qualname), "kind", "") == "enum":
            sub = sub.state  # an enum member is held as its value
        if name == "training" and isinstance(sub, bool) and not self.training_assigned:
            return self.b.constant(sub, span)  # the module's mode, fixed: see compiler.torchscript.fold
        if isinstance(sub, Record):
            out_type: T.Type = T.ClassType(sub.qualname)
        elif name in info.attributes:
            out_type = self.index.type_of(info.attributes[name], info.file)
        else:
            raise self.error(ctx, e, f"{qualname} has no attribute `{name}`")
        out = self.b.node("prim::GetAttr", [obj], [out_type], span, {"name": name}, [name if name.isidentifier() else None]).output
        if isinstance(sub, Record):
            self.records[id(out)] = sub
            base = self.paths.get(id(obj))
            if base is not None:
                self.paths[id(out)] = f"{base}.{name}" if base else name
        return out

    # ------------------------------------------------------------------ literals

    def list_literal(self, ctx: Context, e: ast.List, declared: T.Type | None) -> Value:
        items = [self.value(ctx, x) for x in e.elts]
        if declared is None:
            if not items:
                raise self.error(ctx, e, "an empty list needs annotate(List[T], [])")
            elem: T.Type | None = items[0].type or T.TENSOR
            for v in items[1:]:
                elem = unify(elem, v.type)
                if elem is None:
                    raise self.error(ctx, e, "list elements of different types")
            declared = T.ListType(elem)
        return self.b.node("prim::ListConstruct", items, [declared], self.span(ctx, e)).output

    def dict_literal(self, ctx: Context, e: ast.Dict, declared: T.Type | None) -> Value:
        inputs: list[Value] = []
        for k, v in zip(e.keys, e.values):
            if k is None:
                raise self.error(ctx, e, "dict unpacking (**) is not TorchScript")
            inputs += [self.value(ctx, k), self.value(ctx, v)]
        if declared is None:
            if not inputs:
                raise self.error(ctx, e, "an empty dict needs annotate(Dict[K, V], {})")
            declared = T.DictType(inputs[0].type or T.TENSOR, inputs[1].type or T.TENSOR)
        return self.b.node("prim::DictConstruct", inputs, [declared], self.span(ctx, e)).output

    def subscript(self, ctx: Context, e: ast.Subscript) -> Any:
        base = self.expr(ctx, e.value)
        span = self.span(ctx, e)
        tuple_type = base.type if isinstance(base, Value) and isinstance(base.type, T.TupleType) else None
        if isinstance(base, TupleLit) or tuple_type is not None:
            elem_types = tuple_type.elems if tuple_type is not None else ()
            n = len(base.items) if isinstance(base, TupleLit) else len(elem_types)
            if isinstance(e.slice, ast.Slice):
                lo, hi = (self.const_int(ctx, x, d) for x, d in ((e.slice.lower, 0), (e.slice.upper, n)))
                lo, hi = (x + n if x < 0 else x for x in (lo, hi))
                if isinstance(base, TupleLit):
                    return TupleLit(base.items[lo:hi])
                out = T.TupleType(elem_types[lo:hi])
                return self.b.node("prim::TupleSlice", [base], [out], span, {"beg": lo, "end": hi}).output
            i = self.const_int(ctx, e.slice, None)
            if not -n <= i < n:
                raise self.error(ctx, e, f"tuple index {i} out of range for {n} elements")
            i = i + n if i < 0 else i
            if isinstance(base, TupleLit):
                return base.items[i]
            return self.b.node("prim::TupleIndex", [base, self.b.constant(i, span)], [elem_types[i]], span).output
        if not isinstance(base, Value):
            raise self.error(ctx, e, f"cannot index {ast.unparse(e.value)}")
        record = self.records.get(id(base))
        if record is not None and record.qualname.rsplit(".", 1)[-1] in _CONTAINERS and not isinstance(e.slice, ast.Slice):
            return self.container_element(ctx, e, base, record)
        if isinstance(e.slice, ast.Slice):
            raise self.error(ctx, e, "slicing is printed as torch.slice in TorchScript; this form is not supported")
        return self.b.op("aten::__getitem__", [base, self.value(ctx, e.slice)], {}, span)[0]

    def const_int(self, ctx: Context, e: ast.expr | None, default: int | None) -> int:
        if e is None and default is not None:
            return default
        try:
            value = ast.literal_eval(e) if e is not None else None
        except ValueError:
            value = None
        if not isinstance(value, int) or isinstance(value, bool):
            raise self.error(ctx, e or ast.Constant(0), "a tuple index must be an integer constant")
        return value

    # ------------------------------------------------------------------ calls

    def call(self, ctx: Context, e: ast.Call) -> Any:
        span = self.span(ctx, e)
        if any(isinstance(a, ast.Starred) for a in e.args) or any(k.arg is None for k in e.keywords):
            raise self.error(ctx, e, "*args / **kwargs calls are not TorchScript")
        f = e.func
        if isinstance(f, ast.Name) and f.id not in ctx.env:
            return self.builtin(ctx, e, f.id)
        func = self.expr(ctx, f)
        if isinstance(func, BoundMethod) and isinstance(func.obj, ClassRef):
            return self.class_method(ctx, e, func.obj, func.name)
        args = [self.expr(ctx, a) for a in e.args]
        kwargs = {k.arg: self.expr(ctx, k.value) for k in e.keywords if k.arg is not None}
        if isinstance(func, BoundMethod) and isinstance(func.obj, Selection):
            return self.dispatch(ctx, e, func.obj, func.name, args, kwargs)
        if isinstance(func, OpName):
            return self.op_call(ctx, e, func.kind, args, kwargs)
        if isinstance(func, FuncRef):
            return self.call_function(self.index.functions[func.qualname], args, kwargs, span)
        if isinstance(func, BoundMethod) and isinstance(func.obj, Value):  # (a ClassRef's is called above)
            if isinstance(func.obj.type, T.ClassType):
                return self.call_method(func.obj, func.name, args, kwargs, span)
            kind = "prim::tolist" if func.name == "tolist" else f"aten::{func.name}"
            return self.op_call(ctx, e, kind, [func.obj, *args], kwargs)
        if isinstance(func, ClassRef):
            return self.construct(ctx, e, func.qualname, args, kwargs)
        raise self.error(ctx, e, f"`{ast.unparse(f)}` is not callable")

    def op_call(self, ctx: Context, e: ast.AST, kind: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        values = [self.materialize(ctx, a, e) for a in args]
        named = {k: self.materialize(ctx, v, e) for k, v in kwargs.items()}
        decided = fold(kind, values) if not named else NOT_FOLDED
        if decided is not NOT_FOLDED:
            return self.b.constant(decided, self.span(ctx, e))
        outs = self.b.op(kind, values, named, self.span(ctx, e))
        if not outs:
            return self.b.constant(None, self.span(ctx, e))
        return outs[0] if len(outs) == 1 else TupleLit(list(outs))

    def builtin(self, ctx: Context, e: ast.Call, name: str) -> Any:
        span = self.span(ctx, e)
        args = e.args
        if name in ("annotate", "unchecked_cast") and len(args) == 2:
            type_ = self.index.type_of(args[0], ctx.file)
            if name == "annotate":
                return self.annotate(ctx, args[1], type_)
            v = self.value(ctx, args[1])
            if (v.type == type_ and constant_of(v) is not NOT_FOLDED) or (type_ == T.ANY and v.type is not None):
                return v  # a constant of that type already, or a cast to Any: the value keeps its type (fold.py)
            return self.b.node("prim::unchecked_cast", [v], [type_], span).output
        if name == "uninitialized" and len(args) == 1:
            return self.b.node("prim::Uninitialized", [], [self.index.type_of(args[0], ctx.file)], span).output
        if name == "getattr" and len(args) == 2 and isinstance(args[1], ast.Constant):
            obj = self.value(ctx, args[0])
            return self.get_attr(ctx, e, obj, str(args[1].value))
        if name == "isinstance" and len(args) == 2:
            return self.isinstance_(ctx, e)
        if name == "float" and len(args) == 1 and isinstance(args[0], ast.Constant) and isinstance(args[0].value, str):
            return self.b.constant(float(args[0].value), span)
        if name in _CASTS:
            return self.op_call(ctx, e, _CASTS[name], [self.expr(ctx, a) for a in args], {})
        if name in ("min", "max", "abs"):
            return self.op_call(ctx, e, f"prim::{name}", [self.expr(ctx, a) for a in args], {})
        raise self.error(ctx, e, f"unsupported builtin `{name}(...)` in serialized TorchScript")

    def annotate(self, ctx: Context, e: ast.expr, type_: T.Type) -> Any:
        if isinstance(e, ast.List):
            return self.list_literal(ctx, e, type_)
        if isinstance(e, ast.Dict):
            return self.dict_literal(ctx, e, type_)
        if isinstance(e, ast.Call) and isinstance(e.func, ast.Attribute) and e.func.attr == "tolist" and not e.args:
            v = self.value(ctx, e.func.value)
            elem, dim = type_, 0
            while isinstance(elem, T.ListType):
                elem, dim = elem.elem, dim + 1
            span = self.span(ctx, e)
            kinds: dict[T.Type, int] = {T.INT: 0, T.FLOAT: 1, T.BOOL: 2}
            kind = kinds.get(elem, 1)
            inputs = [v, self.b.constant(dim, span), self.b.constant(kind, span)]
            return self.b.node("prim::tolist", inputs, [type_], span).output
        v = self.value(ctx, e)
        if isinstance(v.type, T.TensorType) and type_ in _IMPLICIT:
            return self.b.op(_IMPLICIT[type_], [v], {}, self.span(ctx, e))[0]
        return v

    def isinstance_(self, ctx: Context, e: ast.Call) -> Value:
        v = self.value(ctx, e.args[0])
        spec = e.args[1]
        targets = spec.elts if isinstance(spec, ast.Tuple) else [spec]
        types = [self.index.type_of(t, ctx.file) for t in targets]
        actual = v.type or T.TENSOR
        if isinstance(actual, (T.OptionalType, T.UnionType)) or actual == T.ANY:  # decided by the value, at run time
            return self.b.node("prim::isinstance", [v], [T.BOOL], self.span(ctx, e), {"types": types}).output
        hit = any(t == actual or (isinstance(t, T.TensorType) and isinstance(actual, T.TensorType)) for t in types)
        return self.b.constant(bool(hit), self.span(ctx, e))

    def container_element(self, ctx: Context, e: ast.Subscript, base: Value, record: Record) -> Any:
        """``layers[i]`` of a ModuleList or ``named[k]`` of a ModuleDict: the element itself when
        the key is a constant, else a ``Selection`` over every element."""
        key = self.value(ctx, e.slice)
        names = [n for n, sub in record.attributes.items() if isinstance(sub, Record)]
        is_list = record.qualname.endswith("ModuleList")
        known = constant_of(key)
        if known is not NOT_FOLDED:
            if str(known) not in names:
                kind = "index" if is_list else "key"
                raise self.error(ctx, e, f"{kind} {known!r} is not in the {record.qualname.rsplit('.', 1)[-1]}")
            return self.get_attr(ctx, e, base, str(known))
        choices: list[tuple[int | str, Value]] = []
        for n in names:
            element = self.get_attr(ctx, e, base, n)
            assert isinstance(element, Value)
            choices.append((int(n) if is_list else n, element))
        return Selection(choices, key, is_list)

    def dispatch(self, ctx: Context, e: ast.AST, sel: Selection, name: str, args: list[Any], kwargs: dict[str, Any]) -> Value:
        """Method ``name`` of the element ``sel`` chooses: one ``prim::If`` per element, tried in
        order, the last ``else`` raising torch's error for a key the container lacks."""
        values = [self.materialize(ctx, a, e) for a in args]
        named = {k: self.materialize(ctx, v, e) for k, v in kwargs.items()}
        span = self.span(ctx, e)
        return self._dispatch_from(ctx, e, sel, 0, name, values, named, span)

    def _dispatch_from(self, ctx: Context, e: ast.AST, sel: Selection, k: int, name: str, args: list[Value],
                       kwargs: dict[str, Value], span: Span) -> Value:
        key, element = sel.choices[k]
        cond = self.b.op("aten::eq", [sel.key, self.b.constant(key, span)], {}, span)[0]
        node = self.b.node("prim::If", [cond], [], span)
        then, other = node.add_block(), node.add_block()
        before = self.b.block
        try:
            self.b.block = then
            got = self.materialize(ctx, self.call_method(element, name, args, kwargs, span), e)
            self.b.block = other
            if k + 1 < len(sel.choices):
                rest = self._dispatch_from(ctx, e, sel, k + 1, name, args, kwargs, span)
            else:
                what = "the ModuleList has no element of that index" if sel.is_list else "the ModuleDict has no such key"
                error = "builtins.IndexError" if sel.is_list else "builtins.KeyError"
                self.b.op("prim::RaiseException", [self.b.constant(what, span), self.b.constant(error, span)], {}, span)
                rest = self.b.node("prim::Uninitialized", [], [got.type or T.TENSOR], span).output
        finally:
            self.b.block = before
        type_ = unify(got.type, rest.type)
        if type_ is None:
            raise self.error(ctx, e, f"{name} returns a {got.type} for one element and a {rest.type} for another")
        then.add_return(got)
        other.add_return(rest)
        return node.add_output(self.b.fresh(), type_)

    def class_method(self, ctx: Context, e: ast.Call, cls: ClassRef, name: str) -> Any:
        if name == "__new__":
            return self.b.node("prim::CreateObject", [], [T.ClassType(cls.qualname)], self.span(ctx, e)).output
        raise self.error(ctx, e, f"unsupported class method call {cls.qualname}.{name}")

    def construct(self, ctx: Context, e: ast.AST, qualname: str, args: list[Any], kwargs: dict[str, Any]) -> Any:
        info = self.index.classes[qualname]
        if info.kind != "namedtuple":
            raise self.error(ctx, e, f"constructing {qualname} by a call is not supported")
        fields = [n for n, _ in info.fields]
        values = [self.materialize(ctx, a, e) for a in args]
        for n in fields[len(values) :]:
            if n not in kwargs:
                raise self.error(ctx, e, f"NamedTuple {qualname} needs field `{n}`")
            values.append(self.materialize(ctx, kwargs[n], e))
        out = self.index.class_type(qualname)
        return self.b.node("prim::TupleConstruct", values, [out], self.span(ctx, e)).output
