"""tools/bench_runtimes.py: ``--only`` runs just the named rows and writes them when asked.

A smoke run with a tiny budget (the numbers are not checked, only that every column ran
the row, that the results file holds exactly that row, and that the batch count the
timing used is the one the file reports)."""

from __future__ import annotations

import importlib.util
import json

from tests.support.paths import ROOT


def _bench():
    spec = importlib.util.spec_from_file_location("bench_runtimes", ROOT / "tools" / "bench_runtimes.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_only_runs_the_named_rows_and_writes_them(tmp_path, capsys) -> None:
    bench = _bench()
    out = tmp_path / "rows"
    assert bench.main(["--quick", "--batches", "3", "--only", "loop100", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert printed.count("\n") == 1 and printed.startswith("loop100 n=16")
    data = json.loads(out.with_suffix(".json").read_text())
    assert [r["case"] for r in data["results"]] == ["loop100 n=16"]
    assert {"numpy", "interpreter", "static"} <= set(data["results"][0]["seconds"])
    assert data["meta"]["batches"] == 3 and data["dispatch"] is None
    assert "best of 3 interleaved batches" in out.with_suffix(".md").read_text()


def test_only_without_out_writes_no_results_file(tmp_path, monkeypatch, capsys) -> None:
    bench = _bench()
    written = []
    monkeypatch.setattr(bench, "write_results", lambda *a, **k: written.append(a))
    assert bench.main(["--quick", "--batches", "2", "--only", "ratio_iou n=10"]) == 0
    assert not written
    rows = capsys.readouterr().out.splitlines()
    assert len(rows) == 1 and rows[0].split()[:2] == ["ratio_iou", "n=10"], "n=10 is not a prefix match of n=1000"


def test_a_case_selects_its_row_or_the_rows_it_names() -> None:
    bench = _bench()
    labels = [label for label, _, _ in bench.cases()]
    assert [x for x in labels if bench._selects("mlp3", x)] == ["mlp3 b=1", "mlp3 b=256"]
    assert [x for x in labels if bench._selects("lstm_cell b=64", x)] == ["lstm_cell b=64 h=256"]
    assert [x for x in labels if bench._selects("ratio_iou n=10", x)] == ["ratio_iou n=10"]


def test_peer_names_the_rows_of_issue_16() -> None:
    """``--only peer`` is the CNN at batch 1 and 32, the MLP at 256, ratio_iou at 1e5 and
    BERT-tiny, and every one of them is a row the benchmark has (with torch installed)."""
    bench = _bench()
    if bench.torch is None:
        import pytest

        pytest.skip("the CNN and BERT rows need torch to script them")
    labels = [label for label, _, _ in bench.cases()]
    assert set(bench.PEER) <= set(labels)
    assert [x for x in labels if any(bench._selects(c, x) for c in bench.PEER)] == [
        "ratio_iou n=100000", "mlp3 b=256", "cnn2 b=1", "cnn2 b=32", "bert-tiny s=16"]


def test_the_cnn_row_runs_every_engine_with_the_same_result(tmp_path, capsys) -> None:
    """The 2-conv CNN row runs in irvm's two backends, torch.jit, torch's Static Runtime
    and ONNX Runtime, and all give torch.jit's numbers."""
    import numpy as np
    import pytest

    bench = _bench()
    if bench.torch is None:
        pytest.skip("the CNN row needs torch to script it")
    pytest.importorskip("onnxruntime")
    [(_, program, inputs)] = [c for c in bench.cases() if c[0] == "cnn2 b=1"]
    columns = bench.runners(program)
    columns["ORT"] = bench.onnx_runner(bench.TORCH_ONLY[program], inputs)
    results = {name: fn(*inputs) for name, fn in columns.items()}
    expected = results.pop("torch.jit").numpy()
    assert set(results) == {"interpreter", "static", "torch static", "ORT"}
    for name, got in results.items():
        got = got[0] if isinstance(got, list) else got
        np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-4, atol=1e-5, err_msg=name)
