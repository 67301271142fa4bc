"""Processed nodes and the straight-line Python the static runtime runs.

A ``StaticModule`` flattens each graph once: every value gets a slot (a local variable
``v<slot>`` of generated code), every constant is converted once and bound by slot, every
operator node becomes a ``ProcessedNode`` (its bound kernel, its out variant when it has
one, its input and output slots).  A kernel whose operator offers a prepared form
(``vm.ops.prepared``) is bound in that form for the node's constant arguments: the dims,
sizes and bounds a kernel would re-read on every call are read once, here.  From those we generate one Python function per graph:
one line per node (``v5 = k3(v1, v2)``, or ``v5 = o3(b5, v1, v2)`` when the plan gives
slot 5 a slab view ``b5``), Python ``if``/``while`` for ``prim::If``/``prim::Loop``, a call
for ``prim::CallFunction``, and ``del`` after each tensor's last use in its block so memory
is freed as early as hand-written numpy frees temporaries.  Dispatch then costs what a
Python statement costs (measured here: a pre-decoded tuple loop ~0.03 us per node,
generated code below noise); nothing is looked up per run.

The source is compiled once per module and *mode* (which slots are slab views, whether
to record tensor sizes, whether to time nodes) into a ``_Factory``; calling it with the
kernels, constants and one runtime's slab views executes the code in a fresh globals
dict, which is cheap, so each runtime and plan gets its own function without
recompiling.  Every line maps back to its node, so a failing kernel is reported
as "while executing %5 = aten::mm(%1, %2)" at the node's span from the traceback alone,
with no bookkeeping on the fast path.

TorchScript semantics kept here: ``prim::Loop(max_trip, cond, *carried)`` runs while the
condition holds and fewer than ``max_trip`` iterations ran; its body takes ``(i,
*carried)`` and returns ``(cond, *carried)``; a function call checks the call depth so
runaway recursion is a ``RunError``, not a Python ``RecursionError``.
"""

from __future__ import annotations

import itertools
import threading
import time
import weakref
from collections.abc import Callable
from typing import Any

import numpy as np

from vm.core.errors import CompileError
from vm.ir.effects import WriteIndex, is_mutable_type
from vm.ir.graph import Block, Graph, Node, Value
from vm.ir.last_uses import last_use_in_block
from vm.ops.prepared import UNKNOWN, has_preparer, prepared
from vm.ops.registry import OpRef
from vm.static.model import Binding, FusionInfo, Mode, ProcessedNode, call_too_deep

SKIPPED = frozenset({"prim::Constant", "prim::Drop"})
_MAX_NESTING = 18  # CPython refuses more than 20 statically nested loops


class LineMap(dict):
    """{line: node} of one generated source (a dict that can be weakly referenced)."""


# generated filename -> its LineMap, read when mapping a traceback back to the IR; an entry
# lives as long as the generated code (whose globals hold the map)
LINEMAPS: weakref.WeakValueDictionary[str, LineMap] = weakref.WeakValueDictionary()
_counter = itertools.count()


