"""Serialized TorchScript -> irvm IR: statements, control flow, and inlined calls.

The code of a ``torch.jit.save`` archive is what PyTorch's ``python_print`` printed from
each method's graph, after the exit transforms: a function's only ``return`` is its last
statement, there is no ``break``/``continue``, loops are ``for i in range(n):`` or
``while c:`` with every loop-carried value assigned before the loop and at the end of the
body, and both arms of an ``if`` assign every value the ``if`` produces.  So SSA form is
recovered by *assignment analysis* alone:

- an ``if`` outputs every variable assigned in either arm that is defined before it or in
  both arms; each arm returns its current binding;
- a loop carries every variable its body assigns that is defined before it; the body
  block takes them as parameters (after the iteration count) and returns them after the
  condition (re-evaluated at the end of a ``while`` body; constant true for ``for``).

A variable's type is the type of its value; where paths meet with different types, the
variable's ``x : T = ...`` annotation (python_print writes one exactly then) or the
unification of ``Tensor`` and ``None`` into ``Optional[Tensor]`` gives the output type.

A condition decided at compile time (``compiler.torchscript.fold``: None checks by type,
comparisons of constants, the ``training`` flag of a module no code assigns) compiles
only the arm that runs.

Calls of the archive's functions and of methods (``(self.fc).forward(x, )``) are
inlined, as ``module.inlined_graph`` shows them: module attributes are read by
``prim::GetAttr`` chains from ``%self``, so weights bind by dotted path.  The module
object of every such value is known from ``data.pkl``, so a call through an interface
type or on a ``ModuleList`` element dispatches to the concrete class's method.
"""

from __future__ import annotations

import ast
from typing import Any

from compiler import types as T
from compiler.diagnostics import CompileError, Span
from compiler.torchscript.builder import MAX_INT, GraphBuilder, unify
from compiler.torchscript.exprs import (
    Context,
    ExprCompiler,
    TupleLit,
)
from compiler.torchscript.fold import assigns_training, constant_of
from compiler.torchscript.source import FunctionInfo, SourceIndex
from compiler.torchscript.unpickle import Record
from vm.ir.graph import Graph, Module, Value

MAX_INLINE_DEPTH = 200
_SCALARS = (T.INT, T.FLOAT, T.BOOL, T.STR)  # what a `-> Tensor` function may not return


