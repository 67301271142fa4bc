"""Compile work grows linearly with the graph.

Wall-clock time is never asserted (the machine is shared); the work is counted instead:
the Python function calls the pass pipeline makes on the synthetic graphs of
``tools/synthetic_graphs.py``, which grow by alike layers.  A pass that rescans the whole
graph per node, or restarts a fixpoint after each change, makes four times the layers
cost about sixteen times the calls; a linear pipeline stays near four.
"""

from __future__ import annotations

import cProfile
import pstats
import sys

from compiler.parser import parse
from compiler.pipeline import optimize
from tests.support.paths import TOOLS

sys.path.insert(0, str(TOOLS))
from synthetic_graphs import synthetic_graph


def _work(n_layers: int) -> tuple[int, dict[str, int]]:
    """(Python calls made by ``optimize``, calls per function name) on ``n_layers`` layers."""
    module = parse(synthetic_graph(n_layers), f"<synthetic {n_layers}>")
    optimize(module)  # imports, overload caches: not part of the measured work
    profile = cProfile.Profile()
    profile.enable()
    optimize(module)
    profile.disable()
    stats = pstats.Stats(profile)
    per_name: dict[str, int] = {}
    for (_, _, name), (_, calls, *_rest) in stats.stats.items():  # type: ignore[attr-defined]
        per_name[name] = per_name.get(name, 0) + calls
    return stats.total_calls, per_name  # type: ignore[attr-defined]


def test_pipeline_work_is_linear_in_graph_size() -> None:
    """Four times the layers cost at most 4.4 times the calls (linear, with slack for
    fixed costs that amortize), so no pass is quadratic in the nodes."""
    small, _ = _work(40)
    large, _ = _work(160)
    assert large <= 4.4 * small, f"{large} calls for 160 layers against {small} for 40: not linear"


def _names_collected(n_layers: int, monkeypatch) -> int:
    """How many value names ``Graph.value_names`` gathers in all during ``optimize``."""
    from vm.ir.graph import Graph

    module = parse(synthetic_graph(n_layers), f"<synthetic {n_layers}>")
    collected = [0]
    original = Graph.value_names

    def counting(self: Graph) -> set[str]:
        names = original(self)
        collected[0] += len(names)
        return names

    monkeypatch.setattr(Graph, "value_names", counting)
    optimize(module)
    monkeypatch.setattr(Graph, "value_names", original)
    return collected[0]


def test_names_are_collected_once_per_graph_not_per_node(monkeypatch) -> None:
    """Passes that name new values collect a graph's names a fixed number of times, not
    once per value they create (constant propagation folds nodes in every layer here):
    the names gathered grow linearly with the graph."""
    small = _names_collected(40, monkeypatch)
    large = _names_collected(160, monkeypatch)
    assert large <= 4.4 * small, f"{large} names gathered for 160 layers against {small} for 40"
