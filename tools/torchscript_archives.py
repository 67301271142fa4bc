"""Save the coverage set of ``torch.jit.save`` archives, with their inputs and torch's outputs.

    python tools/torchscript_archives.py [--dir ~/.cache/irvm/archives] [--only NAME...]

Cases (each written as ``NAME.pt`` + ``NAME.case.pkl`` holding the sample inputs and
torch's outputs as numpy values):

- every case of the differential corpus (``tools/corpus_programs.py``): functions saved as
  torch saves a scripted or traced function (a placeholder module); modules scripted, and
  also traced and frozen when torch can;
- the nn models of ``tools/dump_nn_models.py`` (scripted, traced, frozen);
- the feature modules of ``tools/torchscript_features.py`` (interfaces, NamedTuples,
  classes, containers, exported methods), scripted and frozen;
- torchvision's resnet18 and mobilenet_v3_small on a 1x3x64x64 input (script, trace, freeze);
- with ``--zoo ci`` / ``--zoo all``, the model zoo of ``tools/zoo_models.py`` in its modes;
  ``--zoo all --stream RESULTS.json`` saves, runs and deletes one zoo model at a time.

A case torch itself cannot script, trace, freeze or save is listed in ``skipped.json``
with torch's reason; a program that raises on its sample inputs (``raise_taken``) is
kept with torch's error, and irvm must raise too.  ``tools/run_archives.py`` then runs the archives without torch.
Needs torch (and torchvision for the last group); archives are cached, not in git.
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

from export_torch import _clone_args, resolve_target, to_numpy

CACHE = Path(os.environ.get("IRVM_ARCHIVE_CACHE", Path.home() / ".cache" / "irvm" / "archives"))

Build = Callable[[], tuple[Any, tuple[Any, ...]]]  # -> (compiled ScriptModule/Function, inputs)


def _compile(target: Any, args: tuple[Any, ...], variant: str) -> Any:
    if variant == "trace":
        with torch.no_grad():
            return torch.jit.trace(target, _clone_args(args), check_trace=False)
    compiled = torch.jit.script(target)
    if variant == "freeze":
        compiled = torch.jit.freeze(compiled.eval())
    return compiled


def corpus_cases() -> Iterator[tuple[str, Build]]:
    import corpus_programs

    for case in corpus_programs.CASES:
        def build(case: Any = case, variant: str = "") -> tuple[Any, tuple[Any, ...]]:
            torch.manual_seed(0)
            target = resolve_target(case.target)
            if isinstance(target, torch.nn.Module):
                target = target.eval()
            args = case.inputs()
            return _compile(target, args, variant), args

        is_module = "module" in case.features or "frozen" in case.features
        if case.trace:
            yield f"corpus.{case.name}", lambda build=build: build(variant="trace")
        elif case.freeze:
            yield f"corpus.{case.name}", lambda build=build: build(variant="freeze")
        else:
            yield f"corpus.{case.name}", lambda build=build: build(variant="script")
            if is_module:
                yield f"corpus.{case.name}.trace", lambda build=build: build(variant="trace")
                yield f"corpus.{case.name}.freeze", lambda build=build: build(variant="freeze")


def nn_cases() -> Iterator[tuple[str, Build]]:
    import dump_nn_models as nm

    for name, (factory, inputs, _) in nm.MODELS.items():
        for variant in ("script", "trace", "freeze"):
            def build(factory: Any = factory, inputs: Any = inputs, variant: str = variant, name: str = name) -> Any:
                torch.manual_seed(0)
                module = factory().eval()
                args = inputs()
                if variant != "trace":
                    args = nm._scripted_args(name, args)
                torch.backends.mha.set_fastpath_enabled(False)
                try:
                    return _compile(module, args, variant), args
                finally:
                    torch.backends.mha.set_fastpath_enabled(True)

            yield f"nn.{name}.{variant}", build


def vision_cases() -> Iterator[tuple[str, Build]]:
    sys.modules.setdefault("torchvision._meta_registrations", types.ModuleType("torchvision._meta_registrations"))
    try:
        import torchvision.models as tvm
    except ImportError:
        return
    for name in ("resnet18", "mobilenet_v3_small"):
        for variant in ("script", "trace", "freeze"):
            def build(name: str = name, variant: str = variant) -> Any:
                torch.manual_seed(0)
                module = getattr(tvm, name)(weights=None).eval()
                args = (torch.randn(1, 3, 64, 64),)
                return _compile(module, args, variant), args

            yield f"vision.{name}.{variant}", build


def feature_cases() -> Iterator[tuple[str, Build]]:
    import torchscript_features as tf

    for name, (factory, inputs) in tf.FEATURES.items():
        for variant in ("script", "freeze"):
            def build(factory: Any = factory, inputs: Any = inputs, variant: str = variant) -> Any:
                torch.manual_seed(0)
                return _compile(factory().eval(), inputs(), variant), inputs()

            yield f"features.{name}.{variant}", build


def zoo_cases(subset: bool = False) -> Iterator[tuple[str, Build]]:
    """The model zoo of ``tools/zoo_models.py`` (issue #11), each in its modes; the CI
    subset with ``subset``.  Heavy models (over ~100M parameters) are left out."""
    import zoo_models

    for name, model in zoo_models.ZOO.items():
        if model.heavy or (subset and name not in zoo_models.CI_SUBSET) or zoo_models.available(model):
            continue
        for variant in model.modes:
            def build(model: Any = model, variant: str = variant) -> Any:
                module, args = model.build()
                if variant == "trace" and not model.strict:
                    with torch.no_grad():
                        return torch.jit.trace(module, _clone_args(args), check_trace=False, strict=False), args
                return _compile(module, args, variant), args

            yield f"zoo.{name}.{variant}", build


def all_cases(zoo: str = "") -> Iterator[tuple[str, Build]]:
    """Every case; ``zoo`` "ci" or "all" adds the model zoo's CI subset or whole zoo."""
    if zoo:
        yield from zoo_cases(subset=zoo == "ci")
    yield from feature_cases()
    yield from corpus_cases()
    yield from nn_cases()
    yield from vision_cases()


def save_case(name: str, build: Build, outdir: Path) -> str | None:
    """Write ``name.pt`` and ``name.case.pkl``; torch's reason when it cannot, else None."""
    path = outdir / f"{name}.pt"
    partial = outdir / f"{name}.{os.getpid()}.tmp"  # renamed into place: concurrent runs never see half a file
    try:
        compiled, args = build()
        torch.jit.save(compiled, str(partial))  # before running: a run may update buffers
        os.replace(partial, path)
    except Exception as err:  # noqa: BLE001 - torch cannot script/trace/freeze/save it: not irvm's failure
        partial.unlink(missing_ok=True)
        return f"{type(err).__name__}: {str(err).strip().splitlines()[0] if str(err).strip() else ''}"
    data: dict[str, Any] = {"inputs": [to_numpy(a) for a in args]}
    try:
        with torch.no_grad():
            data["expected"] = to_numpy(compiled(*_clone_args(args)))
    except (torch.jit.Error, RuntimeError) as err:  # it raises on these inputs: irvm must raise too
        data["error"] = str(err).strip().splitlines()[-1]
    with open(partial, "wb") as f:
        pickle.dump(data, f)
    os.replace(partial, outdir / f"{name}.case.pkl")
    return None


def save_all(outdir: Path = CACHE, only: list[str] | None = None, refresh: bool = False, zoo: str = "") -> dict[str, str]:
    """Save every case not yet cached; returns {name: why torch could not} for skipped ones."""
    outdir.mkdir(parents=True, exist_ok=True)
    skipped_path = outdir / "skipped.json"
    skipped: dict[str, str] = json.loads(skipped_path.read_text()) if skipped_path.exists() and not refresh else {}
    for name, build in all_cases(zoo):
        if only and not any(name.startswith(o) for o in only):
            continue
        if not refresh and ((outdir / f"{name}.case.pkl").exists() or name in skipped):
            continue
        reason = save_case(name, build, outdir)
        if reason is not None:
            skipped[name] = reason
    partial = outdir / f"skipped.{os.getpid()}.tmp"
    partial.write_text(json.dumps(skipped, indent=1, sort_keys=True))
    os.replace(partial, skipped_path)
    return skipped


def stream_zoo(results_path: Path, zoo: str, tmp: Path, only: list[str] | None = None) -> dict[str, Any]:
    """Model by model: save its archives into ``tmp``, run them with torch blocked
    (``tools/run_archives.py`` in a subprocess), add the results to ``results_path``, delete
    the archives (the whole zoo would take tens of GB).  Already recorded models are kept."""
    import shutil
    import subprocess

    results: dict[str, Any] = json.loads(results_path.read_text()) if results_path.exists() else {}
    models: dict[str, list[tuple[str, Build]]] = {}
    for name, build in zoo_cases(subset=zoo == "ci"):
        if only and not any(name.startswith(o) for o in only):
            continue
        models.setdefault(name.rsplit(".", 1)[0], []).append((name, build))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for model, cases in models.items():
        if any(n in results for n, _ in cases):
            continue
        shutil.rmtree(tmp, ignore_errors=True)
        tmp.mkdir(parents=True)
        for name, build in cases:
            reason = save_case(name, build, tmp)
            if reason is not None:
                results[name] = {"skipped": reason}
        out = tmp / "results.json"
        subprocess.run([sys.executable, str(ROOT / "tools" / "run_archives.py"), str(tmp), "--json", str(out)],
                       env=env, check=False, capture_output=True)
        if out.exists():
            results.update(json.loads(out.read_text()))
        results_path.write_text(json.dumps(results, indent=1, sort_keys=True))
        print(model, {n: results.get(n) for n, _ in cases}, flush=True)
    shutil.rmtree(tmp, ignore_errors=True)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", default=str(CACHE))
    parser.add_argument("--only", nargs="*", help="name prefixes to save")
    parser.add_argument("--refresh", action="store_true", help="save again even when cached")
    parser.add_argument("--zoo", choices=["ci", "all"], default="", help="also the model zoo (tools/zoo_models.py)")
    parser.add_argument("--stream", metavar="RESULTS.json",
                        help="with --zoo: save, run (torch blocked) and delete each zoo model in turn, results here")
    args = parser.parse_args(argv)
    if args.stream:
        stream_zoo(Path(args.stream), args.zoo or "all", Path(args.dir) / f"stream-{os.getpid()}", args.only)
        return 0
    skipped = save_all(Path(args.dir), args.only, args.refresh, args.zoo)
    for name, why in sorted(skipped.items()):
        print(f"skipped {name}: {why}")
    print(f"archives in {args.dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
