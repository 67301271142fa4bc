"""The IR data model: Module > Graph > Block > Node, and Values with their uses.

Graph objects have identity (``attrs.define(eq=False)``): two nodes that print alike are
still two nodes.  Everything compared by content (types, spans, constant payloads) is
frozen.  There is one ``Node`` shape for every operator, as in TorchScript: ``kind``
(``"aten::add"``), ``inputs``, ``outputs``, ``attrs``, ``blocks``, and where it came from.

Uses are kept exact by the mutation API below; a pass that edits ``inputs`` lists by hand
breaks them.  A block's returns count as uses whose ``user`` is the block itself.

Attribute payloads (``Node.attrs`` values) are plain Python data: ``int``, ``float``,
``str``, ``bool``, lists of those, a ``Type``, a ``TensorLiteral``, a ``Graph`` (the
``Subgraph`` of a fusion group), or ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import NamedTuple

from attrs import define, field, frozen

from vm.core.errors import Span
from vm.core.types import Type


@frozen
class TensorLiteral:
    """A tensor constant as printed: ``{2}``, ``<Tensor>``, or the long rounded form.

    ``values`` is the flat list of printed numbers (None for ``<Tensor>``, whose values are
    not printed and must be bound from weights by the constant's name).  ``approximate``
    is True when PyTorch rounded the printed numbers (the long form).
    """

    values: tuple[float | int | bool, ...] | None
    shape: tuple[int, ...] | None = None
    dtype: str | None = None  # PyTorch scalar-type name: Float, Long, ...
    approximate: bool = False
    printed: str | None = field(default=None, eq=False)  # original text, for printing


class Use(NamedTuple):
    """One use of a value: ``user.inputs[index]`` (a Node) or ``user.returns[index]`` (a Block).

    A tuple, so that finding one in a use list (``list.remove``) compares in C: a pooled
    constant can have thousands of uses."""

    user: Node | Block
    index: int


@define(eq=False, repr=False)
class Value:
    name: str  # without the leading '%'
    type: Type | None = None  # None when the dump printed no type (PyTorch then means Tensor)
    node: Node | None = None  # the producer; None for a block parameter
    block: Block | None = None  # for a block parameter, its block
    uses: list[Use] = field(factory=list)

    def __repr__(self) -> str:
        return f"%{self.name}"

    def replace_all_uses_with(self, other: Value) -> None:
        for use in list(self.uses):
            _set_operand(use.user, use.index, other)

    @property
    def defining_block(self) -> Block | None:
        return self.block if self.node is None else self.node.owner


@define(eq=False, repr=False)
class Node:
    kind: str
    inputs: list[Value] = field(factory=list)
    outputs: list[Value] = field(factory=list)
    attrs: dict[str, object] = field(factory=dict)
    blocks: list[Block] = field(factory=list)
    span: Span | None = None  # where in the IR file this node was parsed
    source: str | None = None  # the trailing "# file.py:12:4" comment (without "# ")
    scope: str | None = None  # the ", scope: ..." annotation
    owner: Block | None = None

    def __repr__(self) -> str:
        outs = ", ".join(repr(v) for v in self.outputs)
        ins = ", ".join(repr(v) for v in self.inputs)
        return f"{outs + ' = ' if outs else ''}{self.kind}({ins})"

    @property
    def output(self) -> Value:
        assert len(self.outputs) == 1, f"{self.kind} has {len(self.outputs)} outputs"
        return self.outputs[0]

    @property
    def subgraph(self) -> Graph:
        """A fusion group's body, ``attrs["Subgraph"]``."""
        graph = self.attrs["Subgraph"]
        assert isinstance(graph, Graph), f"{self.kind} has no Subgraph graph"
        return graph

    def add_input(self, value: Value) -> None:
        self.inputs.append(value)
        value.uses.append(Use(self, len(self.inputs) - 1))

    def replace_input(self, index: int, value: Value) -> None:
        _set_operand(self, index, value)

    def remove_input(self, index: int) -> None:
        _remove_operand(self, self.inputs, index)

    def drop_all_inputs(self) -> None:
        while self.inputs:
            self.remove_input(len(self.inputs) - 1)

    def add_output(self, name: str, type: Type | None = None) -> Value:
        value = Value(name, type, node=self)
        self.outputs.append(value)
        return value

    def remove_output(self, index: int) -> None:
        assert not self.outputs[index].uses, f"output %{self.outputs[index].name} still used"
        del self.outputs[index]

    def add_block(self) -> Block:
        block = Block(owner=self)
        self.blocks.append(block)
        return block

    def walk(self) -> Iterator[Node]:
        """This node's nested nodes, depth first (not the node itself)."""
        return _walk_blocks(iter(self.blocks))

    def destroy(self) -> None:
        """Unlink the node from its block and from the values it uses.

        Its outputs must be unused; nested blocks are destroyed with it.
        """
        for out in self.outputs:
            assert not out.uses, f"destroying {self.kind}: %{out.name} still has uses"
        for block in self.blocks:
            block.destroy_contents()
        self.drop_all_inputs()
        if self.owner is not None:
            del self.owner.nodes[self.owner.index_of(self)]
            self.owner = None


@define(eq=False, repr=False)
class Block:
    params: list[Value] = field(factory=list)
    nodes: list[Node] = field(factory=list)
    returns: list[Value] = field(factory=list)
    owner: Node | None = None  # None for a graph's top-level block
    span: Span | None = None  # the `blockN(...):` header
    return_span: Span | None = None  # the `-> (...)` line (`return (...)` for a graph)
    # where ``index_of`` last found a node: passes edit a block front to back, so the next
    # node asked for is usually just after it (a search from there, not from the start)
    _hint: int = field(default=0, init=False, eq=False)

    def __repr__(self) -> str:
        return f"<Block of {self.owner.kind if self.owner else 'graph'}: {len(self.nodes)} nodes>"

    def add_param(self, name: str, type: Type | None = None, index: int | None = None) -> Value:
        value = Value(name, type, block=self)
        self.params.insert(len(self.params) if index is None else index, value)
        return value

    def remove_param(self, index: int) -> None:
        assert not self.params[index].uses, f"parameter %{self.params[index].name} still used"
        del self.params[index]

    def add_return(self, value: Value) -> None:
        self.returns.append(value)
        value.uses.append(Use(self, len(self.returns) - 1))

    def replace_return(self, index: int, value: Value) -> None:
        _set_operand(self, index, value)

    def remove_return(self, index: int) -> None:
        _remove_operand(self, self.returns, index)

    def append(self, node: Node) -> Node:
        node.owner = self
        self.nodes.append(node)
        return node

    def insert(self, index: int, node: Node) -> Node:
        node.owner = self
        self.nodes.insert(index, node)
        return node

    def insert_before(self, anchor: Node, node: Node) -> Node:
        return self.insert(self.index_of(anchor), node)

    def insert_after(self, anchor: Node, node: Node) -> Node:
        return self.insert(self.index_of(anchor) + 1, node)

    def index_of(self, node: Node) -> int:
        """Where ``node`` is in ``nodes``: searched first from a little before the last
        answer to the end, then the rest, so a pass going front to back finds each node
        in a few steps instead of a scan of the whole block (nodes compare by identity)."""
        nodes = self.nodes
        start = max(0, min(self._hint, len(nodes)) - 8)
        try:
            at = nodes.index(node, start)
        except ValueError:
            try:
                at = nodes.index(node, 0, start)
            except ValueError:
                raise ValueError(f"{node!r} is not in this block") from None
        self._hint = at
        return at

    def move_before(self, node: Node, anchor: Node) -> None:
        """Move ``node`` (of any block) to just before ``anchor`` in this block."""
        assert node.owner is not None
        del node.owner.nodes[node.owner.index_of(node)]
        self.insert_before(anchor, node)

    def move_all_before(self, nodes: list[Node], anchor: Node) -> None:
        """Move every node of ``nodes`` (all of one other block, in order) to just before
        ``anchor`` in this block, in one splice."""
        moved = list(nodes)
        if not moved:
            return
        source = moved[0].owner
        assert source is not None and source is not self
        keep = set(map(id, moved))
        source.nodes[:] = [n for n in source.nodes if id(n) not in keep]
        for node in moved:
            node.owner = self
        at = self.index_of(anchor)
        self.nodes[at:at] = moved

    def walk(self) -> Iterator[Node]:
        """Every node of this block and of its nested blocks, in program order."""
        return _walk_blocks(iter((self,)))

    def destroy_contents(self) -> None:
        while self.returns:
            self.remove_return(len(self.returns) - 1)
        for node in reversed(self.nodes):
            for out in node.outputs:
                out.uses.clear()  # uses inside this block die with it
            node.owner = None  # the list is cleared below, at once
            node.destroy()
        self.nodes.clear()


@define(eq=False, repr=False)
class Graph:
    block: Block = field(factory=Block)
    name: str = "graph"
    span: Span | None = None

    def __repr__(self) -> str:
        return f"<Graph {self.name}: {len(self.block.nodes)} nodes>"

    @property
    def inputs(self) -> list[Value]:
        return self.block.params

    @property
    def outputs(self) -> list[Value]:
        return self.block.returns

    @property
    def nodes(self) -> list[Node]:
        return self.block.nodes

    def walk(self) -> Iterator[Node]:
        return self.block.walk()

    def value_names(self) -> set[str]:
        names = {v.name for v in self.inputs}
        for node in self.walk():
            names.update(v.name for v in node.outputs)
            for block in node.blocks:
                names.update(v.name for v in block.params)
        return names

    def fresh_name(self, base: str, taken: set[str] | None = None) -> str:
        """A value name not yet used in this graph: ``base``, else ``base.1``, ``base.2``..."""
        taken = self.value_names() if taken is None else taken
        if base not in taken:
            return base
        i = 1
        while f"{base}.{i}" in taken:
            i += 1
        return f"{base}.{i}"

    def name_source(self) -> FreshNames:
        """A source of fresh value names for a pass that creates many values (see ``FreshNames``)."""
        return FreshNames(self)

    def clone(self) -> Graph:
        """A deep copy: new nodes and values, same names, types, attributes and spans."""
        mapping: dict[int, Value] = {}
        new = Graph(name=self.name, span=self.span)
        _clone_block_into(self.block, new.block, mapping)
        return new


class FreshNames:
    """Fresh value names for one graph, the graph's names collected once.

    ``graph.fresh_name`` collects every name of the graph on each call, which is quadratic
    in a pass that names a value per node; this collects them on first use, remembers the
    names it gave, and for each base the next suffix to try.  Names the pass creates by
    other means must be added with ``taken.add``.
    """

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self._taken: set[str] | None = None
        self._next: dict[str, int] = {}

    @property
    def taken(self) -> set[str]:
        if self._taken is None:
            self._taken = self.graph.value_names()
        return self._taken

    def __call__(self, base: str) -> str:
        taken = self.taken
        name = base
        if name in taken:
            i = self._next.get(base, 1)
            while f"{base}.{i}" in taken:
                i += 1
            self._next[base] = i + 1
            name = f"{base}.{i}"
        taken.add(name)
        return name


# ``str(module)`` prints through ``vm.ir.printer``, which puts its ``print_module`` here when
# imported (the ``vm.ir`` package imports it): the data model does not import its printer.
MODULE_PRINTER: list[Callable[[Module], str]] = []


@define(eq=False, repr=False)
class Module:
    """A program: the entry graph, then named functions (``with NAME = graph(...)``)."""

    main: Graph
    functions: dict[str, Graph] = field(factory=dict)
    filename: str = "<string>"
    # module attributes folded into constants (dotted path -> value): the IR holds only
    # for weights with these values (compiler.passes.fold_module_attributes)
    attributes: dict[str, object] = field(factory=dict)
    # the values a caller may leave out of the entry's trailing inputs, as the model's source
    # writes them (a torch.jit.save archive's ``def forward(self, x, scale: float=2.)``);
    # printed IR has none
    input_defaults: tuple[object, ...] = ()
    # the tensors the specialization passes made from the weights (name -> array: a
    # BatchNorm folded into its convolution's weight, a weight stored transposed), bound
    # by name like a frozen graph's ``<Tensor>`` constants (compiler.pipeline.specialize)
    folded_tensors: dict[str, object] = field(factory=dict)
    # what those folds read: weight key -> digest of the array (vm.binding.folded), so that
    # other weights given for them are refused rather than silently not used
    folded_from: dict[str, str] = field(factory=dict)
    # True once the specialization pipeline has run on it for its weights: the static
    # runtime then runs no pass of its own
    specialized: bool = False
    # attributes other methods of the same module object write (dotted paths from %self,
    # vm.ir.module_state): state, though no graph of this program assigns them
    state: frozenset[str] = frozenset()
    # the keys of the model the program was compiled from (its state_dict and settings: a
    # ``.pt``'s module tree, an export's ``__keys__`` record), key -> True when a state_dict
    # must hold it (a parameter or buffer): what strict weights are checked against, as
    # ``load_state_dict(strict=True)`` checks a module's own keys (vm.binding.strict)
    model_keys: dict[str, bool] = field(factory=dict)
    # what the program read from ``%self`` once inlined, before any pass removed a branch (path ->
    # True when the whole object below it is read): the strict check's fallback when no
    # model keys are known (vm.binding.strict), so a key of a folded branch is still read
    source_reads: dict[str, bool] = field(factory=dict)

    def __repr__(self) -> str:
        return f"<Module {self.filename}: main + {len(self.functions)} functions>"

    def __str__(self) -> str:
        return MODULE_PRINTER[0](self)

    def clone(self) -> Module:
        return Module(
            self.main.clone(),
            {name: g.clone() for name, g in self.functions.items()},
            self.filename,
            dict(self.attributes),
            self.input_defaults,
            dict(self.folded_tensors),
            dict(self.folded_from),
            self.specialized,
            self.state,
            dict(self.model_keys),
            dict(self.source_reads),
        )


def _walk_blocks(blocks: Iterator[Block]) -> Iterator[Node]:
    """Nodes of ``blocks`` and of their nested blocks in program order, without recursion
    (graphs nest blocks hundreds deep).  Each block's node list is copied when the walk
    enters it, so the walk tolerates edits of the nodes already visited."""
    # a frame: [the blocks still to walk, the nodes still to walk of the current block]
    frames: list[list] = [[blocks, None]]
    while frames:
        frame = frames[-1]
        nodes = frame[1]
        if nodes is None:
            block = next(frame[0], None)
            if block is None:
                frames.pop()
            else:
                frame[1] = iter(list(block.nodes))
            continue
        for node in nodes:  # the plain loop runs a flat block at full speed
            yield node
            if node.blocks:
                frames.append([iter(node.blocks), None])
                break
        else:
            frame[1] = None


def count_nodes(blocks: Iterable[Block]) -> int:
    """How many nodes ``blocks`` hold, nested blocks included (a walk without yielding each)."""
    total = 0
    todo = list(blocks)
    while todo:
        nodes = todo.pop().nodes
        total += len(nodes)
        for node in nodes:
            if node.blocks:
                todo.extend(node.blocks)
    return total


def clone_node(node: Node, mapping: dict[int, Value]) -> Node:
    """Copy ``node`` (and its blocks); inputs are looked up in ``mapping`` by id, falling back
    to the original value (a use of something defined outside the copied region)."""
    new = _clone_shallow(node, mapping)
    _clone_blocks([(b, new.add_block()) for b in node.blocks], mapping)
    return new


def _clone_shallow(node: Node, mapping: dict[int, Value]) -> Node:
    new = Node(node.kind, attrs=dict(node.attrs), span=node.span, source=node.source, scope=node.scope)
    for key, val in new.attrs.items():
        if isinstance(val, Graph):
            new.attrs[key] = val.clone()
    for v in node.inputs:
        new.add_input(mapping.get(id(v), v))
    for out in node.outputs:
        mapping[id(out)] = new.add_output(out.name, out.type)
    return new


def _clone_block_into(src: Block, dst: Block, mapping: dict[int, Value]) -> None:
    _clone_blocks([(src, dst)], mapping)


def _clone_blocks(pairs: list[tuple[Block, Block]], mapping: dict[int, Value]) -> None:
    """Copy each source block into its destination, in program order, without recursion:
    a frame is [src, dst, next node index]; a node's blocks are pushed so block0 runs first."""
    stack: list[list] = [[src, dst, -1] for src, dst in reversed(pairs)]
    while stack:
        frame = stack[-1]
        src, dst, i = frame
        if i < 0:  # entering the block
            dst.span, dst.return_span = src.span, src.return_span
            for p in src.params:
                mapping[id(p)] = dst.add_param(p.name, p.type)
            i = 0
        if i == len(src.nodes):
            stack.pop()
            for r in src.returns:
                dst.add_return(mapping.get(id(r), r))
            continue
        frame[2] = i + 1
        node = src.nodes[i]
        new = dst.append(_clone_shallow(node, mapping))
        frames = [[b, new.add_block(), -1] for b in node.blocks]
        stack.extend(reversed(frames))


def _operands(user: Node | Block) -> list[Value]:
    return user.inputs if isinstance(user, Node) else user.returns


def _forget_use(value: Value, use: Use) -> None:
    try:
        value.uses.remove(use)
    except ValueError:
        pass  # a use list a pass broke by hand: the verifier reports it


def _set_operand(user: Node | Block, index: int, value: Value) -> None:
    operands = _operands(user)
    _forget_use(operands[index], Use(user, index))
    operands[index] = value
    value.uses.append(Use(user, index))


def _remove_operand(user: Node | Block, operands: list[Value], index: int) -> None:
    _forget_use(operands[index], Use(user, index))
    del operands[index]
    # later operands shift down by one: renumber their uses
    for i in range(index, len(operands)):
        uses = operands[i].uses
        try:
            uses[uses.index(Use(user, i + 1))] = Use(user, i)
        except ValueError:
            pass


def all_blocks(graph: Graph) -> Iterator[Block]:
    yield graph.block
    for node in graph.walk():
        yield from node.blocks


def constant_nodes(nodes: Sequence[Node]) -> list[Node]:
    return [n for n in nodes if n.kind == "prim::Constant"]


def all_nodes(module: Module) -> Iterator[Node]:
    """Every node of every graph of ``module``, fusion sub-graphs included, in a fixed
    order: each graph walked in program order, a node's sub-graph right after it."""
    for graph in (module.main, *module.functions.values()):
        stack = [graph.walk()]
        while stack:
            node = next(stack[-1], None)
            if node is None:
                stack.pop()
                continue
            yield node
            for value in node.attrs.values():
                if isinstance(value, Graph):
                    stack.append(value.walk())
