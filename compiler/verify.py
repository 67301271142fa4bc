"""The IR verifier: what must hold of every graph, before and after every pass.

``verify(module_or_graph)`` walks each graph once, in program order, with an explicit
stack (no recursion, so 500-deep nesting is fine), keeping the set of values in scope:

- **SSA**: every value is defined once (one producer, one name per graph), and each use
  names a value defined earlier in the same block or in an enclosing one; a value of a
  sibling or inner block is out of scope.
- **Links**: ``Node.owner``, ``Block.owner``, ``Value.node`` / ``Value.block`` agree with
  where things actually are.
- **Use lists**: ``Value.uses`` holds exactly one ``Use`` per operand slot (node inputs
  and block returns) that refers to the value, and nothing else.
- **Block arity**: ``prim::If`` has two parameterless blocks returning one value per
  output; ``prim::Loop(max, cond, *carried)`` has one block taking ``carried + 1`` values
  (iteration number first) and returning ``carried + 1`` (condition first), and as many
  outputs as carried values.  No other node has blocks.
- **Form** of the nodes the compiler lowers itself: a fusion group has its sub-graph, a
  call has its callee (``prim::CallMethod`` its ``name``); a call of one of the module's
  functions matches its parameter and result counts.
- **Types**, where the node's meaning fixes them: a ``prim::Constant`` payload against its
  declared type, ``ListConstruct``/``TupleConstruct``/``ListUnpack``/``TupleUnpack``
  against their operands, ``If``/``Loop`` outputs against what the blocks return.  A value
  with no declared type is not checked; only definite mismatches are reported.

The first problem found raises ``IRValidationError`` at the node's span.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

from compiler import types as T
from compiler.diagnostics import IRValidationError
from vm.core.enum_values import EnumValue
from vm.core.gc_pause import gc_paused
from vm.ir.graph import Block, Graph, Module, Node, TensorLiteral, Use, Value

__all__ = ["assignable", "check_block_arity", "verify"]


@gc_paused()
def verify(target: Module | Graph) -> None:
    """Raise ``IRValidationError`` if ``target`` (a module or one graph) is malformed."""
    graphs = [target.main, *target.functions.values()] if isinstance(target, Module) else [target]
    while graphs:
        graph = graphs.pop()
        graphs.extend(_verify_graph(graph))
    if isinstance(target, Module) and target.functions:
        _check_calls(target)


def _check_calls(module: Module) -> None:
    """A call of one of the module's functions passes as many arguments as the function
    has parameters and receives as many results as it returns."""
    from compiler.passes.inline_calls import callee_name

    functions = module.functions
    for graph in (module.main, *functions.values()):
        for node in graph.walk():
            if node.kind not in ("prim::CallFunction", "prim::CallMethod"):
                continue
            name = callee_name(node, functions)
            if name is None:
                continue
            callee = functions[name]
            n_args = len(node.inputs) - (node.kind == "prim::CallFunction")
            if n_args != len(callee.inputs):
                raise _fail(node, f"call of {name} with {n_args} argument(s); it takes {len(callee.inputs)}")
            if len(node.outputs) != len(callee.outputs):
                raise _fail(node, f"call of {name} expects {len(node.outputs)} result(s); it returns {len(callee.outputs)}")


def _fail(node: Node | None, message: str) -> IRValidationError:
    span = node.span if node is not None else None
    if node is not None and span is None:
        message = f"{message} (in {node!r})"
    return IRValidationError(message, span)


def _verify_graph(graph: Graph) -> list[Graph]:
    """Check one graph; returns its fusion sub-graphs, to be checked in turn."""
    subgraphs: list[Graph] = []
    names: set[str] = set()
    visible: set[int] = set()
    operand_slots: dict[int, Counter[tuple[int, int]]] = {}  # value -> (user, index) counts
    defined: list[Value] = []

    def define(value: Value, node: Node | None) -> None:
        if value.name in names:
            raise _fail(node, f"value %{value.name} is defined twice")
        names.add(value.name)
        visible.add(id(value))
        defined.append(value)

    def use(value: Value, user: Node | Block, index: int, node: Node | None) -> None:
        if id(value) not in visible:
            raise _fail(node, f"%{value.name} is used out of scope or before it is defined")
        slots = operand_slots.get(id(value))
        if slots is None:
            slots = operand_slots[id(value)] = Counter()
        slots[(id(user), index)] += 1

    if graph.block.owner is not None:
        raise IRValidationError(f"the top block of {graph!r} has an owner node")
    # frames: [block, next node index, values defined here]; a Node entry finishes a node
    stack: list[Any] = [[graph.block, -1, []]]
    while stack:
        frame = stack[-1]
        if isinstance(frame, Node):
            stack.pop()
            _finish_node(frame, define)
            continue
        block, i, local = frame
        owner = block.owner
        if i < 0:
            for p in block.params:
                if p.block is not block or p.node is not None:
                    raise _fail(owner, f"parameter %{p.name} does not point back to its block")
                before = len(defined)
                define(p, owner)
                local.extend(defined[before:])
            i = frame[1] = 0
        if i == len(block.nodes):
            stack.pop()
            for index, value in enumerate(block.returns):
                use(value, block, index, owner)
            for value in local:
                visible.discard(id(value))
            continue
        frame[1] = i + 1
        node = block.nodes[i]
        if node.owner is not block:
            raise _fail(node, f"{node.kind} does not point back to the block that holds it")
        for index, value in enumerate(node.inputs):
            use(value, node, index, node)
        for value in node.attrs.values():
            if isinstance(value, Graph):
                subgraphs.append(value)
        for b in node.blocks:
            if b.owner is not node:
                raise _fail(node, f"a block of {node.kind} does not point back to it")
        if node.blocks:
            stack.append(node)
            stack.extend([b, -1, []] for b in reversed(node.blocks))
        else:
            before = len(defined)
            _finish_node(node, define)
            local.extend(defined[before:])
    _check_uses(defined, operand_slots, graph)
    return subgraphs


def _finish_node(node: Node, define: Any) -> None:
    for out in node.outputs:
        if out.node is not node:
            raise _fail(node, f"output %{out.name} does not point back to {node.kind}")
        define(out, node)
    if node.kind in ("prim::If", "prim::Loop"):
        check_block_arity(node)
    else:
        _check_form(node)
    _check_types(node)


def _check_form(node: Node) -> None:
    """The nodes the compiler lowers by hand have the parts it needs (any other node is
    an operator call, resolved against its schema later)."""
    kind = node.kind
    if node.blocks:
        raise _fail(node, f"{kind} cannot have blocks (only prim::If and prim::Loop do)")
    if kind == "prim::Constant" and node.inputs:
        raise _fail(node, f"prim::Constant takes no inputs, given {len(node.inputs)}")
    elif kind == "prim::FusionGroup" and not isinstance(node.attrs.get("Subgraph"), Graph):
        raise _fail(node, "prim::FusionGroup without its sub-graph (a `with prim::FusionGroup_N = graph(...)` section)")
    elif kind == "prim::GetAttr" and (len(node.inputs) != 1 or not isinstance(node.attrs.get("name"), str)):
        raise _fail(node, 'prim::GetAttr takes the object as its one input and a name="attribute"')
    elif kind == "prim::SetAttr" and (len(node.inputs) != 2 or not isinstance(node.attrs.get("name"), str)):
        raise _fail(node, 'prim::SetAttr takes the object and the value, and a name="attribute"')
    elif kind == "prim::CallFunction" and not node.inputs:
        raise _fail(node, "prim::CallFunction needs the function as its first input")
    elif kind == "prim::CallMethod" and (not node.inputs or not isinstance(node.attrs.get("name"), str)):
        raise _fail(node, 'prim::CallMethod needs a name="method" attribute and the object as its first input')


def _check_uses(defined: list[Value], slots: dict[int, Counter[tuple[int, int]]], graph: Graph) -> None:
    """Every operand slot is in its value's use list exactly once, and nothing else is."""
    empty: Counter[tuple[int, int]] = Counter()
    for value in defined:
        recorded = Counter((id(u.user), u.index) for u in value.uses)
        if recorded != slots.get(id(value), empty):
            node = value.node
            raise _fail(node, f"use list of %{value.name} does not match its operands ({_describe(value)})")


