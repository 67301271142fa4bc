"""The stateful harness: a model's stream of calls on torch, the interpreter and the static runtime.

A stream is ``calls`` consecutive calls of ``forward`` on one module object, interleaved
with the case's other method calls (``reset_states``...), in three runs of two shapes as
PyTorch's Static Runtime tests do (the first third of the calls with the case's first
shape, the second third with its second, the rest with the first again).  torch runs it on
``torch.jit.load`` of the saved archive; irvm on ``vm.load`` of the same ``.pt``, or of the
printed IR of the scripted module with its attributes as weights (``source="ir"``: forward
only, so a stream there leaves out the other methods' calls, on both sides).  Each call's
result is compared with torch's (``against_torch.assert_matches``); a call that fails on
one side and not the other is a mismatch too.  Archives and IR go into ``directory``
(a test's tmp dir, or the tool's cache), never the tree.
"""

from __future__ import annotations

import copy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch

from tests.support.against_torch import assert_matches, to_torch
from tests.support.paths import TOOLS
from tests.support.stateful_models import Case, build

Step = tuple[str, tuple[Any, ...]]
# the static runtime planning every tensor it may (``min_managed_bytes=0``): what the
# memory planner must keep out of module state is then planned too
PLANNED = "static-planned"
BACKENDS = ("interp", "static", PLANNED)


@dataclass
class Stream:
    """One stream's outcome: the calls compared and the ones that differed from torch."""

    case: str
    source: str
    backend: str
    calls: int
    mismatches: list[tuple[int, str]] = field(default_factory=list)
    both_failed: list[int] = field(default_factory=list)  # steps torch and irvm both refused


def steps(case: Case, calls: int, seed: int = 0, methods: bool = True) -> list[Step]:
    """The stream: ``calls`` forward calls (three runs over two shapes) and, with
    ``methods``, the case's other method calls before the calls they are keyed by."""
    rng = np.random.default_rng(seed)
    first, second = case.shapes
    out: list[Step] = []
    for i in range(calls):
        if methods and i in case.calls:
            out.append(case.calls[i])
        shape = second if calls // 3 <= i < 2 * calls // 3 else first
        out.append(("forward", case.inputs(rng, shape)))
    return out


def save_archive(case: Case, directory: Path) -> Path:
    """The case's scripted model saved with ``torch.jit.save``, made once per directory and
    version of the models' source (the file name carries its digest: a cache never serves
    an archive of an older model)."""
    path = directory / f"{case.name}-{_source_digest()}.pt"
    if not path.exists():
        directory.mkdir(parents=True, exist_ok=True)
        torch.jit.script(build(case)).save(str(path))
    return path


def save_ir(case: Case, directory: Path) -> tuple[Path, dict[str, Any]]:
    """The printed (inlined) IR of the scripted model, and its attributes as weights, as
    ``tools/export_torch.py`` writes them (the scripted copy is never run, so the weights
    are the initial state)."""
    if str(TOOLS) not in sys.path:
        sys.path.insert(0, str(TOOLS))
    import export_torch

    scripted = torch.jit.script(copy.deepcopy(build(case)))
    graph = scripted.inlined_graph
    text, lists = export_torch.expand_tensor_lists(export_torch.graph_text(scripted, None), graph)
    weights = {k: np.array(v, copy=True) for k, v in export_torch.module_weights(scripted, graph).items()}
    weights.update(lists)
    path = directory / f"{case.name}.ir"
    directory.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path, weights


def run_torch(archive: Path, stream: list[Step]) -> list[Any]:
    """Each step's result on torch's own module (``torch.jit.load``), or the exception."""
    module = torch.jit.load(str(archive))
    results: list[Any] = []
    with torch.no_grad():
        for name, args in stream:
            try:
                results.append(getattr(module, name)(*to_torch(args)))
            except Exception as err:  # noqa: BLE001  (compared: both sides must fail alike)
                results.append(err)
    return results


def run_irvm(model: Any, stream: list[Step]) -> list[Any]:
    """Each step's result on a ``vm.Model`` (its methods by name), or the exception."""
    results: list[Any] = []
    for name, args in stream:
        try:
            results.append(model(*args) if name == "forward" else getattr(model, name)(*args))
        except Exception as err:  # noqa: BLE001
            results.append(err)
    return results


def compare(case: str, source: str, backend: str, ours: list[Any], theirs: list[Any], stream: list[Step]) -> Stream:
    """The stream's mismatches: calls whose result is not torch's, with the reason."""
    result = Stream(case, source, backend, sum(1 for name, _ in stream if name == "forward"))
    for i, (mine, want) in enumerate(zip(ours, theirs)):
        if isinstance(want, Exception) or isinstance(mine, Exception):
            if not (isinstance(want, Exception) and isinstance(mine, Exception)):
                result.mismatches.append((i, f"irvm {_brief(mine)} / torch {_brief(want)}"))
            else:
                result.both_failed.append(i)
            continue
        try:
            assert_matches(mine, want, f"step {i} ({stream[i][0]})")
        except AssertionError as err:
            result.mismatches.append((i, str(err).splitlines()[0]))
    return result


def check(case: Case, calls: int, directory: Path, backend: str, source: str = "pt", seed: int = 0) -> Stream:
    """Run ``case``'s stream of ``calls`` on ``backend`` (one of ``BACKENDS``) from
    ``source`` ("pt" or "ir") and on torch; the comparison, call by call."""
    import vm

    archive = save_archive(case, directory)
    stream = steps(case, calls, seed, methods=source == "pt")
    theirs = run_torch(archive, stream)
    planned = backend == PLANNED
    if source == "pt":
        model = vm.load(archive, backend="interp" if planned else backend)
    else:
        path, weights = save_ir(case, directory)
        model = vm.load(path, weights, backend="interp" if planned else backend)
    if planned:  # the same program on a static runtime that plans every tensor it can
        from vm.static import StaticOptions

        model = vm.Model(model.program, model.weights, backend="static", methods=model.methods,
                         compile_method=model._compile_method, options=StaticOptions(min_managed_bytes=0))
    return compare(case.name, source, backend, run_irvm(model, stream), theirs, stream)


def _source_digest() -> str:
    import hashlib

    from tests.support import stateful_models

    return hashlib.sha256(Path(stateful_models.__file__).read_bytes()).hexdigest()[:12]


def _brief(value: Any) -> str:
    if isinstance(value, Exception):
        return f"raised {type(value).__name__}: {str(value).splitlines()[0] if str(value) else ''}"[:200]
    return "returned"