class GraphCode:
    """A graph flattened into slots and processed nodes, and its generated functions."""

    def __init__(
        self,
        graph: Graph,
        label: str,
        refs: dict[Node, OpRef],
        bind: Callable[[OpRef], Callable[..., Any]],
        bind_out: Callable[[OpRef], Callable[..., Any] | None],
        constant: Callable[[Node], Any],
        functions: dict[str, int],
        first_index: int,
        bound_params: dict[Value, Any],
        is_entry: bool,
        max_depth: int,
        groups: list[FusionInfo] | None = None,
        fold_attributes: bool = False,
        live: frozenset[Node] = frozenset(),
        written: Callable[[Value], bool] | None = None,
    ):
        self.graph, self.label, self.functions = graph, label, functions
        self._written = written or WriteIndex((graph,)).may_be_written  # may a node write v's memory
        self.groups = {g.gid: g for g in groups or ()}
        self.group_of = {n: g for g in self.groups.values() for n in g.nodes}
        self.is_entry, self.max_depth = is_entry, max_depth
        self.slots: dict[Value, int] = {}
        self.constants: dict[int, Any] = {}
        self.folded: set[Node] = set()  # GetAttr nodes read at construction
        self.pnodes: list[ProcessedNode] = []
        self.by_node: dict[Node, ProcessedNode] = {}
        self._lock = threading.Lock()
        self._factories: dict[Mode, _Factory] = {}
        self._last_uses: dict[Block, dict[Value, Node | Block]] = {}
        for v, value in bound_params.items():
            self.constants[self._slot(v)] = value
        self.params = [self._slot(v) for v in graph.inputs if v not in bound_params]
        index = itertools.count(first_index)
        for node in graph.walk():
            for block in node.blocks:
                for p in block.params:
                    self._slot(p)
            outs = tuple(self._slot(v) for v in node.outputs)
            if node.kind == "prim::Constant":
                self.constants[outs[0]] = constant(node)
                continue
            if node.kind in SKIPPED:
                continue
            ref = refs.get(node)
            kernel = bind(ref) if ref is not None else None
            if (
                fold_attributes
                and node.kind == "prim::GetAttr"
                and node not in live  # module state: read on every call
                and node.inputs[0] in self.slots
            ):
                owner = self.slots[node.inputs[0]]
                if (
                    owner in self.constants and kernel is not None
                ):  # %self.fc.weight: read once, here
                    self.constants[outs[0]] = kernel(self.constants[owner])
                    self.folded.add(node)
                    continue
            out = bind_out(ref) if ref is not None and len(outs) == 1 else None
            if kernel is not None and ref is not None and has_preparer(ref.name):
                known = [self._known_for_preparer(v) for v in node.inputs]
                forms = prepared(ref, known, kernel, out)
                if forms is not None:
                    kernel, out = forms.kernel, forms.out if out is not None else None
            pn = ProcessedNode(
                next(index),
                node,
                ref,
                kernel,
                out,
                tuple(self._slot(v) for v in node.inputs),
                outs,
            )
            self.pnodes.append(pn)
            self.by_node[node] = pn

        self.kernels = {pn.index: pn.kernel for pn in self.pnodes}
        self.outs = {pn.index: pn.out for pn in self.pnodes}

    def _known_for_preparer(self, v: Value) -> Any:
        """The constant ``v`` holds, for a prepared form to decide on, or ``UNKNOWN``: a
        tensor some node may write in place (a running statistic updated by ``add_``, say)
        is not constant across calls, so a form must not capture it."""
        value = self.constants.get(self._slot(v), UNKNOWN)
        if isinstance(value, np.ndarray) and self._written(v):
            return UNKNOWN
        return value

    def _slot(self, v: Value) -> int:
        slot = self.slots.get(v)
        if slot is None:
            slot = self.slots[v] = len(self.slots)
        return slot

    def last_uses(self, block: Block) -> dict[Value, Node | Block]:
        """``last_use_in_block(block)``, computed once for every mode's code."""
        last = self._last_uses.get(block)
        if last is None:
            last = self._last_uses[block] = last_use_in_block(block)
        return last

    def factory(self, mode: Mode) -> _Factory:
        """The compiled code for ``mode`` (compiled once, then shared)."""
        with self._lock:
            made = self._factories.get(mode)
            if made is None:
                made = self._factories[mode] = _Generator(self, mode).compile()
                made._table_globals(self.kernels, self.outs, self.constants)  # now, not at a call
            return made


