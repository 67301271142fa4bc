"""The ASGI application: the Open Inference Protocol's REST routes over ``ServedModel``\\ s.

    GET  /v2                                  server metadata
    GET  /v2/health/live, /v2/health/ready    200 while serving
    GET  /v2/models/{name}[/versions/{v}]     model metadata (inputs, outputs, -1 where dynamic)
    GET  /v2/models/{name}[/versions/{v}]/ready
    POST /v2/models/{name}[/versions/{v}]/infer
    GET  /metrics                             Prometheus text

Starlette routes them (a small, typed ASGI toolkit; FastAPI would add request models the
protocol's mixed JSON-and-binary bodies cannot use), so the same app runs under uvicorn
(``irvm serve``), inside Ray Serve, or under any ASGI server.  A body is read up to
``max_body_bytes`` and refused past it (413) before any of it is decoded; decoding and
encoding run on a worker thread, the model on the model's own threads
(``vm.serve.service``).  Every infer request is counted in the metrics and logged at
``info`` on the ``irvm.serve`` logger: method, path, status, milliseconds.  A request
past its deadline (``ServeOptions.request_timeout``, or the request's ``timeout``
parameter) is answered 504 while its run, which cannot be interrupted, ends on its thread.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from vm.serve.metrics import Metrics
from vm.serve.protocol import ProtocolError, decode_request, encode_response
from vm.serve.service import ServedModel, ServeOptions, classify

LOG = logging.getLogger("irvm.serve")
MAX_BODY_BYTES = 64 * 1024 * 1024  # a 64 MiB request body; more is refused with 413


def app(models: Mapping[str, Any] | Iterable[ServedModel], *, options: ServeOptions | None = None,
        max_body_bytes: int = MAX_BODY_BYTES, metrics: Metrics | None = None,
        shutdown_grace: float | None = None) -> Starlette:
    """An ASGI app serving ``models``: a mapping of name to a loaded model (``vm.load(...)``,
    served with ``options``), or ``ServedModel``\\ s.  Its models' threads stop at shutdown,
    their runs under way given ``shutdown_grace`` seconds in all (None: as long as they
    take); ``app.state.stuck_runs`` then counts the runs still going."""
    metrics = metrics or Metrics()
    served: dict[str, ServedModel] = {}
    if isinstance(models, Mapping):
        for name, model in models.items():
            served[str(name)] = ServedModel(str(name), model, options, metrics)
    else:
        for model in models:
            model.metrics = metrics
            served[model.name] = model
    state = _State(served, metrics, max_body_bytes)

    @asynccontextmanager
    async def lifespan(app_: Starlette):
        app_.state.stuck_runs = 0
        yield
        end = None if shutdown_grace is None else time.perf_counter() + shutdown_grace
        for m in served.values():
            grace = None if end is None else max(0.0, end - time.perf_counter())
            stuck = await run_in_threadpool(m.close, grace)
            if stuck:
                LOG.warning("model '%s': %d run(s) still under way after the shutdown grace of %g s",
                            m.name, stuck, shutdown_grace)
            app_.state.stuck_runs += stuck

    routes = [
        Route("/v2", state.server_metadata),
        Route("/v2/health/live", state.live),
        Route("/v2/health/ready", state.ready),
        Route("/metrics", state.prometheus),
    ]
    for prefix in ("/v2/models/{name}", "/v2/models/{name}/versions/{version}"):
        routes += [
            Route(prefix, state.model_metadata),
            Route(prefix + "/ready", state.model_ready),
            Route(prefix + "/infer", state.infer, methods=["POST"]),
        ]
    handlers = {HTTPException: _http_error, Exception: _internal_error}
    application = Starlette(routes=routes, lifespan=lifespan, exception_handlers=handlers)
    application.state.models = served
    application.state.metrics = metrics
    return application


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)


async def _http_error(_request: Request, exc: Exception) -> Response:
    assert isinstance(exc, HTTPException)
    if exc.status_code == 404:
        return _error(404, f"no such endpoint: {_request.url.path}")
    return _error(exc.status_code, str(exc.detail))


async def _internal_error(_request: Request, exc: Exception) -> Response:
    LOG.exception("internal error answering %s", _request.url.path)
    return _error(500, f"internal error: {type(exc).__name__}: {exc}")


class _State:
    def __init__(self, models: dict[str, ServedModel], metrics: Metrics, max_body_bytes: int):
        self.models = models
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes

    async def server_metadata(self, _request: Request) -> Response:
        from vm.command import version

        return JSONResponse({"name": "irvm", "version": version(), "extensions": ["binary_tensor_data"]})

    async def live(self, _request: Request) -> Response:
        return JSONResponse({"live": True})

    async def ready(self, _request: Request) -> Response:
        return JSONResponse({"ready": True})

    async def prometheus(self, _request: Request) -> Response:
        return PlainTextResponse(self.metrics.render(), media_type="text/plain; version=0.0.4")

    def _model(self, request: Request) -> ServedModel:
        name = request.path_params["name"]
        model = self.models.get(name)
        if model is None:
            raise ProtocolError(404, f"unknown model '{name}'; this server has {_listing(self.models)}")
        version = request.path_params.get("version")
        if version is not None and version != model.version:
            raise ProtocolError(404, f"model '{name}' has no version '{version}' (it has '{model.version}')")
        return model

    async def model_metadata(self, request: Request) -> Response:
        try:
            return JSONResponse(self._model(request).metadata())
        except ProtocolError as err:
            return _error(err.status, err.message)

    async def model_ready(self, request: Request) -> Response:
        try:
            model = self._model(request)
        except ProtocolError as err:
            return _error(err.status, err.message)
        return JSONResponse({"name": model.name, "ready": True})

    async def infer(self, request: Request) -> Response:
        start = time.perf_counter()
        name = request.path_params["name"]
        try:
            response = await self._infer(request, start)
        except Exception as exc:  # every failure is an answer; the server keeps serving
            status, message = classify(exc)
            if status >= 500:
                LOG.warning("model '%s' failed: %s", name, message)
            response = _error(status, message)
        seconds = time.perf_counter() - start
        self.metrics.request(name if name in self.models else "(unknown model)", response.status_code, seconds)
        LOG.info("%s %s %d %.1fms", request.method, request.url.path, response.status_code, seconds * 1e3)
        return response

    async def _infer(self, request: Request, start: float) -> Response:
        model = self._model(request)
        if request.headers.get("content-encoding", "identity") != "identity":
            raise ProtocolError(400, f"Content-Encoding {request.headers['content-encoding']!r} is not supported; "
                                     f"send the body uncompressed")
        body = await self._body(request)
        header = request.headers.get("inference-header-content-length")
        decoded = await run_in_threadpool(decode_request, body, header, model.inputs, model.outputs)
        values = await _within(model, decoded, start)
        names = decoded.outputs if decoded.outputs is not None else model.output_names
        content, headers = await run_in_threadpool(encode_response, model.name, model.version, decoded, names, values)
        media = headers.pop("content-type")
        return Response(content, media_type=media, headers=headers)

    async def _body(self, request: Request) -> bytes:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_body_bytes:
            raise _too_big(int(declared), self.max_body_bytes)
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > self.max_body_bytes:
                raise _too_big(size, self.max_body_bytes)
            chunks.append(chunk)
        return b"".join(chunks)


async def _within(model: ServedModel, decoded: Any, start: float) -> list[Any]:
    """The model's outputs for ``decoded``, or a 504 once the request's deadline passes: the
    server's ``request_timeout`` or the request's ``timeout`` parameter, whichever is first,
    counted from the request's arrival.  A run not yet started is cancelled; one under way
    cannot be interrupted mid-kernel and finishes on its thread, unread."""
    limits = [t for t in (model.options.request_timeout, decoded.timeout) if t is not None]
    run = model.infer(decoded.feeds, decoded.outputs)
    if not limits:
        return await run
    limit = min(limits)
    try:
        return await asyncio.wait_for(run, max(0.0, limit - (time.perf_counter() - start)))
    except TimeoutError:
        raise ProtocolError(504, f"model '{model.name}' did not answer within {limit:g} s (the server's "
                                 "--request-timeout or the request's 'timeout' parameter)") from None


def _too_big(size: int, limit: int) -> ProtocolError:
    return ProtocolError(413, f"the request body ({size} bytes or more) is over this server's limit of {limit} "
                              f"bytes (irvm serve --max-body-bytes)")


def _listing(models: Mapping[str, Any]) -> str:
    return ", ".join(f"'{n}'" for n in models) or "no models"


__all__ = ["MAX_BODY_BYTES", "app"]