def _describe(value: Value) -> str:
    users = ", ".join(f"{_user_name(u)}[{u.index}]" for u in value.uses) or "none"
    return f"recorded uses: {users}"


def _user_name(use: Use) -> str:
    return use.user.kind if isinstance(use.user, Node) else "block return"


def check_block_arity(node: Node) -> None:
    """prim::If: two blocks, no params, each returning one value per output.
    prim::Loop: one block; params = carried + 1 (the iteration), returns = carried + 1
    (the condition), with carried = len(inputs) - 2 = len(outputs).  A wrong parameter
    count is reported at the block's header, a wrong return count at its ``->`` line."""
    n_out = len(node.outputs)
    if node.kind == "prim::If":
        if len(node.blocks) != 2:
            raise IRValidationError(f"prim::If must have 2 blocks, found {len(node.blocks)}", node.span)
        if len(node.inputs) != 1:
            raise IRValidationError(f"prim::If takes one condition, given {len(node.inputs)} inputs", node.span)
        for i, block in enumerate(node.blocks):
            if block.params:
                raise IRValidationError(f"prim::If block{i} must take no parameters", block.span or node.span)
            if len(block.returns) != n_out:
                raise IRValidationError(
                    f"prim::If has {n_out} output(s) but block{i} returns {len(block.returns)}",
                    block.return_span or node.span,
                )
        return
    carried = len(node.inputs) - 2
    if len(node.blocks) != 1:
        raise IRValidationError(f"prim::Loop must have 1 block, found {len(node.blocks)}", node.span)
    body = node.blocks[0]
    if carried < 0:
        raise IRValidationError("prim::Loop needs a trip count and a condition", node.span)
    if n_out != carried:
        raise IRValidationError(
            f"prim::Loop carries {carried} value(s) but has {n_out} output(s)", node.span
        )
    if len(body.params) != carried + 1:
        raise IRValidationError(
            f"prim::Loop body must take {carried + 1} parameter(s) (iteration + {carried} carried), "
            f"takes {len(body.params)}",
            body.span or node.span,
        )
    if len(body.returns) != carried + 1:
        raise IRValidationError(
            f"prim::Loop body must return {carried + 1} value(s) (condition + {carried} carried), "
            f"returns {len(body.returns)}",
            body.return_span or node.span,
        )


