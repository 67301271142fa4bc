"""Generate the model-zoo corpus and run it on both irvm backends; write ``docs/zoo.md``.

    python3 tools/gen_zoo.py                       # every model: generate what is missing, run, table
    python3 tools/gen_zoo.py --only 'resnet*' --only bert --jobs 2
    python3 tools/gen_zoo.py --ci                  # the CI subset (tools/zoo_models.CI_SUBSET)
    python3 tools/gen_zoo.py --no-run              # generate only
    python3 tools/gen_zoo.py --no-generate         # rerun irvm on the cached cases only
    python3 tools/gen_zoo.py --failures /path/zoo_failures.md

For each model of ``tools/zoo_models.ZOO`` and each of its modes, a case ``MODEL.MODE``:
``script`` (``torch.jit.script``), ``trace`` (``torch.jit.trace``), ``freeze`` (the scripted
module through ``torch.jit.freeze``), and ``script2`` (the scripted module on a second input
size, for a few models).  ``tools/export_torch.py`` exports each case; the files go in the
corpus layout of ``tests/data/corpus/README.md`` (``NAME.ir``, ``NAME.inputs.npz``,
``NAME.weights.npz``, ``NAME.expected.npz``) into the cache folder (``$IRVM_ZOO_CACHE``, else
``~/.cache/irvm/zoo``; weights are large and never go in git), with one
``manifest-MODEL.json`` per model.  A case torch itself cannot script or trace is recorded
with torch's message (``torch_error``): it is not an irvm failure.

Each model runs in its own process (``--jobs`` at a time), which builds it, exports its
cases and runs each on the interpreter and on the static runtime (``tools/zoo_check.py``
compares with torch's outputs and times the runs).  Results accumulate in ``results.json``
in the cache; ``docs/zoo.md`` is written from all of them.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import os
import platform
import sys
import time
import zlib
from concurrent.futures import ProcessPoolExecutor, as_completed
from multiprocessing import get_context
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import zoo_check
from zoo_models import CI_SUBSET, ZOO, ZooModel

DOC = ROOT / "docs" / "zoo.md"
SUFFIXES = (".ir", ".inputs.npz", ".weights.npz", ".expected.npz", ".error.txt")


def cases_of(model: ZooModel) -> list[tuple[str, str]]:
    """(case name, mode) for every case of ``model``."""
    modes = list(model.modes)
    if model.sizes > 1 and "script" in modes:
        modes.insert(modes.index("script") + 1, "script2")
    return [(f"{model.name}.{mode}", mode) for mode in modes]


def manifest_path(folder: Path, model: str) -> Path:
    return folder / f"manifest-{model}.json"


def read_manifest(folder: Path, model: str) -> list[dict[str, Any]] | None:
    path = manifest_path(folder, model)
    return json.loads(path.read_text()) if path.exists() else None


# -- generating (torch) -------------------------------------------------------------------


def generate_model(model: ZooModel, folder: Path) -> list[dict[str, Any]]:
    """Build ``model``, export each of its cases into ``folder``; the manifest records."""
    import numpy as np
    from export_torch import ExportError, TorchCompileError, export, write

    from vm.files.npz import flatten_outputs

    start = time.perf_counter()
    module, _ = model.build()
    build_s = time.perf_counter() - start
    params = sum(p.numel() for p in module.parameters())
    records = []
    for case, mode in cases_of(model):
        for suffix in SUFFIXES:
            (folder / f"{case}{suffix}").unlink(missing_ok=True)
        args = model.example_inputs(1 if mode == "script2" else 0)
        if mode != "trace":  # a scripted forward takes its optional arguments too: their defaults
            args = args + forward_defaults(module, len(args))
        record: dict[str, Any] = {"name": case, "model": model.name, "family": model.family, "mode": mode,
                                  "params": params, "build_s": round(build_s, 2), "fingerprint": fingerprint(model)}
        start = time.perf_counter()
        try:
            exp = export(module, case, args, trace=mode == "trace", freeze=mode == "freeze", strict=model.strict)
        except TorchCompileError as err:
            record["torch_error"] = zoo_check.first_line(str(err))
            records.append(record)
            continue
        except ExportError as err:  # the zoo's own fault (inputs that do not fit the graph...)
            record["export_error"] = zoo_check.first_line(str(err))
            records.append(record)
            continue
        write(exp, folder)
        if exp.error is not None:  # torch raised on its own example: nothing to compare
            record["torch_error"] = f"torch raised on the example inputs: {exp.error}"
        else:
            assert exp.outputs is not None
            np.savez(folder / f"{case}.expected.npz", **flatten_outputs(exp.outputs))
        record["export_s"] = round(time.perf_counter() - start, 2)
        record["ir_lines"] = exp.ir.count("\n")
        records.append(record)
    manifest_path(folder, model.name).write_text(json.dumps(records, indent=1) + "\n")
    return records


def forward_defaults(module: Any, given: int) -> tuple[Any, ...]:
    """The default values of ``module.forward``'s parameters after the first ``given``
    (timm's ``forward(x, attn_mask=None)``): a scripted graph takes every parameter."""
    import inspect

    params = list(inspect.signature(module.forward).parameters.values())[given:]
    defaults = []
    for param in params:
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD) or param.default is param.empty:
            break
        defaults.append(param.default)
    return tuple(defaults)


