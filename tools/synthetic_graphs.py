"""Synthetic graph IR of any size, for measuring how compile time scales.

``synthetic_graph(n_layers)`` prints a straight chain of ``n_layers`` residual layers,
each a little of everything the passes meet in scripted models (~24 nodes a layer):
per-layer constants that pooling shares, a shape check under a ``prim::If`` that raises,
integer arithmetic on constants that constant propagation folds, an If on a constant
condition, a duplicated ``aten::size`` that CSE merges, a dead node, a list of sizes,
and elementwise tensor operators that ``group_fusions`` groups.  The layers are alike,
so a linear compiler spends the same time per node at every size.
"""

from __future__ import annotations

NODES_PER_LAYER = 24


def synthetic_graph(n_layers: int) -> str:
    """Graph IR text of ``n_layers`` layers (about ``NODES_PER_LAYER`` nodes each)."""
    lines = ["graph(%x.1 : Float(4, 8), %w : Float(8, 8), %b : Float(8)):"]
    prev = "x.1"
    for i in range(n_layers):
        lines += [
            f"  %c0.{i} : int = prim::Constant[value=0]()",
            f"  %c1.{i} : int = prim::Constant[value=1]()",
            f"  %c2.{i} : int = prim::Constant[value=2]()",
            f"  %half.{i} : float = prim::Constant[value=0.5]()",
            f'  %msg.{i} : str = prim::Constant[value="bad rank"]()',
            f"  %none.{i} : NoneType = prim::Constant()",
            f"  %rank.{i} : int = aten::dim(%{prev})",
            f"  %ok.{i} : bool = aten::eq(%rank.{i}, %c2.{i})",
            f"   = prim::If(%ok.{i})",
            "    block0():",
            "      -> ()",
            "    block1():",
            f"       = prim::RaiseException(%msg.{i}, %none.{i})",
            "      -> ()",
            f"  %two.{i} : int = aten::add(%c1.{i}, %c1.{i})",
            f"  %big.{i} : bool = aten::gt(%two.{i}, %c1.{i})",
            f"  %scale.{i} : float = prim::If(%big.{i})",
            "    block0():",
            f"      -> (%half.{i})",
            "    block1():",
            f"      %neg.{i} : float = aten::neg(%half.{i})",
            f"      -> (%neg.{i})",
            f"  %n.{i} : int = aten::size(%{prev}, %c0.{i})",
            f"  %n2.{i} : int = aten::size(%{prev}, %c0.{i})",
            f"  %unused.{i} : int = aten::mul(%rank.{i}, %c2.{i})",
            f"  %shape.{i} : int[] = prim::ListConstruct(%n2.{i}, %n.{i})",
            f"  %y.{i} : Tensor = aten::linear(%{prev}, %w, %b)",
            f"  %z.{i} : Tensor = aten::mul(%y.{i}, %scale.{i})",
            f"  %r.{i} : Tensor = aten::relu(%z.{i})",
            f"  %s.{i} : Tensor = aten::add(%r.{i}, %{prev}, %c1.{i})",
            f"  %h.{i} : Tensor = aten::tanh(%s.{i})",
        ]
        prev = f"h.{i}"
    lines.append(f"  return (%{prev})")
    return "\n".join(lines) + "\n"


def elementwise_chain(n_ops: int) -> str:
    """Graph IR text of one chain of ``n_ops`` elementwise operators (add with a second
    input and an alpha, mul by a scalar, tanh, sigmoid, in turn): one fusion group of
    ``n_ops`` operators, the worst case for a fuser that grows groups by merging."""
    lines = [
        "graph(%x : Float(4, 8), %y : Float(4, 8)):",
        "  %one : int = prim::Constant[value=1]()",
        "  %half : float = prim::Constant[value=0.5]()",
    ]
    prev = "x"
    ops = ("aten::add(%{}, %y, %one)", "aten::mul(%{}, %half)", "aten::tanh(%{})", "aten::sigmoid(%{})")
    for i in range(n_ops):
        lines.append(f"  %v{i} : Tensor = {ops[i % len(ops)].format(prev)}")
        prev = f"v{i}"
    lines.append(f"  return (%{prev})")
    return "\n".join(lines) + "\n"


def fan_out(n_branches: int) -> str:
    """Graph IR text of ``n_branches`` elementwise branches of one input (relu, then a
    matmul each, which does not fuse), summed by a chain of adds: a wide graph where
    fusion candidates sit far from their consumers (~3 nodes a branch)."""
    lines = ["graph(%x : Float(8, 8), %w : Float(8, 8)):", "  %one : int = prim::Constant[value=1]()"]
    for i in range(n_branches):
        lines.append(f"  %r{i} : Tensor = aten::relu(%x)")
        lines.append(f"  %m{i} : Tensor = aten::mm(%r{i}, %w)")
    acc = "m0"
    for i in range(1, n_branches):
        lines.append(f"  %s{i} : Tensor = aten::add(%{acc}, %m{i}, %one)")
        acc = f"s{i}"
    lines.append(f"  return (%{acc})")
    return "\n".join(lines) + "\n"
