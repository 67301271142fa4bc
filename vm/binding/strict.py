"""Strict weights: the keys of a weights mapping against the keys the program reads, as
PyTorch's ``load_state_dict(strict=True)`` compares a state_dict with a module's own keys.

A misspelled key is the worst kind of mistake a weights file can hold: the attribute it
was meant for is an Optional (a convolution's ``bias``), so it silently becomes None, and
the key itself is read by nothing.  So before anything runs, both runtimes compare:

- the *reads*: every dotted path the program reads from ``%self`` (the ``prim::GetAttr``
  chains, ``reads_of``), the paths whose whole object it uses (a sub-module passed to a
  function: every key below is read), the settings it was compiled for
  (``Module.attributes``), and the names its ``<Tensor>`` constants are looked up under;
- the keys given.

A key nothing reads is *unexpected*; a read the weights do not hold is *missing*.  A
missing read of an Optional attribute is how a state_dict says None (``bias=False``), so
it is refused only together with an unexpected key (that pair is the misspelling);
``training`` and the buffers a program never reads but every state_dict holds
(``num_batches_tracked``) are expected anywhere; an RNN's ``_flat_weights`` reads its
named parameters (``weight_ih_l0``...).  Each name in the error comes with its closest counterpart
(``difflib``).  ``strict=False`` (``--weights-partial``) skips the comparison.

The reads include what the program read once its calls were inlined, before the passes
folded a branch away (``Module.source_reads``), so a key of a removed branch stays read.  That comparison with the
reads is the fallback.  A program that knows the keys of the model
it was compiled from (``Program.model_keys``: a ``.pt``'s module tree, or the ``__keys__``
record ``tools/export_torch.py`` writes into the weights, ``model_keys_of``) is checked
against them instead, exactly as ``load_state_dict(strict=True)`` checks: a key the model
does not have is unexpected, a parameter or buffer of the model that is not given is
missing, and nothing else is refused.  So the keys of a branch the optimizer folded away
(inception_v3's auxiliary head), a tied weight read under its other name, the settings
only a removed branch read, a quantized module's packed parameters all stay the model's.

The weights a ``torch.jit.save`` archive holds are the module's own state: every key
belongs to the model, read or not (``ArchiveState``); weights given over them are
compared with them instead (``check_given``), as ``load_state_dict`` would.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from vm.core import types as T
from vm.core.errors import RunError

# what every module has (``training``) and buffers in every state_dict of their module
# that no inference graph reads
_ALWAYS_EXPECTED = ("num_batches_tracked", "training")
_SPEC = "__spec__"
KEYS = "__keys__"  # the model's own keys, a JSON object key -> must-be-given, in an exported weights file
_RECORDS = (_SPEC, KEYS)
PARTIAL_HINT = "(--weights-partial on the command line, strict=False in the API, accepts them)"


class ArchiveState(dict[str, Any]):
    """The weights read from a ``torch.jit.save`` archive: the module's own state, so no key is
    unexpected (a parameter ``forward`` never reads is still the model's)."""


class Reads:
    """What a program reads from its weights (see the module docstring)."""

    def __init__(self) -> None:
        self.required: set[str] = set()
        self.optional: set[str] = set()  # Optional attributes (and ``training``): absent is None
        self.other: set[str] = set()  # folded settings, assigned attributes, tensor constants' names
        self.wholes: set[str] = set()  # sub-module paths used as objects: every key below is read
        self.model_keys: dict[str, bool] = {}  # the model's own keys, when recorded (see the module docstring)

    def expects(self, key: str) -> bool:
        if key in self.required or key in self.optional or key in self.other or key in _RECORDS:
            return True
        if key.rsplit(".", 1)[-1] in _ALWAYS_EXPECTED:
            return True
        return any(key == prefix or key.startswith(prefix + ".") or prefix == "" for prefix in self.wholes) or any(
            key.startswith(path + ".") for path in self.required | self.optional | self.other  # entries of a container
        )


def reads_of(graph: Any, constant_names: Iterable[str] = (), folded: Iterable[str] = ()) -> Reads:
    """The reads of a program whose entry graph is ``graph`` (the compiler's IR or a check
    graph), whose tensor constants are named ``constant_names``, compiled for the settings
    ``folded`` (dotted paths)."""
    from vm.binding.unbound import UnboundTensor

    reads = Reads()
    reads.other.update(folded)
    for name in constant_names:
        reads.other.update(UnboundTensor(name).keys())
    if graph is not None and graph.inputs and isinstance(graph.inputs[0].type, T.ClassType):
        _walk(graph.inputs[0], "", reads)
    return reads


def source_reads_of(graph: Any) -> dict[str, bool]:
    """What ``graph`` (a compiler IR graph, before the passes) reads from ``%self``: dotted
    path -> True when the whole object below it is read (``Module.source_reads``)."""
    reads = reads_of(graph)
    found = {k: False for k in reads.required | reads.optional | reads.other}
    found.update({k: True for k in reads.wholes})
    return found


def stored_keys(program: Any) -> dict[str, Any]:
    """The ``.irbc`` tables of a program's model keys and source reads (none when empty)."""
    tables = {"model_keys": dict(program.model_keys), "source_reads": dict(program.source_reads)}
    return {name: table for name, table in tables.items() if table}


def keys_from_stored(body: Mapping[str, Any], where: str) -> dict[str, dict[str, bool]]:
    """The ``Program`` fields of the tables ``stored_keys`` wrote; a malformed one is a
    ``BytecodeError``."""
    from vm.core.errors import BytecodeError

    fields = {}
    for name in ("model_keys", "source_reads"):
        table = body.get(name, {})
        if not isinstance(table, dict) or not all(isinstance(k, str) and isinstance(v, bool) for k, v in table.items()):
            raise BytecodeError(f"{where}: malformed {name!r} table")
        fields[name] = dict(table)
    return fields


def _with_source(reads: Reads, source: Mapping[str, bool]) -> Reads:
    for path, whole in source.items():
        (reads.wholes if whole else reads.other).add(path)
    return reads


def _walk(value: Any, path: str, reads: Reads) -> None:
    for use in value.uses:
        node = use.user
        if getattr(node, "kind", None) not in ("prim::GetAttr", "prim::SetAttr") or use.index != 0:
            reads.wholes.add(path)  # the object itself goes somewhere: all of it may be read
            continue
        name = str(node.attrs.get("name"))
        dotted = f"{path}.{name}" if path else name
        if node.kind == "prim::SetAttr":
            reads.other.add(dotted)
            continue
        out_type = node.outputs[0].type
        if name == "_flat_weights":  # an RNN's: built from its named parameters (weight_ih_l0...)
            reads.wholes.add(path)
        if isinstance(out_type, T.ClassType):
            _walk(node.outputs[0], dotted, reads)
        elif isinstance(out_type, T.OptionalType) or out_type == T.NONE or name == "training":
            reads.optional.add(dotted)
        else:
            reads.required.add(dotted)


def check_keys(reads: Reads, weights: Mapping[str, Any] | None) -> None:
    """Raise a RunError naming the unexpected and missing keys of ``weights`` with their closest
    names: against the model's own keys when they are known (``reads.model_keys``, else the
    weights' own ``__keys__`` record), else against the reads; nothing for an ``ArchiveState``."""
    if not weights or isinstance(weights, ArchiveState):
        return
    model = reads.model_keys or recorded_keys(weights)
    if model:
        _check_model_keys(model, reads, weights)
        return
    unexpected = sorted(k for k in weights if not reads.expects(k))
    if not unexpected:
        return
    read = sorted(reads.required | reads.optional)
    missing = [
        k for k in read
        if k not in weights and not k.endswith("training") and not any(w.startswith(k + ".") for w in weights)
    ]
    raise RunError(_message(unexpected, missing, read, list(weights)))


def _check_model_keys(model: Mapping[str, bool], reads: Reads, weights: Mapping[str, Any]) -> None:
    """``load_state_dict(strict=True)``'s rule with the model's keys ``model`` (key -> a
    state_dict must hold it): a key is the model's when it is one of them, an entry below one
    (``sizes.0`` of a list setting), or read by the program (a frozen graph's constants)."""
    def owned(key: str) -> bool:
        if key in model or key in _RECORDS or key.rsplit(".", 1)[-1] in _ALWAYS_EXPECTED:
            return True
        parts = key.split(".")
        return any(".".join(parts[:n]) in model for n in range(1, len(parts))) or reads.expects(key)

    unexpected = sorted(k for k in weights if not owned(k))
    missing = sorted(
        k for k, must in model.items()
        if must and k not in weights and not any(w.startswith(k + ".") for w in weights)
    )
    if unexpected or missing:
        raise RunError(_message(unexpected, missing, sorted(model), list(weights), "compiled"))


def model_keys_of(weights: Mapping[str, Any]) -> dict[str, bool]:
    """The model keys (key -> a state_dict must hold it) of a model's complete flattened
    state ``weights`` (a ``.pt``'s module tree, ``compiler.torchscript.weights.flatten``): a
    floating-point tensor of at least one dimension, or a quantized one, must be given; a
    setting (``conv.stride``, ``training``) or an integer buffer need not."""
    from vm.core.quantized import PACKED_TYPES, QTensor

    def must(value: Any) -> bool:
        if isinstance(value, (QTensor, *PACKED_TYPES)):
            return True
        return isinstance(value, np.ndarray) and value.dtype.kind in "fc" and value.ndim > 0

    return {str(k): must(v) for k, v in weights.items() if k not in _RECORDS}


def recorded_keys(weights: Mapping[str, Any] | None) -> dict[str, bool]:
    """The ``__keys__`` record of a weights mapping (an export's: the model's own keys), {} when
    it has none; a malformed record is a RunError."""
    import json

    raw = weights.get(KEYS) if weights else None
    if raw is None:
        return {}
    try:
        record = json.loads(str(np.asarray(raw).item()))
    except (ValueError, TypeError):
        record = None
    if not isinstance(record, dict) or not all(isinstance(v, bool) for v in record.values()):
        raise RunError(f"the weights' {KEYS} entry is not a JSON object of key -> bool")
    return {str(k): v for k, v in record.items()}


def program_reads(program: Any) -> Reads:
    """``reads_of`` a compiled ``Program`` (its IR when in memory, else its recorded tables)."""
    from vm.binding.unbound import UnboundTensor
    from vm.program.self_reads import self_graph

    names = []
    for function in program.functions:
        for k, value in enumerate(function.constants):
            if isinstance(value, UnboundTensor):
                names.append(value.name)
            elif k < len(function.constant_names) and function.constant_names[k] and hasattr(value, "shape"):
                names.append(function.constant_names[k])
    module = program.module_if_loaded
    folded = module.attributes if module is not None else program.folded
    # the weights the specialization passes read (folded into new tensors) are read too
    reads = reads_of(self_graph(program), names, (*(folded or ()), *getattr(program, "folded_from", {})))
    reads.model_keys = dict(program.model_keys)
    return _with_source(reads, program.source_reads)


def module_reads(module: Any) -> Reads:
    """``reads_of`` an IR ``Module`` (the static runtime's source, before its load-time folds)."""
    from vm.program.check_graph import is_tensor_literal

    names = [
        node.outputs[0].name
        for graph in (module.main, *module.functions.values())
        for node in graph.walk()
        if node.kind == "prim::Constant" and node.outputs and is_tensor_literal(node.attrs.get("value"))
    ]
    # the weights the specialization passes read (folded into new tensors) are read too
    reads = reads_of(module.main, names, (*module.attributes, *getattr(module, "folded_from", {})))
    reads.model_keys = dict(module.model_keys)
    return _with_source(reads, getattr(module, "source_reads", {}))


def check_given(
    own: Mapping[str, Any], given: Mapping[str, Any], source: str, model: Mapping[str, bool] | None = None
) -> None:
    """Weights ``given`` over a model's own (``own``, read from ``source``): refused, as
    ``load_state_dict(strict=True)`` refuses, when a key is not the model's or one of the
    model's parameters and buffers (``model``'s must-hold keys, the program's ``model_keys``;
    without them, its floating-point tensors) is not given.  The code's constants
    (``CONSTANTS.cN``) are no state_dict entry: the archive's stay."""
    unexpected = sorted(k for k in given if k not in own and k not in _RECORDS)
    if model:
        missing = sorted(k for k, must in model.items() if must and k not in given and not k.startswith("CONSTANTS."))
    else:
        missing = sorted(
            k for k, v in own.items()
            if k not in given and isinstance(v, np.ndarray) and v.dtype.kind in "fc" and v.ndim > 0
        )
    if unexpected or missing:
        raise RunError(_message(unexpected, missing, sorted(own), list(given), source))


def _message(unexpected: list[str], missing: list[str], read: list[str], given: list[str], source: str = "") -> str:
    whose = (
        "of the model the program was compiled from" if source == "compiled"
        else f"of the model in {source}" if source else "the program reads"
    )
    lines = [f"the weights do not match the keys {whose}, as load_state_dict(strict=True) refuses them:"]
    if unexpected:
        lines.append(f"unexpected key(s) ({len(unexpected)}):")
        lines += [f"  {k}{_closest(k, [r for r in read if r not in given] or read)}" for k in unexpected[:20]]
    if missing:
        lines.append(f"missing key(s) ({len(missing)}):")
        lines += [f"  {k}{_closest(k, unexpected or given)}" for k in missing[:20]]
    lines.append(PARTIAL_HINT)
    return "\n".join(lines)


def _closest(key: str, candidates: list[str]) -> str:
    found = difflib.get_close_matches(key, candidates, n=1, cutoff=0.5)
    return f" (closest: {found[0]})" if found else ""


__all__ = [
    "KEYS", "PARTIAL_HINT", "ArchiveState", "Reads", "check_given", "check_keys", "keys_from_stored", "model_keys_of",
    "module_reads", "program_reads", "reads_of", "recorded_keys", "source_reads_of", "stored_keys",
]