# ----------------------------------------------------------------------------- types


def _check_types(node: Node) -> None:
    kind = node.kind
    if kind == "prim::Constant":
        _check_constant(node)
    elif kind == "prim::ListConstruct" and node.outputs:
        out = node.outputs[0].type
        if out is not None and not isinstance(out, T.ListType):
            raise _fail(node, f"prim::ListConstruct produces a list, but %{node.outputs[0].name} is declared {out}")
        if isinstance(out, T.ListType):
            for value in node.inputs:
                _expect(node, value.type, out.elem, f"element %{value.name}")
    elif kind == "prim::TupleConstruct" and node.outputs:
        out = node.outputs[0].type
        if out is not None and not isinstance(out, T.TupleType):
            raise _fail(node, f"prim::TupleConstruct produces a tuple, but %{node.outputs[0].name} is declared {out}")
        if isinstance(out, T.TupleType):
            if len(out.elems) != len(node.inputs):
                raise _fail(node, f"prim::TupleConstruct of {len(node.inputs)} values declared {out}")
            for value, elem in zip(node.inputs, out.elems):
                _expect(node, value.type, elem, f"element %{value.name}")
    elif kind in ("prim::ListUnpack", "prim::TupleUnpack") and len(node.inputs) == 1:
        _check_unpack(node)
    elif kind == "prim::If" and len(node.blocks) == 2:
        for block in node.blocks:
            for ret, out in zip(block.returns, node.outputs):
                _expect(node, ret.type, out.type, f"output %{out.name} (returned %{ret.name})")
    elif kind == "prim::Loop" and len(node.blocks) == 1:
        body = node.blocks[0]
        for init, param, ret, out in zip(node.inputs[2:], body.params[1:], body.returns[1:], node.outputs):
            _expect(node, init.type, param.type, f"loop-carried %{param.name} (initial %{init.name})")
            _expect(node, ret.type, out.type, f"loop output %{out.name} (carried %{ret.name})")


