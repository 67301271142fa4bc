"""The emitter: optimized IR in, bytecode (``vm.program.bytecode.Program``) out.

The lowering follows TorchScript's ``CodeImpl`` (``runtime/interpreter/code_impl.h``).
The graph first goes through ``insert_drops`` (on a copy), so that every value's last
use sits in the block that defines it and unused values have a ``prim::Drop``.  Then each
graph becomes one ``Function``, emitted block by block:

- every value gets a fresh register (the outputs of one node get consecutive ones, so a
  single STOREN stores them); registers are never reused: memory is given back by MOVE,
  which the emitter picks at a value's last use (``vm.ir.last_uses``, as
  ``emitUse`` does), and by DROPR for each ``prim::Drop`` input;
- a ``prim::Constant`` emits nothing: its run-time value (``vm.ir.resolve.
  constant_value``, computed once here, tensor literals already arrays) goes to the
  constant table and each use is a LOADC;
- an operator node loads its inputs, runs ``OP k`` (``OPN k n`` for variadic prim
  factories) on the operator-table entry that ``vm.ir.resolve`` picked, and stores its
  outputs;
- ``prim::If`` is ``JF else / then / JMP end / else / end: STORE(N)``: each branch leaves
  its block outputs on the stack;
- ``prim::Loop`` is ``LOADC 0; loads; LOOP exit; STOREN params; body; loads; JMP LOOP;
  exit: STOREN outputs`` (see ``vm.program.bytecode``);
- ``prim::CallFunction`` of a ``prim::Constant[name="f"]`` is ``CALL f`` (a new frame; a
  function may call itself); a ``prim::FusionGroup`` is one OP of the fused kernel of
  ``vm.fusion.kernels`` (its subgraph travels as IR text in the operator's attributes; the
  subgraph is also emitted as a function, which the interpreter runs instead when the
  tensors are too small for a fused kernel to pay), or with ``fused_kernels=False`` a CALL
  of that function.

Every unresolvable node of the whole module is reported at once, as one CompileError.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import attrs

from compiler.diagnostics import CompileError, Span
from compiler.passes.insert_drops import insert_drops
from compiler.program_tables import check_table, node_refs_of, node_spans_of, self_reads_of
from compiler.types import InterfaceType, TensorType
from vm.core.gc_pause import gc_paused
from vm.ir.graph import Block, Graph, Module, Node, Value
from vm.ir.last_uses import final_reads, last_uses
from vm.ir.module_state import written_attributes
from vm.ir.resolve import constant_value, resolve_all
from vm.ops import registry
from vm.ops.registry import OpRef
from vm.program.bytecode import Function, Instruction, Opcode, Program


@gc_paused()
def emit(module: Module, source: str | None = None, *, fused_kernels: bool = True) -> Program:
    """The program for an optimized ``module`` (left untouched); ``source`` is the IR text
    recorded in the program (default: ``module`` printed).  With ``fused_kernels`` a fusion
    group is one OP of ``vm.fusion.kernels``'s fused kernel, else a CALL of its subgraph."""
    dropped = insert_drops(module)
    resolved, errors = resolve_all(dropped)
    table = _FunctionTable(dropped, resolved, errors)
    table.fused_kernels = fused_kernels
    table.emit_all()
    if table.errors:
        raise _combined(table.errors)
    main = dropped.main
    return Program(
        functions=tuple(table.done),
        entry=0,
        input_names=tuple(v.name for v in main.inputs),
        input_types=tuple(_type_text(v) for v in main.inputs),
        n_outputs=len(main.outputs),
        output_types=tuple(_type_text(v) for v in main.outputs),
        input_defaults=tuple(module.input_defaults),
        source=source if source is not None else _print(module),
        module=module,
        self_reads=self_reads_of(module.main),
        node_spans=node_spans_of(module),
        node_refs=node_refs_of(module, dropped, table.resolved),
        specialized=module.specialized,
        folded_tensors=dict(module.folded_tensors),
        folded_from=dict(module.folded_from),
        state=tuple(sorted(written_attributes(module))),
        model_keys=dict(module.model_keys),
        source_reads=dict(module.source_reads),
        checks=check_table(module),
    )


