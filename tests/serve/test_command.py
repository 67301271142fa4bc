"""``irvm serve`` as a process (vm/serve/command.py): it loads every model (files and folders),
prints one ready line with its URL, answers the protocol, logs each request at
``--log-level info``, and on SIGTERM finishes the request in flight before it exits 0;
bad command lines stop before any socket opens, with irvm's one-paragraph errors."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")

from tests.support.paths import EXAMPLES, ROOT, TOOLS

sys.path.insert(0, str(TOOLS))
from load_test import read_ready_port

from vm.cli import main

SLOW = """graph(%x.1 : Tensor, %n.1 : int):
  %true : bool = prim::Constant[value=1]()
  %y.1 : Tensor = prim::Loop(%n.1, %true, %x.1)
    block0(%i.1 : int, %acc.1 : Tensor):
      %acc.2 : Tensor = aten::tanh(%acc.1)
      -> (%true, %acc.2)
  return (%y.1)
"""


def _start(*args: str) -> tuple[subprocess.Popen, int]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "vm.cli", "serve", *args, "--host", "127.0.0.1", "--port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    try:
        return proc, read_ready_port(proc, timeout=120)
    except BaseException:
        _stop(proc)
        raise


def _stop(proc: subprocess.Popen, signal_it: bool = True) -> tuple[int, str]:
    if signal_it and proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        _, err = proc.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        _, err = proc.communicate()
    return proc.returncode, err


def _post(port: int, model: str, body: dict) -> tuple[int, dict]:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/v2/models/{model}/infer",
                                     data=json.dumps(body).encode(), method="POST")
    try:
        with urllib.request.urlopen(request, timeout=120) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_serves_files_and_folders_logs_requests_and_stops_on_sigterm_after_the_request_in_flight(
        tmp_path: Path) -> None:
    folder = tmp_path / "zoo"
    folder.mkdir()
    (folder / "slow.ir").write_text(SLOW)
    (folder / "notes.txt").write_text("not a model")
    shutil.copy(EXAMPLES / "cnn.pt", tmp_path / "cnn.pt")
    proc, port = _start(str(tmp_path / "cnn.pt"), str(folder), "--log-level", "info", "--instances", "2")
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/v2/models/slow", timeout=30) as r:
            assert [i["name"] for i in json.loads(r.read())["inputs"]] == ["x.1", "n.1"]
        x = np.full((600, 600), 0.5, np.float32)
        body = {"inputs": [{"name": "x.1", "datatype": "FP32", "shape": [600, 600], "data": x.reshape(-1).tolist()},
                           {"name": "n.1", "datatype": "INT64", "shape": [1], "data": [150]}]}
        answer: list = []
        inflight = threading.Thread(target=lambda: answer.append(_post(port, "slow", body)))
        inflight.start()
        time.sleep(1.0)  # the request is being read or run
        proc.send_signal(signal.SIGTERM)
        inflight.join(timeout=120)
        code, err = _stop(proc, signal_it=False)  # the one SIGTERM stops it
    finally:
        _stop(proc)
    status, out = answer[0]
    expected = x.copy()
    for _ in range(150):
        expected = np.tanh(expected)
    assert status == 200 and np.allclose(np.array(out["outputs"][0]["data"]).reshape(600, 600), expected)
    assert code == 0
    assert "POST /v2/models/slow/infer 200" in err


def test_the_ready_line_names_the_url_and_the_models() -> None:
    proc, port = _start(str(EXAMPLES / "cnn.pt"), "--name", "digits")
    try:
        x = np.zeros((2, 1, 28, 28), np.float32)
        status, out = _post(port, "digits", {"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 1, 28, 28],
                                                          "data": x.reshape(-1).tolist()}]})
        assert status == 200 and out["outputs"][0]["shape"] == [2, 10]
    finally:
        assert _stop(proc)[0] == 0


@pytest.mark.parametrize(
    ("args", "code", "says"),
    [
        (["nowhere.pt"], 66, "nowhere.pt"),
        ([str(EXAMPLES / "cnn.pt"), str(EXAMPLES / "cnn.pt")], 1, "two models are named 'cnn'"),
        ([str(EXAMPLES / "cnn.pt"), "--name", "a", "--name", "b"], 1, "--name is given 2 times for 1 model"),
        ([str(EXAMPLES / "cnn.pt"), "--instances", "0"], 1, "--instances must be at least 1"),
        ([str(EXAMPLES / "cnn.inputs.npz")], 65, "npz"),
    ],
)
def test_bad_command_lines_stop_before_serving(args: list[str], code: int, says: str,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", *args, "--port", "0"]) == code
    assert says in capsys.readouterr().err


def test_a_folder_without_programs_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "readme.txt").write_text("hello")
    assert main(["serve", str(tmp_path), "--port", "0"]) == 1
    assert "no program files" in capsys.readouterr().err


def test_a_port_in_use_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        assert main(["serve", str(EXAMPLES / "cnn.pt"), "--port", str(port)]) == 1
    assert f"cannot listen on 127.0.0.1:{port}" in capsys.readouterr().err
