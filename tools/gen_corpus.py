"""Regenerate the differential corpus ``tests/data/corpus/`` from ``tools/corpus_programs.py``.

    python tools/gen_corpus.py            # every case; stale files are removed
    python tools/gen_corpus.py x2 mlp     # only these cases

For each case we script (or trace, or freeze) the program with torch, and write

    NAME.ir             the inlined graph as torch prints it
    NAME.inputs.npz     the sample inputs (conventions of vm/files/npz.py)
    NAME.weights.npz    module weights and printed-away tensor constants, when any
    NAME.expected.npz   torch's outputs, flattened as out0, out0.0, ... with a __spec__
    NAME.error.txt      instead of expected, when torch raises: its last message line

and ``manifest.json``: one record per case (features, how it was compiled, its files),
which tests/e2e/test_corpus.py and tools/feature_table.py read.  Each case runs under
``torch.manual_seed(crc32(name))``, so a rerun writes identical arrays.
"""

from __future__ import annotations

import json
import os
import re
import sys
import zlib
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

import corpus_programs
from export_torch import Export, export, write

from vm.files.npz import compare_flat, flatten_outputs, flatten_values, read_npz

CORPUS = ROOT / "tests" / "data" / "corpus"
SUFFIXES = (".ir", ".inputs.npz", ".weights.npz", ".expected.npz", ".error.txt")


def export_case(case: corpus_programs.Case) -> Export:
    """Script/trace/freeze one case and run torch on its seeded sample inputs."""
    torch.manual_seed(zlib.crc32(case.name.encode()))
    args = case.inputs()
    return export(case.target, case.name, args, trace=case.trace, freeze=case.freeze,
                  source_dir=ROOT / "tools", base=ROOT, inline=case.inline)


def matches_stored(name: str, outdir: Path = CORPUS) -> bool:
    """Whether re-exporting case ``name`` gives the stored dump and inputs."""
    case = next(c for c in corpus_programs.CASES if c.name == name)
    exp = export_case(case)
    if _unmangled((outdir / f"{name}.ir").read_text()) != _unmangled(exp.ir):
        return False
    stored = read_npz(outdir / f"{name}.inputs.npz")
    fresh = flatten_values(exp.inputs)
    # Inputs made with float math (ratio_iou's exp of randn) differ by an ulp between CPU
    # kinds, since torch picks its vectorized kernel by ISA: equal up to float32 rounding.
    return not compare_flat(fresh, stored, rtol=1e-6, atol=0.0)


def _unmangled(text: str) -> str:
    # ___torch_mangle_N numbers count the classes scripted so far in the process, and
    # aten::warn's warn_id the warnings compiled so far, so both depend on what ran before;
    # they carry no meaning for irvm.
    text = re.sub(r"warn_id=\d+", "warn_id=N", text)
    return re.sub(r"___torch_mangle_\d+\.", "", text).rstrip("\n")


def generate(case: corpus_programs.Case, outdir: Path) -> dict:
    """Export one case into ``outdir``; returns its manifest record."""
    exp = export_case(case)
    paths = write(exp, outdir)
    record = {
        "name": case.name,
        "features": list(case.features),
        "mode": "freeze" if case.freeze else "trace" if case.trace else "script" if case.inline else "script-calls",
        "module": exp.is_module,
        "weights": "weights" in paths,
        "outputs": None if exp.outputs is None else len(exp.outputs),
        "error": exp.error,
    }
    if exp.error is not None:
        (outdir / f"{case.name}.error.txt").write_text(exp.error + "\n")
    else:
        assert exp.outputs is not None
        np.savez(outdir / f"{case.name}.expected.npz", **flatten_outputs(exp.outputs))
    return record


def remove_stale(outdir: Path, names: set[str]) -> None:
    for path in outdir.iterdir():
        for suffix in SUFFIXES:
            if path.name.endswith(suffix) and path.name[: -len(suffix)] not in names:
                path.unlink()


def main(argv: list[str]) -> int:
    os.chdir(ROOT)  # source paths in the dumps become tools/corpus_programs.py:L:C
    CORPUS.mkdir(parents=True, exist_ok=True)
    wanted = set(argv)
    manifest_path = CORPUS / "manifest.json"
    old = json.loads(manifest_path.read_text()) if manifest_path.exists() and wanted else []
    records = {rec["name"]: rec for rec in old}
    failed: list[str] = []
    for case in corpus_programs.CASES:
        if wanted and case.name not in wanted:
            continue
        for suffix in (".expected.npz", ".error.txt", ".weights.npz"):
            (CORPUS / f"{case.name}{suffix}").unlink(missing_ok=True)
        try:
            records[case.name] = generate(case, CORPUS)
        except Exception as err:  # noqa: BLE001 - report every broken case in one run, then fail
            failed.append(case.name)
            print(f"{case.name:24} FAILED: {type(err).__name__}: {str(err).strip()[:2000]}")
            continue
        status = "raises" if records[case.name]["error"] else "ok"
        print(f"{case.name:24} {records[case.name]['mode']:7} {status}")
    order = [c.name for c in corpus_programs.CASES]
    manifest = [records[n] for n in order if n in records]
    manifest_path.write_text(json.dumps(manifest, indent=1) + "\n")
    if not wanted and not failed:
        remove_stale(CORPUS, set(order))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
