"""Weights a program has folded in: the values its specialization read, checked at binding.

A program specialized for its weights (``compiler.pipeline.SPECIALIZE_PIPELINE``: ``irc
compile --weights``, a ``.pt`` archive) may hold tensors computed from weight values: an
eval BatchNorm folded into its convolution's weight and bias, a linear weight stored
transposed.  Its convolution then no longer reads the weights under their own names, so
a runtime given *other* weights for it would compute with the old ones and say nothing.
So each fold records, for every weight array it read, the key the runtimes bind it from
(a dotted ``%self`` path, or a ``<Tensor>`` constant's name) and a digest of its bytes
(``Program.folded_from``); binding weights to such a program digests the arrays given
under those keys (only those: a BatchNorm model's convolution weights and statistics) and
refuses, with a ``RunError`` naming the first that differs, weights other than the ones
folded in.  A key the weights do not hold is left to the usual checks: a program
specialized for its weights needs only the weights it still reads.

``digest(array)`` is the fingerprint (dtype, shape and BLAKE2b of the bytes);
``check_folded_from(folded_from, weights)`` the check; ``with_folded_tensors`` the
weights a runtime binds: the caller's, plus the tensors the folds made, under their names;
``stored_folds`` and ``folds_from_stored`` the ``.irbc`` table of both
(``program.json``'s ``specialized``).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import numpy as np

from vm.binding.unbound import UnboundTensor
from vm.core.errors import BytecodeError, RunError


def digest(array: Any) -> str:
    """A fingerprint of an array's dtype, shape and values."""
    a = np.ascontiguousarray(array)
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{a.dtype.str}{a.shape}".encode())
    if a.size:  # a zero-size array has no bytes (and memoryview.cast refuses its zero strides)
        h.update(a.reshape(-1).view(np.uint8).data)
    return h.hexdigest()


def check_folded_from(folded_from: Mapping[str, str], weights: Any) -> None:
    """Refuse ``weights`` that hold, under a key a fold read, an array other than the one
    the program folded in."""
    if not folded_from or not isinstance(weights, Mapping):
        return
    for key, expected in folded_from.items():
        found = next((k for k in UnboundTensor(key).keys() if k in weights), None)
        if found is None:
            continue
        value = weights[found]
        if not isinstance(value, np.ndarray) or digest(value) != expected:
            raise RunError(
                f"weight {found!r} is not the one this program was compiled with: its value was folded into "
                "the program (a BatchNorm into its convolution, or a weight stored transposed); compile the "
                "program again with these weights (irc compile --weights), or without weights"
            )


def with_folded_tensors(weights: Any, folded_tensors: Mapping[str, Any]) -> Any:
    """The weights a runtime binds: ``weights`` and the tensors the program's folds made."""
    if not folded_tensors:
        return weights
    if weights is None:
        return dict(folded_tensors)
    if isinstance(weights, Mapping):
        return {**weights, **folded_tensors}
    return weights


def stored_folds(program: Any, encode: Any) -> dict[str, Any]:
    """The ``.irbc`` table of a specialized program's folds (``encode``: the file's constant
    encoder, which stores arrays as ``.npy`` members)."""
    return {
        "folded_tensors": [[name, encode(np.asarray(a))] for name, a in program.folded_tensors.items()],
        "folded_from": dict(program.folded_from),
    }


def folds_from_stored(stored: Any, decode: Any, where: str) -> dict[str, Any]:
    """The ``Program`` fields of a table from ``stored_folds`` (none for a program compiled
    without weights); a malformed table is a ``BytecodeError``."""
    if stored is None:
        return {}
    try:
        tensors = {str(name): decode(value) for name, value in stored["folded_tensors"]}
        sources = {str(key): str(value) for key, value in stored["folded_from"].items()}
    except (KeyError, TypeError, ValueError, AttributeError):
        raise BytecodeError(f"{where}: malformed 'specialized' table") from None
    if not all(isinstance(a, np.ndarray) for a in tensors.values()):
        raise BytecodeError(f"{where}: a folded tensor that is no array")
    return {"specialized": True, "folded_tensors": tensors, "folded_from": sources}
