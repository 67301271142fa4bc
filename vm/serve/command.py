"""``irvm serve``: load models, serve them over HTTP with uvicorn, print one line when ready.

    irvm serve MODEL... [--weights W] [--name N] [--host 127.0.0.1] [--port 8000]
               [--backend static|interp] [--threads T] [--instances K]
               [--max-batch-size B] [--batch-delay-ms D] [--max-body-bytes N]
               [--request-timeout SECONDS] [--shutdown-grace SECONDS] [--log-level L]

MODEL is a program file (``.pt``, ``.ir``, ``.irbc``) or a folder, whose program files are
all served.  ``--name`` and ``--weights`` may be given once per model, in the order the
models are listed; a model is otherwise named for its file (``resnet18.pt`` ->
``resnet18``).  Every model is loaded (``vm.load``) before the socket opens, so a file
that does not compile stops the command with irvm's usual paragraph and exit code.  The
socket is bound here (``--port 0``: any free port) and handed to uvicorn, and when uvicorn
has started, one line on stdout says where::

    irvm serve: ready at http://127.0.0.1:8000 (models: resnet18)

SIGTERM or Ctrl-C stops accepting connections, lets the requests in flight finish, then
stops each model's threads (uvicorn's graceful shutdown, then the app's lifespan).  Both
steps get ``--shutdown-grace`` seconds (default 10), so the server is gone within twice
that even when a run is stuck: a run cannot be interrupted mid-kernel, so one still going
is abandoned with a warning and the process exits without waiting for its thread.
``--request-timeout`` answers a request that takes longer with 504 (the request's own
``timeout`` parameter, in microseconds, can ask for less).
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import socket
import sys
from pathlib import Path
from typing import Any

from vm.core.errors import RunError


def add_parser(sub: Any) -> None:
    """The ``serve`` subcommand on ``irvm``'s subparsers."""
    s = sub.add_parser("serve", help="serve models over the Open Inference Protocol v2 (HTTP)")
    s.add_argument("models", nargs="+", metavar="MODEL", help=".pt, .ir or .irbc files, or folders of them")
    s.add_argument("--weights", action="append", default=[], help="weights .npz, once per model in order")
    s.add_argument("--name", action="append", default=[], help="the model's name in URLs, once per model in order")
    s.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    s.add_argument("--port", type=int, default=8000, help="port (default 8000; 0: any free port)")
    s.add_argument("--backend", choices=["static", "interp"], default="static")
    s.add_argument("--threads", type=int, default=None,
                   help="threads per run, for BLAS and fused kernels (default: the cores / --instances)")
    s.add_argument("--instances", type=int, default=1, help="concurrent runs per model (default 1)")
    s.add_argument("--quantized-engine", choices=["fbgemm", "qnnpack"], default=None,
                   help="whose arithmetic quantized operators follow (default fbgemm, torch's on x86)")
    s.add_argument("--quantized-kernel", choices=["vnni", "avx512", "avx2"], default=None,
                   help="fbgemm's int8 kernel to reproduce (default: the one torch runs on this CPU)")
    s.add_argument("--max-batch-size", type=int, default=1,
                   help="stack requests along the first axis up to this many rows (only for a model that batches)")
    s.add_argument("--batch-delay-ms", type=float, default=5.0, help="how long a batch waits to fill (default 5)")
    s.add_argument("--max-body-bytes", type=int, default=None, help="largest request body (default 64 MiB)")
    s.add_argument("--request-timeout", type=float, default=None, metavar="SECONDS",
                   help="answer a request not done within this many seconds with 504 (default: no limit)")
    s.add_argument("--shutdown-grace", type=float, default=10.0, metavar="SECONDS",
                   help="on SIGTERM, how long requests and runs in flight may take to finish (default 10)")
    s.add_argument("--log-level", default="warning", choices=["debug", "info", "warning", "error"],
                   help="info: one line per request")
    s.set_defaults(handler=serve_command)


