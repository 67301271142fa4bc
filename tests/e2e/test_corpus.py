"""The differential corpus: real torch 2.13 dumps run through irvm, compared with torch.

Every program of ``tests/data/corpus/`` (written by ``tools/gen_corpus.py``) is compiled with
``compiler.compile_source`` and run on both backends, the bytecode interpreter and the
static runtime, and on the interpreter in three more ways (after an ``.irbc`` round trip,
unoptimized, on its reference loop).  Its outputs must equal what torch returned: same
kinds (an int stays an int, a 0-d tensor a 0-d array), same dtypes and shapes, floats
within float32 tolerance, everything else exactly.  A program whose torch run raised must
raise ``RunError`` carrying torch's message.  Every program also goes through ``irvm run``
(its ``main()``, in-process) on both backends, and a sample through the real command.

A backend that cannot be imported yet (``vm.Interpreter``, ``vm.StaticRuntime``) is
skipped with that reason; any other failure fails.
"""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from compiler.parser import parse
from tests.support.paths import CORPUS, ROOT
from vm.files.npz import compare_flat, flatten_outputs, load_inputs, outputs_as_list, read_npz
from vm.ir.printer import print_module
from vm.program import irbc

MANIFEST: list[dict[str, Any]] = json.loads((CORPUS / "manifest.json").read_text())
NAMES = [rec["name"] for rec in MANIFEST]
BACKENDS = ["interp", "static"]
RTOL, ATOL = 1e-4, 1e-5

# The command-line runs (each costs a process start): one per family, both backends.
CLI_SAMPLE = [("x2", "interp"), ("lstm_cell", "static"), ("dict_ops", "interp"), ("mlp", "static"),
              ("cnn_frozen", "interp"), ("raise_taken", "static")]


def runtime_class(backend: str) -> Any:
    """The backend's runtime class, or a visible skip when it cannot be imported yet."""
    name = "Interpreter" if backend == "interp" else "StaticRuntime"
    try:
        import vm

        return getattr(vm, name)
    except (ImportError, AttributeError) as err:
        pytest.skip(f"vm.{name} cannot be imported yet: {err}")


def record(name: str) -> dict[str, Any]:
    return next(rec for rec in MANIFEST if rec["name"] == name)


def expected_error_text(name: str) -> str:
    """torch's message without its exception class (``builtins.ValueError: msg`` -> ``msg``)."""
    line = (CORPUS / f"{name}.error.txt").read_text().strip()
    return line.split(": ", 1)[1] if ": " in line else line


@functools.cache
def compiled(name: str, optimize: bool = True) -> Any:
    """The Program of one corpus file (immutable, so every backend shares it);
    ``optimize=False`` runs no pass at all."""
    import compiler

    path = CORPUS / f"{name}.ir"
    return compiler.compile_source(path.read_text(), str(path), passes=None if optimize else [])


# Each way of running a program: the two backends, and the interpreter on the program as
# saved to .irbc and loaded back (no IR module: inputs come from its signature), compiled
# with no optimization pass (the passes must not change results), and on its reference
# loop (each opcode as defined, as `irvm run --trace` uses).
VARIANTS = [*BACKENDS, "irbc", "unoptimized", "reference"]


def run_program(name: str, variant: str, scratch: Path | None = None) -> tuple[Any, Any]:
    """Compile and run one corpus program; returns (program, raw result)."""
    cls = runtime_class("static" if variant == "static" else "interp")
    program = compiled(name, optimize=variant != "unoptimized")
    if variant == "irbc":
        import vm

        assert scratch is not None
        vm.save(program, scratch / f"{name}.irbc")
        program = irbc.load(scratch / f"{name}.irbc")
    weights_path = CORPUS / f"{name}.weights.npz"
    weights = read_npz(weights_path) if weights_path.exists() else None
    inputs = load_inputs(CORPUS / f"{name}.inputs.npz", program)
    runtime = cls(program, weights)
    if variant == "reference":
        return program, runtime.run_traced(*inputs)[0]
    return program, runtime(*inputs)


@pytest.mark.parametrize("backend", VARIANTS)
@pytest.mark.parametrize("name", NAMES)
def test_corpus_program_matches_torch(name: str, backend: str, tmp_path: Path) -> None:
    """irvm's outputs equal torch's (kinds, dtypes, shapes, values), or it raises torch's error."""
    from compiler.diagnostics import RunError

    if record(name)["error"] is not None:
        runtime_class("static" if backend == "static" else "interp")
        with pytest.raises(RunError) as info:
            run_program(name, backend, tmp_path)
        assert expected_error_text(name) in str(info.value)
        return
    program, result = run_program(name, backend, tmp_path)
    n_outputs = program.n_outputs
    actual = flatten_outputs(outputs_as_list(result, n_outputs))
    problems = compare_flat(read_npz(CORPUS / f"{name}.expected.npz"), actual, RTOL, ATOL)
    assert not problems, f"{name} on {backend}:\n  " + "\n  ".join(problems)