# -- one model, start to end (a worker process) ---------------------------------------------


def fingerprint(model: ZooModel) -> int:
    """A checksum of what decides a case's files: the exporter's code, torch's version, the
    model's modes and its example inputs' shapes (a cached case made otherwise is stale)."""
    import torch

    shapes = [tuple(getattr(a, "shape", ())) for size in range(model.sizes) for a in model.example_inputs(size)]
    text = (ROOT / "tools" / "export_torch.py").read_bytes()
    settings = f"{torch.__version__} {model.modes} {shapes}" + ("" if model.strict else " strict=False")
    return zlib.crc32(text + settings.encode())


def is_stale(model: ZooModel, records: list[dict[str, Any]] | None) -> bool:
    wanted = [case for case, _ in cases_of(model)]
    return (records is None or [r["name"] for r in records] != wanted
            or any(r.get("fingerprint") != fingerprint(model) for r in records))


def process(name: str, folder: Path, generate: bool, run: bool, regenerate: bool = False) -> list[dict[str, Any]]:
    """Generate (when missing or stale, or asked) and run every case of model ``name``."""
    model = ZOO[name]
    records = read_manifest(folder, name)
    stale = is_stale(model, records)
    if generate and (regenerate or stale):
        try:
            records = generate_model(model, folder)
        except Exception as err:  # noqa: BLE001 - the zoo's own build failed: record it, keep sweeping
            return [{"name": case, "model": name, "family": model.family, "mode": mode,
                     "export_error": f"building the model failed: {type(err).__name__}: {zoo_check.first_line(str(err))}"}
                    for case, mode in cases_of(model)]
    if records is None:
        return []
    if run:
        for record in records:
            if "torch_error" in record or "export_error" in record:
                continue
            record["results"] = {
                backend: zoo_check.outcome_dict(zoo_check.run_case(record["name"], backend, folder))
                for backend in zoo_check.BACKENDS
            }
    return records


# -- reporting ----------------------------------------------------------------------------


def status_cell(record: dict[str, Any], backend: str) -> str:
    if "torch_error" in record:
        return "torch cannot"
    if "export_error" in record:
        return "**export failed**"
    result = record.get("results", {}).get(backend)
    if result is None:
        return "not run"
    return {"match": "ok", "mismatch": "**MISMATCH**", "error": "**error**"}[result["status"]]


def _ms(result: dict[str, Any] | None) -> str:
    return "" if not result or "run_ms" not in result else f"{result['run_ms']:.0f}"


def _err(record: dict[str, Any]) -> str:
    errors = [r["max_error"] for r in record.get("results", {}).values() if "max_error" in r]
    return f"{max(errors):.1e}" if errors else ""


def counts(records: list[dict[str, Any]]) -> dict[tuple[str, str], tuple[int, int, int]]:
    """(mode, backend) -> (matching, run by irvm, torch cannot)."""
    table: dict[tuple[str, str], list[int]] = {}
    for record in records:
        for backend in zoo_check.BACKENDS:
            entry = table.setdefault((record["mode"], backend), [0, 0, 0])
            if "torch_error" in record:
                entry[2] += 1
            elif "export_error" in record:
                entry[1] += 1
            elif backend in record.get("results", {}):
                entry[1] += 1
                entry[0] += record["results"][backend]["status"] == "match"
    return {k: (v[0], v[1], v[2]) for k, v in table.items()}


