"""Load test: N concurrent clients x M requests over loopback against ``irvm serve``, the Ray
Serve deployment, and the same model under ONNX Runtime behind the same HTTP stack.

    python3 tools/load_test.py [--model resnet18.pt] [--clients 8] [--requests 250]
                               [--targets irvm,ort,ray] [--instances K] [--threads T]

Each target is started here on 127.0.0.1 and a free port (``irvm serve`` as a subprocess,
reading its ready line; ONNX Runtime as a subprocess of this script serving
``vm.serve.asgi.app`` over an ``InferenceSession``; Ray Serve in this process on a local
cluster, ``ray.init(num_cpus=2)``), then stopped.  Every client holds one keep-alive
HTTP connection and sends the protocol's binary tensor data (as ``tritonclient.http``
does); every answer is compared with a single-process run of the same engine
(``vm.load(model).run`` for irvm and Ray, an ``InferenceSession`` for ONNX Runtime): a
mismatch is any difference at all.  The table gives throughput, latency percentiles, errors
and mismatches, in markdown.

Without ``--model`` it serves torchvision's resnet18, scripted (tools/serve_models.py).
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tools"))

HOST = "127.0.0.1"  # loopback only


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", help="a .pt/.ir/.irbc to serve (default: resnet18 scripted, made with torch)")
    p.add_argument("--onnx", help="the same model as ONNX for the ONNX Runtime column (default: resnet18's)")
    p.add_argument("--shape", help="the input's shape, e.g. 1,1,28,28 (default: resnet18's image, or the model's own)")
    p.add_argument("--clients", type=int, default=8)
    p.add_argument("--requests", type=int, default=250, help="requests per client")
    p.add_argument("--targets", default="irvm,ort,ray")
    p.add_argument("--instances", type=int, default=2, help="concurrent runs per server (irvm serve --instances)")
    p.add_argument("--threads", type=int, default=1, help="kernel threads per run")
    p.add_argument("--replicas", type=int, default=2, help="Ray Serve replicas")
    p.add_argument("--serve-onnx", help=argparse.SUPPRESS)  # internal: serve this ONNX file, print the ready line
    args = p.parse_args(argv)
    if args.serve_onnx:
        return _serve_onnx(args.serve_onnx, args.instances, args.threads)
    import serve_models

    model = Path(args.model) if args.model else serve_models.resnet18_pt()
    shape = tuple(int(d) for d in args.shape.split(",")) if args.shape else None
    xs = serve_models.images(16) if not args.model else _inputs_for(model, shape)
    rows = []
    for target in args.targets.split(","):
        rows.append(_measure(target.strip(), model, args, xs))
    print(_table(rows, args))
    return 0 if all(r["errors"] == 0 and r["mismatches"] == 0 for r in rows) else 1


def _inputs_for(model: Path, shape: tuple[int, ...] | None) -> list[np.ndarray]:
    import vm

    arg = vm.load(str(model)).inputs[0]
    if shape is None and (arg.shape is None or any(d is None for d in arg.shape)):
        raise SystemExit(f"{model}: its input's shape is not fixed ({arg}); give one with --shape")
    rng = np.random.default_rng(0)
    return [rng.standard_normal(shape or arg.shape).astype(np.float32) for _ in range(16)]


def _measure(target: str, model: Path, args: argparse.Namespace, xs: list[np.ndarray]) -> dict[str, Any]:
    if target == "irvm":
        import vm

        reference = vm.load(str(model), threads=args.threads)
        expected = _one_blas_thread(lambda: [reference.run(None, {reference.inputs[0].name: x})[0] for x in xs],
                                    args.threads)
        cmd = [sys.executable, "-m", "vm.cli", "serve", str(model), "--name", "m", "--host", HOST, "--port", "0",
               "--instances", str(args.instances), "--threads", str(args.threads)]
        with _Server(cmd) as port:
            result = _hammer(port, "m", reference.inputs[0].name, xs, expected, args.clients, args.requests)
        return {"target": "irvm serve", **result}
    if target == "ort":
        import onnxruntime as ort
        import serve_models

        onnx = Path(args.onnx) if args.onnx else serve_models.resnet18_onnx()
        session = ort.InferenceSession(str(onnx), providers=["CPUExecutionProvider"])
        name = session.get_inputs()[0].name
        expected = [session.run(None, {name: x})[0] for x in xs]
        cmd = [sys.executable, str(Path(__file__).resolve()), "--serve-onnx", str(onnx),
               "--instances", str(args.instances), "--threads", str(args.threads)]
        with _Server(cmd) as port:
            result = _hammer(port, "m", name, xs, expected, args.clients, args.requests)
        return {"target": "ONNX Runtime, same HTTP stack", **result}
    if target == "ray":
        return {"target": f"Ray Serve, {args.replicas} replicas", **_ray(model, args, xs)}
    raise SystemExit(f"unknown target {target!r}: irvm, ort or ray")


def _ray(model: Path, args: argparse.Namespace, xs: list[np.ndarray]) -> dict[str, Any]:
    import ray
    from ray import serve

    import vm
    from vm.serve.on_ray import ModelFile, deployment

    reference = vm.load(str(model), threads=args.threads)
    # Ray runs its workers with OMP_NUM_THREADS=1: one BLAS thread
    expected = _one_blas_thread(lambda: [reference.run(None, {reference.inputs[0].name: x})[0] for x in xs], 1)
    port = _free_port()
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": str(ROOT)}})
    try:
        serve.start(http_options={"host": HOST, "port": port})
        application = deployment({"m": ModelFile.read(model)}, num_replicas=args.replicas, cpus_per_replica=0.5,
                                 threads=args.threads)
        serve.run(application, route_prefix="/")
        return _hammer(port, "m", reference.inputs[0].name, xs, expected, args.clients, args.requests)
    finally:
        serve.shutdown()
        ray.shutdown()


def _one_blas_thread(compute: Any, threads: int) -> Any:
    """``compute()`` with numpy's BLAS on ``threads`` threads, as the server runs it (a GEMM
    split over threads rounds differently)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=threads, user_api="blas"):
        return compute()


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


