"""The pass manager: the optimization pipeline, in the order PyTorch runs it for inference.

TorchScript's ``GraphExecutorImpl::compileSpec`` optimizes a copy of each graph in
phases; we keep the phases that matter for a numpy runtime and drop the autograd ones
(LowerGradOf, specializeAutogradZero, differentiable subgraphs)::

    Phase 0  add_known_methods                  (irvm's: torch.nn modules' forward bodies)
             inline_calls                       Inline: callee bodies replace calls
             (fold_module_attributes)           freeze's attribute folding, given weights
    Phase 2  propagate_constants                ConstantPropagation: run what is known
             pool_constants                     ConstantPooling: one node per constant
    Phase 3  eliminate_dead_code                runOptimization: DCE, CSE, peephole,
             eliminate_common_subexpressions    then constant propagation and pooling
             peephole                           again, and DCE
             propagate_constants
             pool_constants
             eliminate_dead_code
    Phase 5  group_fusions                      runNondiffOptimization: FuseGraph

A ``.graph`` dump leaves out the bodies of standard ``torch.nn`` modules and of
``torch.nn.functional`` helpers; ``add_known_methods`` stores irvm's bodies for the first
(``compiler.known``), and ``inline_calls`` picks one for each call of the second.

(PyTorch pools constants right after inlining and again inside runOptimization; we pool
once after propagation, which both creates and frees constants.)  Drop insertion is not
an optimization: the emitter runs ``compiler.passes.insert_drops`` on the final graph.

``optimize`` never modifies the module it is given, records what each pass changed, and
can print the IR after chosen passes (``irc compile --print-after PASS``).
"""

from __future__ import annotations

import functools
import importlib
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import attrs

from compiler.diagnostics import IRError
from compiler.ir import Module
from compiler.passes import collecting, in_place, node_count
from vm.core.gc_pause import gc_paused

DEFAULT_PIPELINE: list[str] = [
    # Phase 0: standard torch.nn submodules get irvm's forward bodies, then calls to known
    # graphs become their bodies, so later passes see across them
    "add_known_methods",
    "inline_calls",
    # Phase 2: compute what is known at compile time, then share the constants
    "propagate_constants",
    "pool_constants",
    # Phase 3: classic clean-ups
    "eliminate_dead_code",
    "eliminate_common_subexpressions",
    "peephole",
    # runOptimization follows peephole with constant propagation and pooling: a rewrite
    # such as t(t(x)) -> x can make both arms of an If return the same value
    "propagate_constants",
    "pool_constants",
    "eliminate_dead_code",
    # Phase 5: group elementwise operators (only when fusion is on)
    "group_fusions",
]

FUSION_PASSES = frozenset({"group_fusions"})

# ``freeze``: a program compiled without its weights, specialized for them afterwards (the
# static runtime does it when it is built with weights).  Attributes are folded first, then
# Phases 2, 3 and 5 again: the folded settings decide branches, and what they guarded dies.
FREEZE_PIPELINE: list[str] = DEFAULT_PIPELINE[2:]

# Passes that can be named in ``passes=`` (or ``irc --passes``) but are not optimizations.
EXTRA_PASSES: list[str] = ["insert_drops"]


@attrs.frozen
class PassRecord:
    """What one pass did: node counts before and after, and the pass's own counters."""

    name: str
    nodes_before: int
    nodes_after: int
    counters: tuple[tuple[str, int], ...] = ()
    seconds: float = attrs.field(default=0.0, eq=False)  # wall time of the pass

    @property
    def changed(self) -> bool:
        return self.nodes_before != self.nodes_after or any(n for _, n in self.counters)

    def __str__(self) -> str:
        text = f"{self.name}: {self.nodes_before} -> {self.nodes_after} nodes"
        if self.counters:
            text += ", " + ", ".join(f"{key} {n}" for key, n in self.counters)
        return text


def available_passes() -> list[str]:
    return [*DEFAULT_PIPELINE, *EXTRA_PASSES]