def serve_command(args: argparse.Namespace) -> int:
    for flag, value, least in (("--instances", args.instances, 1), ("--max-batch-size", args.max_batch_size, 1),
                               ("--threads", args.threads, 1), ("--port", args.port, 0),
                               ("--batch-delay-ms", args.batch_delay_ms, 0), ("--max-body-bytes", args.max_body_bytes, 1),
                               ("--shutdown-grace", args.shutdown_grace, 0)):
        if value is not None and value < least:
            raise RunError(f"{flag} must be at least {least}, got {value}")
    if args.request_timeout is not None and not args.request_timeout > 0:
        raise RunError(f"--request-timeout must be a positive number of seconds, got {args.request_timeout}")
    try:
        import starlette  # noqa: F401
        import uvicorn
    except ImportError as err:
        raise RunError(f"irvm serve needs starlette and uvicorn ({err}): pip install 'irvm[serve]'") from None
    from vm.serve.asgi import MAX_BODY_BYTES, app
    from vm.serve.service import ServeOptions

    _logging(args.log_level)
    threads = args.threads or max(1, (os.cpu_count() or 1) // args.instances)
    limit_blas_threads(threads)
    models = load_models(args.models, args.name, args.weights, backend=args.backend, threads=threads,
                         quantized_engine=args.quantized_engine, quantized_kernel=args.quantized_kernel)
    options = ServeOptions(args.instances, args.max_batch_size, args.batch_delay_ms, args.request_timeout)
    application = app(models, options=options, max_body_bytes=args.max_body_bytes or MAX_BODY_BYTES,
                      shutdown_grace=args.shutdown_grace)
    sock = listen(args.host, args.port)
    config = uvicorn.Config(application, log_level=args.log_level, access_log=False, lifespan="on",
                            timeout_graceful_shutdown=args.shutdown_grace)
    server = quiet_exit_server(config)
    host, port = sock.getsockname()[:2]
    url = f"http://{f'[{host}]' if ':' in host else host}:{port}"
    asyncio.run(run_server(server, sock, f"irvm serve: ready at {url} (models: {', '.join(models)})"))
    stuck = getattr(application.state, "stuck_runs", 0)
    if stuck:  # their threads would keep the interpreter from exiting (it joins them)
        print(f"irvm serve: stopped with {stuck} run(s) still under way after the grace of "
              f"{args.shutdown_grace:g} s (--shutdown-grace); they are abandoned", file=sys.stderr, flush=True)
        sys.stdout.flush()
        os._exit(0)
    return 0


def limit_blas_threads(n: int) -> None:
    """Let numpy's BLAS use ``n`` threads per call from now on (threadpoolctl, in the ``serve``
    extra).  K runs at once, each a GEMM asking OpenBLAS for every core, make its threads
    spin against each other: resnet18 served with K=2 on 2 busy cores answered 1.4
    requests/s with BLAS unlimited and ~30 with one BLAS thread per run."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError as err:
        raise RunError(f"irvm serve needs threadpoolctl ({err}): pip install 'irvm[serve]'") from None
    threadpool_limits(limits=n, user_api="blas")


def load_models(paths: list[str], names: list[str], weights: list[str], **load: Any) -> dict[str, Any]:
    """name -> ``vm.load(...)`` for every program file of ``paths`` (folders expanded)."""
    import vm

    files = [f for p in paths for f in program_files(Path(p))]
    for flag, given in (("--name", names), ("--weights", weights)):
        if len(given) > len(files):
            raise RunError(f"{flag} is given {len(given)} times for {len(files)} model(s)")
    chosen = [names[i] if i < len(names) else f.stem for i, f in enumerate(files)]
    seen: dict[str, Path] = {}
    for name, f in zip(chosen, files):
        if name in seen:
            raise RunError(f"two models are named '{name}' ({seen[name]} and {f}): give each a --name")
        if not name or "/" in name:
            raise RunError(f"'{name}' cannot name a model in a URL")
        seen[name] = f
    models = {}
    for i, (name, f) in enumerate(zip(chosen, files)):
        models[name] = vm.load(str(f), weights[i] if i < len(weights) else None, **load)
    return models


def program_files(path: Path) -> list[Path]:
    """``path`` itself, or a folder's program files (``.pt`` archives, ``.irbc`` and ``.ir``
    files, sorted by name); a folder with none is refused."""
    from vm.files.kinds import FileKind, sniff

    if not path.is_dir():
        return [path]
    found = [f for f in sorted(path.iterdir())
             if f.is_file() and (sniff(f) in (FileKind.IRBC, FileKind.TORCHSCRIPT)
                                 or f.suffix == ".ir" and sniff(f) is FileKind.TEXT)]
    if not found:
        raise RunError(f"{path} is a folder with no program files (.pt, .ir, .irbc) to serve")
    return found


def listen(host: str, port: int) -> socket.socket:
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as err:
        sock.close()
        raise RunError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock


def quiet_exit_server(config: Any) -> Any:
    """A uvicorn server whose SIGTERM and SIGINT start its graceful shutdown and are not
    raised again when it is done (uvicorn re-raises them, so the process would die of the
    signal): ``irvm serve`` exits 0 after a clean stop."""
    import contextlib
    import signal

    import uvicorn

    class Server(uvicorn.Server):
        @contextlib.contextmanager
        def capture_signals(self):  # uvicorn's, without raising the signal again afterwards
            previous = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for s, handler in previous.items():
                    signal.signal(s, handler)

    return Server(config)


async def run_server(server: Any, sock: socket.socket, ready_line: str) -> None:
    task = asyncio.create_task(server.serve(sockets=[sock]))
    while not server.started and not task.done():
        await asyncio.sleep(0.02)
    if server.started:
        print(ready_line, flush=True)
    await task


def _logging(level: str) -> None:
    log = logging.getLogger("irvm.serve")
    log.setLevel(level.upper())
    if not log.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter("%(asctime)s irvm serve %(levelname)s: %(message)s"))
        log.addHandler(handler)
        log.propagate = False


__all__ = ["add_parser", "listen", "load_models", "program_files", "limit_blas_threads", "quiet_exit_server", "run_server", "serve_command"]
