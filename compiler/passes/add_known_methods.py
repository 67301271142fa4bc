"""Known methods: calls of standard ``torch.nn`` submodules get irvm's forward bodies.

``print(torch.jit.script(model).graph)`` shows each submodule as a ``prim::GetAttr``
typed by its class and a ``prim::CallMethod[name="forward"]`` on it, without the body.
This pass is the first step of the pipeline: for every such call of a class that
``compiler.known`` has a body for (``Linear``, ``Conv2d``, ``LSTM``...), it stores that
body in ``Module.functions`` under ``"<class qualname>.<method>"``, the key
``inline_calls`` looks up, so the inliner (and, without it, the emitter's ``CALL``)
finds it.  Bodies may call submodules of their own (``TransformerEncoderLayer`` calls
its ``Linear``, ``LayerNorm`` and attention), so the bodies added are searched in turn.

Graphs the module already has are kept: a dump that carries a method's body (an
``inlined_graph``, a ``.pt`` archive's compiled methods) uses its own.  Known functions
(``F.relu``, ``F.pad``...) are not this pass's business: ``inline_calls`` picks their
body per call, as it must choose among overloads by argument types.
"""

from __future__ import annotations

from compiler.known import method_body
from compiler.passes import Target, note, owned_copy
from compiler.passes.inline_calls import callee_name
from vm.ir.graph import Graph, Module


def add_known_methods(target: Target) -> Target:
    """``target`` with the forward graph of every known class it calls without a body.

    Afterwards each ``prim::CallMethod`` on a known ``torch.nn`` class has its graph in
    ``functions`` under ``"<class qualname>.<method>"``.  Raises ``CompileError`` at the
    call for a ``Sequential`` (its body calls children the dump does not show) and for a
    known class called with arguments or results its body does not have.  A ``Graph``
    (which holds no functions) comes back as a copy, unchanged.
    """
    copy = owned_copy(target)
    if not isinstance(copy, Module):
        return copy
    added: dict[str, Graph] = {}
    pending = [copy.main, *copy.functions.values()]
    while pending:
        for node in pending.pop().walk():
            if node.kind != "prim::CallMethod" or not node.inputs:
                continue
            if callee_name(node, {**copy.functions, **added}) is not None:
                continue
            body = method_body(node)
            if body is not None:
                added[f"{node.inputs[0].type.qualname}.{node.attrs['name']}"] = body
                pending.append(body)
    note("bodies added", len(added))
    copy.functions.update(added)
    return copy
