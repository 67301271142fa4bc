"""What a request may make ``irvm serve`` spend (issue #40): JSON nesting is bounded before
parsing, a request past its deadline is answered 504 while the server keeps serving, and
SIGTERM stops the server within its grace even with a run that never ends.

A stuck run is made deterministic with ``_Gated``: a real model whose ``run`` first waits
for the test to open a gate (nothing is faked but the wait), so no test depends on how
fast the machine is.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from starlette.testclient import TestClient

import vm
from tests.support.paths import ROOT, TOOLS
from vm.serve import ServedModel, ServeOptions, app
from vm.serve.protocol import MAX_JSON_DEPTH, ProtocolError, decode_request, json_depth

sys.path.insert(0, str(TOOLS))
from load_test import read_ready_port

RELU = "graph(%x.1 : Float(*, 3)):\n  %r.1 : Tensor = aten::relu(%x.1)\n  return (%r.1)\n"
# a loop of n tanh: n = 2^62 runs as long as the machine does
SPIN = """graph(%x.1 : Tensor, %n.1 : int):
  %true : bool = prim::Constant[value=1]()
  %y.1 : Tensor = prim::Loop(%n.1, %true, %x.1)
    block0(%i.1 : int, %acc.1 : Tensor):
      %acc.2 : Tensor = aten::tanh(%acc.1)
      -> (%true, %acc.2)
  return (%y.1)
"""


class _Gated:
    """``model``, whose runs wait for ``gate`` first (a run stuck until the test says)."""

    def __init__(self, model: Any) -> None:
        self.model, self.gate, self.started = model, threading.Event(), threading.Event()
        self.inputs, self.outputs = model.inputs, model.outputs

    def run(self, names: Any, feeds: Any) -> Any:
        self.started.set()
        self.gate.wait()
        return self.model.run(names, feeds)


@contextmanager
def _opened_at_the_end(gated: _Gated) -> Iterator[None]:
    """Open ``gated``'s gate when the block ends, failed or not (closing the app waits for
    the run)."""
    try:
        yield
    finally:
        gated.gate.set()


def _body(x: np.ndarray, **parameters: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"inputs": [{"name": "x.1", "datatype": "FP32", "shape": list(x.shape),
                                        "data": x.reshape(-1).tolist()}]}
    if parameters:
        body["parameters"] = parameters
    return body


@pytest.fixture
def relu(tmp_path: Path) -> vm.Model:
    (tmp_path / "relu.ir").write_text(RELU)
    return vm.load(tmp_path / "relu.ir")


def test_100000_nested_brackets_are_a_400_naming_the_depth(relu: vm.Model) -> None:
    """The campaign's body: a RecursionError inside json.loads, answered 500."""
    nested = b'{"inputs": [{"name": "x.1", "datatype": "FP32", "shape": [1, 3], "data": ' + b"[" * 100_000 + b"]" * 100_000 + b"}]}"
    with TestClient(app({"relu": relu})) as client:
        r = client.post("/v2/models/relu/infer", content=nested)
        assert r.status_code == 400
        assert r.json()["error"] == (f"the request's JSON nests 100003 levels deep; irvm reads at most {MAX_JSON_DEPTH} "
                                     "(a tensor's 'data' may nest once per dimension)")
        assert client.post("/v2/models/relu/infer", json=_body(np.ones((1, 3), np.float32))).status_code == 200


def test_the_depth_counts_brackets_outside_strings_only() -> None:
    assert json_depth(b'{"a": "' + b"[" * 500 + b'\\"[[", "b": [[1], {"c": []}]}') == 4
    assert json_depth(b"[" * 101 + b"]" * 101) == 101
    deep_data = [[[[[1.0, 2.0, 3.0]]]]]  # nested rows, as the protocol allows
    spec = vm.serve.protocol.TensorSpec("x.1", "FP32", (-1, -1, -1, -1, 3), None)
    request = decode_request(json.dumps({"inputs": [{"name": "x.1", "datatype": "FP32", "shape": [1, 1, 1, 1, 3],
                                                     "data": deep_data}]}).encode(), None, [spec], [])
    assert request.feeds["x.1"].shape == (1, 1, 1, 1, 3)


