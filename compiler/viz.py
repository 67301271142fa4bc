"""Graph pictures: the IR as a graphviz drawing.

One box per node, labelled with its op and output types; graph inputs and outputs as
house shapes; the blocks of ``prim::If`` / ``prim::Loop`` as nested clusters, and fusion
groups as clusters holding their sub-graph.  Constants are folded into their users'
labels (``aten::add(·, ·, 1)``) unless asked for.  Each box's tooltip is the node's
``file:line:col`` and its Python source location, so an SVG shows where a node came from.

Nodes are declared inside the cluster of the block that owns them and every edge is
written at the top level, after all clusters: graphviz puts a node in the first cluster
that mentions it, so an edge written inside a ``prim::If`` box would pull a top-level
node into that box and draw control flow that does not exist.

A graph of more than ``COLLAPSE_AT`` boxes is drawn collapsed (``to_dot(collapse=None)``):
one box per module of the top level (``layer1``, ``fc``...) and per fusion group, with
the edges between them, so a ResNet fits on a screen; ``collapse=False`` (``irc viz
--expand``) draws every node.  A node's module comes from its ``scope:`` (traced dumps),
else from the module attribute it reads (``prim::GetAttr`` chains from ``%self``, or a
frozen constant named ``self.layer1.0.conv1.weight``), else from its first input.

The DOT text is made here, by hand, so the picture's structure can be checked without
graphviz; the ``graphviz`` package and the ``dot`` program only render it.
"""

from __future__ import annotations

import shutil
import subprocess
from collections import Counter
from pathlib import Path

from compiler.diagnostics import IRError, RunError
from compiler.types import ClassType, TensorType, Type
from vm.ir.graph import Block, Graph, Module, Node, Value

COLLAPSE_AT = 150  # boxes; a bigger graph is drawn one box per module unless expanded


def _quote(text: str) -> str:
    return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'


def _type_str(t: Type | None) -> str:
    """The type as a label shows it: a refined tensor type without its strides, device and
    grad flag (``Float(1, 64, 32, 32)``), which made every box of a traced graph wide."""
    if t is None:
        return "Tensor"
    if isinstance(t, TensorType) and t.refined:
        sizes = "" if t.sizes is None else ", ".join("*" if d is None else str(d) for d in t.sizes)
        return f"{t.dtype or 'Tensor'}({sizes})"
    return str(t)


def _constant_label(node: Node) -> str:
    """The constant as the IR prints it (``"abc"``, ``[1, 2]``, ``{0.5}``), shortened."""
    from vm.ir.printer import format_attr_value

    if "value" not in node.attrs:
        return "None" if node.attrs.get("name") is None else str(node.attrs["name"])
    text = " ".join(format_attr_value(node.attrs["value"]).split())
    return text if len(text) <= 24 else text[:21] + "..."


def shape_text(value: Value, shapes: dict[str, str] | None = None) -> str:
    """``value``'s tensor shape as an edge label (``1x64x16x16``), from ``shapes`` (value
    name -> shape, measured) or its refined type (``Float(1, 64, 16, 16)``); "" when unknown."""
    if shapes and value.name in shapes:
        return shapes[value.name]
    t = value.type
    if isinstance(t, TensorType) and t.sizes is not None:
        return "x".join("?" if s is None else str(s) for s in t.sizes) or "scalar"
    return ""


class _DotWriter:
    """Builds the DOT text of one module; ids are stable counters (n0, n1...)."""

    def __init__(self, fold_constants: bool, shapes: dict[str, str] | None = None):
        self.fold = fold_constants
        self.shapes = shapes
        self.lines: list[str] = []
        self.ids: dict[int, str] = {}  # id(Value) -> DOT node id that produces it
        self.counter = 0
        self.clusters = 0
        self.groups = 0
        self.edges: list[str] = []  # written after every cluster, at the top level

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
        elif node.kind == "prim::GetAttr":  # which attribute: the box says it
            kind = f"prim::GetAttr[{node.attrs.get('name', '?')}]"
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
                source = self.new_id("c")  # declared where it is used (inside that block's cluster)
                self.lines.append(f"{source} [shape=plaintext, label={_quote(_constant_label(value.node))}];")
                self.ids[id(value)] = source
            else:
                return
        shape = shape_text(value, self.shapes)
        self.edges.append(f"{source} -> {target}" + (f" [label={_quote(shape)}];" if shape else ";"))


