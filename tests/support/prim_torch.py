"""Test support: run a TorchScript function both in torch and through irvm's resolver + kernels.

``Scripted(src)`` compiles ``src`` (one ``def f``) with ``torch.jit.CompilationUnit``,
converts its graph (straight-line code only) into ``vm.ir.graph`` nodes with the types
TorchScript printed, resolves every node with ``vm.ir.resolve.resolve`` (so that a test
sees the overload chosen) and runs the graph with the reference evaluator
(tests/support/reference.py).  ``ours(*args)`` and ``theirs(*args)`` then give the two
results for comparison.
"""

from __future__ import annotations

import hashlib
import importlib.util
import tempfile
from pathlib import Path
from typing import Any

from compiler import types as T
from tests.support.against_torch import to_numpy, to_torch
from tests.support.reference import run_graph
from vm.ir.graph import Graph, Module, Node, Value
from vm.ir.resolve import resolve


def convert_type(t: Any) -> T.Type:
    """A torch._C type as a compiler.types type."""
    kind = t.kind()
    simple = {
        "IntType": T.INT, "FloatType": T.FLOAT, "BoolType": T.BOOL, "StringType": T.STR,
        "NoneType": T.NONE, "NumberType": T.SCALAR, "DeviceObjType": T.DEVICE, "AnyType": T.ANY,
        "TensorType": T.TENSOR,
    }  # fmt: skip
    if kind in simple:
        return simple[kind]
    if kind == "ListType":
        return T.ListType(convert_type(t.getElementType()))
    if kind == "OptionalType":
        return T.OptionalType(convert_type(t.getElementType()))
    if kind == "TupleType":
        return T.TupleType(tuple(convert_type(e) for e in t.elements()))
    if kind == "DictType":
        return T.DictType(convert_type(t.getKeyType()), convert_type(t.getValueType()))
    raise NotImplementedError(f"type {t} ({kind})")


_HEADER = "import math\nimport torch\nfrom typing import Any, Dict, List, Optional, Tuple\n\n"
_CASES = Path(tempfile.mkdtemp(prefix="irvm_prim_cases_"))


def script(src: str) -> Any:
    """``torch.jit.script`` of the ``f`` defined by ``src`` (written to a real file, as
    TorchScript reads the source back, with ``math`` and ``typing`` names in scope)."""
    import torch

    path = _CASES / f"case_{hashlib.sha1(src.encode()).hexdigest()[:16]}.py"
    path.write_text(_HEADER + src.strip() + "\n")
    spec = importlib.util.spec_from_file_location(path.stem, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return torch.jit.script(module.f)


class Scripted:
    def __init__(self, src: str):
        self.fn = script(src)
        self.graph = self._convert(self.fn.graph)
        self.ops = {n: resolve(n) for n in self.graph.nodes if n.kind != "prim::Constant"}

    def _convert(self, tg: Any) -> Graph:
        g = Graph()
        env: dict[str, Value] = {}
        for inp in tg.inputs():
            env[inp.debugName()] = g.block.add_param(inp.debugName(), convert_type(inp.type()))
        for tn in tg.nodes():
            if list(tn.blocks()):
                raise NotImplementedError("control flow: only straight-line functions here")
            node = Node(tn.kind())
            for name in tn.attributeNames():
                if name != "value":
                    node.attrs[name] = getattr(tn, tn.kindOf(name))(name)
            if tn.kind() == "prim::Constant" and tn.hasAttribute("value"):
                node.attrs["value"] = tn.output().toIValue()
            for i in tn.inputs():
                node.add_input(env[i.debugName()])
            for o in tn.outputs():
                env[o.debugName()] = node.add_output(o.debugName(), convert_type(o.type()))
            g.block.append(node)
        for o in tg.outputs():
            g.block.add_return(env[o.debugName()])
        return g

    def kinds(self) -> list[str]:
        return [ref.name for ref in self.ops.values()]

    def theirs(self, *args: Any) -> Any:
        return to_numpy(self.fn(*(to_torch(a) for a in args)))

    def ours(self, *args: Any) -> Any:
        """irvm's result: the converted graph run by the reference evaluator."""
        outs = run_graph(Module(self.graph, filename="<scripted>"), self.graph, [_copy(a) for a in args])
        return outs[0] if len(outs) == 1 else tuple(outs)


def _copy(a: Any) -> Any:
    if isinstance(a, list):
        return [_copy(x) for x in a]
    if isinstance(a, dict):
        return {k: _copy(v) for k, v in a.items()}
    return a
