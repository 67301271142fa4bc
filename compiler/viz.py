"""Graph pictures: the IR as a graphviz drawing.

One box per node, labelled with its op and output types; graph inputs and outputs as
house shapes; the blocks of ``prim::If`` / ``prim::Loop`` as nested clusters, and fusion
groups as clusters holding their sub-graph.  Constants are folded into their users'
labels (``aten::add(·, ·, 1)``) unless asked for.  Each box's tooltip is the node's
``file:line:col`` and its Python source location, so an SVG shows where a node came from.

The DOT text is made here, by hand, so the picture's structure can be checked without
graphviz; the ``graphviz`` package and the ``dot`` program only render it.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from compiler.ir import Block, Graph, Module, Node, Value
from compiler.types import Type


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _type_str(t: Type | None) -> str:
    return "Tensor" if t is None else str(t)


def _constant_label(node: Node) -> str:
    if "value" not in node.attrs:
        return "None" if node.attrs.get("name") is None else str(node.attrs["name"])
    value = node.attrs["value"]
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 24 else text[:21] + "..."


class _DotWriter:
    """Builds the DOT text of one module; ids are stable counters (n0, n1...)."""

    def __init__(self, fold_constants: bool):
        self.fold = fold_constants
        self.lines: list[str] = []
        self.ids: dict[int, str] = {}  # id(Value) -> DOT node id that produces it
        self.counter = 0
        self.clusters = 0
        self.groups = 0

    def new_id(self, prefix: str = "n") -> str:
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, text: str, depth: int) -> None:
        self.lines.append("  " * depth + text)

    def graph(self, graph: Graph, depth: int, title: str) -> None:
        for v in graph.inputs:
            nid = self.new_id("in")
            self.ids[id(v)] = nid
            label = f"%{v.name} : {_type_str(v.type)}"
            self.emit(f'{nid} [shape=invhouse, style=filled, fillcolor="#dbe9f6", label={_quote(label)}];', depth)
        self.block_body(graph.block, depth)
        for i, v in enumerate(graph.outputs):
            nid = self.new_id("out")
            label = f"return {i}: %{v.name}"
            self.emit(f'{nid} [shape=house, style=filled, fillcolor="#f6e3db", label={_quote(label)}];', depth)
            self.edge(v, nid)

    def block_body(self, block: Block, depth: int) -> None:
        for node in block.nodes:
            if node.kind == "prim::Constant" and self.fold:
                continue
            self.node(node, depth)

    def node(self, node: Node, depth: int) -> None:
        nid = self.new_id()
        for out in node.outputs:
            self.ids[id(out)] = nid
        args = []
        for v in node.inputs:
            producer = v.node
            if self.fold and producer is not None and producer.kind == "prim::Constant":
                args.append(_constant_label(producer))
            else:
                args.append("·")
        kind = node.kind
        subgraph = node.attrs.get("Subgraph")
        if isinstance(subgraph, Graph):  # numbered as the printer numbers it: prim::FusionGroup_0
            kind = f"{node.kind}_{self.groups}"
            self.groups += 1
        if node.kind == "prim::Constant":
            kind = f"prim::Constant[{_constant_label(node)}]"
        label = f"{kind}({', '.join(args)})"
        if node.outputs:
            label += "\n" + ", ".join(_type_str(o.type) for o in node.outputs)
        tooltip = " ".join(filter(None, [str(node.span) if node.span else None, node.source]))
        shape = "box" if not node.blocks else "octagon"
        self.emit(f"{nid} [shape={shape}, label={_quote(label)}, tooltip={_quote(tooltip or node.kind)}];", depth)
        for v in node.inputs:
            if not (self.fold and v.node is not None and v.node.kind == "prim::Constant"):
                self.edge(v, nid)
        for b, block in enumerate(node.blocks):
            self.cluster(f"{node.kind} block{b}", block, depth, nid)
        if isinstance(subgraph, Graph):
            self.clusters += 1
            self.emit(f"subgraph cluster_{self.clusters} {{", depth)
            self.emit(f'label={_quote("with " + kind + " = graph")}; style=filled; fillcolor="#eef6e8";', depth + 1)
            self.graph(subgraph, depth + 1, node.kind)
            self.emit("}", depth)

    def cluster(self, title: str, block: Block, depth: int, owner_id: str) -> None:
        self.clusters += 1
        self.emit(f"subgraph cluster_{self.clusters} {{", depth)
        self.emit(f'label={_quote(title)}; style=dashed;', depth + 1)
        for p in block.params:
            pid = self.new_id("p")
            self.ids[id(p)] = pid
            self.emit(f"{pid} [shape=ellipse, label={_quote('%' + p.name)}];", depth + 1)
        self.block_body(block, depth + 1)
        if block.returns:
            rid = self.new_id("ret")
            self.emit(f"{rid} [shape=plaintext, label={_quote('-> (' + ', '.join('%' + v.name for v in block.returns) + ')')}];", depth + 1)
            for v in block.returns:
                self.edge(v, rid)
        self.emit("}", depth)

    def edge(self, value: Value, target: str) -> None:
        source = self.ids.get(id(value))
        if source is None:  # a folded constant returned by a block, or a value not drawn
            if value.node is not None and value.node.kind == "prim::Constant":
                source = self.new_id("c")
                self.lines.append(f"{source} [shape=plaintext, label={_quote(_constant_label(value.node))}];")
                self.ids[id(value)] = source
            else:
                return
        self.lines.append(f"{source} -> {target};")


def to_dot(module: Module | Graph, fold_constants: bool = True) -> str:
    """The DOT source of ``module``'s entry graph (and its functions, each a cluster)."""
    graph = module.main if isinstance(module, Module) else module
    writer = _DotWriter(fold_constants)
    writer.emit("digraph irvm {", 0)
    writer.emit('graph [rankdir=TB, fontname="Helvetica"]; node [fontname="Helvetica", fontsize=10];', 1)
    writer.graph(graph, 1, "graph")
    if isinstance(module, Module):
        for name, fn in module.functions.items():
            writer.clusters += 1
            writer.emit(f"subgraph cluster_{writer.clusters} {{", 1)
            writer.emit(f"label={_quote('function ' + name)}; style=bold;", 2)
            writer.graph(fn, 2, name)
            writer.emit("}", 1)
    writer.emit("}", 0)
    return "\n".join(writer.lines) + "\n"


