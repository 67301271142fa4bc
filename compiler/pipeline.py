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

Specializing for weights (``SPECIALIZE_PIPELINE``, ``specialize``) is a pipeline too, run
on an optimized module when its weights are known (``irc compile --weights``, a ``.pt``
archive, a program compiled without weights that meets them)::

             fold_module_attributes             freeze: settings become constants
             (Phases 2, 3 and 5 again)          only when a setting folded
             fold_batch_norm                    eval BatchNorm into its conv's weights
             fold_epilogues                     an activation written over a fresh product
             fold_transposed_weights            small linear weights stored transposed

The passes that read weight values take the weights as input (``WEIGHT_PASSES``) and
record the tensors they make in ``Module.folded_tensors``.

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
from compiler.passes import collecting, in_place, node_count
from vm.core.gc_pause import gc_paused
from vm.ir.graph import Module

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

# Specialization for the weights' values, after the settings fold and its clean-up (in
# this order: the BatchNorm fold makes conv -> activation pairs adjacent for the epilogues).
VALUE_PASSES: list[str] = ["fold_batch_norm", "fold_epilogues", "fold_transposed_weights"]
SPECIALIZE_PIPELINE: list[str] = ["fold_module_attributes", *FREEZE_PIPELINE, *VALUE_PASSES]

# Passes whose entry takes the weights (``name(module, weights)``).
WEIGHT_PASSES = frozenset({"fold_module_attributes", "fold_batch_norm", "fold_transposed_weights"})

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
    return [*DEFAULT_PIPELINE, "fold_module_attributes", *VALUE_PASSES, *EXTRA_PASSES]


def get_pass(name: str) -> Callable[..., Module]:
    """The entry function of pass ``name`` (module ``compiler.passes.<name>``): ``f(module)``,
    or ``f(module, weights)`` for the passes in ``WEIGHT_PASSES``."""
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
    With ``weights`` (the mapping the program will run with), the passes that take them
    get them (``WEIGHT_PASSES``), and unless ``passes`` names it or names only
    ``VALUE_PASSES``, ``fold_module_attributes`` runs right after ``inline_calls`` (after
    ``add_known_methods``, or first, if that is not run either): settings read from
    ``%self`` become constants, as ``torch.jit.freeze`` folds attributes, so that
    propagation removes the branches they decide; the default pipeline then ends with
    ``VALUE_PASSES`` (``SPECIALIZE_PIPELINE``'s folds of weight values) and marks the
    result ``specialized``.  The result holds for those weights only (it records the
    settings in ``Module.attributes``, the tensors it made in ``folded_tensors`` and what
    they were made from in ``folded_from``).
    """
    from compiler.verify import verify

    if not verified:
        verify(module)  # passes assume a well-formed graph: what the verifier refuses never reaches them
    names = list(DEFAULT_PIPELINE if passes is None else passes)
    if weights is not None and passes is None:  # the default pipeline, given weights, specializes
        names += VALUE_PASSES
    if not fusion:
        names = [n for n in names if n not in FUSION_PASSES]
    # a compile given weights folds the settings; a list of value passes alone (the tail
    # of ``specialize``) runs on a module whose settings are folded already
    if weights is not None and "fold_module_attributes" not in names and not set(names) <= set(VALUE_PASSES):
        after = [n for n in ("inline_calls", "add_known_methods") if n in names]
        names.insert(names.index(after[0]) + 1 if after else 0, "fold_module_attributes")
    chosen = [(name, _entry(name, weights)) for name in names]  # unknown names fail before any work
    wanted = set(print_after)
    for name in wanted - {"all"}:
        get_pass(name)
    show = printer or _print_stage
    from vm.binding.strict import source_reads_of

    # what the program reads from %self once calls are inlined, before a pass folds a branch away
    source: dict[str, bool] | None = None if "propagate_constants" in names else source_reads_of(module.main)
    current = module.clone()
    records: list[PassRecord] = []
    after = node_count(current)
    for name, run in chosen:
        before = after  # the module the last pass returned: counted once
        if on_pass is not None:
            on_pass(name, before)
        if source is None and name == "propagate_constants":
            source = source_reads_of(current.main)
        start = time.perf_counter()
        with collecting() as counts, in_place():
            current = run(current)
        seconds = time.perf_counter() - start
        after = node_count(current)
        records.append(PassRecord(name, before, after, tuple(sorted(counts.items())), seconds))
        if verify_each:
            verify(current)
        if "all" in wanted or name in wanted:
            from vm.ir.printer import print_module

            show(name, print_module(current))
    if weights is not None and passes is None:
        current.specialized = True
    current.source_reads = {**(source or {}), **current.source_reads}
    if weights is not None and not current.model_keys:  # an export's record of the model's keys
        from vm.binding.strict import recorded_keys

        current.model_keys = recorded_keys(weights)
    return current, records


def _entry(name: str, weights: Mapping[str, Any] | None) -> Callable[[Module], Module]:
    """Pass ``name``'s entry, given ``weights`` when it takes them."""
    run: Callable[..., Module] = get_pass(name)
    if name in WEIGHT_PASSES:
        if weights is None:
            if name == "fold_module_attributes":
                raise IRError("the pass fold_module_attributes needs the weights (irc compile --weights)")
            return run  # the value folds do nothing without weights
        return functools.partial(run, weights=weights)
    return run


def specialize(
    module: Module,
    weights: Mapping[str, Any],
    *,
    fusion: bool = True,
    skip: Iterable[str] = (),
    print_after: Iterable[str] = (),
    printer: Callable[[str, str], None] | None = None,
) -> tuple[Module, list[PassRecord]]:
    """``module`` (optimized) specialized for ``weights`` by ``SPECIALIZE_PIPELINE``,
    leaving out the passes named in ``skip``.  Phases 2, 3 and 5 run again only when a
    setting folded (they would change nothing else); with nothing to fold the result is
    ``module`` itself.  ``print_after`` and ``printer`` as for ``optimize``; returns the
    module and one record per pass run."""
    skipped = set(skip)
    for name in skipped:
        get_pass(name)
    shown = {"print_after": print_after, "printer": printer, "fusion": fusion}
    records: list[PassRecord] = []
    current = module
    if "fold_module_attributes" not in skipped:
        folded, records = optimize(module, ["fold_module_attributes"], verified=True, weights=weights, **shown)
        if folded.attributes != module.attributes:
            current, more = optimize(folded, [n for n in FREEZE_PIPELINE if n not in skipped], **shown)
            records += more
    values = [n for n in VALUE_PASSES if n not in skipped]
    if values:
        result, more = optimize(current, values, verified=True, weights=weights, **shown)
        if any(r.changed for r in more) or result.folded_tensors.keys() != current.folded_tensors.keys():
            current = result
        records += more
    if current is not module:
        current.specialized = True
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