def to_dot(
    module: Module | Graph, fold_constants: bool = True, collapse: bool | None = None,
    shapes: dict[str, str] | None = None,
) -> str:
    """The DOT source of ``module``'s entry graph (and its functions, each a cluster).

    ``collapse``: True draws one box per top-level module and fusion group, False every
    node, None (the default) collapses graphs of more than ``COLLAPSE_AT`` boxes.
    ``shapes``: value name -> shape text for the edges (else what the types say).
    """
    graph = module.main if isinstance(module, Module) else module
    if collapse is None:
        collapse = sum(1 for n in graph.walk() if not (fold_constants and n.kind == "prim::Constant")) > COLLAPSE_AT
    writer = _DotWriter(fold_constants, shapes)
    writer.emit("digraph irvm {", 0)
    writer.emit('graph [rankdir=TB, fontname="Helvetica"]; node [fontname="Helvetica", fontsize=10];', 1)
    writer.emit('edge [fontname="Helvetica", fontsize=9, fontcolor="#555555"];', 1)
    if collapse:
        _collapsed(writer, graph)
    else:
        writer.graph(graph, 1, "graph")
        if isinstance(module, Module):
            for name, fn in module.functions.items():
                writer.clusters += 1
                writer.emit(f"subgraph cluster_{writer.clusters} {{", 1)
                writer.emit(f"label={_quote('function ' + name)}; style=bold;", 2)
                writer.graph(fn, 2, name)
                writer.emit("}", 1)
    for edge in writer.edges:
        writer.emit(edge, 1)
    writer.emit("}", 0)
    return "\n".join(writer.lines) + "\n"


# ----------------------------------------------------------------------------- collapsed view


def module_groups(graph: Graph) -> dict[Node, str | None]:
    """The top-level module each top-level node belongs to (None: no module to say).

    In order of preference: the node's ``scope:`` (``__module.layer1/...`` -> ``layer1``;
    when some nodes have one, as in a traced dump or a ``.pt`` read for a picture, a node
    without is the root module's own and is drawn as itself);
    the module attribute it reads (a ``prim::GetAttr`` chain from the ``%self`` input, a
    frozen constant named ``self.layer1.0.conv1.weight``), looked for in its blocks too;
    else the module of its first input that has one.  A fusion group is its own group.
    """
    paths: dict[int, str] = {}  # id(Value) -> attribute path from self ("layer1.0.conv1")
    if graph.inputs and isinstance(graph.inputs[0].type, ClassType):
        paths[id(graph.inputs[0])] = ""
    of_value: dict[int, str | None] = {}
    groups: dict[Node, str | None] = {}
    fusion = 0
    scoped = any(node.scope for node in graph.nodes)  # the modules are known: the rest is the root's own
    root_type = graph.inputs[0].type if graph.inputs else None
    root = root_type.qualname.rsplit(".", 1)[-1] if isinstance(root_type, ClassType) else "graph"
    run, last = 0, None  # the root's own nodes, in runs between module calls (drawn in node order: no cycle)
    for node in graph.nodes:
        group: str | None = None
        if isinstance(node.attrs.get("Subgraph"), Graph):
            group = f"{node.kind}_{fusion}"
            fusion += 1
        elif node.scope:
            head = node.scope.split("/")[0].strip()
            group = head.split(".", 1)[1] if head.startswith("__module.") else None
        read = _attribute_group(node, paths)  # (walks every node: it follows GetAttr chains)
        if group is None and (not scoped or node.kind == "prim::GetAttr"):
            group = read  # a weight read belongs to its module
        if group is None and not scoped:
            group = next((of_value[id(v)] for v in node.inputs if of_value.get(id(v))), None)
        if scoped and group is None and node.kind != "prim::Constant" and not all(_constant(v) for v in node.inputs):
            if last is not None and not last.startswith(OWN):
                run += 1
            group = f"{OWN}{run} {root}"
        if group is not None:
            last = group
        groups[node] = group
        for out in node.outputs:
            of_value[id(out)] = group
    for node in reversed(graph.nodes):  # a node of constants only (a hoisted list) joins its first user
        if groups[node] is None and (not scoped or all(_constant(v) for v in node.inputs)):
            users = (_top_level(u.user, graph) for out in node.outputs for u in out.uses)
            groups[node] = next((groups[u] for u in users if u is not None and groups.get(u)), None)
    return groups


