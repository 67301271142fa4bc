"""Known functions: irvm's own IR bodies for the Python functions a ``.graph`` dump calls.

``print(torch.jit.script(fn).graph)`` shows calls of many ``torch.nn.functional`` and
``torch.functional`` helpers as a function constant and a call, without the callee's
body::

    %9 : Function = prim::Constant[name="relu"]()
    %10 : Tensor = prim::CallFunction(%9, %x.1, %8)     # F.relu(x, inplace=False)

TorchScript passes every Python argument positionally, defaults filled in, in the order
of the function's Python signature, so the call's inputs are exactly the parameters of
that signature.  This module keeps, for each such printed name, one or more graphs
written for irvm (``known_table``): the exact parameter list of the torch 2.13 function,
lowered to operators ``vm.ops`` implements.  Where the Python function branches on an
argument (``inplace``, ``training``, ``dim=None``, a reduction string, a pad mode) the
body branches too, with ``prim::If``, so each argument value torch accepts gives torch's
answer; what irvm cannot do (training-mode dropout draws random numbers) raises a
``prim::RaiseException`` with the reason.  After inlining, constant propagation folds
those branches away for the constant arguments a dump usually passes.

A few functions are overloaded in TorchScript (``torch.norm``, ``tensordot``,
``F.interpolate``): the dump prints the same name for each overload, and only the
argument types say which.  They have one body per overload; a call takes the first body
whose parameter types accept its argument types (``NoneType`` fits any Optional, a
refined tensor type fits ``Tensor``).  A second overload used in the same module is
stored as ``name#k`` and its calls are pointed at that key.

The printed name is all a ``.graph`` dump says about the callee: a user's own scripted
``def relu(input: Tensor, inplace: bool)`` prints exactly as ``F.relu`` does.  A call
that fits a known body is therefore taken for the torch function of that name; a dump of
code that shadows one (same name, same parameter types) must carry the body itself
(``inlined_graph``, or a ``with relu = graph(...)`` section), which always wins.  Names
are the printed ones (``_max_pool2d``, ``_threshold``, ``_return_inverse``...), so the
keys mostly carry torch's own underscores.

The bodies live by family.  A body whose text is fixed is IR in
``compiler/known/bodies/functions/<family>.ir`` (``compiler.known.library``); a family of
bodies written from one pattern is a Python template, ``compiler.known.<family>``, whose
docstring has the notes on how its bodies are written:

- activation: relu ... hardtanh, threshold, glu, rrelu, softmax / log_softmax /
  softmin, softsign, tanhshrink, sigmoid, tanh, the dropouts;
- nn: layer / group / batch / instance / rms norm, normalize, local_response_norm, pad,
  embedding, embedding_bag, adaptive_avg_pool2d/3d, ``torch.norm``, ``torch.cdist``;
- pool: max pools (1-3 d, with indices), adaptive max pools, max unpools, lp pools, the
  deprecated upsample helpers;
- interpolate: ``interpolate`` and ``torch.tensordot``;
- patches (unfold, fold) and grid (affine_grid, grid_sample): IR files only;
- loss, and margin (IR only): the losses, with torch's own ``legacy_get_string`` and
  ``get_enum`` helpers for the reduction, which the loss bodies call;
- unique: ``torch.unique`` / ``unique_consecutive`` without ``dim``.

A known body may call another known function (the losses call ``get_enum``, the upsample
helpers ``interpolate``): the inliner brings that body in turn.

``compiler.passes.inline_calls`` asks ``known_body`` for every call of a name the module
does not define, adds the body to ``Module.functions`` and inlines it like any other;
the copied nodes take the call's span (the body's own text is not the user's).  A name
the dump defines itself (``with relu = graph(...)``) is never replaced.  A call whose
arity or types fit no body is left alone, and the emitter's "unknown function" error
names the signatures irvm knows (``describe``).
"""

from __future__ import annotations

from functools import cache

from compiler import types as T
from vm.ir.graph import Graph, Node

# ---------------------------------------------------------------------------------------
# The table: printed function name -> the texts of its bodies (one per overload).


def _table() -> dict[str, list[str]]:
    from compiler.known import activation, interpolate, loss, nn, pool, unique
    from compiler.known.library import fixed_bodies

    table: dict[str, list[str]] = {name: list(texts) for name, texts in fixed_bodies("functions").items()}
    for family in (activation, nn, loss, interpolate, pool, unique):
        for name, texts in family.BODIES.items():
            table.setdefault(name, []).extend(texts)
    return table


@cache
def known_table() -> dict[str, list[str]]:
    return _table()


def is_known_function(name: str) -> bool:
    return name in known_table()


@cache
def known_graphs(name: str) -> tuple[Graph, ...]:
    """The parsed bodies of ``name``, their spans cleared (a copied node then takes the
    span of the call it replaces).  Callers must not mutate them."""
    from compiler.parser import parse

    graphs = []
    for i, text in enumerate(known_table()[name]):
        body = parse(text, f"<irvm known function {name}#{i}>").main
        for node in body.walk():
            node.span = None
            node.source = None
        graphs.append(body)
    return tuple(graphs)


def signature(name: str, body: Graph) -> str:
    params = ", ".join(f"{v.type} {v.name}" for v in body.inputs)
    results = ", ".join(str(v.type) for v in body.outputs)
    return f"{name}({params}) -> {results}"


def describe(name: str) -> str | None:
    """The signatures irvm knows for ``name``, or None when it knows none."""
    if not is_known_function(name):
        return None
    return "; ".join(signature(name, g) for g in known_graphs(name))


def fits(arg: T.Type | None, param: T.Type | None) -> bool:
    """Whether a value of type ``arg`` can be passed for a parameter of type ``param``."""
    if arg is None or param is None or arg == param:
        return True
    if isinstance(param, T.TensorType):
        return isinstance(arg, T.TensorType)
    if isinstance(param, T.OptionalType):
        return arg == T.NONE or fits(arg, param.elem) or (isinstance(arg, T.OptionalType) and fits(arg.elem, param.elem))
    if isinstance(param, T.ListType):
        return isinstance(arg, T.ListType) and fits(arg.elem, param.elem)
    if isinstance(param, T.TupleType):
        return (
            isinstance(arg, T.TupleType)
            and len(arg.elems) == len(param.elems)
            and all(fits(a, p) for a, p in zip(arg.elems, param.elems))
        )
    if param in (T.SCALAR, T.NUMBER):
        return arg in (T.INT, T.FLOAT, T.SCALAR, T.NUMBER)
    return False


def known_body(name: str, call: Node) -> tuple[int, Graph] | None:
    """The index and a fresh copy of the first body of ``name`` that ``call`` (a
    ``prim::CallFunction``) fits by arity, argument types and result count, or None."""
    if not is_known_function(name):
        return None
    args = call.inputs[1:]
    for i, body in enumerate(known_graphs(name)):
        if len(args) != len(body.inputs) or len(call.outputs) != len(body.outputs):
            continue
        if all(fits(a.type, p.type) for a, p in zip(args, body.inputs)):
            return i, body.clone()
    return None


__all__ = ["describe", "fits", "is_known_function", "known_body", "known_graphs", "known_table", "signature"]
