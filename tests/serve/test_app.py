"""The ASGI app (vm/serve/asgi.py) over models opened by ``vm.load``: the protocol's routes,
its errors (4xx naming the problem for a bad request, 500 for a failing run, and the
server answering the next request either way), the metrics, the request log, and dynamic
batching giving the unbatched answers."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("httpx")  # starlette's TestClient
from starlette.testclient import TestClient

import vm
from tests.support.paths import EXAMPLES
from vm.serve import ServedModel, ServeOptions, app
from vm.serve.metrics import Metrics

RELU = """graph(%x.1 : Float(*, 3)):
  %r.1 : Tensor = aten::relu(%x.1)
  return (%r.1)
"""
# x @ x: any (n, 3) input passes the protocol's checks, and only a 3x3 one runs
SQUARE = """graph(%x.1 : Float(*, 3)):
  %y.1 : Tensor = aten::mm(%x.1, %x.1)
  return (%y.1)
"""
AFFINE = """graph(%x.1 : Tensor, %k.1 : int):
  %1 : int = prim::Constant[value=1]()
  %y.1 : Tensor = aten::mul(%x.1, %k.1)
  %z.1 : Tensor = aten::add(%y.1, %1, %1)
  %d.1 : int[] = prim::ListConstruct(%1)
  %t.1 : bool = prim::Constant[value=1]()
  %none : NoneType = prim::Constant()
  %s.1 : Tensor = aten::sum(%x.1, %d.1, %t.1, %none)
  return (%z.1, %s.1)
"""
TOTAL = """graph(%x.1 : Tensor):
  %t.1 : Tensor = aten::sum(%x.1)
  return (%t.1)