class Frontend(ExprCompiler):
    """Compiles one method of the root module object, inlining everything it calls."""

    def __init__(self, index: SourceIndex, root: Record, constants: tuple[Any, ...], filename: str) -> None:
        self.index = index
        self.root = root
        self.constants = constants
        self.filename = filename
        self.records: dict[int, Record] = {}
        self.scopes = False  # give inlined nodes their module's scope (compile_method)
        self.paths: dict[int, str] = {}  # id(Value) of a submodule object -> its dotted path from self
        self._constant_values: dict[int, Value] = {}
        self._depth = 0
        self._assigned_cache: dict[int, list[str]] = {}
        self.training_assigned = assigns_training(index.lines)
        self.inlined: set[str] = set()  # qualified names of the functions compiled in (other_methods_writes)

    def compile(self, method: str) -> Module:
        info = self.index.classes.get(self.root.qualname)
        if info is None:
            raise CompileError(f"{self.filename}: the module's class {self.root.qualname} has no source in the archive")
        fn = info.methods.get(method)
        if fn is None:
            names = ", ".join(sorted(info.methods)) or "none"
            raise CompileError(f"{self.filename}: {self.root.qualname} has no method `{method}` (methods: {names})")
        graph = Graph(name="graph")
        self.b = GraphBuilder(graph, self.index.origin)
        try:
            return self._compile(fn, graph)
        except CompileError as err:
            origin = self.index.origin(err.span)
            if origin is not None:  # say where in the user's model this came from
                err.message = f"{err.message} (compiled from {origin})"
                err.args = (err.message,)
            raise

    def _compile(self, fn: FunctionInfo, graph: Graph) -> Module:
        params = fn.node.args.args
        self_value = self.b.param(graph.block, "self", T.ClassType(self.root.qualname))
        self.records[id(self_value)] = self.root
        self.paths[id(self_value)] = ""
        args: list[Any] = [self_value]
        for p in params[1:]:
            if p.annotation is None:
                raise CompileError(f"parameter `{p.arg}` has no type", self.index.span(fn.file, p))
            args.append(self.b.param(graph.block, p.arg, self.index.type_of(p.annotation, fn.file)))
        result = self.call_function(fn, args, {}, None)
        ctx = Context(fn.file, {})
        out = self.materialize(ctx, result, fn.node)
        graph.block.add_return(out)
        return Module(graph, {}, self.filename, input_defaults=literal_defaults(fn.node))

    # ------------------------------------------------------------------ calls (inlined)

    def call_function(self, info: FunctionInfo, args: list[Any], kwargs: dict[str, Any], span: Span | None) -> Any:
        fdef = info.node
        self.inlined.add(info.qualname)
        if self._depth >= MAX_INLINE_DEPTH:
            raise CompileError(f"calls nested deeper than {MAX_INLINE_DEPTH} (recursion?) at {info.qualname}", span)
        params = fdef.args.args
        defaults = fdef.args.defaults
        first_default = len(params) - len(defaults)
        ctx = Context(info.file, {})
        if len(args) > len(params):
            raise CompileError(f"{info.qualname} takes {len(params)} arguments, {len(args)} given", span)
        for i, p in enumerate(params):
            if i < len(args):
                ctx.env[p.arg] = args[i]
            elif p.arg in kwargs:
                ctx.env[p.arg] = kwargs[p.arg]
            elif i >= first_default:
                ctx.env[p.arg] = self.expr(ctx, defaults[i - first_default])
            else:
                raise CompileError(f"{info.qualname}: no value for parameter `{p.arg}`", span)
            if p.annotation is not None:
                ctx.declared[p.arg] = self.index.type_of(p.annotation, info.file)
        self._depth += 1
        try:
            body = fdef.body
            for stmt in body[:-1]:
                self.stmt(ctx, stmt)
            last = body[-1]
            if isinstance(last, ast.Return):
                result = self.expr(ctx, last.value) if last.value is not None else self.b.constant(None, None)
                self._check_return(ctx, fdef, result, last)
                return result
            self.stmt(ctx, last)
            self._check_return(ctx, fdef, None, last)
            return self.b.constant(None, None)
        finally:
            self._depth -= 1

    def _check_return(self, ctx: Context, fdef: ast.FunctionDef, result: Any, last: ast.stmt) -> None:
        """Refuse, as ``torch.jit.load`` does, a body that does not produce its declared return
        type: no ``return`` at the end of a function not declared ``-> None`` (or Optional), or
        a ``return None`` there.  (A tensor returned for an ``int`` is no error: torch converts
        it, ``aten::IntImplicit``.)"""
        if fdef.returns is None:
            return
        declared = self.index.type_of(fdef.returns, ctx.file)
        if result is None:
            if declared != T.NONE and not isinstance(declared, T.OptionalType) and declared != T.ANY:
                raise CompileError(
                    f"function {fdef.name} is declared to return {declared} but does not return along all "
                    f"paths (torch.jit.load refuses this file)", self.span(ctx, last))
            return
        got = result.type if isinstance(result, Value) else None
        if isinstance(declared, T.TensorType) and got in _SCALARS:  # `-> Tensor` returning 1
            raise CompileError(
                f"function {fdef.name}: return value was annotated as having type Tensor but is actually "
                f"of type {got} (torch.jit.load refuses this file)", self.span(ctx, last))
        if got == T.NONE and declared not in (T.NONE, T.ANY) and not isinstance(declared, T.OptionalType):
            raise CompileError(
                f"function {fdef.name}: return value was annotated as having type {declared} but is actually "
                f"of type NoneType (torch.jit.load refuses this file)", self.span(ctx, last))

    def call_method(self, obj: Value, name: str, args: list[Any], kwargs: dict[str, Any], span: Span | None) -> Any:
        record = self.records.get(id(obj))
        if record is not None:
            qualname = record.qualname
        elif isinstance(obj.type, T.ClassType):
            qualname = obj.type.qualname
        else:
            raise CompileError(f"method {name} called on a value of type {obj.type}, not an object", span)
        info = self.index.classes.get(qualname)
        if info is None:
            raise CompileError(f"class {qualname} is not defined in the archive", span)
        if info.kind == "interface":
            raise CompileError(
                f"call of {name} through interface {qualname} on an object not known at compile time", span
            )
        method = info.methods.get(name)
        if method is None:
            raise CompileError(f"{qualname} has no method `{name}`", span)
        path = self.paths.get(id(obj)) if self.scopes else None
        if not path:
            return self.call_function(method, [obj, *args], kwargs, span)
        outer, self.b.scope = self.b.scope, module_scope(path)
        try:
            return self.call_function(method, [obj, *args], kwargs, span)
        finally:
            self.b.scope = outer

    # ------------------------------------------------------------------ statements

    def block(self, ctx: Context, stmts: list[ast.stmt]) -> None:
        for stmt in stmts:
            self.stmt(ctx, stmt)

    def stmt(self, ctx: Context, s: ast.stmt) -> None:
        if isinstance(s, ast.Assign):
            value = self.expr(ctx, s.value)
            for target in s.targets:
                self.assign(ctx, target, value, s)
        elif isinstance(s, ast.AnnAssign):
            if not isinstance(s.target, ast.Name) or s.value is None:
                raise self.error(ctx, s, "unsupported annotated assignment")
            declared = self.index.type_of(s.annotation, ctx.file)
            ctx.declared[s.target.id] = declared
            if isinstance(s.value, (ast.List, ast.Dict)):
                value = self.annotate(ctx, s.value, T.unwrap_optional(declared))
            else:
                value = self.expr(ctx, s.value)
            self.assign(ctx, s.target, value, s)
        elif isinstance(s, ast.Expr):
            self.expr(ctx, s.value)
        elif isinstance(s, ast.If):
            self.if_(ctx, s)
        elif isinstance(s, ast.While):
            self.while_(ctx, s)
        elif isinstance(s, ast.For):
            self.for_(ctx, s)
        elif isinstance(s, ast.Pass):
            return
        elif isinstance(s, ast.With):
            self.with_(ctx, s)
        elif isinstance(s, ast.Return):
            raise self.error(ctx, s, "`return` before the end of a function (not produced by torch.jit.save)")
        else:
            what = {ast.Break: "break", ast.Continue: "continue", ast.With: "with", ast.Delete: "del",
                    ast.AugAssign: "augmented assignment", ast.Raise: "raise", ast.Assert: "assert"}
            raise self.error(ctx, s, f"unsupported statement `{what.get(type(s), type(s).__name__)}` in serialized TorchScript")

    def with_(self, ctx: Context, s: ast.With) -> None:
        """``with obj as v: body``: ``obj.__enter__()`` (bound to ``v``), the body, then
        ``obj.__exit__(None, None, None)``, each method inlined as any call is.  (A raise in
        the body ends the program before ``__exit__``: its effects cannot be seen then.)"""
        entered = []
        for item in s.items:
            obj = self.value(ctx, item.context_expr)
            value = self.call_method(obj, "__enter__", [], {}, self.span(ctx, item.context_expr))
            if item.optional_vars is not None:
                self.assign(ctx, item.optional_vars, value, s)
            entered.append((obj, item.context_expr))
        self.block(ctx, s.body)
        for obj, where in reversed(entered):
            none = self.b.constant(None, None)
            self.call_method(obj, "__exit__", [none, none, none], {}, self.span(ctx, where))

    def assign(self, ctx: Context, target: ast.expr, value: Any, where: ast.AST) -> None:
        if isinstance(target, ast.Name):
            if isinstance(value, Value) and value.node is not None and value.name.isdigit() and value.node.owner is self.b.block:
                self._rename(value, target.id)
            ctx.env[target.id] = value
        elif isinstance(target, (ast.Tuple, ast.List)):
            items = self.unpack(ctx, value, len(target.elts), where)
            for t, item in zip(target.elts, items):
                self.assign(ctx, t, item, where)
        elif isinstance(target, ast.Attribute):
            obj = self.value(ctx, target.value)
            if not isinstance(obj.type, T.ClassType):
                raise self.error(ctx, target, f"cannot set attribute `{target.attr}` of a {obj.type}")
            v = self.materialize(ctx, value, where)
            self._check_attribute_type(ctx, obj.type, target.attr, v, where)
            self.b.node("prim::SetAttr", [obj, v], [], self.span(ctx, where), {"name": target.attr})
        else:
            raise self.error(ctx, target, f"unsupported assignment target `{ast.unparse(target)}`")

    def _check_attribute_type(self, ctx: Context, cls: T.ClassType, name: str, v: Any, where: ast.AST) -> None:
        """Refuse, as torch.jit.load does, ``self.count = 1`` where ``count : Tensor``."""
        info = self.index.classes.get(cls.qualname)
        ann = info.attributes.get(name) if info is not None else None
        if info is None or ann is None or not isinstance(v, Value) or v.type not in _SCALARS:
            return
        if isinstance(self.index.type_of(ann, info.file), T.TensorType):
            raise self.error(ctx, where, f"wrong type for attribute assignment: {name} is declared Tensor, "
                                         f"the value assigned is {v.type} (torch.jit.load refuses this file)")

    def _rename(self, value: Value, name: str) -> None:
        self.b.taken.discard(value.name)
        value.name = self.b.fresh(name)

    def unpack(self, ctx: Context, value: Any, n: int, where: ast.AST) -> list[Any]:
        if isinstance(value, TupleLit):
            if len(value.items) != n:
                raise self.error(ctx, where, f"cannot unpack {len(value.items)} values into {n} names")
            return value.items
        if not isinstance(value, Value):
            raise self.error(ctx, where, "cannot unpack this value")
        span = self.span(ctx, where)
        if isinstance(value.type, T.TupleType):
            if len(value.type.elems) != n:
                raise self.error(ctx, where, f"cannot unpack a {value.type} into {n} names")
            return self.b.node("prim::TupleUnpack", [value], list(value.type.elems), span).outputs
        if isinstance(value.type, T.ListType):
            return self.b.node("prim::ListUnpack", [value], [value.type.elem] * n, span).outputs
        raise self.error(ctx, where, f"cannot unpack a value of type {value.type}")

    # ------------------------------------------------------------------ control flow

    def if_(self, ctx: Context, s: ast.If) -> None:
        cond = self.value(ctx, s.test)
        decided = constant_of(cond)
        if isinstance(decided, bool):  # only the arm that runs is compiled (see fold.py)
            self.block(ctx, s.body if decided else s.orelse)
            return
        span = self.span(ctx, s)
        node = self.b.node("prim::If", [cond], [], span)
        before = self.b.block
        arms: list[tuple[Any, dict[str, Any]]] = []
        for stmts in (s.body, s.orelse):
            block = node.add_block()
            self.b.block = block
            env = dict(ctx.env)
            self.block(Context(ctx.file, env, ctx.declared), stmts)
            arms.append((block, env))
        self.b.block = before
        (then_b, then_env), (else_b, else_env) = arms
        then_names = _assigned(s.body, self._assigned_cache)
        names = then_names + [n for n in _assigned(s.orelse, self._assigned_cache) if n not in then_names]
        for name in names:
            if name not in then_env or name not in else_env:
                continue
            tv, ev = then_env[name], else_env[name]
            if tv is ev:
                ctx.env[name] = tv
                continue
            if not isinstance(tv, (Value, TupleLit)) or not isinstance(ev, (Value, TupleLit)):
                raise self.error(ctx, s, f"`{name}` is a different function or object on each side of this if")
            tv = self._materialize_in(ctx, then_b, tv, s)
            ev = self._materialize_in(ctx, else_b, ev, s)
            type_ = ctx.declared.get(name) or unify(tv.type, ev.type)
            if type_ is None:
                raise self.error(ctx, s, f"`{name}` is a {tv.type} on one side of this if and a {ev.type} on the other")
            then_b.add_return(tv)
            else_b.add_return(ev)
            ctx.env[name] = node.add_output(self.b.fresh(name), type_)

    def _materialize_in(self, ctx: Context, block: Any, thing: Any, where: ast.AST) -> Value:
        saved = self.b.block
        self.b.block = block
        try:
            return self.materialize(ctx, thing, where)
        finally:
            self.b.block = saved

    def while_(self, ctx: Context, s: ast.While) -> None:
        if s.orelse:
            raise self.error(ctx, s, "while ... else is not TorchScript")
        span = self.span(ctx, s)
        trip = self.b.constant(MAX_INT, span)
        cond = self.value(ctx, s.test)
        self._loop(ctx, s, trip, cond, None, s.test)

    def for_(self, ctx: Context, s: ast.For) -> None:
        it = s.iter
        if (
            s.orelse
            or not isinstance(s.target, ast.Name)
            or not (isinstance(it, ast.Call) and isinstance(it.func, ast.Name) and it.func.id == "range" and len(it.args) == 1)
        ):
            raise self.error(ctx, s, "only `for i in range(n):` loops are supported (what torch.jit.save prints)")
        trip = self.value(ctx, it.args[0])
        cond = self.b.constant(True, self.span(ctx, s))
        self._loop(ctx, s, trip, cond, s.target.id, None)

    def _loop(self, ctx: Context, s: ast.While | ast.For, trip: Value, cond: Value, var: str | None, test: ast.expr | None) -> None:
        span = self.span(ctx, s)
        carried = [n for n in _assigned(s.body, self._assigned_cache) if n in ctx.env and isinstance(ctx.env[n], (Value, TupleLit))]
        inits = [self.materialize(ctx, ctx.env[n], s) for n in carried]
        types = [ctx.declared.get(n) or v.type for n, v in zip(carried, inits)]
        node = self.b.node("prim::Loop", [trip, cond, *inits], [], span)
        body = node.add_block()
        counter = self.b.param(body, var or "i", T.INT)
        env = dict(ctx.env)
        for n, t in zip(carried, types):
            env[n] = self.b.param(body, n, t)
        if var is not None:
            env[var] = counter
        saved = self.b.block
        self.b.block = body
        try:
            inner = Context(ctx.file, env, ctx.declared)
            self.block(inner, s.body)
            next_cond = self.value(inner, test) if test is not None else self.b.constant(True, span)
            body.add_return(next_cond)
            for n in carried:
                body.add_return(self.materialize(inner, env[n], s))
        finally:
            self.b.block = saved
        for n, t in zip(carried, types):
            ctx.env[n] = node.add_output(self.b.fresh(n), t)