def _check_unpack(node: Node) -> None:
    source = node.inputs[0].type
    if isinstance(source, T.TupleType):
        if len(source.elems) != len(node.outputs):
            raise _fail(node, f"unpacking {source} into {len(node.outputs)} values")
        for elem, out in zip(source.elems, node.outputs):
            _expect(node, elem, out.type, f"output %{out.name}")
    elif isinstance(source, T.ListType):
        for out in node.outputs:
            _expect(node, source.elem, out.type, f"output %{out.name}")
    elif source is not None and not _lenient(source):
        raise _fail(node, f"{node.kind} of %{node.inputs[0].name}, a {source}")


def _expect(node: Node, src: T.Type | None, dst: T.Type | None, what: str) -> None:
    if not assignable(src, dst):
        raise _fail(node, f"type mismatch for {what}: {src} where {dst} is declared")


_NUMERIC = {T.INT, T.FLOAT, T.BOOL, T.SCALAR, T.NUMBER, T.NamedType("complex")}
_LEAF_NAMES = {"int", "float", "bool", "str", "NoneType", "Device", "Scalar", "number", "complex"}


def _lenient(t: T.Type) -> bool:
    """Types whose subtyping the verifier does not model (classes, unions, futures, Any...)."""
    if isinstance(t, (T.ClassType, T.UnionType, T.FutureType)):
        return True
    return isinstance(t, T.NamedType) and t.name not in _LEAF_NAMES


def assignable(src: T.Type | None, dst: T.Type | None) -> bool:
    """False only when a value of type ``src`` can definitely not be a ``dst``."""
    if src is None or dst is None or src == dst or _lenient(src) or _lenient(dst):
        return True
    if isinstance(dst, T.OptionalType):
        if src == T.NONE:
            return True
        return assignable(src.elem if isinstance(src, T.OptionalType) else src, dst.elem)
    if isinstance(src, T.OptionalType):
        return assignable(src.elem, dst)  # a refined Optional (after an `is None` check)
    if isinstance(src, T.TensorType) or isinstance(dst, T.TensorType):
        return isinstance(src, T.TensorType) and isinstance(dst, T.TensorType)
    if isinstance(src, T.NamedType) and isinstance(dst, T.NamedType):
        return dst in (T.SCALAR, T.NUMBER) and src in _NUMERIC
    if isinstance(src, T.ListType) and isinstance(dst, T.ListType):
        return assignable(src.elem, dst.elem)
    if isinstance(src, T.TupleType) and isinstance(dst, T.TupleType):
        return len(src.elems) == len(dst.elems) and all(map(assignable, src.elems, dst.elems))
    if isinstance(src, T.DictType) and isinstance(dst, T.DictType):
        return assignable(src.key, dst.key) and assignable(src.value, dst.value)
    return False


