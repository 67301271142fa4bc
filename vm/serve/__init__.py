"""``irvm serve``: loaded models behind the Open Inference Protocol v2, and on Ray.

    import vm, vm.serve, uvicorn
    uvicorn.run(vm.serve.app({"resnet18": vm.load("resnet18.pt")}), port=8000)

This room sits on top of both packages, as ``vm/cli.py`` does: a model is opened through
the front door (``vm.load``, which compiles ``.pt`` and ``.ir`` files), and served by
``protocol.py`` (the protocol's requests and responses as numpy), ``service.py`` (K
concurrent runs of one loaded model, dynamic batching), ``metrics.py`` (Prometheus
text), ``asgi.py`` (the ASGI app, starlette), ``command.py`` (``irvm serve``, uvicorn)
and ``on_ray.py`` (a Ray Data predictor and a Ray Serve deployment).  starlette and
uvicorn come with the ``serve`` extra, Ray with the ``ray`` extra; nothing here is
imported by ``import vm``.
"""

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from vm.serve.asgi import app
    from vm.serve.service import ServedModel, ServeOptions


def __getattr__(name: str):
    # Lazy: the protocol and the service need no starlette; the app does.
    if name == "app":
        from vm.serve.asgi import app

        return app
    if name in ("ServedModel", "ServeOptions"):
        from vm.serve import service

        return getattr(service, name)
    raise AttributeError(f"module 'vm.serve' has no attribute {name!r}")


__all__ = ["ServeOptions", "ServedModel", "app"]