def test_a_request_past_the_servers_timeout_is_504_and_the_server_keeps_serving(relu: vm.Model) -> None:
    gated = _Gated(relu)
    stuck = ServedModel("stuck", gated, ServeOptions(request_timeout=0.05))
    with TestClient(app([stuck, ServedModel("relu", relu)])) as client, _opened_at_the_end(gated):
        x = np.ones((1, 3), np.float32)
        r = client.post("/v2/models/stuck/infer", json=_body(x))
        assert r.status_code == 504
        assert r.json()["error"] == ("model 'stuck' did not answer within 0.05 s (the server's --request-timeout "
                                     "or the request's 'timeout' parameter)")
        assert gated.started.wait(60)  # its run started, and is still running
        assert client.post("/v2/models/relu/infer", json=_body(x)).status_code == 200
        # the stuck run holds the model's one thread: the next request waits in the queue
        # past its deadline, and is cancelled there
        assert client.post("/v2/models/stuck/infer", json=_body(x)).status_code == 504
        assert 'irvm_request_failures_total{model="stuck",code="504"} 2' in client.get("/metrics").text


def test_the_requests_timeout_parameter_asks_for_less(relu: vm.Model) -> None:
    gated = _Gated(relu)
    with TestClient(app([ServedModel("stuck", gated)])) as client, _opened_at_the_end(gated):
        x = np.ones((1, 3), np.float32)
        r = client.post("/v2/models/stuck/infer", json=_body(x, timeout=20_000))  # microseconds, as Triton's
        assert r.status_code == 504 and "within 0.02 s" in r.json()["error"]
        for bad in (0, -5, "soon", True):
            r = client.post("/v2/models/stuck/infer", json=_body(x, timeout=bad))
            assert r.status_code == 400 and "'timeout' parameter" in r.json()["error"], bad
        gated.gate.set()
        assert client.post("/v2/models/stuck/infer", json=_body(x, timeout=60_000_000)).status_code == 200


def test_close_gives_a_stuck_run_its_grace_and_reports_it(relu: vm.Model) -> None:
    gated = _Gated(relu)
    served = ServedModel("stuck", gated, ServeOptions(instances=1))
    running = served.submit({"x.1": np.ones((1, 3), np.float32)}, None)
    queued = served.submit({"x.1": np.ones((1, 3), np.float32)}, None)
    assert gated.started.wait(60)
    assert served.close(grace=0.05) == 1  # one thread still in its run
    assert queued.cancelled() and not running.done()
    gated.gate.set()
    assert running.result(60)[0].shape == (1, 3)


def test_a_bad_timeout_is_refused_by_the_protocol() -> None:
    spec = vm.serve.protocol.TensorSpec("x.1", "FP32", (-1, 3), None)
    with pytest.raises(ProtocolError, match="'timeout' parameter is 1.5"):
        decode_request(json.dumps({**_body(np.ones((1, 3), np.float32)), "parameters": {"timeout": 1.5}}).encode(),
                       None, [spec], [])


def test_sigterm_stops_the_server_within_its_grace_with_a_run_that_never_ends(tmp_path: Path) -> None:
    (tmp_path / "spin.ir").write_text(SPIN)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "vm.cli", "serve", str(tmp_path / "spin.ir"), "--port", "0",
                             "--request-timeout", "0.5", "--shutdown-grace", "1"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        port = read_ready_port(proc, timeout=120)
        body = {"inputs": [{"name": "x.1", "datatype": "FP32", "shape": [1], "data": [0.5]},
                           {"name": "n.1", "datatype": "INT64", "shape": [1], "data": [2**62]}]}
        request = urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/spin/infer",
                                         data=json.dumps(body).encode(), method="POST")
        with pytest.raises(urllib.error.HTTPError) as answer:
            urllib.request.urlopen(request, timeout=120)
        assert answer.value.code == 504
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/health/live", timeout=120) as r:
            assert r.status == 200  # the event loop answers while the run spins
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)  # harness guard; the run itself would never end
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 0
    assert "stopped with 1 run(s) still under way after the grace of 1 s (--shutdown-grace); they are abandoned" in err
