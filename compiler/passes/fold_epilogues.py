"""Write an activation in place into the output of the convolution or matmul that feeds it.

A pass of the specialization pipeline (``compiler.pipeline.SPECIALIZE_PIPELINE``), after
``fold_batch_norm``, which makes ``conv -> activation`` pairs adjacent.  It reads no
weight, but it belongs with them: the in-place result is the form the static runtime's
memory plan wants, and the pipeline runs where that runtime's IR is made.

A convolution ``%y`` followed by ``%z = aten::gelu(%y)`` computes the product into one
buffer and the activation into a second, which the memory plan must place, and the
second pass streams both.  When ``%y`` has no other use, nothing can observe its value
after the activation, so the activation may overwrite it: ``%z = aten::gelu_(%y)``.  The
plan then has one tensor fewer, and the activation reads and writes the bytes the product
has just left in cache -- the epilogue ONNX Runtime and oneDNN fuse into the GEMM, here
as the next call on the same buffer.  The in-place overload runs the same kernel as the
out-of-place one, so the results are the same bits; the memory planner learns that
``%z`` aliases ``%y`` from the in-place schema (``Tensor(a!)``), as for any in-place op.

A node is rewritten when:

- its kind is a unary activation that keeps its operand's shape and dtype for a float
  operand (declared ``Fact.EPILOGUE`` on its registration, ``vm.ops.facts.EPILOGUE_KINDS``;
  ``relu``, ``tanh``, ``sigmoid``, ``clamp`` are left out: the static runtime calls them as
  bare ufuncs, which already write over an operand that dies at the node), and its
  in-place overload is registered;
- its operand is the single output of a producer declared ``Fact.TAKES_EPILOGUE``
  (``TAKES_EPILOGUE_KINDS``: convolutions and matrix products, whose schemas return a
  fresh tensor) in the same block, used by nothing else (no other node, no block return).

Postcondition: no rewritten operand has any use but its activation.
"""

from __future__ import annotations

from compiler.passes import note, owned_copy
from vm.ir.graph import Module, Node
from vm.ops.facts import EPILOGUE_KINDS, TAKES_EPILOGUE_KINDS


def fold_epilogues(module: Module) -> Module:
    """A copy of ``module`` whose main graph writes each activation of a fresh, otherwise
    unused conv/matmul result in place (see the module essay); ``module`` itself when no
    node qualifies."""
    if not any(_qualifies(n) for n in module.main.walk()):
        return module
    copy = owned_copy(module)
    for node in list(copy.main.walk()):
        if _qualifies(node):
            node.kind = node.kind + "_"
            note("activations written in place")
    return copy


def _qualifies(node: Node) -> bool:
    if node.kind not in EPILOGUE_KINDS or not node.inputs or not _has_inplace(node.kind):
        return False
    operand = node.inputs[0]
    producer = operand.node
    return (
        producer is not None
        and producer.kind in TAKES_EPILOGUE_KINDS
        and producer.owner is node.owner
        and len(producer.outputs) == 1
        and len(operand.uses) == 1
    )


def _has_inplace(kind: str) -> bool:
    from vm.ops import registry

    return bool(registry.overloads(kind + "_"))
