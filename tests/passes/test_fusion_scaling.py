"""group_fusions does work linear in the graph, on its two worst shapes (issue #40).

A chain of N elementwise operators is one group grown by N merges: the pass used to
collect the group's value names for every fresh name and step over every producer merged
so far, which made it ~N^2.2 (2,000 operators: 24 s).  A wide fan-out puts fusion
candidates far from their consumers.  Wall-clock time is never asserted (the machine is
shared); the work is counted as the Python calls the pass makes, which a quadratic pass
multiplies by four when N doubles.
"""

from __future__ import annotations

import cProfile
import pstats
import sys

import pytest

from compiler.parser import parse
from compiler.passes.group_fusions import GROUP, group_fusions
from tests.support.paths import TOOLS

sys.path.insert(0, str(TOOLS))
from synthetic_graphs import elementwise_chain, fan_out


def _calls(text: str) -> int:
    """Python calls made by ``group_fusions`` on ``text``."""
    graph = parse(text)
    profile = cProfile.Profile()
    profile.enable()
    group_fusions(graph)
    profile.disable()
    return pstats.Stats(profile).total_calls  # type: ignore[attr-defined]


@pytest.mark.parametrize(("shape", "sizes"), [(elementwise_chain, (250, 500, 1000, 2000)), (fan_out, (250, 500, 1000))])
def test_group_fusions_work_is_linear(shape, sizes) -> None:
    """Each doubling of N at most 2.2 times the calls (the campaign's 2,000-operator
    chain: 3.0 million calls at 500 operators, 11.6 million at 1,000)."""
    work = [_calls(shape(n)) for n in sizes]
    for (n, small), large in zip(zip(sizes, work), work[1:]):
        assert large <= 2.2 * small, f"{shape.__name__}: {large} calls for {2 * n} against {small} for {n}"


def test_a_chain_is_one_group() -> None:
    """The chain still fuses whole: one group of every operator (the bound is not bought
    by cutting the chain)."""
    graph = group_fusions(parse(elementwise_chain(300)))
    (group,) = [n for n in graph.main.nodes if n.kind == GROUP]
    assert sum(1 for n in group.subgraph.nodes if n.kind != "prim::Constant") == 300