def cli_argv(name: str, backend: str, out: Path) -> list[str]:
    """``irvm run`` arguments for one corpus program (without the leading ``irvm``)."""
    argv = ["run", str(CORPUS / f"{name}.ir"), "--inputs", str(CORPUS / f"{name}.inputs.npz"),
            "--output", str(out), "--backend", backend]
    if (CORPUS / f"{name}.weights.npz").exists():
        argv += ["--weights", str(CORPUS / f"{name}.weights.npz")]
    return argv


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", NAMES)
def test_corpus_program_through_irvm_main(
    name: str, backend: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`irvm run` (its main(), in-process) writes torch's outputs, or exits 1 with torch's message."""
    runtime_class(backend)
    from vm.cli import main

    out = tmp_path / "out.npz"
    code = main(cli_argv(name, backend, out))
    err = capsys.readouterr().err
    if record(name)["error"] is not None:
        assert code == 1 and expected_error_text(name) in err, err
        return
    assert code == 0, err
    problems = compare_flat(read_npz(CORPUS / f"{name}.expected.npz"), read_npz(out), RTOL, ATOL)
    assert not problems, f"{name} on {backend}:\n  " + "\n  ".join(problems)


@pytest.mark.parametrize(("name", "backend"), CLI_SAMPLE)
def test_corpus_program_through_irvm_run(name: str, backend: str, tmp_path: Path) -> None:
    """`irvm run X.ir --inputs --weights --output` as a process: torch's outputs, or exit 1."""
    runtime_class(backend)
    out = tmp_path / "out.npz"
    cmd = [sys.executable, "-m", "vm.cli", *cli_argv(name, backend, out)]
    proc = subprocess.run(cmd, check=False, capture_output=True, text=True, cwd=ROOT)
    if record(name)["error"] is not None:
        assert proc.returncode == 1, proc.stderr
        assert expected_error_text(name) in proc.stderr
        return
    assert proc.returncode == 0, proc.stderr
    problems = compare_flat(read_npz(CORPUS / f"{name}.expected.npz"), read_npz(out), RTOL, ATOL)
    assert not problems, "\n".join(problems)


def test_manifest_lists_every_case_with_its_files() -> None:
    """Each case has its dump, inputs, and exactly one of expected outputs or error text."""
    assert len(NAMES) >= 40 and len(set(NAMES)) == len(NAMES)
    for rec in MANIFEST:
        name = rec["name"]
        assert (CORPUS / f"{name}.ir").exists() and (CORPUS / f"{name}.inputs.npz").exists()
        has_expected = (CORPUS / f"{name}.expected.npz").exists()
        has_error = (CORPUS / f"{name}.error.txt").exists()
        assert has_expected != has_error, name
        assert has_error == (rec["error"] is not None), name
        assert (CORPUS / f"{name}.weights.npz").exists() == rec["weights"], name


def test_corpus_covers_the_claimed_features() -> None:
    """Every feature of the table has at least one program, and every mode is present."""
    sys.path.insert(0, str(ROOT / "tools"))
    from corpus_programs import FEATURES

    covered = {f for rec in MANIFEST for f in rec["features"]}
    assert covered == set(FEATURES)
    assert {rec["mode"] for rec in MANIFEST} == {"script", "script-calls", "trace", "freeze"}


@pytest.mark.parametrize("name", NAMES)
def test_corpus_dump_round_trips_through_the_printer(name: str) -> None:
    """print(parse(print(parse(t)))) == print(parse(t)) on every real dump."""
    text = (CORPUS / f"{name}.ir").read_text()
    once = print_module(parse(text, f"{name}.ir"))
    assert print_module(parse(once, f"{name}.ir")) == once


@pytest.mark.torch
def test_corpus_is_not_stale() -> None:
    """Re-exporting every case with torch gives the stored dumps and inputs (run gen_corpus.py)."""
    pytest.importorskip("torch")
    sys.path.insert(0, str(ROOT / "tools"))
    import gen_corpus

    stale = [name for name in NAMES if not gen_corpus.matches_stored(name)]
    assert not stale, f"regenerate with `python tools/gen_corpus.py`: {stale}"
    assert [c.name for c in gen_corpus.corpus_programs.CASES] == NAMES


def test_feature_table_lists_every_feature_and_program() -> None:
    """docs/features.md names every corpus program and feature (rerun tools/feature_table.py)."""
    sys.path.insert(0, str(ROOT / "tools"))
    from corpus_programs import FEATURES

    doc = (ROOT / "docs" / "features.md").read_text()
    missing = [f"`{n}`" for n in NAMES if f"`{n}`" not in doc] + [f for f in FEATURES if f"| {f} |" not in doc]
    assert not missing, f"stale docs/features.md, run `python tools/feature_table.py`: {missing}"
