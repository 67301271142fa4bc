"""The binding session: what a program meets before its first run, in one order, for both backends.

``vm.Interpreter`` and ``vm.static.StaticModule`` bind a program to its weights by the same
steps, here and nowhere else (``bind``); each backend only says how its own form of the
program answers them (a ``Bindable``: the interpreter reads the ``Program``'s records, the
static runtime the IR module it runs).  In this order:

1. **strict keys** (``vm.binding.strict``): the weights' keys against the model's own keys,
   or what the program reads, as ``load_state_dict(strict=True)``; skipped for
   ``strict=False`` (``--weights-partial``);
2. **folded check** (``vm.binding.folded``): weights other than the ones the program folded
   into itself (a BatchNorm into its convolution) are refused by name;
3. **%self**: the module object, the shared one (a ``vm.Model``'s) with what the program
   reads of it bound in place, else one built from the weights (``vm.binding.weights``);
4. **constants**: the flat weights (the mapping given, plus the tensors the program's folds
   made, ``with_folded_tensors``) that ``<Tensor>`` constants are bound from, by the backend;
5. **dtype guard** (``vm.binding.weight_checks``, ``vm.binding.preflight``): weights torch
   would refuse (a shape, a dtype) are refused now, and the guard of the inputs' dtypes is made.

Then, for every runtime (the static backend has one per thread over one module),
6. **engines** (``Engines``): its own random generator (``seed``) and quantized arithmetic,
   which a call re-enters when the caller's current ones differ.

Each step's refusal is the step's own ``RunError``, worded where the step lives.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Protocol

import attrs

from vm.binding.folded import check_folded_from
from vm.binding.strict import Reads, check_keys
from vm.ops.quantized.arith import current_setting, quantized_setting, using_quantized
from vm.ops.random import generator, make_generator, using_generator


class Bindable(Protocol):
    """A backend's form of the program, as the session asks it."""

    @property
    def folded_from(self) -> Mapping[str, str]:
        """Weight key -> digest of the value a fold read (``vm.binding.folded``)."""
        ...

    @property
    def folded_tensors(self) -> Mapping[str, Any]:
        """The tensors the program's folds made, by name."""
        ...

    def reads(self) -> Reads:
        """What the program reads from its weights (``vm.binding.strict``)."""
        ...

    def bind_self(self, weights: Any, shared: Any) -> Any:
        """``%self``'s module object (``shared`` when given), or None without ``%self``."""
        ...

    def bind_constants(self, flat: Mapping[str, Any]) -> Any:
        """The backend's constants, ``<Tensor>`` ones bound from ``flat``."""
        ...

    def guard(self, self_object: Any, flat: Mapping[str, Any]) -> Any:
        """Refuse the weights torch would refuse; the inputs' dtype guard, or None."""
        ...


@attrs.frozen(eq=False)
class Bound:
    """A program bound to its weights: what the backend keeps of the session."""

    self_object: Any  # %self's ModuleObject, or None
    flat: Mapping[str, Any]  # the weights constants bind from, the folds' tensors added
    constants: Any  # the backend's bound constants
    dtype_guard: Any  # vm.binding.preflight's guard of the inputs' dtypes, or None


def bind(program: Bindable, weights: Any, *, strict: bool = True, shared: Any = None) -> Bound:
    """Steps 1-5 of the module docstring, in that order.  ``weights``: a flat mapping of
    dotted keys, a ``ModuleObject`` or None; ``shared``: the module object ``%self`` is."""
    strict_keys(program.reads, weights, strict)
    check_folded_from(program.folded_from, weights)
    self_object = program.bind_self(weights, shared)
    flat = {**(weights if isinstance(weights, Mapping) else {}), **program.folded_tensors}
    constants = program.bind_constants(flat)
    return Bound(self_object, flat, constants, program.guard(self_object, flat))


def strict_keys(reads: Callable[[], Reads], weights: Any, strict: bool = True) -> None:
    """Step 1 alone: refuse a mapping of weights whose keys are not the model's
    (``vm.binding.strict.check_keys`` against ``reads()``), unless ``strict`` is off.  The
    front door runs it too before it specializes a program for weights (``vm/api/static.py``):
    a fold must not read another model's weights."""
    if strict and isinstance(weights, Mapping):
        check_keys(reads(), weights)


class Engines:
    """Step 6: a runtime's random generator (seeded by ``seed``; None: from the OS) and
    quantized arithmetic (``vm.ops.quantized.arith.quantized_setting``; None: the caller's).
    ``draws``: whether the program has random operators (else its generator is never entered)."""

    def __init__(self, seed: int | None, quantized_engine: str | None, quantized_kernel: str | None, draws: bool):
        self.quantized = quantized_setting(quantized_engine, quantized_kernel)
        self.generator = make_generator(seed)
        self.draws = draws
        # nothing to enter, ever (no random operator, the caller's quantized arithmetic): a
        # runtime keeps None instead, so its steady call tests one local
        self.idle = not draws and self.quantized is None

    def current(self) -> bool:
        """Whether a call runs on this runtime's engines already (the steady case)."""
        return (not self.draws or generator() is self.generator) and (
            self.quantized is None or current_setting() == self.quantized
        )

    @contextlib.contextmanager
    def entered(self) -> Iterator[None]:
        """This runtime's engines made the current ones, for one call."""
        with contextlib.ExitStack() as stack:
            if self.draws:
                stack.enter_context(using_generator(self.generator))
            if self.quantized is not None:
                stack.enter_context(using_quantized(self.quantized))
            yield


__all__ = ["Bindable", "Bound", "Engines", "bind", "strict_keys"]