def render(
    text: str,
    filename: str,
    out: Path,
    *,
    after: str | None = None,
    fold_constants: bool = True,
    fusion: bool = True,
) -> str:
    """Parse ``text``, optionally run the pipeline up to ``after``, and draw it to ``out``.

    The format follows ``out``'s suffix (.dot, .svg, .png).  Without the ``dot`` program
    the ``.dot`` file is written instead and the message says how to install ``dot``.
    Returns a one-line message saying what was written.
    """
    from compiler import pipeline
    from compiler.diagnostics import IRError
    from compiler.parser import parse

    module = parse(text, filename)
    if after is not None:
        names = list(pipeline.DEFAULT_PIPELINE)
        if after not in names:
            raise IRError(f"unknown pass {after!r}; the pipeline is: {', '.join(names)}")
        module, _ = pipeline.optimize(module, names[: names.index(after) + 1], fusion=fusion)
    dot = to_dot(module, fold_constants)
    fmt = out.suffix.lstrip(".").lower() or "svg"
    if fmt == "dot":
        out.write_text(dot)
        return f"wrote {out}"
    if fmt not in ("svg", "png", "pdf"):
        raise IRError(f"cannot draw to {out}: use a .svg, .png, .pdf or .dot file name")
    if shutil.which("dot") is None:
        dot_path = out.with_suffix(".dot")
        dot_path.write_text(dot)
        return (
            f"wrote {dot_path}: the graphviz 'dot' program is not installed, so no {fmt} was drawn "
            f"(install it with 'apt-get install graphviz' or 'brew install graphviz', then run "
            f"'dot -T{fmt} {dot_path} -o {out}')"
        )
    proc = subprocess.run(["dot", f"-T{fmt}", "-o", str(out)], input=dot.encode(), capture_output=True, check=False)
    if proc.returncode != 0:
        raise IRError(f"dot failed drawing {out}: {proc.stderr.decode(errors='replace').strip()}")
    return f"wrote {out}"
