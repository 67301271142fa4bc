"""Triton's own, unmodified ``tritonclient.http`` against ``irvm serve``: it reads the server's
and the models' metadata, infers on torchvision's resnet18 (scripted by torch, a model none
of irvm's tests wrote) in binary and in JSON and gets torch's numbers, sees a 400 for a
wrong datatype, and 8 concurrent clients x 250 requests get the single-process answers."""

from __future__ import annotations

import sys
import threading

import numpy as np
import pytest

torch = pytest.importorskip("torch")
http = pytest.importorskip("tritonclient.http")
pytest.importorskip("starlette")
from threadpoolctl import threadpool_limits
from tritonclient.utils import InferenceServerException

from tests.serve.test_command import _start, _stop
from tests.support.paths import EXAMPLES, TOOLS

sys.path.insert(0, str(TOOLS))
import serve_models

import vm


@pytest.fixture(scope="module")
def server():
    proc, port = _start(str(serve_models.resnet18_pt()), str(EXAMPLES / "cnn.pt"), "--instances", "2", "--threads", "1")
    try:
        yield port
    finally:
        assert _stop(proc)[0] == 0


def test_metadata_through_tritonclient(server: int) -> None:
    client = http.InferenceServerClient(f"127.0.0.1:{server}")
    assert client.is_server_live() and client.is_server_ready() and client.is_model_ready("resnet18")
    assert not client.is_model_ready("resnet50")
    assert client.get_server_metadata()["name"] == "irvm"
    meta = client.get_model_metadata("resnet18")
    # the dtype, rank and channels its first convolution implies; the output's are not declared
    assert meta["inputs"] == [{"name": "x", "datatype": "FP32", "shape": [-1, 3, -1, -1]}]
    assert [o["name"] for o in meta["outputs"]] == ["out0"]


@pytest.mark.parametrize("binary", [True, False])
def test_resnet18_answers_as_torch(server: int, binary: bool) -> None:
    client = http.InferenceServerClient(f"127.0.0.1:{server}")
    xs = serve_models.images(3, seed=5)
    for x, expected in zip(xs, serve_models.torch_outputs(xs)):
        given = http.InferInput("x", list(x.shape), "FP32")
        given.set_data_from_numpy(x, binary_data=binary)
        wanted = [http.InferRequestedOutput("out0", binary_data=binary)]
        got = client.infer("resnet18", [given], outputs=wanted).as_numpy("out0")
        assert got.shape == (1, 1000) and got.dtype == np.float32
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4)


def test_a_wrong_datatype_is_a_400_through_tritonclient(server: int) -> None:
    client = http.InferenceServerClient(f"127.0.0.1:{server}")
    given = http.InferInput("x", [1, 1, 28, 28], "FP64")
    given.set_data_from_numpy(np.zeros((1, 1, 28, 28)))
    with pytest.raises(InferenceServerException) as err:
        client.infer("cnn", [given])
    assert err.value.status() == "400" and "input 'x': datatype FP64, but the model takes FP32" in err.value.message()
    assert client.is_server_live()


def test_8_clients_x_250_requests_get_the_single_process_answers(server: int) -> None:
    model = vm.load(EXAMPLES / "cnn.pt")
    rng = np.random.default_rng(1)
    xs = [rng.standard_normal((1 + i % 3, 1, 28, 28)).astype(np.float32) for i in range(16)]
    with threadpool_limits(limits=1, user_api="blas"):  # as the server runs (--threads 1)
        expected = [model.run(None, {"x": x})[0] for x in xs]
    errors, mismatches = [], []

    def client(k: int) -> None:
        c = http.InferenceServerClient(f"127.0.0.1:{server}", network_timeout=120)
        for i in range(250):
            j = (k + i) % len(xs)
            given = http.InferInput("x", list(xs[j].shape), "FP32")
            given.set_data_from_numpy(xs[j])
            try:
                got = c.infer("cnn", [given]).as_numpy("out0")
            except InferenceServerException as err:
                errors.append(err)
                continue
            if not np.array_equal(got, expected[j]):
                mismatches.append(j)

    threads = [threading.Thread(target=client, args=(k,)) for k in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    assert errors == [] and mismatches == []