OWN = "own:"  # the group of a run of the root module's own nodes: "own:2 BertModel"


def _constant(value: Value) -> bool:
    return value.node is not None and value.node.kind == "prim::Constant"


def _top_level(user: Node | Block, graph: Graph) -> Node | None:
    """The node of ``graph``'s top block that holds ``user`` (a node, or a block's return)."""
    node = user if isinstance(user, Node) else user.owner
    while node is not None and node.owner is not graph.block:
        node = node.owner.owner if node.owner is not None else None
    return node


def _attribute_group(node: Node, paths: dict[int, str]) -> str | None:
    for inner in (node, *node.walk()):
        if inner.kind == "prim::GetAttr" and inner.inputs and id(inner.inputs[0]) in paths:
            base = paths[id(inner.inputs[0])]
            name = str(inner.attrs.get("name", "?"))
            path = f"{base}.{name}" if base else name
            for out in inner.outputs:
                paths[id(out)] = path
        elif inner.kind == "prim::Constant" and inner.outputs and inner.outputs[0].name.startswith("self."):
            out = inner.outputs[0]  # a frozen weight (pooled scalars keep a name from one module only)
            if out.type is None or isinstance(out.type, TensorType):
                paths[id(out)] = out.name[len("self.") :]
        for v in inner.inputs:
            path = paths.get(id(v))
            if path:
                return path.split(".")[0]
        if inner.kind == "prim::GetAttr" and inner.outputs and paths.get(id(inner.outputs[0])):
            return paths[id(inner.outputs[0])].split(".")[0]
    return None


def _collapsed(writer: _DotWriter, graph: Graph) -> None:
    """One box per module group (and per node outside any), edges between boxes."""
    groups = module_groups(graph)
    members: dict[str, list[Node]] = {}
    box_of: dict[int, str] = {}  # id(Value) -> box id
    for v in graph.inputs:
        if isinstance(v.type, ClassType):  # the module object: its reads are weights, not data flow
            continue
        nid = writer.new_id("in")
        box_of[id(v)] = nid
        label = f"%{v.name} : {_type_str(v.type)}"
        writer.emit(f'{nid} [shape=invhouse, style=filled, fillcolor="#dbe9f6", label={_quote(label)}];', 1)
    boxes: dict[str, str] = {}
    edges: dict[tuple[str, str], list[str]] = {}
    for node in graph.nodes:
        if node.kind == "prim::Constant" and writer.fold:
            continue
        if node.kind == "prim::GetAttr" and all(isinstance(o.type, ClassType) for o in node.outputs):
            continue  # reaching a submodule object moves no data: drawn with the module that uses it
        group = groups[node]
        key = group if group is not None else f"#{id(node)}"
        nid = boxes.get(key)
        if nid is None:
            nid = boxes[key] = writer.new_id()
            members[nid] = []
        members[nid].append(node)
        for inner in (node, *node.walk()):
            for v in inner.inputs:
                source = box_of.get(id(v))
                if source is not None and source != nid:
                    shown = edges.setdefault((source, nid), [])
                    shape = shape_text(v, writer.shapes)
                    if shape and shape not in shown:
                        shown.append(shape)
        for out in node.outputs:
            box_of[id(out)] = nid
    for nid, nodes in members.items():
        writer.emit(f"{nid} [shape=box, style=rounded, label={_quote(_group_label(nodes, groups))}];", 1)
    for i, v in enumerate(graph.outputs):
        nid = writer.new_id("out")
        writer.emit(f'{nid} [shape=house, style=filled, fillcolor="#f6e3db", label={_quote(f"return {i}: %{v.name}")}];', 1)
        if id(v) in box_of:
            edges.setdefault((box_of[id(v)], nid), []).extend(filter(None, [shape_text(v, writer.shapes)]))
    for (a, b), shown in edges.items():
        label = ", ".join(shown[:2]) + (", ..." if len(shown) > 2 else "")
        writer.edges.append(f"{a} -> {b}" + (f" [label={_quote(label)}];" if label else ";"))