def _assigned(stmts: list[ast.stmt], cache: dict[int, list[str]]) -> list[str]:
    """Variables assigned anywhere in ``stmts`` (nested blocks included), in order of
    first assignment.  Each statement's set is computed once (a nested ``if`` is asked
    again by every enclosing one)."""
    names: dict[str, None] = {}
    for stmt in stmts:
        names.update(dict.fromkeys(_assigned_in(stmt, cache)))
    return list(names)


def _assigned_in(stmt: ast.stmt, cache: dict[int, list[str]]) -> list[str]:
    """``_assigned`` of one statement; ``cache`` (by node id, the index keeps the nodes
    alive) belongs to one compile."""
    cached = cache.get(id(stmt))
    if cached is not None:
        return cached
    names: dict[str, None] = {}

    def targets(t: ast.expr) -> None:
        if isinstance(t, ast.Name):
            names[t.id] = None
        elif isinstance(t, (ast.Tuple, ast.List)):
            for e in t.elts:
                targets(e)

    if isinstance(stmt, ast.Assign):
        for t in stmt.targets:
            targets(t)
    elif isinstance(stmt, ast.AnnAssign):
        targets(stmt.target)
    elif isinstance(stmt, (ast.If, ast.While, ast.For)):
        for inner in (*stmt.body, *stmt.orelse):
            names.update(dict.fromkeys(_assigned_in(inner, cache)))
    result = cache[id(stmt)] = list(names)
    return result


