"""``vm.Model``: a compiled program, its weights and a backend, called as a function.

What ``vm.load`` returns, shaped for people who know ONNX Runtime's ``InferenceSession``:
``model.inputs`` / ``model.outputs`` list ``NodeArg``s (name, type, dtype, shape),
``model.run(output_names, feeds)`` returns a list, and ``model(*args, **kwargs)`` takes
inputs by position or by name (a ``.pt``'s forward defaults fill what is left out).

Threads: a model may be called from several threads at once.  Everything decided once
per model is built once and shared read-only (the program and, for the static backend,
one ``StaticModule``); each calling thread gets its own runtime on first use (a
``StaticRuntime`` over the shared module, or an ``Interpreter``), which owns its plans,
buffers and random generator, as ``vm.RuntimePool`` hands one runtime to each caller.
With ``seed`` the first runtime draws from exactly that seed and every later one from a
seed spawned from it (``numpy.random.SeedSequence``).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vm.api.signature import NodeArg, input_args, output_args
from vm.core.errors import RunError


class Model:
    """A program ready to run: ``model(x)``, ``model(x=x)``, ``model.run(None, {"x": x})``."""

    _irvm_model_ = True  # what vm.Interpreter and vm.StaticModule recognize (no import of this room)

    def __init__(
        self,
        program: Any,
        weights: Mapping[str, Any] | None = None,
        *,
        backend: str = "static",
        fuser: str = "blocked",
        seed: int | None = None,
        threads: int | None = None,
        examples: Sequence[Any] | None = None,
        path: Path | None = None,
        strict: bool = True,
        module: str | None = None,
    ) -> None:
        self.program = program
        # a copy of the same kind: an archive's own state (vm.binding.strict.ArchiveState) stays one
        self.weights: dict[str, Any] = type(weights)(weights) if isinstance(weights, dict) else dict(weights or {})
        self.strict = strict
        self.backend = backend
        self.fuser, self.seed, self.threads, self.path = fuser, seed, threads, path
        self.module = module  # the module of a torch.package archive at ``path``
        self.inputs: list[NodeArg] = input_args(program, examples, self.weights)
        self.outputs: list[NodeArg] = output_args(program)
        self._names = [arg.name for arg in self.inputs]
        self._local = threading.local()
        self._lock = threading.Lock()
        self._spawned = np.random.SeedSequence(seed) if seed is not None else None
        self._made = 0
        self.static_module: Any = None
        if backend == "static":
            from vm.static import StaticModule, StaticOptions

            self.static_module = StaticModule(program, self.weights or None, StaticOptions(fuser=fuser), strict=strict)
        self._runtime()  # this thread's, made now: a model that cannot run fails at load

    # -- calling ------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The outputs for these inputs: one value, or a tuple when the graph returns several."""
        return self._runtime()(*self._arguments(args, kwargs))

    def run(self, output_names: Sequence[str] | None, input_feed: Mapping[str, Any], run_options: Any = None) -> list[Any]:
        """As ONNX Runtime's ``InferenceSession.run``: the outputs named (all for None or
        an empty list), in that order, for the inputs ``input_feed`` names."""
        if not isinstance(input_feed, Mapping):
            raise RunError(f"run() takes the inputs as a dict from input name to value, not {type(input_feed).__name__}")
        known = [arg.name for arg in self.outputs]
        wanted = list(output_names or known)
        unknown = [n for n in wanted if n not in known]
        if unknown:
            raise RunError(f"unknown output name(s) {', '.join(map(repr, unknown))}: the outputs are {', '.join(known)}")
        from vm.files.npz import outputs_as_list

        values = outputs_as_list(self(**input_feed), len(known))
        return [values[known.index(n)] for n in wanted]

    def get_inputs(self) -> list[NodeArg]:
        """``self.inputs`` (ONNX Runtime's spelling)."""
        return list(self.inputs)

    def get_outputs(self) -> list[NodeArg]:
        """``self.outputs`` (ONNX Runtime's spelling)."""
        return list(self.outputs)

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """The inputs in graph order: positional first, then by name (the graph's name,
        ``x.1``, or its Python name, ``x``, when no other input shares it), then the defaults."""
        names = self._names
        if len(args) > len(names):
            raise RunError(f"the model takes {len(names)} input(s) ({self._listing()}), got {len(args)}")
        slots: list[Any] = [*args, *[_UNSET] * (len(names) - len(args))]
        for key, value in kwargs.items():
            i = self._index(key)
            if slots[i] is not _UNSET:
                raise RunError(f"input {names[i]!r} given twice (by position and as {key!r})")
            slots[i] = value
        defaults = tuple(getattr(self.program, "input_defaults", ()))
        first_default = len(names) - len(defaults)
        for i, value in enumerate(slots):
            if value is _UNSET and i >= first_default:
                slots[i] = defaults[i - first_default]
        missing = [names[i] for i, v in enumerate(slots) if v is _UNSET]
        if missing:
            raise RunError(f"missing input(s) {', '.join(map(repr, missing))}: the model's inputs are {self._listing()}")
        return slots

    def _index(self, key: str) -> int:
        names = self._names
        if key in names:
            return names.index(key)
        matches = [i for i, n in enumerate(names) if _python_name(n) == key or n == _python_name(key)]
        if len(matches) == 1:
            return matches[0]
        raise RunError(f"unknown input {key!r}: the model's inputs are {self._listing()}")

    def _listing(self) -> str:
        return ", ".join(self._names) or "none"

    def _runtime(self) -> Any:
        runtime = getattr(self._local, "runtime", None)
        if runtime is None:
            runtime = self._local.runtime = self._new_runtime()
        return runtime

    def _new_runtime(self) -> Any:
        with self._lock:
            seed = self._next_seed()
        if self.static_module is not None:
            from vm.static import StaticRuntime

            return StaticRuntime(self.static_module, seed=seed)
        from vm.interpreter.machine import Interpreter

        return Interpreter(self.program, self.weights or None, fuser=self.fuser, seed=seed, strict=self.strict)

    def _next_seed(self) -> int | None:
        self._made += 1
        if self._spawned is None or self._made == 1:
            return self.seed
        return int(self._spawned.spawn(1)[0].generate_state(1)[0])

    # -- saving ---------------------------------------------------------------------------

    def save(self, path: str | Path, *, force: bool = False) -> None:
        """Write the compiled program to ``path`` as an ``.irbc``, with the inputs' dtypes
        and shapes where known.  The weights are not in it: a model opened from a ``.pt``
        also writes the archive's beside it (``m.weights.npz``, as ``irc compile m.pt``
        does), and ``vm.load(path, weights)`` takes them again.  An existing file is
        replaced only when it is irvm's own kind, or with ``force``; never the file the
        model came from."""
        from vm.files.kinds import check_writable
        from vm.program.irbc import save

        out = Path(path)
        sources = [self.path] if self.path is not None else []
        check_writable(out, inputs=sources, force=force, kind="irbc")
        archive = self.path is not None and _is_archive(self.path)
        if archive:  # checked before anything is written
            from compiler.torchscript import weights_path

            check_writable(weights_path(out), inputs=sources, force=force, kind="weights")
        specs = [[a.dtype.name, a.shape] if a.dtype is not None and a.shape is not None and None not in a.shape
                 else None for a in self.inputs]
        save(self.program, out, options={"example_inputs": specs} if any(specs) else None)
        if archive and self.path is not None:
            from compiler.torchscript import save_archive_weights

            save_archive_weights(self.path, out, force=force, announce=False, module=self.module)

    def __repr__(self) -> str:
        where = f"{self.path}, " if self.path is not None else ""
        ins = ", ".join(f"{a.name}: {a.type}" for a in self.inputs)
        return f"<vm.Model {where}backend={self.backend!r} ({ins}) -> {len(self.outputs)} output(s)>"


_UNSET: Any = object()


def _is_archive(path: Path) -> bool:
    from vm.files.kinds import FileKind, sniff

    return sniff(path) in (FileKind.TORCHSCRIPT, FileKind.PACKAGE)


def _python_name(name: str) -> str:
    """``x`` for a graph input ``x.1`` (TorchScript's renaming of the Python argument ``x``)."""
    base, _, suffix = name.rpartition(".")
    return base if base and suffix.isdigit() else name


__all__ = ["Model", "NodeArg"]