class _Server:
    """A server subprocess: started, its port read from its ready line, stopped with SIGTERM."""

    def __init__(self, cmd: list[str]):
        self.cmd = cmd
        self.proc: subprocess.Popen | None = None

    def __enter__(self) -> int:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
        return read_ready_port(self.proc, timeout=300)

    def __exit__(self, *exc: Any) -> None:
        assert self.proc is not None
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def read_ready_port(proc: subprocess.Popen, timeout: float) -> int:
    """The port in a server's ``ready at http://127.0.0.1:PORT`` line (within ``timeout`` seconds)."""
    box: list[str] = []
    reader = threading.Thread(target=lambda: box.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(timeout)
    line = box[0] if box else ""
    if "ready at http://" not in line:
        proc.kill()
        raise RuntimeError(f"the server did not say it was ready (exit code {proc.poll()}, said {line!r})")
    return int(line.split("ready at http://", 1)[1].split()[0].rsplit(":", 1)[1])


def infer(conn: http.client.HTTPConnection, model: str, name: str, x: np.ndarray) -> np.ndarray:
    """One binary-data infer request (the first output, in binary), as tritonclient sends it."""
    head = json.dumps({
        "inputs": [{"name": name, "datatype": "FP32", "shape": list(x.shape),
                    "parameters": {"binary_data_size": x.nbytes}}],
        "parameters": {"binary_data_output": True},
    }).encode()
    conn.request("POST", f"/v2/models/{model}/infer", body=head + x.tobytes(),
                 headers={"Inference-Header-Content-Length": str(len(head)), "Content-Type": "application/octet-stream"})
    response = conn.getresponse()
    body = response.read()
    if response.status != 200:
        raise RuntimeError(f"HTTP {response.status}: {body[:300]!r}")
    n = int(response.getheader("Inference-Header-Content-Length") or len(body))
    out = json.loads(body[:n])["outputs"][0]
    return np.frombuffer(body[n:], dtype=np.float32).reshape(out["shape"])


def _hammer(port: int, model: str, name: str, xs: list[np.ndarray], expected: list[np.ndarray],
            clients: int, requests: int) -> dict[str, Any]:
    latencies: list[float] = []
    counts = {"errors": 0, "mismatches": 0}
    lock = threading.Lock()
    first_error: list[str] = []

    def client(k: int) -> None:
        conn = http.client.HTTPConnection(HOST, port, timeout=120)
        for i in range(requests):
            j = (k * requests + i) % len(xs)
            start = time.perf_counter()
            try:
                got = infer(conn, model, name, xs[j])
                ok = got.shape == expected[j].shape and np.array_equal(got, expected[j])
                with lock:
                    latencies.append(time.perf_counter() - start)
                    counts["mismatches"] += not ok
            except Exception as err:  # noqa: BLE001 - counted and reported
                with lock:
                    counts["errors"] += 1
                    first_error.append(str(err))
                conn.close()
                conn = http.client.HTTPConnection(HOST, port, timeout=120)
        conn.close()

    for x in xs[:2]:  # warm up the server's runtimes
        infer(http.client.HTTPConnection(HOST, port, timeout=300), model, name, x)
    threads = [threading.Thread(target=client, args=(k,)) for k in range(clients)]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    wall = time.perf_counter() - start
    ms = np.array(latencies) * 1e3 if latencies else np.array([np.nan])
    if first_error:
        print(f"first error: {first_error[0]}", file=sys.stderr)
    return {"requests": clients * requests, "seconds": wall, "throughput": len(latencies) / wall,
            "p50": float(np.percentile(ms, 50)), "p95": float(np.percentile(ms, 95)),
            "p99": float(np.percentile(ms, 99)), **counts}


def _table(rows: list[dict[str, Any]], args: argparse.Namespace) -> str:
    head = (f"{args.clients} clients x {args.requests} requests, {args.instances} instances x {args.threads} thread(s), "
            f"loopback, binary tensor data\n\n"
            "| server | requests | req/s | p50 ms | p95 ms | p99 ms | errors | mismatches |\n"
            "|---|---:|---:|---:|---:|---:|---:|---:|")
    lines = [f"| {r['target']} | {r['requests']} | {r['throughput']:.1f} | {r['p50']:.1f} | {r['p95']:.1f} | "
             f"{r['p99']:.1f} | {r['errors']} | {r['mismatches']} |" for r in rows]
    return "\n".join([head, *lines])


class OrtModel:
    """An ONNX Runtime session with ``vm.Model``'s serving face (inputs, outputs, run)."""

    def __init__(self, path: str, threads: int):
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.session = ort.InferenceSession(path, options, providers=["CPUExecutionProvider"])
        self.inputs = [_node_arg(a) for a in self.session.get_inputs()]
        self.outputs = [_node_arg(a) for a in self.session.get_outputs()]

    def run(self, names: Any, feeds: dict[str, Any]) -> list[Any]:
        return self.session.run(names, feeds)


def _node_arg(arg: Any) -> Any:
    from collections import namedtuple

    kinds = {"tensor(float)": np.float32, "tensor(int64)": np.int64, "tensor(double)": np.float64}
    NodeArg = namedtuple("NodeArg", "name type dtype shape")
    shape = [d if isinstance(d, int) else None for d in arg.shape]
    dtype = np.dtype(kinds[arg.type]) if arg.type in kinds else None
    return NodeArg(arg.name, arg.type, dtype, shape)


def _serve_onnx(path: str, instances: int, threads: int) -> int:
    import asyncio

    import uvicorn

    from vm.serve.asgi import app
    from vm.serve.command import limit_blas_threads, listen, quiet_exit_server, run_server
    from vm.serve.service import ServedModel, ServeOptions

    limit_blas_threads(threads)  # as irvm serve does (ONNX Runtime's own threads are set on its session)
    served = ServedModel("m", OrtModel(path, threads), ServeOptions(instances=instances), platform="onnxruntime")
    sock = listen(HOST, 0)
    server = quiet_exit_server(uvicorn.Config(app([served]), log_level="warning", access_log=False))
    asyncio.run(run_server(server, sock, f"onnxruntime: ready at http://{HOST}:{sock.getsockname()[1]}"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
