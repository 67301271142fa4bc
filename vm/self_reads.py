"""What a compiled program keeps of its IR, and how the IR comes back when it is needed.

A ``Program`` read from a ``.irbc`` file carries no IR objects: the interpreter runs the
bytecode alone.  Two things still need IR now and then, and get it from here:

- binding ``%self`` (``vm.weights.bind_self``) walks the ``prim::GetAttr`` nodes that read
  from it.  The compiler records them as ``self_reads`` (``self_reads_of``): one entry per
  GetAttr, ``(parent, name, type, required, span)`` with ``parent`` the index of the entry
  whose result it reads from (-1 for ``%self``; ``compiler.program_tables``).  ``self_graph`` rebuilds just those nodes,
  a graph of a few hundred nodes at most, instead of parsing the whole program;
- the static runtime runs the optimized IR itself: ``parse_optimized`` parses the text the
  file carries (once, when a static runtime is built) and gives every node back the span
  it had in the original file (recorded in ``all_nodes`` order by
  ``compiler.program_tables``).
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

SelfRead = tuple[int, str, str, bool, Any]


def _span(stored: Any) -> Any:
    from vm.errors import Span

    if stored is None:
        return None
    file, line, col, *rest = stored
    return Span(str(file), int(line), int(col), rest[0] if rest else None)


def self_graph(program: Any) -> Any:
    """A graph whose ``%self`` has the GetAttr nodes of ``program`` (for ``bind_self``):
    the IR module's own entry graph when it is at hand, else one rebuilt from
    ``self_reads``; None for a program that has neither."""
    module = program.module_if_loaded
    if module is not None:
        return module.main
    if not program.self_reads:
        return program.module.main if program.optimized_ir else None
    from compiler.ir import Graph, Node

    graph = Graph()
    values = [graph.block.add_param("self", parse_type(program.input_types[0]))]
    for parent, name, type_text, required, span in program.self_reads:
        attrs: dict[str, object] = {"name": name}
        if required:
            attrs["required"] = 1
        node = Node("prim::GetAttr", attrs=attrs, span=_span(span))
        node.add_input(values[parent + 1])
        values.append(node.add_output(f"attr.{len(values)}", parse_type(type_text) if type_text else None))
        graph.block.append(node)
    return graph


@lru_cache(maxsize=4096)
def parse_type(text: str) -> Any:
    """The IR type printed as ``text`` (each distinct spelling read once): the common
    spellings of attribute types directly, others by the IR parser."""
    simple = _simple_type(text)
    if simple is not None:
        return simple
    from compiler.parser import parse
    from vm.errors import BytecodeError, IRError

    try:
        return parse(f"graph(%x : {text}):\n  return (%x)\n", "<type>").main.inputs[0].type
    except IRError:
        raise BytecodeError(f"malformed type {text!r}") from None


def _simple_type(text: str) -> Any:
    """``int``, ``Tensor?``, ``float[]``, ``__torch__.a.B``... without the parser; None else."""
    from vm import types as T

    if text.endswith("?"):
        inner = _simple_type(text[:-1])
        return None if inner is None else T.OptionalType(inner)
    if text.endswith("[]"):
        inner = _simple_type(text[:-2])
        return None if inner is None else T.ListType(inner)
    leaf = _LEAVES.get(text)
    if leaf is not None:
        return leaf
    if text.startswith(("__torch__.", "__main__.")) and text.replace(".", "").replace("_", "").isalnum():
        return T.ClassType(text)
    return None


def _leaves() -> dict[str, Any]:
    from vm import types as T

    return {"Tensor": T.TENSOR, **{str(t): t for t in (T.INT, T.FLOAT, T.BOOL, T.STR, T.NONE, T.DEVICE, T.ANY)}}


_LEAVES = _leaves()


def parse_optimized(program: Any) -> Any:
    """The optimized IR module of a program read from a file, spans restored."""
    from compiler.parser import parse
    from compiler.program_tables import all_nodes

    module = parse(program.optimized_ir, "<optimized IR>")
    module.attributes = dict(program.folded)  # the attribute values it was compiled for
    nodes = list(all_nodes(module))
    if len(nodes) == len(program.node_spans):  # else the printed spans stay (never wrong nodes)
        for node, stored in zip(nodes, program.node_spans):
            node.span = _span(stored)
    return module