def get_pass(name: str) -> Callable[[Module], Module]:
    """The entry function of pass ``name`` (module ``compiler.passes.<name>``)."""
    if name not in available_passes():
        raise IRError(f"unknown pass {name!r}; the passes are: {', '.join(available_passes())}")
    module = importlib.import_module(f"compiler.passes.{name}")
    return getattr(module, name)


@gc_paused()  # the passes build and drop IR cycles: see vm.core.gc_pause
def optimize(
    module: Module,
    passes: Sequence[str] | None = None,
    *,
    fusion: bool = True,
    print_after: Iterable[str] = (),
    printer: Callable[[str, str], None] | None = None,
    verify_each: bool = False,
    weights: Mapping[str, Any] | None = None,
    on_pass: Callable[[str, int], None] | None = None,
    verified: bool = False,
) -> tuple[Module, list[PassRecord]]:
    """Run ``passes`` (default: ``DEFAULT_PIPELINE``) over a copy of ``module``.

    With ``fusion=False`` the fusion passes are skipped.  After each pass named in
    ``print_after`` (``"all"`` for every pass), ``printer(pass_name, module_text)`` is
    called (default: print to stdout).  The input is verified first (IRValidationError),
    unless ``verified`` says the caller has just verified it (and not changed it since);
    ``verify_each`` runs the verifier after every pass too, as the tests do.
    ``on_pass(name, nodes)`` is called as each pass starts (the progress display).
    Returns the optimized module and one record per pass run, with its wall time.
    With ``weights`` (the mapping the program will run with), ``fold_module_attributes``
    runs right after ``inline_calls`` (after ``add_known_methods``, or first, if that is
    not run either): settings read from
    ``%self`` become constants, as ``torch.jit.freeze`` folds attributes, so that
    propagation removes the branches they decide.  The result holds for those weights
    only (it records the values in ``Module.attributes``).
    """
    from compiler.verify import verify

    if not verified:
        verify(module)  # passes assume a well-formed graph: what the verifier refuses never reaches them
    names = list(DEFAULT_PIPELINE if passes is None else passes)
    if not fusion:
        names = [n for n in names if n not in FUSION_PASSES]
    chosen = [(name, get_pass(name)) for name in names]  # unknown names fail before any work
    if weights is not None:
        from compiler.passes.fold_module_attributes import fold_module_attributes

        after = [n for n in ("inline_calls", "add_known_methods") if n in names]
        at = names.index(after[0]) + 1 if after else 0
        chosen.insert(at, ("fold_module_attributes", functools.partial(fold_module_attributes, weights=weights)))
    wanted = set(print_after)
    for name in wanted - {"all"}:
        get_pass(name)
    show = printer or _print_stage
    current = module.clone()
    records: list[PassRecord] = []
    after = node_count(current)
    for name, run in chosen:
        before = after  # the module the last pass returned: counted once
        if on_pass is not None:
            on_pass(name, before)
        start = time.perf_counter()
        with collecting() as counts, in_place():
            current = run(current)
        seconds = time.perf_counter() - start
        after = node_count(current)
        records.append(PassRecord(name, before, after, tuple(sorted(counts.items())), seconds))
        if verify_each:
            verify(current)
        if "all" in wanted or name in wanted:
            from compiler.printer import print_module

            show(name, print_module(current))
    return current, records


def freeze(module: Module, weights: Mapping[str, Any], *, fusion: bool = True) -> Module:
    """``module`` (optimized without weights) specialized for ``weights`` as if it had been
    compiled with them: ``fold_module_attributes``, then ``FREEZE_PIPELINE``.  Returns
    ``module`` itself when no attribute folds (nothing would change)."""
    from compiler.passes.fold_module_attributes import fold_module_attributes

    folded = fold_module_attributes(module, weights)
    if folded.attributes == module.attributes:
        return module
    return optimize(folded, FREEZE_PIPELINE, fusion=fusion)[0]


def _print_stage(name: str, text: str) -> None:
    print(f"=== after {name} ===\n{text}", end="" if text.endswith("\n") else "\n")
