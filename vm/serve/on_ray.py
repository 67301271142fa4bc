"""irvm on Ray: a predictor for Ray Data's batch inference and a Ray Serve deployment.

Batch inference, with the model file's bytes sent along (no shared filesystem)::

    ds.map_batches(Predictor, fn_constructor_kwargs={"model": ModelFile.read("m.pt")},
                   concurrency=4, batch_size=256)

``Predictor`` is a callable class, so Ray Data builds it once per actor (the model is
compiled once per worker) and calls it on numpy batches: every column named like an input
(``x`` or ``x.1``) is fed to it, whole, as one batch along the first axis; each output
comes back as a column (``out0``...), beside the batch's other columns.  ``model`` may be
a ``ModelFile`` (the bytes travel with the task), or a path that every worker can read.

Online serving: ``deployment({"resnet18": ModelFile.read("resnet18.pt")}, num_replicas=2)``
is a Ray Serve application whose replicas each load the models and run the same ASGI app
as ``irvm serve`` (``vm.serve.asgi``); Ray Serve's proxy spreads the requests over them.
The bytes go through Ray's object store once (``ray.put``), so the driver that deploys
keeps them alive; a long-lived deployment can name paths on shared storage instead.

Nothing here is imported unless asked for; Ray comes with the ``ray`` extra.
"""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from vm.core.errors import RunError


@attrs.frozen
class ModelFile:
    """A program file's name and bytes, so that it can travel to a worker with its task."""

    name: str
    data: bytes = attrs.field(repr=lambda d: f"<{len(d)} bytes>")

    @classmethod
    def read(cls, path: str | Path) -> ModelFile:
        p = Path(path)
        return cls(p.name, p.read_bytes())

    def load(self, weights: Any = None, **options: Any) -> Any:
        """``vm.load`` of these bytes (written to a private temporary folder for the call)."""
        import vm

        with tempfile.TemporaryDirectory(prefix="irvm-model-") as folder:
            path = Path(folder) / self.name
            path.write_bytes(self.data)
            return vm.load(str(path), weights, **options)


def open_model(model: Any, weights: Any = None, **options: Any) -> Any:
    """A loaded model from a ``ModelFile``, raw bytes of a ``.pt``/``.irbc``, a path, or a
    model already loaded."""
    if isinstance(model, ModelFile):
        return model.load(weights, **options)
    if isinstance(model, (bytes, bytearray)):
        return ModelFile("model.bin", bytes(model)).load(weights, **options)
    if isinstance(model, (str, Path)):
        import vm

        if not Path(model).exists():
            raise RunError(f"{model}: no such file on this worker; pass ModelFile.read({str(model)!r}) so that the "
                           f"file's bytes travel with the task")
        return vm.load(str(model), weights, **options)
    if hasattr(model, "run") and hasattr(model, "inputs"):
        return model
    raise RunError(f"a model is a ModelFile, bytes, a path or a loaded vm.Model, not {type(model).__name__}")


class Predictor:
    """A Ray Data callable class: numpy batches in, the model's outputs as columns out."""

    def __init__(self, model: Any, weights: Any = None, *, backend: str = "static", threads: int | None = 1,
                 keep_columns: bool = True):
        self.model = open_model(model, weights, backend=backend, threads=threads)
        self.keep_columns = keep_columns
        self.output_names = [arg.name for arg in self.model.outputs]

    def __call__(self, batch: Mapping[str, Any]) -> dict[str, Any]:
        feeds, used = self._feeds(batch)
        rows = _rows(feeds)
        with np.errstate(all="ignore"):
            values = self.model.run(None, feeds)
        out = {k: v for k, v in batch.items() if k not in used} if self.keep_columns else {}
        for name, value in zip(self.output_names, values):
            if not isinstance(value, np.ndarray) or value.ndim == 0 or value.shape[0] != rows:
                raise RunError(f"output {name} is not a batch of {rows} rows ({_describe(value)}): the model does not "
                               f"batch along the first axis, so Ray Data cannot split it back into rows")
            out[name] = value
        return out

    def _feeds(self, batch: Mapping[str, Any]) -> tuple[dict[str, Any], set[str]]:
        feeds, used = {}, set()
        for arg in self.model.inputs:
            column = next((c for c in (arg.name, _python_name(arg.name)) if c in batch), None)
            if column is None:
                raise RunError(f"the batch has no column for input '{arg.name}' (columns: {', '.join(batch)})")
            feeds[arg.name] = _stacked(batch[column])
            used.add(column)
        return feeds, used


def _stacked(column: Any) -> Any:
    """A column as one array (Ray gives a ragged tensor column as an object array of arrays)."""
    if isinstance(column, np.ndarray) and column.dtype == object and column.size and isinstance(column[0], np.ndarray):
        return np.stack(list(column))
    return np.asarray(column)


def _rows(feeds: Mapping[str, Any]) -> int:
    counts = {v.shape[0] for v in feeds.values() if isinstance(v, np.ndarray) and v.ndim >= 1}
    if len(counts) != 1:
        raise RunError(f"the input columns do not have one row count: {sorted(counts)}")
    return counts.pop()


def _describe(value: Any) -> str:
    if isinstance(value, np.ndarray):
        return f"shape {tuple(value.shape)}"
    return type(value).__name__


def _python_name(name: str) -> str:
    base, _, suffix = name.rpartition(".")
    return base if base and suffix.isdigit() else name


def deployment(models: Mapping[str, Any], *, num_replicas: int = 1, cpus_per_replica: float = 1.0,
               backend: str = "static", threads: int | None = 1, options: Any = None, name: str = "irvm") -> Any:
    """A Ray Serve application serving ``models`` (name -> ``ModelFile`` or a path) with the
    ASGI app of ``irvm serve`` on ``num_replicas`` replicas; ``serve.run(...)`` starts it."""
    import ray
    from ray import serve

    shipped = {n: [ray.put(m)] if isinstance(m, ModelFile) else m for n, m in models.items()}

    def build() -> Any:
        from vm.serve.asgi import app

        loaded = {n: open_model(ray.get(m[0]) if isinstance(m, list) else m, backend=backend, threads=threads)
                  for n, m in shipped.items()}
        return app(loaded, options=options)

    ingress = serve.ingress(build)()
    return serve.deployment(ingress, name=name, num_replicas=num_replicas,
                            ray_actor_options={"num_cpus": cpus_per_replica}).bind()


__all__ = ["ModelFile", "Predictor", "deployment", "open_model"]