def literal_defaults(fdef: ast.FunctionDef) -> tuple[Any, ...]:
    """The default values of ``fdef``'s trailing parameters, as its source writes them
    (``attn_mask: Optional[Tensor]=None`` gives None): what torch passes when a caller
    leaves them out.  Only the trailing run of literal defaults: one after a default that is
    no literal can be used only with it."""
    values: list[Any] = []
    for default in fdef.args.defaults:
        try:
            values.append(ast.literal_eval(default))
        except ValueError:
            values = []
    return tuple(values)


def compile_method(
    index: SourceIndex, root: Record, constants: tuple[Any, ...], method: str, filename: str, scopes: bool = False
) -> Module:
    """The IR ``Module`` of ``root``'s ``method`` with every call inlined; with ``scopes``
    each node inlined from a submodule's method carries that module as its ``scope``
    (``__module.layer1/__module.layer1.0``, as a traced graph prints it), for pictures."""
    frontend = Frontend(index, root, constants, filename)
    frontend.scopes = scopes
    module = frontend.compile(method)
    module.state = other_methods_writes(index, root, constants, frontend.inlined, filename)
    return module


def method_names(index: SourceIndex, root: Record) -> list[str]:
    """The methods of the archive's module object, as ``torch.jit.load``'s module has them
    (``forward`` first)."""
    info = index.classes.get(root.qualname)
    names = sorted(info.methods) if info is not None else []
    return sorted(names, key=lambda n: n != "forward")