class _Factory:
    """One graph's code compiled for one mode; calling it binds one runtime's tables.

    The generated ``run`` reads its kernels, constants and buffers as globals (``k3``,
    ``v7``, ``b5``...), and each binding executes the module code in a fresh globals dict:
    binding costs a dict of the names the code uses, and compiling stays linear in the
    graph.  (Closure variables, the first design, made CPython's compiler quadratic in
    their number: 16 s for the 53k nodes of a 12+12-layer transformer.)
    """

    def __init__(self, code: Any, source: str, names: list[str], groups: dict[int, FusionInfo], linemap: LineMap):
        self.code, self.source, self.linemap = code, source, linemap
        self.groups = groups
        keyed = [(name, name[0], *_key(name)) for name in names]
        # kernels, out variants and constants are the module's: bound once, then copied
        self.names = [n for n in keyed if n[1] not in "kov"]
        self.table_names = [n for n in keyed if n[1] in "kov"]
        self._tables: tuple[Any, Any, Any, dict[str, Any]] | None = None

    def _table_globals(self, K: Any, OUT: Any, C: Any) -> dict[str, Any]:
        cached = self._tables
        if cached is not None and cached[0] is K and cached[1] is OUT and cached[2] is C:
            return cached[3]
        tables = {"k": K, "o": OUT, "v": C}
        made = {name: tables[kind][key] for name, kind, key, _ in self.table_names}
        self._tables = (K, OUT, C, made)
        return made

    def globals_for(self, K: Any, OUT: Any, C: Any) -> dict[str, Any]:
        """A fresh copy of the module's globals of this code (kernels, out variants and
        constants), for one binding: a runtime makes it when it is built, so that binding
        its first plan adds the plan's names to it instead of copying ~10^4 names then."""
        return dict(self._table_globals(K, OUT, C))

    def __call__(self, tables: tuple[Any, Any, Any], binding: Binding) -> Callable[..., Any]:
        """Bind the code to the module's ``tables`` (kernels, out variants, constants) and
        ``binding``; names a plan leaves out (a slot it does not plan, a node it does not
        call fast, a group it does not fuse) are None."""
        K, OUT, C = tables
        B, U, fused, shapes = binding.views, binding.fast, binding.fused, binding.shapes
        g = binding.globals_ if binding.globals_ is not None else self.globals_for(K, OUT, C)
        g.update({
            "_nd": np.ndarray, "OB": binding.outputs, "F": binding.callees, "R": binding.record, "T": binding.times,
            "_pc": time.perf_counter, "_deep": call_too_deep, "__linemap__": self.linemap,
        })  # fmt: skip
        for name, kind, key, part in self.names:
            if kind == "b":
                g[name] = B.get(key)
            elif kind == "c":
                if shapes is None:
                    raise ValueError("code that skips shape-only nodes needs the plan's cached values")
                g[name] = shapes[key]
            elif kind == "g":
                g[name] = self.groups[key].kernel if fused is None or key in fused else None
            else:
                call = U.get(key) if U else None
                if call is None:
                    g[name] = None
                elif kind == "s":  # the part-th scalar operand of a bare ufunc call
                    g[name] = call[1][part]
                else:  # u<index>: the ufunc; d<index>: the dtype its guard checks
                    g[name] = call[0 if kind == "u" else 2]
        exec(self.code, g)  # noqa: S102  (our generated code: def run)
        return g["run"]


def _key(name: str) -> tuple[int, int]:
    """(table key, part) of a generated global: ``k3`` -> (3, 0), ``s5_1`` -> (5, 1)."""
    if name[0] == "s":
        index, j = name[1:].split("_")
        return int(index), int(j)
    return int(name[1:]), 0