def compile_source(
    text: str,
    filename: str | None = None,
    *,
    passes: list[str] | None = None,
    fusion: bool = True,
    print_after: Any = (),
    printer: Any = None,
    fused_kernels: bool = True,
    weights: Any = None,
    on_pass: Any = None,
) -> Program:
    """Parse, optimize (``compiler.pipeline.optimize``) and emit IR text.  With ``weights``
    the program is specialized for them (``compiler.pipeline.SPECIALIZE_PIPELINE``'s
    passes: settings folded, and, with the default passes, weight values folded too);
    ``on_pass(name, nodes)`` hears each pass start (a progress display)."""
    from compiler.parser import parse
    from compiler.pipeline import optimize

    module = parse(text, filename)
    optimized, _ = optimize(
        module, passes, fusion=fusion, print_after=print_after, printer=printer, weights=weights, on_pass=on_pass,
    )
    return emit(optimized, source=text, fused_kernels=fused_kernels)


def compile_file(path: str | Path, **options: Any) -> Program:
    """``compile_source`` on the file at ``path`` (spans name the file); a file that is no
    IR text (a TorchScript archive, bytecode...) is refused saying what it is."""
    from vm.files.kinds import read_program_text

    return compile_source(read_program_text(path), str(path), **options)


def _print(module: Module) -> str:
    from vm.ir.printer import print_module

    return print_module(module)


def _type_text(value: Value) -> str:
    return "Tensor" if value.type is None else str(value.type)


def _combined(errors: list[CompileError]) -> CompileError:
    if len(errors) == 1:
        return errors[0]
    text = f"{len(errors)} nodes cannot be compiled:\n" + "\n".join(str(e) for e in errors)
    err = CompileError(text, None)
    err.errors = errors
    return err


class _FunctionTable:
    """The functions of a program, by name: the module's graphs, then fusion subgraphs."""

    def __init__(self, module: Module, resolved: dict[Node, OpRef], errors: list[CompileError]):
        self.resolved = resolved
        self.errors = list(errors)
        self.graphs: list[Graph] = [module.main, *module.functions.values()]
        self.index: dict[str, int] = {name: i + 1 for i, name in enumerate(module.functions)}
        self.names: list[str] = ["main", *module.functions]
        self.done: list[Function] = []
        self.fused_kernels = True

    def emit_all(self) -> None:
        i = 0
        while i < len(self.graphs):  # fusion groups append subgraphs as they are met
            self.done.append(_FunctionEmitter(self, self.graphs[i], self.names[i]).run())
            i += 1

    def add_subgraph(self, graph: Graph, name: str) -> int:
        dropped = insert_drops(graph)
        resolved, _ = resolve_all(dropped)  # errors were reported for the original subgraph
        self.resolved.update(resolved)
        self.graphs.append(dropped)
        self.names.append(name)
        return len(self.graphs) - 1