def other_methods_writes(
    index: SourceIndex, root: Record, constants: tuple[Any, ...], inlined: set[str], filename: str
) -> frozenset[str]:
    """The attributes the module's other methods write (``vm.ir.module_state``):
    one module object runs all of them, so what ``reset_states`` assigns is state for
    ``forward`` too.  Methods already compiled in (``inlined``: qualified names, what the
    method's compile inlined; a torchvision ``_forward_impl``) are not compiled again; a
    method irvm cannot compile may write anything (``"*"``): nothing of the module is then
    taken as constant."""
    from vm.ir.module_state import ANYTHING, written_attributes

    written: set[str] = set()
    seen = set(inlined)
    for name in method_names(index, root):
        if f"{root.qualname}.{name}" in seen:
            continue
        frontend = Frontend(index, root, constants, filename)
        try:
            written |= written_attributes(frontend.compile(name))
        except (CompileError, RecursionError):
            return frozenset({ANYTHING})
        seen |= frontend.inlined
    return frozenset(written)


def module_scope(path: str) -> str:
    """The scope torch's tracer prints for the module at ``path``: ``layer1.0`` gives
    ``__module.layer1/__module.layer1.0``."""
    parts = path.split(".")
    return "/".join("__module." + ".".join(parts[: i + 1]) for i in range(len(parts)))


__all__ = ["Frontend", "compile_method", "method_names", "module_scope", "other_methods_writes"]
