"""``vm.Model``: a compiled program, its weights and a backend, called as a function.

What ``vm.load`` returns, shaped for people who know ONNX Runtime's ``InferenceSession``:
``model.inputs`` / ``model.outputs`` list ``NodeArg``s (name, type, dtype, shape),
``model.run(output_names, feeds)`` returns a list, and ``model(*args, **kwargs)`` takes
inputs by position or by name (a ``.pt``'s forward defaults fill what is left out).  An
archive's other methods are attributes (``model.reset_states()``, ``model.methods``
lists them), compiled on first use; all of them run on one module object
(``model.module_object``), as ``torch.jit.load``'s module is one.

Threads: a model may be called from several threads at once.  Everything decided once
per model is built once and shared (the program and, for the static backend, one
``StaticModule`` per method); each calling thread gets its own runtime on first use (a
``StaticRuntime`` over the shared module, or an ``Interpreter``), which owns its plans,
buffers and random generator, as ``vm.RuntimePool`` hands one runtime to each caller.
Module state is not per thread: every runtime binds ``%self`` to the model's one module
object, so a counter a call increments is seen by the next call, from any thread, as in
torch.  A model whose methods write state (``model.state`` lists the attributes) runs one
call at a time (a lock across all its methods); a stateless model's calls run at once.
With ``seed`` the first runtime draws from exactly that seed and every later one from a
seed spawned from it (``numpy.random.SeedSequence``)."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from vm.api.signature import NodeArg, input_args, output_args, output_paths
from vm.core.errors import RunError
from vm.ops import compiled


class Model:
    """A program ready to run: ``model(x)``, ``model(x=x)``, ``model.run(None, {"x": x})``;
    an archive's other methods by name: ``model.reset_states()``, ``model.methods``."""

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
        methods: Sequence[str] | Callable[[], Sequence[str]] = (),
        compile_method: Callable[[str], Any] | None = None,
        options: Any = None,
        quantized_engine: str | None = None,
        quantized_kernel: str | None = None,
        module: str | None = None,
        method: str = "forward",
        implied: Mapping[str, Any] | None = None,
    ) -> None:
        """``implied``: what the weights imply of the inputs (``vm.api.signature.implied``),
        known ahead (the program cache keeps it, so the IR need not be read for it);
        ``methods``: the module's method names beside ``forward`` (or what lists them, called
        when they are first asked for: ``vm.load`` reads a ``.pt``'s names from the archive
        only then), each compiled by ``compile_method(name)`` when first called; ``options``: the static runtime's
        ``StaticOptions`` (default: its defaults with ``fuser``); ``quantized_engine`` and
        ``quantized_kernel``: whose integers quantized operators give (vm.load);
        ``method``: the method ``program`` is, which a call of the model runs
        (``irvm run --method``; ``forward`` unless told)."""
        from vm.ops.quantized.arith import quantized_setting

        self.program = program
        # quantized arithmetic: fbgemm's or qnnpack's, on fbgemm's kernel of this CPU or a pinned one
        self.quantized = quantized_setting(quantized_engine, quantized_kernel)
        # the example inputs the model came with (a trace's), kept for save(): dtypes and shapes
        self._examples = [_example_spec(e) for e in examples or ()]
        # a copy of the same kind: an archive's own state (vm.binding.strict.ArchiveState) stays one
        self.weights: dict[str, Any] = type(weights)(weights) if isinstance(weights, dict) else dict(weights or {})
        self.strict = strict
        self.backend = backend
        self.fuser, self.seed, self.threads, self.path = fuser, seed, threads, path
        self.options = options
        self.module = module  # the module of a torch.package archive at ``path``
        self.implied = implied
        self._lock = threading.Lock()
        self._spawned = np.random.SeedSequence(seed) if seed is not None else None
        self._made = 0
        # the module object every method and every thread runs on, as torch.jit.load's
        # module is one: what one call writes to it (prim::SetAttr), the next one reads
        from vm.binding.weights import ModuleObject

        self.module_object = ModuleObject.from_state_dict(self.weights)
        # the attributes some method writes (vm.program.bytecode.Program.state): calls to a
        # model with state are serialized, as they share that state
        self.state: tuple[str, ...] = tuple(getattr(program, "state", ()))
        self._calls: threading.RLock | None = threading.RLock() if self.state else None
        self._list_methods: Callable[[], Sequence[str]] = methods if callable(methods) else (lambda: methods)
        self._method_names: list[str] | None = None
        self._compile_method = compile_method
        self._methods: dict[str, Method] = {}
        self.entry = method
        forward = self._methods[method] = Method(self, method, program, examples)
        self.inputs: list[NodeArg] = forward.inputs
        self.outputs: list[NodeArg] = forward.outputs
        self.static_module: Any = forward.static_module
        forward.runtime()  # this thread's, made now: a model that cannot run fails at load

    # -- calling ------------------------------------------------------------------------

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        """The outputs for these inputs: one value, or a tuple when the graph returns several."""
        return self._methods[self.entry](*args, **kwargs)

    def run_traced(self, *args: Any, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """``Method.run_traced`` of the model's call (the interp backend)."""
        return self._methods[self.entry].run_traced(*args, **kwargs)

    @property
    def methods(self) -> list[str]:
        """The module's methods, ``forward`` first (listed on first use)."""
        names = self._method_names
        if names is None:
            with self._lock:
                if self._method_names is None:
                    self._method_names = list(dict.fromkeys(["forward", self.entry, *self._list_methods()]))
                names = self._method_names
        return names

    def method(self, name: str) -> Method:
        """The method ``name`` of the model's module object (compiled on first use)."""
        found = self._methods.get(name)
        if found is not None:
            return found
        if name not in self.methods or self._compile_method is None:
            raise RunError(f"the model has no method {name!r}: its methods are {', '.join(self.methods)}")
        with self._lock:
            found = self._methods.get(name)
            if found is None:
                found = self._methods[name] = Method(self, name, self._compile_method(name), None)
        return found

    def __getattr__(self, name: str) -> Any:
        """``model.reset_states``: a method of the archive beside ``forward``."""
        if name.startswith("_") or "_list_methods" not in self.__dict__ or name not in self.methods:
            raise AttributeError(f"{type(self).__name__!s} object has no attribute {name!r}")
        return self.method(name)

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

        paths = output_paths(self.program)
        values = outputs_as_list(self(**input_feed), len({path[0] for _, path, _ in paths}))
        flat = {}
        for name, path, _ in paths:
            value = values[path[0]]
            for i in path[1:]:
                if not isinstance(value, (tuple, list)) or i >= len(value):
                    raise RunError(f"output {name}: the model returned {type(value).__name__}, not the tuple its type says")
                value = value[i]
            flat[name] = value
        return [flat[n] for n in wanted]

    def get_inputs(self) -> list[NodeArg]:
        """``self.inputs`` (ONNX Runtime's spelling)."""
        return list(self.inputs)

    def get_outputs(self) -> list[NodeArg]:
        """``self.outputs`` (ONNX Runtime's spelling)."""
        return list(self.outputs)

    def _next_seed(self) -> int | None:
        with self._lock:
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
        specs = self._examples if len(self._examples) == len(self.inputs) else [
            [a.dtype.name, a.shape] if a.dtype is not None and a.shape is not None and None not in a.shape
            else None for a in self.inputs]
        save(self.program, out, options={"example_inputs": specs} if any(specs) else None)
        if archive and self.path is not None:
            from compiler.torchscript import save_archive_weights

            save_archive_weights(self.path, out, force=force, announce=False, module=self.module)

    @property
    def quantized_arithmetic(self) -> dict[str, str] | None:
        """For a model with quantized operators, whose integers they give:
        ``{"quantized_engine": ..., "quantized_kernel": ...}`` (None for a float model)."""
        return quantized_arithmetic(self.program, self.quantized)

    def _quantized_options(self) -> dict[str, Any]:
        engine, kernel = self.quantized or (None, None)
        return {"quantized_engine": engine, "quantized_kernel": kernel}

    def __repr__(self) -> str:
        where = f"{self.path}, " if self.path is not None else ""
        ins = ", ".join(f"{a.name}: {a.type}" for a in self.inputs)
        return f"<vm.Model {where}backend={self.backend!r} ({ins}) -> {len(self.outputs)} output(s)>"


class Method:
    """One method of a model's module object, called as the model is: positional inputs,
    by name, the source's defaults.  Every method of a model runs on ``model.module_object``;
    each calling thread gets its own runtime (a ``StaticRuntime`` over the method's shared
    ``StaticModule``, or an ``Interpreter``), bound to that one object."""

    def __init__(self, model: Model, name: str, program: Any, examples: Sequence[Any] | None) -> None:
        self.model, self.name, self.program = model, name, program
        self._local = threading.local()
        self.static_module: Any = None
        self.setup_seconds = 0.0  # building the static module (irvm profile's "setup")
        if model.backend == "static":
            import time

            from vm.api.static import StaticModule  # the front door's: a program specialized for its weights
            from vm.static import StaticOptions

            options = model.options or StaticOptions(fuser=model.fuser)
            start = time.perf_counter()
            self.static_module = StaticModule(program, model.weights or None, options,
                                              strict=model.strict, self_object=model.module_object,
                                              example_shapes=[_example_spec(e) for e in examples or ()])
            self.setup_seconds = time.perf_counter() - start
        # after the static module: it has read the program's IR, which the weights' implied sizes need
        self.inputs: list[NodeArg] = input_args(program, examples, model.weights,
                                                model.implied if name == model.entry else None)
        self.outputs: list[NodeArg] = output_args(program)
        self._names = [arg.name for arg in self.inputs]
        self._warm(examples)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        runtime, arguments = self.runtime(), self._arguments(args, kwargs)
        calls = self.model._calls
        try:
            if calls is None:  # no state: threads run at once, each on its own runtime
                return runtime(*arguments)
            with calls:  # module state: one call at a time, as the state is one
                return runtime(*arguments)
        finally:
            compiled.call_finished()  # compiled kernels this call asked for may load now

    def run_traced(self, *args: Any, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """The outputs, and every value the run stored under its IR name (``irvm run
        --trace``): the interpreter's ``run_traced``, so the interp backend only (the
        static runtime reuses its buffers)."""
        runtime, arguments = self.runtime(), self._arguments(args, kwargs)
        if not hasattr(runtime, "run_traced"):
            raise RunError(
                "a trace needs the interpreter (backend='interp'): the static runtime reuses one memory "
                "slab for intermediates, so they are gone by the end of the run"
            )
        with self.model._calls or _NO_LOCK:
            return runtime.run_traced(*arguments)

    def __repr__(self) -> str:
        ins = ", ".join(f"{a.name}: {a.type}" for a in self.inputs)
        return f"<vm.Model method {self.name}({ins})>"

    def _warm(self, examples: Sequence[Any] | None) -> None:
        """A first call as fast as the next: where the input shapes are known and running
        the program on zeros changes nothing the user sees, this thread's runtime is built
        now and runs them once, so the pages of its buffers, its generated code, numpy's and
        BLAS's first paths are touched before the user's call.  The static module says when
        (it planned ahead on zeros: no state written, no value-bound loop); for the
        interpreter, which reads no IR, a program with no state and no loop at all
        qualifies.  Random operators (a dropout in eval mode, say) draw from a generator of
        the warm-up's own, so the user's stream starts where it would have."""
        module = self.static_module
        if module is not None:
            if not module.planned_inputs or module.assigns_attributes:
                return
            made: tuple[Any, ...] = module.planned_inputs
        else:
            from vm.binding.inputs import example_zeros

            zeros = example_zeros([_example_spec(e) for e in examples or ()], len(self.inputs))
            if zeros is None or self.model.state or _loops(self.program):
                return
            made = zeros
        runtime = self.runtime()
        engines = getattr(runtime, "engines", None)
        own = engines.generator if engines is not None else None
        try:
            if engines is not None:
                from vm.ops.random import make_generator

                engines.generator = make_generator(0)
            with np.errstate(all="ignore"):
                runtime(*made)
        except Exception:  # noqa: BLE001  (a warm-up that fails leaves the first call as it was)
            self._local.runtime = None
        finally:
            if engines is not None:
                engines.generator = own

    def runtime(self) -> Any:
        runtime = getattr(self._local, "runtime", None)
        if runtime is None:
            runtime = self._local.runtime = self._new_runtime()
        return runtime

    def _new_runtime(self) -> Any:
        model = self.model
        seed = model._next_seed()
        if self.static_module is not None:
            from vm.static import StaticRuntime

            return StaticRuntime(self.static_module, seed=seed, **model._quantized_options())
        from vm.interpreter.machine import Interpreter

        return Interpreter(self.program, model.weights or None, fuser=model.fuser, seed=seed, strict=model.strict,
                           self_object=model.module_object, **model._quantized_options())

    def _arguments(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Any]:
        """The inputs in graph order: positional first, then by name (the graph's name,
        ``x.1``, or its Python name, ``x``, when no other input shares it), then the defaults."""
        names = self._names
        if len(args) > len(names):
            raise RunError(f"{self._what()} takes {len(names)} input(s) ({self._listing()}), got {len(args)}")
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
            raise RunError(f"missing input(s) {', '.join(map(repr, missing))}: {self._what()}'s inputs are {self._listing()}")
        return slots

    def _what(self) -> str:
        return "the model" if self.name == "forward" else f"method {self.name}"

    def _index(self, key: str) -> int:
        names = self._names
        if key in names:
            return names.index(key)
        matches = [i for i, n in enumerate(names) if _python_name(n) == key or n == _python_name(key)]
        if len(matches) == 1:
            return matches[0]
        raise RunError(f"unknown input {key!r}: {self._what()}'s inputs are {self._listing()}")

    def _listing(self) -> str:
        return ", ".join(self._names) or "none"


_UNSET: Any = object()
_NO_LOCK: Any = contextlib.nullcontext()


def _loops(program: Any) -> bool:
    """Whether the bytecode has a loop (whose trip count zeros could make anything)."""
    from vm.program.bytecode import Opcode

    return any(ins.op is Opcode.LOOP for f in program.functions for ins in f.instructions)


def _example_spec(example: Any) -> list[Any] | None:
    """``[dtype name, shape]`` of a recorded example (an array, or such a pair already)."""
    if isinstance(example, np.ndarray):
        return [example.dtype.name, list(example.shape)]
    if isinstance(example, (tuple, list)) and len(example) == 2:
        return [example[0], list(example[1])]
    return None


def _is_archive(path: Path) -> bool:
    from vm.files.kinds import FileKind, sniff

    return sniff(path) in (FileKind.TORCHSCRIPT, FileKind.PACKAGE)


def _python_name(name: str) -> str:
    """``x`` for a graph input ``x.1`` (TorchScript's renaming of the Python argument ``x``)."""
    base, _, suffix = name.rpartition(".")
    return base if base and suffix.isdigit() else name


def quantized_arithmetic(program: Any, setting: tuple[str, str | None] | None) -> dict[str, str] | None:
    """The engine and fbgemm kernel (vm/ops/quantized/cpu.py) whose integers ``program``'s
    quantized operators give under ``setting`` (None: the defaults); None without any."""
    from vm.ops.quantized.cpu import host_kernel

    if not any(ref.name.startswith("quantized::") for f in program.functions for ref in f.operators):
        return None
    engine, kernel = setting or ("fbgemm", None)
    return {"quantized_engine": engine, "quantized_kernel": kernel or host_kernel()}


__all__ = ["Method", "Model", "NodeArg"]