"""


def _load(tmp_path: Path, name: str, text: str) -> vm.Model:
    path = tmp_path / f"{name}.ir"
    path.write_text(text)
    return vm.load(path)


@pytest.fixture
def client(tmp_path: Path):
    models = {"relu": _load(tmp_path, "relu", RELU), "square": _load(tmp_path, "square", SQUARE),
              "affine": _load(tmp_path, "affine", AFFINE), "cnn": vm.load(EXAMPLES / "cnn.pt")}
    with TestClient(app(models, options=ServeOptions(instances=2), max_body_bytes=4096)) as c:
        yield c


def _infer(x: np.ndarray, name: str = "x.1", datatype: str = "FP32") -> dict:
    return {"inputs": [{"name": name, "datatype": datatype, "shape": list(x.shape), "data": x.reshape(-1).tolist()}]}


def test_health_server_and_model_metadata(client: TestClient) -> None:
    assert client.get("/v2/health/live").json() == {"live": True}
    assert client.get("/v2/health/ready").status_code == 200
    assert client.get("/v2").json()["extensions"] == ["binary_tensor_data"]
    meta = client.get("/v2/models/relu").json()
    assert meta["name"] == "relu" and meta["versions"] == ["1"]
    assert meta["inputs"] == [{"name": "x.1", "datatype": "FP32", "shape": [-1, 3]}]
    assert meta["outputs"][0]["name"] == "out0"
    assert client.get("/v2/models/relu/versions/1/ready").json() == {"name": "relu", "ready": True}
    assert client.get("/v2/models/nope/ready").status_code == 404


def test_infer_in_json_matches_the_model(client: TestClient) -> None:
    x = np.array([[1, -2, 3], [-4, 5, -6]], np.float32)
    r = client.post("/v2/models/relu/infer", json={**_infer(x), "id": "7"})
    assert r.status_code == 200
    out = r.json()
    assert out["id"] == "7" and out["model_name"] == "relu"
    assert out["outputs"] == [{"name": "out0", "datatype": "FP32", "shape": [2, 3], "data": [1, 0, 3, 0, 5, 0]}]


def test_malformed_requests_get_4xx_and_the_server_keeps_serving(client: TestClient) -> None:
    x = np.ones((1, 3), np.float32)
    cases = [
        ("relu", b"{oops", 400, "not JSON"),
        ("relu", _infer(x, datatype="FP64"), 400, "datatype FP64"),
        ("relu", _infer(np.ones((1, 4), np.float32)), 400, "shape [1, 4]"),
        ("relu", _infer(x, name="y"), 400, "unknown input 'y'"),
        ("nope", _infer(x), 404, "unknown model 'nope'"),
        ("relu", _infer(np.ones((600, 3), np.float32)), 413, "over this server's limit of 4096 bytes"),
        # the dtype a scripted .pt's first convolution implies (vm.load's NodeArg)
        ("cnn", _infer(np.ones((1, 1, 28, 28)), name="x", datatype="FP64"), 400, "datatype FP64, but the model takes FP32"),
        # what the program refuses before its first operator (the checks of irvm run)
        ("affine", _infer(x), 400, "missing input(s) 'k.1'"),
    ]
    for model, body, status, says in cases:
        r = (client.post(f"/v2/models/{model}/infer", content=body) if isinstance(body, bytes)
             else client.post(f"/v2/models/{model}/infer", json=body))
        assert r.status_code == status and says in r.json()["error"], (model, r.json())
        assert client.post("/v2/models/relu/infer", json=_infer(x)).status_code == 200


def test_a_failing_run_is_500_and_the_next_request_runs(client: TestClient) -> None:
    r = client.post("/v2/models/square/infer", json=_infer(np.ones((2, 3), np.float32)))
    assert r.status_code == 500 and "aten::mm" in r.json()["error"]
    ok = client.post("/v2/models/square/infer", json=_infer(np.eye(3, dtype=np.float32)))
    assert ok.status_code == 200 and ok.json()["outputs"][0]["data"] == np.eye(3).reshape(-1).tolist()


def test_binary_request_and_binary_outputs_when_asked(client: TestClient) -> None:
    x = np.array([[1, -2, 3]], np.float32)
    head = (b'{"inputs":[{"name":"x.1","datatype":"FP32","shape":[1,3],"parameters":{"binary_data_size":12}}],'
            b'"outputs":[{"name":"out0","parameters":{"binary_data":true}}]}')
    r = client.post("/v2/models/relu/infer", content=head + x.tobytes(),
                    headers={"Inference-Header-Content-Length": str(len(head))})
    n = int(r.headers["inference-header-content-length"])
    assert r.headers["content-type"] == "application/octet-stream"
    assert r.content[:n].startswith(b"{")
    assert np.frombuffer(r.content[n:], np.float32).tolist() == [1, 0, 3]


def test_metrics_and_the_request_log(client: TestClient, caplog: pytest.LogCaptureFixture) -> None:
    x = np.ones((1, 3), np.float32)
    with caplog.at_level(logging.INFO, logger="irvm.serve"):
        client.post("/v2/models/relu/infer", json=_infer(x))
        client.post("/v2/models/relu/infer", json=_infer(x, name="y"))
    assert any("POST /v2/models/relu/infer 200" in m for m in caplog.messages)
    assert any("POST /v2/models/relu/infer 400" in m for m in caplog.messages)
    text = client.get("/metrics").text
    assert 'irvm_requests_total{model="relu"} 2' in text
    assert 'irvm_request_failures_total{model="relu",code="400"} 1' in text
    assert 'irvm_request_duration_seconds_count{model="relu"} 2' in text
    assert 'irvm_queue_duration_seconds_count{model="relu"} 1' in text
    assert 'irvm_batch_size_bucket{model="relu",le="1"} 1' in text


def _concurrently(served: ServedModel, feeds: list[dict]) -> list[list[np.ndarray]]:
    barrier = threading.Barrier(len(feeds))
    results: list = [None] * len(feeds)

    def one(i: int) -> None:
        barrier.wait()
        results[i] = served.submit(feeds[i], None).result(timeout=60)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(feeds))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    return results


def test_dynamic_batching_stacks_requests_and_gives_the_unbatched_answers(tmp_path: Path) -> None:
    model = _load(tmp_path, "affine", AFFINE)
    metrics = Metrics()
    served = ServedModel("affine", model, ServeOptions(instances=1, max_batch_size=8, batch_delay_ms=200), metrics)
    rng = np.random.default_rng(0)
    # six stackable (rows of 3 floats, k=2), one of another width, one with another k: three runs at least
    feeds = [{"x.1": rng.standard_normal((1 + i % 2, 3)).astype(np.float32), "k.1": np.array(2)} for i in range(6)]
    feeds += [{"x.1": rng.standard_normal((2, 5)).astype(np.float32), "k.1": np.array(2)},
              {"x.1": rng.standard_normal((1, 3)).astype(np.float32), "k.1": np.array(3)}]
    try:
        got = _concurrently(served, feeds)
    finally:
        served.close()
    for f, outputs in zip(feeds, got):
        expected = model.run(None, f)
        assert len(outputs) == 2 and all(np.array_equal(g, e) for g, e in zip(outputs, expected))
    batches = metrics.batch["affine"]
    assert batches.total == 8 and batches.count < 8  # eight requests, fewer runs: some were stacked


def test_a_model_whose_outputs_drop_the_batch_axis_runs_each_request_alone(tmp_path: Path) -> None:
    model = _load(tmp_path, "total", TOTAL)
    served = ServedModel("total", model, ServeOptions(max_batch_size=4, batch_delay_ms=200))
    feeds = [{"x.1": np.full((1, 2), i, np.float32)} for i in range(4)]
    try:
        got = _concurrently(served, feeds)
    finally:
        served.close()
    assert [float(g[0]) for g in got] == [0.0, 2.0, 4.0, 6.0]