def write_doc(records: list[dict[str, Any]], command: str, path: Path = DOC) -> None:
    """``docs/zoo.md``: counts, then one row per case, then torch's refusals."""
    import numpy as np

    mode_order = ["script", "script2", "trace", "freeze"]
    lines = [
        "# The model zoo",
        "",
        "Every model of `tools/zoo_models.py` (torchvision classification and segmentation, Hugging Face",
        "transformers from small configs, one timm model per family), random weights, batch 1, compiled",
        "by torch 2.13 and run by irvm on both backends. Written by `tools/gen_zoo.py` from a run on",
        (f"this machine ({platform.machine()}, {os.cpu_count()} cores shared with other jobs, Python "
         f"{platform.python_version()}, numpy {np.__version__}):"),
        "",
        "```sh",
        command,
        "```",
        "",
        "A case matches when every output agrees with torch's within the tolerance of `tools/zoo_check.py`:",
        f"`|irvm - torch| <= {zoo_check.ATOL_SCALE:g} * scale + {zoo_check.RTOL:g} * |torch|`, scale being the",
        "largest magnitude of torch's outputs; *max err* is the largest difference divided by that scale.",
        "*ms* is one run (the faster of two when a run takes under 0.5 s). `script2` runs the",
        "scripted graph on a second input size. *torch cannot* means torch itself cannot script or",
        "trace the model (not an irvm failure).",
        "",
        "## Counts",
        "",
        "| mode | backend | matching / run by irvm | torch cannot |",
        "|---|---|---|---|",
    ]
    table = counts(records)
    for mode in mode_order:
        for backend in zoo_check.BACKENDS:
            if (mode, backend) in table:
                ok, ran, refused = table[(mode, backend)]
                lines.append(f"| {mode} | {backend} | {ok} / {ran} | {refused} |")
    total_ok = sum(v[0] for v in table.values())
    total_ran = sum(v[1] for v in table.values())
    lines += ["", (f"In all: {total_ok} of {total_ran} case runs match ({len(records)} cases, "
                   f"{len({r['model'] for r in records})} models)."), "",
              "## Cases", "",
              "| model | family | mode | interp | static | max err | interp ms | static ms | first error |",
              "|---|---|---|---|---|---|---|---|---|"]
    order = {name: i for i, name in enumerate(ZOO)}
    ordered = sorted(records, key=lambda r: (order.get(r["model"], 1 << 30), mode_order.index(r["mode"])))
    for record in ordered:
        results = record.get("results", {})
        error = next((r["error"] for r in results.values() if r.get("error")), "")
        error = error.replace("|", "\\|")[:160]
        lines.append(
            f"| {record['model']} | {record['family']} | {record['mode']} | {status_cell(record, 'interp')} | "
            f"{status_cell(record, 'static')} | {_err(record)} | {_ms(results.get('interp'))} | "
            f"{_ms(results.get('static'))} | {error} |"
        )
    missing = [name for name in ZOO if name not in {r["model"] for r in records}]
    if missing:
        lines += ["", f"Not generated in this run ({len(missing)}): " + ", ".join(missing) + "."]
    lines += _timm_families_section()
    refused = [r for r in ordered if "torch_error" in r]
    if refused:
        lines += ["", "## What torch cannot compile", "", "| case | torch's message |", "|---|---|"]
        lines += [f"| {r['name']} | {r['torch_error'].replace('|', chr(92) + '|')[:200]} |" for r in refused]
    path.write_text("\n".join(lines) + "\n")


def _timm_families_section() -> list[str]:
    """How the timm models were chosen, and the families left out with the reason."""
    import zoo_timm

    covered = sum(1 for models in zoo_timm.TIMM_MODELS.values() if any(f"timm_{n}" in ZOO for n, _, _ in models))
    lines = ["", "## timm's families", "",
             f"One model per module of `timm/models/` ({covered} families, `tools/zoo_timm.py`: the smallest",
             "variant, small images; a few base-size transformers with `depth=2`, mobilenetv5 with half",
             "its channels)."]
    if zoo_timm.TIMM_EXCLUDED:
        lines += ["Left out:", ""]
        lines += [f"- `{family}`: {reason}" for family, reason in sorted(zoo_timm.TIMM_EXCLUDED.items())]
    else:
        lines += ["No family is left out."]
    return lines


def failure_tag(error: str) -> str:
    """[rand], [ops] or [zoo]: who owns a failure (see the brief of issue #14's helpers)."""
    low = error.lower()
    # aten::__contains__ on a str-keyed dict fails where the dict is a module attribute
    # (torchvision's return_layers) that the weights file does not carry yet
    if any(w in low for w in ("bernoulli", "dropout", "rand", "training", "moduledict", "modulelist",
                              "module attribute", "dict[str", "dict(str", "list[", "getattr",
                              "aten::__contains__.str", "the weights lack")):
        return "[rand]"
    if any(w in low for w in ("unknown operator", "no kernel", "no operator", "not implemented",
                              "unsupported operator", "no overload", "schema")):
        return "[ops]"
    return "[zoo]"


def write_failures(records: list[dict[str, Any]], path: Path) -> None:
    """One line per failing case and backend: model, mode, backend, tag, first error line."""
    lines = ["# Failing zoo cases (written by tools/gen_zoo.py --failures; one line per case and backend)", ""]
    for record in records:
        if "export_error" in record:
            lines.append(f"- {record['model']} {record['mode']} both [zoo] export failed: {record['export_error']}")
        for backend, result in sorted(record.get("results", {}).items()):
            if result["status"] != "match":
                error = result.get("error", "")
                lines.append(f"- {record['model']} {record['mode']} {backend} {failure_tag(error)} {error}")
    path.write_text("\n".join(lines) + "\n")