def _check_constant(node: Node) -> None:
    if len(node.outputs) != 1:
        raise _fail(node, f"prim::Constant has {len(node.outputs)} outputs, expected 1")
    out = node.outputs[0]
    if out.type is None:
        value = node.attrs.get("value")
        problem = _literal_problem(value, T.TENSOR) if isinstance(value, TensorLiteral) else None
        if problem is not None:
            raise _fail(node, f"constant %{out.name}: its value {problem}")
        return
    if "value" not in node.attrs:
        if "name" in node.attrs or isinstance(out.type, T.OptionalType) or out.type in (T.NONE, T.FUNCTION):
            return
        if _lenient(out.type):
            return
        raise _fail(node, f"prim::Constant() is None, but %{out.name} is declared {out.type}")
    problem = _payload_mismatch(node.attrs["value"], out.type)
    if problem is not None:
        raise _fail(node, f"constant %{out.name} is declared {out.type} but its value {problem}")


def _payload_mismatch(value: Any, type_: T.Type) -> str | None:
    """Why ``value`` cannot be a ``type_``, or None when it can."""
    todo = [(value, type_)]
    while todo:
        v, t = todo.pop()
        if _lenient(t):
            continue
        if isinstance(t, T.OptionalType):
            if v is None:
                continue
            t = t.elem
        if isinstance(v, TensorLiteral):
            ok = isinstance(t, T.TensorType)
            problem = _literal_problem(v, t) if ok else None
            if problem is not None:
                return problem
        elif isinstance(t, T.TensorType):
            ok = False
        elif isinstance(t, T.EnumType) or isinstance(v, EnumValue):
            ok = isinstance(t, T.EnumType) and isinstance(v, EnumValue) and v.qualname == t.qualname
        elif v is None:
            ok = t == T.NONE
        elif isinstance(v, bool):
            ok = t in (T.BOOL, T.SCALAR, T.NUMBER)
        elif isinstance(v, int):
            if t == T.BOOL:
                ok = v in (0, 1)
            else:  # ints also encode float, ScalarType, Layout, MemoryFormat payloads
                ok = isinstance(t, T.NamedType) and t not in (T.STR, T.NONE, T.DEVICE)
        elif isinstance(v, float):
            ok = t in (T.FLOAT, T.SCALAR, T.NUMBER)
        elif isinstance(v, str):
            ok = t in (T.STR, T.DEVICE)
        elif isinstance(v, list):
            ok = isinstance(t, T.ListType)
            if isinstance(t, T.ListType):
                todo.extend((x, t.elem) for x in v)
        elif isinstance(v, tuple):
            ok = isinstance(t, T.TupleType) and len(t.elems) == len(v)
            if ok and isinstance(t, T.TupleType):
                todo.extend(zip(v, t.elems))
        elif isinstance(v, dict):
            ok = isinstance(t, T.DictType)
            if isinstance(t, T.DictType):
                todo.extend((k, t.key) for k in v)
                todo.extend((x, t.value) for x in v.values())
        else:
            ok = True
        if not ok:
            return f"{v!r} is not a {t}"
    return None


_INTEGRAL = {"Long", "Int", "Short", "Char", "Byte", "Bool", "QInt8", "QUInt8", "QInt32"}


def _literal_problem(lit: TensorLiteral, t: T.Type) -> str | None:
    """Why the numbers of a tensor literal cannot be a tensor of their dtype (an integer
    out of int64's range, an infinity or NaN in an integer tensor), or None."""
    if lit.values is None:
        return None
    dtype = lit.dtype or (t.dtype if isinstance(t, T.TensorType) else None)
    for x in lit.values:
        if isinstance(x, int) and not isinstance(x, bool) and not -(2**63) <= x < 2**63:
            return f"{x} does not fit in a 64-bit integer"
        if isinstance(x, float) and not math.isfinite(x) and dtype in _INTEGRAL:
            return f"{x} is not an integer (a {dtype} tensor)"
    return None