class _FunctionEmitter:
    """Emits one graph as one Function."""

    def __init__(self, table: _FunctionTable, graph: Graph, name: str):
        self.table, self.graph, self.name = table, graph, name
        self.code: list[Instruction] = []
        self.spans: list[Span | None] = []
        self.texts: list[str] = []
        self.registers: dict[Value, int] = {}
        self.register_names: list[str] = []
        self.last = last_uses(graph)  # value -> the node (or block return) reading it last
        self.constants: list[Any] = []
        self.constant_names: list[str] = []
        self.constant_index: dict[Node, int] = {}
        self.operators: list[OpRef] = []
        self.operator_index: dict[Any, int] = {}
        self.where: tuple[Span | None, str] = (graph.span, f"graph {name}")

    def run(self) -> Function:
        graph = self.graph
        self.store(graph.inputs)
        self.emit_nodes(graph.block)
        self.use_all(graph.outputs, graph.block)
        self.where = (graph.span, f"return of {self.name}")
        self.put(Opcode.RET)
        return Function(
            name=self.name,
            instructions=tuple(self.code),
            n_inputs=len(graph.inputs),
            n_outputs=len(graph.outputs),
            n_registers=len(self.register_names),
            constants=tuple(self.constants),
            operators=tuple(self.operators),
            spans=tuple(self.spans),
            nodes=tuple(self.texts),
            register_names=tuple(self.register_names),
            constant_names=tuple(self.constant_names),
        )

    # -- instructions, registers, tables ---------------------------------------------

    def put(self, op: Opcode, x: int = 0, n: int = 0) -> int:
        self.code.append(Instruction(op, x, n))
        self.spans.append(self.where[0])
        self.texts.append(self.where[1])
        return len(self.code) - 1

    def patch(self, at: int, target: int) -> None:
        ins = self.code[at]
        self.code[at] = Instruction(ins.op, target, ins.n)

    def allocate(self, values: list[Value]) -> int:
        first = len(self.register_names)
        for v in values:
            self.registers[v] = len(self.register_names)
            self.register_names.append(v.name)
        return first

    def store(self, values: list[Value]) -> None:
        """Pop ``values`` (pushed in order) into fresh consecutive registers."""
        first = self.allocate(values)
        if len(values) == 1:
            self.put(Opcode.STORE, first)
        elif values:
            self.put(Opcode.STOREN, first, len(values))

    def use_all(self, values: list[Value], user: Node | Block) -> None:
        """Push ``values``, read by ``user``: LOADC for a constant, MOVE at a value's last
        use (``vm.ir.last_uses``; after ``insert_drops`` it is in the block
        that defines the value), else LOAD."""
        for value, final in zip(values, final_reads(values)):
            producer = value.node
            if producer is not None and producer.kind == "prim::Constant":
                self.put(Opcode.LOADC, self.constant(producer))
            else:
                last = final and self.last.get(value) is user
                self.put(Opcode.MOVE if last else Opcode.LOAD, self.register(value))

    def register(self, value: Value) -> int:
        if value not in self.registers:
            raise CompileError(f"%{value.name} is used before it is defined", self.where[0])
        return self.registers[value]

    def constant(self, node: Node) -> int:
        if node not in self.constant_index:
            self.constant_index[node] = len(self.constants)
            self.constants.append(constant_value(node))
            self.constant_names.append(node.outputs[0].name if node.outputs else "")
        return self.constant_index[node]

    def operator(self, ref: OpRef) -> int:
        try:
            key: Any = ref
            hash(key)
        except TypeError:  # unhashable defaults (a list): no sharing
            key = object()
        if key not in self.operator_index:
            self.operator_index[key] = len(self.operators)
            self.operators.append(ref)
        return self.operator_index[key]

    # -- nodes -----------------------------------------------------------------------

    def emit_nodes(self, block: Block) -> None:
        for node in block.nodes:
            if node.kind == "prim::Constant":
                continue
            self.where = (node.span, repr(node))
            try:
                self.emit_node(node)
            except CompileError as err:
                self.table.errors.append(err)
                # the node's results get registers anyway, so its users do not report a
                # second, misleading "used before it is defined"
                self.allocate([v for v in node.outputs if v not in self.registers])

    def emit_node(self, node: Node) -> None:
        kind = node.kind
        if kind == "prim::If":
            self.emit_if(node)
        elif kind == "prim::Loop":
            self.emit_loop(node)
        elif kind == "prim::Drop":
            self.emit_drop(node)
        elif kind == "prim::CallFunction":
            self.emit_call(node)
        elif kind == "prim::FusionGroup":
            self.emit_fusion_group(node)
        elif kind == "prim::CallMethod":
            callee = node.inputs[0].type if node.inputs else None
            if isinstance(callee, InterfaceType):
                raise CompileError(
                    f"prim::CallMethod through module interface {callee} is not supported: which module's "
                    f"{node.attrs.get('name')}() runs is chosen at run time (prim::ModuleContainerIndex), and "
                    "irvm runs methods it can inline; index the container with a constant instead",
                    node.span,
                )
            raise CompileError(
                "prim::CallMethod is not supported: inline the method or freeze the module",
                node.span,
            )
        else:
            self.emit_operator(node)

    def emit_operator(self, node: Node) -> None:
        ref = self.table.resolved.get(node)
        if ref is None:  # resolve_all already reported why; carry on to find more errors
            self.allocate(node.outputs)
            return
        self.use_all(node.inputs, node)
        k = self.operator(ref)
        if registry.has_factory(ref.name) or _is_vararg(ref):
            self.put(Opcode.OPN, k, ref.n_inputs)
        else:
            self.put(Opcode.OP, k)
        self.store(node.outputs)

    def emit_drop(self, node: Node) -> None:
        for value in node.inputs:
            if value.node is not None and value.node.kind == "prim::Constant":
                continue
            self.put(Opcode.DROPR, self.register(value))

    def emit_if(self, node: Node) -> None:
        then_block, else_block = node.blocks
        self.use_all(node.inputs[:1], node)
        jf = self.put(Opcode.JF)
        self.emit_block_body(then_block, node)
        jmp = self.put(Opcode.JMP)
        self.patch(jf, len(self.code))
        self.emit_block_body(else_block, node)
        self.patch(jmp, len(self.code))
        self.where = (node.span, repr(node))
        self.store(node.outputs)

    def emit_block_body(self, block: Block, owner: Node) -> None:
        """The block's nodes, then its outputs pushed (for the owner to store)."""
        self.emit_nodes(block)
        self.where = (owner.span, repr(owner))
        self.use_all(block.returns, block)

    def emit_loop(self, node: Node) -> None:
        (body,) = node.blocks
        self.put(Opcode.LOADC, self.literal(0))
        self.use_all(node.inputs, node)  # max trip count, initial condition, carried...
        header = self.put(Opcode.LOOP, 0, len(node.inputs))
        self.store(body.params)  # iteration index, carried...
        self.emit_block_body(body, node)  # next condition, carried...
        self.put(Opcode.JMP, header)
        self.patch(header, len(self.code))
        self.store(node.outputs)

    def literal(self, value: int) -> int:
        """A constant-table entry for a plain int the emitter itself needs (the trip counter)."""
        for i, c in enumerate(self.constants):
            if type(c) is int and c == value:
                return i
        self.constants.append(value)
        self.constant_names.append("")
        return len(self.constants) - 1

    def emit_call(self, node: Node) -> None:
        fn = node.inputs[0]
        producer = fn.node
        if producer is None or producer.kind != "prim::Constant" or "name" not in producer.attrs:
            raise CompileError("prim::CallFunction of a function that is not a constant", node.span)
        name = str(producer.attrs["name"])
        if name not in self.table.index:
            from compiler.known import describe, known_body

            signatures = describe(name)
            if signatures is not None and known_body(name, node) is not None:
                raise CompileError(
                    f"call of {name!r}: irvm knows its body, but it is inlined by the inline_calls pass, "
                    "which did not run (keep it in the pass list)",
                    node.span,
                )
            if signatures is not None:  # inline_calls found no body that fits this call
                args = ", ".join(str(v.type) for v in node.inputs[1:])
                raise CompileError(
                    f"call of {name}({args}) with {len(node.outputs)} result(s) fits no body irvm knows for "
                    f"{name!r}: {signatures}; print the function's inlined_graph instead of its graph",
                    node.span,
                )
            known = ", ".join(sorted(self.table.index)) or "none"
            raise CompileError(
                f"call of unknown function {name!r} (module functions: {known}); the dump calls a "
                "graph it does not contain: print the function's inlined_graph instead of its graph, "
                "or torch.jit.save the module and run the .pt (`irvm run model.pt`)",
                node.span,
            )
        callee = self.table.graphs[self.table.index[name]]
        args = node.inputs[1:]
        if len(args) != len(callee.inputs) or len(node.outputs) != len(callee.outputs):
            raise CompileError(
                f"call of {name} with {len(args)} inputs and {len(node.outputs)} outputs; it takes"
                f" {len(callee.inputs)} and returns {len(callee.outputs)}",
                node.span,
            )
        self.use_all(args, node)
        self.put(Opcode.CALL, self.table.index[name])
        self.store(node.outputs)

    def emit_fusion_group(self, node: Node) -> None:
        """A CALL of the subgraph (emitted as one more function), or with fused kernels an
        OP of the fused kernel whose attributes also name that function (``callee``) and
        the input whose size decides (``probe``): the interpreter calls the function for
        small tensors, where a fused kernel only adds overhead."""
        sub = node.attrs.get("Subgraph")
        if not isinstance(sub, Graph):
            raise CompileError("prim::FusionGroup without a Subgraph", node.span)
        index = self.table.add_subgraph(sub, f"{self.name}.FusionGroup_{len(self.table.graphs)}")
        self.use_all(node.inputs, node)
        if self.table.fused_kernels:
            from vm.ir.fusion_spec import fused_opref

            ref = fused_opref(node)
            probe = next((i for i, v in enumerate(node.inputs) if v.type is None or isinstance(v.type, TensorType)), 0)
            ref = attrs.evolve(ref, attrs=(*ref.attrs, ("callee", index), ("probe", probe)))
            self.put(Opcode.OP, self.operator(ref))
        else:
            self.put(Opcode.CALL, index)
        self.store(node.outputs)


def _is_vararg(ref: OpRef) -> bool:
    try:
        return registry.lookup(ref.name).schema.vararg
    except KeyError:
        return False


__all__ = ["compile_file", "compile_source", "emit"]