# -- driving ------------------------------------------------------------------------------


def select(patterns: list[str], ci: bool, skip_heavy: bool) -> list[str]:
    names = list(CI_SUBSET) if ci else list(ZOO)
    if patterns:
        names = [n for n in names if any(fnmatch.fnmatchcase(n, p) or p == n for p in patterns)]
    if skip_heavy:
        names = [n for n in names if not ZOO[n].heavy]
    # the CI subset first, then the small families, the heavy models last: an interrupted
    # sweep has covered the most
    family = {"hf": 0, "timm": 1, "torchvision-seg": 2, "torchvision": 3}
    return sorted(names, key=lambda n: (n not in CI_SUBSET, ZOO[n].heavy, family.get(ZOO[n].family, 4)))


def all_records(folder: Path) -> list[dict[str, Any]]:
    results = folder / "results.json"
    return json.loads(results.read_text()) if results.exists() else []


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", action="append", default=[], metavar="PATTERN",
                        help="model names or shell patterns (repeatable)")
    parser.add_argument("--ci", action="store_true", help="only the CI subset")
    parser.add_argument("--skip-heavy", action="store_true", help="leave out the models over ~100M parameters")
    parser.add_argument("--jobs", type=int, default=1, help="models processed at once (one process each)")
    parser.add_argument("--no-generate", action="store_true", help="run the cached cases only")
    parser.add_argument("--regenerate", action="store_true", help="export again even when cached")
    parser.add_argument("--no-run", action="store_true", help="generate only")
    parser.add_argument("--resume", action="store_true", help="leave out models with results already")
    parser.add_argument("--cache", type=Path, default=None, help="the cache folder (default $IRVM_ZOO_CACHE)")
    parser.add_argument("--doc", type=Path, default=DOC, help="where to write the table (default docs/zoo.md)")
    parser.add_argument("--failures", type=Path, default=None, help="also write the failing cases here")
    args = parser.parse_args(argv)
    folder = args.cache or zoo_check.cache_dir()
    folder.mkdir(parents=True, exist_ok=True)
    names = select(args.only, args.ci, args.skip_heavy)
    if not names:
        parser.error("no zoo model matches")
    if args.jobs > 1:  # one BLAS thread per worker, so the workers do not fight over the cores
        for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
            os.environ.setdefault(var, "1")
    previous = {r["name"]: r for r in all_records(folder)}
    if args.resume:  # leave out the models whose every case has a result already
        names = [n for n in names if not all(
            case in previous and any(k in previous[case] for k in ("results", "torch_error", "export_error"))
            for case, _ in cases_of(ZOO[n]))]
    command = "python3 tools/gen_zoo.py " + " ".join(argv if argv is not None else sys.argv[1:])
    with ProcessPoolExecutor(max_workers=args.jobs, mp_context=get_context("spawn"), max_tasks_per_child=1,
                             initializer=_init_worker) as pool:
        futures = {pool.submit(process, n, folder, not args.no_generate, not args.no_run, args.regenerate): n
                   for n in names}
        for future in as_completed(futures):
            name = futures[future]
            try:
                records = future.result()
            except Exception as err:  # noqa: BLE001 - a worker died (out of memory...): say so, keep going
                print(f"{name:32} worker failed: {type(err).__name__}: {err}", flush=True)
                continue
            for record in records:
                print(f"{record['name']:40} " + _summary(record), flush=True)
                previous[record["name"]] = record
            # after every model, so an interrupted sweep keeps what it did
            merged = [previous[k] for k in sorted(previous)]
            (folder / "results.json").write_text(json.dumps(merged, indent=1) + "\n")
            if not args.no_run:
                write_doc(merged, command.strip(), args.doc)
                if args.failures:
                    write_failures(merged, args.failures)
    return 0


def _init_worker() -> None:
    import torch

    torch.set_num_threads(1)  # torch's reference run: one thread, like the workers' BLAS


def _summary(record: dict[str, Any]) -> str:
    if "torch_error" in record:
        return f"torch cannot: {record['torch_error'][:120]}"
    if "export_error" in record:
        return f"EXPORT FAILED: {record['export_error'][:120]}"
    results = record.get("results")
    if not results:
        return "generated"
    return "  ".join(f"{b}={r['status']}" + (f" ({r['error'][:100]})" if r.get("error") else "")
                     for b, r in results.items())


if __name__ == "__main__":
    sys.exit(main())