def _group_label(nodes: list[Node], groups: dict[Node, str | None]) -> str:
    name = groups[nodes[0]]
    if name is not None and name.startswith(OWN):
        name = f"{name.split(' ', 1)[1]}'s own code"
    if name is None:  # a node outside any module: drawn as itself
        node = nodes[0]
        return node.kind + ("\n" + ", ".join(_type_str(o.type) for o in node.outputs) if node.outputs else "")
    counts = Counter(n.kind for node in nodes for n in (node, *node.walk()) if n.kind not in ("prim::Constant", "prim::GetAttr"))
    total = sum(counts.values())
    named = Counter({k: c for k, c in counts.items() if k.startswith("aten::")}) or counts  # the ops, not the glue
    counts = named
    top = ", ".join(f"{k.split('::')[-1]} x{c}" if c > 1 else k.split("::")[-1] for k, c in counts.most_common(3))
    more = ", ..." if len(counts) > 3 else ""
    return f"{name}\n{total} ops: {top}{more}"


def render(
    text: str,
    filename: str,
    out: Path,
    *,
    after: str | None = None,
    fold_constants: bool = True,
    fusion: bool = True,
    collapse: bool | None = None,
    shapes: dict[str, str] | None = None,
) -> str:
    """Parse ``text``, optionally run the pipeline up to ``after``, and draw it to ``out``,
    marked as irvm's, in one atomic write (``vm.files.atomic``: an old ``out`` stays as it
    was when the write fails).

    The format follows ``out``'s suffix (.dot, .svg, .png, .pdf).  A picture needs the
    ``dot`` program: without it nothing is written and the IRError says how to install
    it (or to ask for ``.dot`` text).  ``collapse`` as in ``to_dot``.  Returns a one-line
    message saying what was written.
    """
    from compiler import pipeline
    from compiler.parser import parse
    from vm.files.atomic import atomic_write_bytes
    from vm.files.kinds import marked_picture

    module = parse(text, filename)
    if after is not None:
        names = list(pipeline.DEFAULT_PIPELINE)
        if after not in names:
            raise IRError(f"unknown pass {after!r}; the pipeline is: {', '.join(names)}")
        module, _ = pipeline.optimize(module, names[: names.index(after) + 1], fusion=fusion)
    fmt = out.suffix.lstrip(".").lower() or "svg"
    if fmt not in ("dot", "svg", "png", "pdf"):
        raise IRError(f"cannot draw to {out}: use a .svg, .png, .pdf or .dot file name")
    if fmt != "dot" and shutil.which("dot") is None:  # exit 1, as for a file irvm will not write
        raise RunError(
            f"cannot draw {out}: the graphviz 'dot' program is not installed "
            f"(install it with 'apt-get install graphviz' or 'brew install graphviz'), "
            f"or write the DOT text instead: -o {out.with_suffix('.dot')}"
        )
    dot = to_dot(module, fold_constants, collapse, shapes).encode()
    if fmt != "dot":  # drawn to memory, so that the file is written once, whole, or not at all
        proc = subprocess.run(["dot", f"-T{fmt}"], input=dot, capture_output=True, check=False)
        if proc.returncode != 0:
            raise IRError(f"dot failed drawing {out}: {proc.stderr.decode(errors='replace').strip()}")
        dot = proc.stdout
    atomic_write_bytes(out, marked_picture(dot, out.suffix))  # a full disk: WriteError naming out
    return f"wrote {out}"


def measured_shapes(text: str, filename: str, weights: dict | None, examples: list | None) -> dict[str, str]:
    """Value name -> shape text of every tensor one run of ``text`` gives on inputs of the
    examples' shapes (zeros: a traced archive records dtypes and shapes, not values), for
    the edges of a picture; {} when there are no examples or the run fails (shapes are a
    courtesy: the picture is drawn without them)."""
    if not examples:
        return {}
    import numpy as np

    from compiler.emit import compile_source
    from vm.interpreter.machine import Interpreter

    args = [np.zeros(e.shape, e.dtype) if isinstance(e, np.ndarray) else e for e in examples]
    try:
        program = compile_source(text, filename, passes=[])  # the names of the graph drawn, unoptimized
        with np.errstate(all="ignore"):
            _, values = Interpreter(program, weights).run_traced(*args)
    except (IRError, ValueError, TypeError, IndexError, KeyError, ArithmeticError, MemoryError):
        return {}
    return {
        name.lstrip("%"): "x".join(map(str, v.shape)) or "scalar"
        for name, v in values.items()
        if isinstance(v, np.ndarray) and "/" not in name
    }