class _Generator:
    """Writes one graph's function for one mode."""

    def __init__(self, code: GraphCode, mode: Mode):
        self.code, self.mode = code, mode
        self.lines: list[str] = []
        self.linemap: dict[int, Node] = {}
        self.used: set[str] = set()  # closure names the body refers to
        self.fast = {index: (args, guarded) for index, args, guarded in mode.fast}
        self.skipped = {pn.node for pn in code.pnodes if pn.index in mode.skip}  # shape-only
        self.skipped_groups = {gid for gid, g in code.groups.items() if self.skipped.issuperset(
            n for n in g.nodes if n.kind not in SKIPPED) and self.skipped}

    def compile(self) -> _Factory:
        code = self.code
        params = [f"v{s}" for s in code.params]
        signature = [*params, "_d=0"] if code.is_entry else ["_d", *params]
        self._emit(0, f"def run({', '.join(signature)}):")
        if not code.is_entry:
            self._emit(1, f"if _d > {code.max_depth}: _deep({code.label!r}, _d)")
        self._block(code.graph.block, 1, returns=True)
        filename = f"<static:{code.label}:{next(_counter)}>"
        linemap = LineMap((line + 1, node) for line, node in self.linemap.items())  # lines count from 1
        LINEMAPS[filename] = linemap
        source = "\n".join(self.lines) + "\n"
        return _Factory(compile(source, filename, "exec"), source, sorted(self.used), code.groups, linemap)

    def _emit(self, depth: int, text: str, node: Node | None = None) -> None:
        self.lines.append("    " * depth + text)
        if node is not None:
            self.linemap[len(self.lines) - 1] = (
                node  # index into the body; shifted later
            )

    def _v(self, value: Value) -> str:
        return self._slot_name(self.code.slots[value])

    def _slot_name(self, slot: int) -> str:
        """The name a read of ``slot`` uses: ``c<slot>`` for a value the plan binds."""
        if slot in self.mode.cached:
            self.used.add(f"c{slot}")
            return f"c{slot}"
        if slot in self.code.constants:
            self.used.add(f"v{slot}")
        return f"v{slot}"

    # -- blocks ------------------------------------------------------------------------

    def _block(self, block: Block, depth: int, returns: bool = False) -> None:
        if depth > _MAX_NESTING + 1:
            raise CompileError(
                "blocks nested too deeply for the static runtime", block.span
            )
        start = len(self.lines)
        items = self._items(block)
        dels = self._last_uses(block, items)
        i = 0
        while i < len(items):
            node = items[i]
            group = self.code.group_of.get(node) if self.mode.generic and isinstance(node, Node) else None
            if group is not None:
                i = self._group_branch(group, items, i, depth, dels)
                continue
            tail = f"; del {', '.join(dels[i])}" if dels.get(i) else ""
            i += 1
            if isinstance(node, FusionInfo):
                self._fused(node, depth, tail)
            elif node.kind == "prim::If":
                self._if(node, depth, tail)
            elif node.kind == "prim::Loop":
                self._loop(node, depth, tail)
            else:
                self._op(node, depth, tail)
        if returns:
            rets = [self._v(v) for v in block.returns]
            text = (
                "None"
                if not rets
                else rets[0]
                if len(rets) == 1
                else f"({', '.join(rets)})"
            )
            self._emit(depth, f"return {text}")
        elif len(self.lines) == start:
            self._emit(depth, "pass")

    def _items(self, block: Block) -> list[Node | FusionInfo]:
        """The block's nodes to emit, a fused group standing for all of its nodes."""
        items: list[Node | FusionInfo] = []
        for node in block.nodes:
            group = self.code.group_of.get(node)
            if node in self.skipped or (group is not None and group.gid in self.skipped_groups):
                continue  # shape-only: its value, when read, is the plan's c<slot>
            if group is not None and group.gid in self.mode.fused:
                if not items or items[-1] is not group:
                    items.append(group)
            elif node.kind not in SKIPPED and node not in self.code.folded:
                items.append(node)
        return items

    def _last_uses(
        self, block: Block, items: list[Node | FusionInfo]
    ) -> dict[int, list[str]]:
        """After which item of ``block`` each local tensor defined in it can be deleted:
        its last use in the block (``last_use_in_block``: a read inside an If or Loop
        counts at that node), or its definition when nothing reads it."""
        code, last = self.code, self.code.last_uses(block)
        at: dict[Node, int] = {}
        defined: dict[Value, int] = {}
        for i, item in enumerate(items):
            for node in item.nodes if isinstance(item, FusionInfo) else (item,):
                at[node] = i
            for v in _defined_by(item):
                defined[v] = i
        dels: dict[int, list[str]] = {}
        for v, i in defined.items():
            user = last.get(v)
            if user is not None:
                if isinstance(user, Block) or user not in at:
                    continue  # returned, or read by a node that runs no code
                i = max(i, at[user])
            if code.slots[v] in code.constants or not is_mutable_type(v.type):
                continue
            if code.slots[v] in self.mode.managed:
                continue
            dels.setdefault(i, []).append(f"v{code.slots[v]}")
        return dels

    def _fused(self, group: FusionInfo, depth: int, tail: str) -> None:
        """``r1, r2 = g<gid>(inputs...)``: the group's fused kernel, one call."""
        outs = [self._v(v) if v in _defined_by(group) else "_" for v in group.outputs]
        ins = [self._v(v) for v in group.inputs]
        target = ", ".join(outs) + ("," if len(outs) == 1 else "")
        self.used.add(f"g{group.gid}")
        line = f"{target} = g{group.gid}({', '.join(ins)})"
        if len(outs) == 1:
            line = f"{outs[0]} = g{group.gid}({', '.join(ins)})"
        self._emit(
            depth,
            line + tail,
            next((n for n in group.nodes if n.kind not in SKIPPED), group.nodes[0]),
        )

    def _group_branch(
        self, group: FusionInfo, items: list, start: int, depth: int, dels: dict[int, list[str]]
    ) -> int:
        """Generic code for a fusion group: ``if g<gid> is not None:`` its fused call,
        ``else:`` its nodes; returns the index of the item after the group."""
        end = start
        while end < len(items) and self.code.group_of.get(items[end]) is group:
            end += 1
        first = items[start]
        fused_names = {self._v(v) for v in _defined_by(group)}
        interior = {
            f"v{self.code.slots[v]}" for n in items[start:end] for v in n.outputs
        } - fused_names
        gone = [n for i in range(start, end) for n in dels.get(i, ()) if n not in interior]
        self.used.add(f"g{group.gid}")
        self._emit(depth, f"if g{group.gid} is not None:", first)
        self._fused(group, depth + 1, f"; del {', '.join(gone)}" if gone else "")
        self._emit(depth, "else:", first)
        for i in range(start, end):
            tail = f"; del {', '.join(dels[i])}" if dels.get(i) else ""
            self._op(items[i], depth + 1, tail)
        return end

    def _generic_call(self, pn: ProcessedNode, ins: list[str]) -> str:
        """A node's call in generic code: the fast call, the out variant or the kernel,
        whichever the bound plan provides."""
        slot = pn.outputs[0] if len(pn.outputs) == 1 else None
        call = f"k{pn.index}({', '.join(ins)})"
        self.used.add(f"k{pn.index}")
        planned = slot is not None and slot in self.mode.candidates and pn.out is not None
        if planned:
            self.used.update((f"o{pn.index}", f"b{slot}"))
            call = f"o{pn.index}(b{slot}, {', '.join(ins)}) if b{slot} is not None else {call}"
        if pn.index not in self.fast:
            return call
        parts, guarded = self._fast_parts(pn)
        if planned:
            parts.append(f"out=b{slot}")
        self.used.add(f"u{pn.index}")
        test = f"u{pn.index} is not None"
        if guarded:
            test = f"{test} and {self._dtype_guard(pn, parts)}"
        return f"u{pn.index}({', '.join(parts)}) if {test} else {call}"

    def _fast_parts(self, pn: ProcessedNode) -> tuple[list[str], bool]:
        """The operands of ``pn``'s bare-ufunc call (slots and bound scalars), and whether
        the call is guarded by a dtype check."""
        fast_args, guarded = self.fast[pn.index]
        parts = []
        for kind, x in fast_args:
            name = self._slot_name(x) if kind == "v" else f"s{pn.index}_{x}"
            if kind == "s":
                self.used.add(name)
            parts.append(name)
        return parts, guarded

    def _dtype_guard(self, pn: ProcessedNode, parts: list[str]) -> str:
        """The test that the bare ufunc sees arrays of the dtype it was chosen for."""
        operands = [p for p in parts if p[0] in "vc"]
        checks = " and ".join(f"type({v}) is _nd and {v}.dtype is d{pn.index}" for v in operands)
        dims = " or ".join(f"{v}.ndim" for v in operands)
        self.used.add(f"d{pn.index}")
        return f"{checks} and ({dims})"

    def _op(self, node: Node, depth: int, tail: str) -> None:
        outs = [self._v(v) for v in node.outputs]
        ins = [self._v(v) for v in node.inputs]
        target = f"{', '.join(outs)} = " if outs else ""
        if node.kind == "prim::CallFunction":
            name = _function_name(node)
            if name not in self.code.functions:
                raise CompileError(
                    f"prim::CallFunction of an unknown function {name!r}", node.span
                )
            call = f"F[{self.code.functions[name]}]({', '.join(['_d + 1', *ins[1:]])})"
            self._emit(depth, f"{target}{call}{tail}", node)
            return
        if node not in self.code.by_node or self.code.by_node[node].kernel is None:
            raise CompileError(f"the static runtime cannot run {node.kind}", node.span)
        pn = self.code.by_node[node]
        slot = pn.outputs[0] if len(pn.outputs) == 1 else None
        if self.mode.generic:
            call = self._generic_call(pn, ins)
        elif pn.index in self.fast:
            parts, guarded = self._fast_parts(pn)
            if slot is not None and slot in self.mode.managed:  # out= by keyword: numpy deprecates positional out
                self.used.add(f"b{slot}")
                parts.append(f"out=b{slot}")
            elif slot is not None and slot in self.mode.out_managed:
                parts.append(f"out=OB[{self.mode.out_managed.index(slot)}]")
            self.used.add(f"u{pn.index}")
            call = f"u{pn.index}({', '.join(parts)})"
            if guarded:
                self.used.add(f"k{pn.index}")
                call = f"{call} if {self._dtype_guard(pn, parts)} else k{pn.index}({', '.join(ins)})"
        elif slot is not None and slot in self.mode.managed:
            self.used.update((f"o{pn.index}", f"b{slot}"))
            call = f"o{pn.index}(b{slot}, {', '.join(ins)})"
        elif slot is not None and slot in self.mode.out_managed:
            self.used.add(f"o{pn.index}")
            call = f"o{pn.index}(OB[{self.mode.out_managed.index(slot)}], {', '.join(ins)})"
        else:
            self.used.add(f"k{pn.index}")
            call = f"k{pn.index}({', '.join(ins)})"
        line = f"{target}{call}"
        if self.mode.timed:
            line = f"_t = _pc(); {line}; T[{pn.index}] += _pc() - _t"
        if self.mode.record:
            for out_slot, name in zip(pn.outputs, outs):
                if out_slot in self.mode.candidates:
                    line += f"; R[{out_slot}] = {name}"
        elif self.mode.recorded:  # generic code: recorded only when a recording dict is bound
            stores = [(s, name) for s, name in zip(pn.outputs, outs) if s in self.mode.recorded]
            if len(stores) == 1:
                line += f"; R is not None and R.__setitem__({stores[0][0]}, {stores[0][1]})"
            elif stores:
                line += f"; R is not None and R.update((({'), ('.join(f'{s}, {n}' for s, n in stores)}),))"
        self._emit(depth, line + tail, node)

    def _if(self, node: Node, depth: int, tail: str) -> None:
        self._emit(depth, f"if {self._v(node.inputs[0])}:", node)
        for k, block in enumerate(node.blocks):
            if k == 1:
                self._emit(depth, "else:", node)
            self._block(block, depth + 1)
            self._assign(node.outputs, block.returns, depth + 1, node)
        if tail:
            self._emit(depth, tail[2:], node)

    def _loop(self, node: Node, depth: int, tail: str) -> None:
        body = node.blocks[0]
        trip, cond = (self._v(v) for v in node.inputs[:2])
        outs = node.outputs
        n = self.code.by_node[node].index
        self._assign(outs, node.inputs[2:], depth, node)
        index = self._v(body.params[0])
        if _is_true(node.inputs[1]) and _is_true(body.returns[0]):
            self._emit(depth, f"for {index} in range({trip}):", node)
            self._assign(body.params[1:], outs, depth + 1, node)
            self._block(body, depth + 1)
            self._assign(outs, body.returns[1:], depth + 1, node)
        else:
            self._emit(depth, f"_c{n} = {cond}; {index} = 0", node)
            self._emit(depth, f"while _c{n} and {index} < {trip}:", node)
            self._assign(body.params[1:], outs, depth + 1, node)
            self._block(body, depth + 1)
            self._assign(
                [*outs, None],
                [*body.returns[1:], body.returns[0]],
                depth + 1,
                node,
                cond=f"_c{n}",
            )
            self._emit(depth + 1, f"{index} = {self._v(body.params[0])} + 1", node)
        if tail:
            self._emit(depth, tail[2:], node)

    def _assign(
        self, targets, sources, depth: int, node: Node, cond: str | None = None
    ) -> None:
        """Simultaneous ``t1, t2 = s1, s2`` (a None target is the loop condition)."""
        pairs: list[tuple[str, str]] = []
        for t, s in zip(targets, sources):
            if t is None:
                assert cond is not None  # a None target comes with the condition's name
                target = cond
            else:
                target = self._v(t)
            source = self._v(s)
            if target != source:
                pairs.append((target, source))
        if pairs:
            lhs, rhs = ", ".join(t for t, _ in pairs), ", ".join(s for _, s in pairs)
            self._emit(depth, f"{lhs} = {rhs}", node)


def _defined_by(item: Node | FusionInfo) -> list[Value]:
    if isinstance(item, FusionInfo):
        inner = {v for n in item.nodes if n.kind != "prim::Constant" for v in n.outputs}
        return [v for v in item.outputs if v in inner]
    return list(item.outputs)


def _function_name(node: Node) -> str:
    producer = node.inputs[0].node if node.inputs else None
    if (
        producer is None
        or producer.kind != "prim::Constant"
        or "name" not in producer.attrs
    ):
        raise CompileError(
            "prim::CallFunction needs a function constant as its first input", node.span
        )
    return str(producer.attrs["name"])


def _is_true(value: Value) -> bool:
    producer = value.node
    return (
        producer is not None
        and producer.kind == "prim::Constant"
        and producer.attrs.get("value") in (True, 1)
    )


