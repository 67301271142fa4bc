"""irvm on a local Ray cluster (vm/serve/on_ray.py), ``ray.init(num_cpus=2)``, one cluster for
the module: Ray Data batch inference of 2,000 rows through ``Predictor`` equals the
single-process runs of the same batches, the model's bytes travelling with the task (the
workers are given no path); the Ray Serve deployment answers the protocol from two
replicas with the single-process answers.  Marked ``ray``: they run where the ``ray``
extra is installed (``pytest -m ray``)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")
pytest.importorskip("ray.data")
serve = pytest.importorskip("ray.serve")
pytest.importorskip("starlette")

import vm
from tests.support.paths import EXAMPLES, ROOT
from vm.serve.on_ray import ModelFile, Predictor, deployment

pytestmark = pytest.mark.ray

ROWS, BATCH = 2000, 250


@pytest.fixture(scope="module")
def cluster():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    try:
        yield
    finally:
        try:
            serve.shutdown()
        finally:
            ray.shutdown()


def test_ray_data_batch_inference_of_2000_rows_equals_the_single_process_runs(cluster: None, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    images = rng.standard_normal((ROWS, 1, 28, 28)).astype(np.float32)
    # blocks of BATCH rows and batches of BATCH rows: each batch is one block, rows in order
    ds = ray.data.from_items([{"id": i, "x": images[i]} for i in range(ROWS)], override_num_blocks=ROWS // BATCH)
    model = ModelFile.read(EXAMPLES / "cnn.pt")
    out = ds.map_batches(Predictor, fn_constructor_kwargs={"model": model}, concurrency=2, batch_size=BATCH,
                         num_cpus=1).take_all()
    assert len(out) == ROWS and set(out[0]) == {"id", "out0"}
    out.sort(key=lambda row: row["id"])
    got = np.stack([row["out0"] for row in out])
    expected = _single_process(images, tmp_path)
    assert got.shape == (ROWS, 10) and np.array_equal(got, expected)


def _single_process(images: np.ndarray, tmp_path: Path) -> np.ndarray:
    """The same batches run by one process with one BLAS thread, as Ray's workers run
    (Ray sets OMP_NUM_THREADS=1 for them; a matrix product split over threads rounds differently)."""
    np.save(tmp_path / "images.npy", images)
    code = (
        "import sys, numpy as np, vm\n"
        f"x = np.load(sys.argv[1]); m = vm.load(sys.argv[2])\n"
        f"np.save(sys.argv[3], np.concatenate([m.run(None, {{'x': x[i:i + {BATCH}]}})[0]"
        f" for i in range(0, len(x), {BATCH})]))\n"
    )
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHONPATH": str(ROOT)}
    subprocess.run([sys.executable, "-c", code, str(tmp_path / "images.npy"), str(EXAMPLES / "cnn.pt"),
                    str(tmp_path / "out.npy")], env=env, check=True, timeout=300)
    return np.load(tmp_path / "out.npy")


def test_a_predictor_given_a_path_no_worker_has_says_to_send_the_bytes() -> None:
    with pytest.raises(vm.core.errors.RunError, match=r"ModelFile.read\('/nowhere/m.pt'\)"):
        Predictor("/nowhere/m.pt")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_serve_deployment_answers_the_protocol_from_two_replicas(cluster: None) -> None:
    port = _free_port()
    serve.start(http_options={"host": "127.0.0.1", "port": port})
    try:
        application = deployment({"cnn": ModelFile.read(EXAMPLES / "cnn.pt")}, num_replicas=2, cpus_per_replica=0.5)
        serve.run(application, route_prefix="/")
        base = f"http://127.0.0.1:{port}/v2"
        with urllib.request.urlopen(f"{base}/models/cnn/ready", timeout=60) as r:
            assert json.loads(r.read())["ready"] is True
        local = vm.load(EXAMPLES / "cnn.pt")
        rng = np.random.default_rng(2)
        for n in (1, 3, 2, 1):
            x = rng.standard_normal((n, 1, 28, 28)).astype(np.float32)
            body = {"inputs": [{"name": "x", "datatype": "FP32", "shape": list(x.shape), "data": x.ravel().tolist()}]}
            request = urllib.request.Request(f"{base}/models/cnn/infer", data=json.dumps(body).encode(), method="POST")
            with urllib.request.urlopen(request, timeout=60) as r:
                out = json.loads(r.read())["outputs"][0]
            got = np.array(out["data"], np.float32).reshape(out["shape"])
            assert np.array_equal(got, local.run(None, {"x": x})[0])
        status = serve.status().applications["default"].deployments["irvm"]
        assert status.replica_states.get("RUNNING") == 2
    finally:
        serve.shutdown()


def test_the_environment_of_the_cluster_is_this_checkout(cluster: None) -> None:
    """The workers import this tree's vm (the runtime_env above), not another checkout's."""

    @ray.remote(num_cpus=0)
    def where() -> str:
        import vm as worker_vm

        return os.path.dirname(os.path.dirname(worker_vm.__file__))

    assert ray.get(where.remote(), timeout=120) == str(ROOT)
