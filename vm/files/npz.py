"""Program inputs and outputs as ``.npz`` files: the one convention shared by ``irvm run``,
``tools/export_torch.py``, the differential corpus and the examples.

An ``.npz`` holds flat arrays, while a program takes and returns trees of values (tensors,
Python scalars, lists, tuples, dicts, None).  We flatten a tree into dotted keys, the way
a state_dict flattens a module:

    out0            the first graph output, when it is a tensor or a scalar
    out0.0, out0.1  its elements, when it is a tuple or a list (recursively: out0.1.0)
    out0.key        an entry of a dict output
    x.1 / arg0      an input, under its graph name without ``%`` or by position

Scalars become 0-d arrays (int -> int64, float -> float64, bool -> bool, str -> unicode),
so an ``int`` result and a 0-d int64 tensor would look alike.  To keep the file lossless
we add one more entry, ``__spec__``: a JSON string mapping each top-level key to the kind
of value stored there (``"Tensor"``, ``"int"``, ``"float"``, ``"bool"``, ``"str"``,
``"None"``, ``["list", [...]]``, ``["tuple", [...]]``, ``["dict", [[key, kind], ...]]``).
None and empty containers exist only in the spec.  An enum member is stored as its
member's name (a ``"str"``), or ``NAME=VALUE`` when its value is known (``vm.core.enum_values``),
and an ``Enum<...>`` input is read from that text.  (One loss: numpy drops trailing NUL
characters of a string.)  A file irvm writes as a run's result also holds ``__irvm__``, a
0-d string naming its role (``"outputs"``, ``"trace"``): the mark by which ``irvm run``
knows it may write over it again (vm/files/kinds.py); readers skip both entries.  Files written by hand may leave the
spec out: ``load_inputs`` then reads each input by its type in the graph (an absent
Optional input is None, a list of ints may be a 1-d array).

    >>> flat = flatten_outputs([(np.ones(2, np.float32), 3)])
    >>> sorted(flat)
    ['__spec__', 'out0.0', 'out0.1']
    >>> unflatten(flat, "out0")
    (array([1., 1.], dtype=float32), 3)
"""

from __future__ import annotations

import json
import zipfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from vm.core import types as T
from vm.core.enum_values import EnumValue, parse_member, stored
from vm.core.errors import RunError
from vm.files.kinds import MARK_KEY

SPEC_KEY = "__spec__"
RESERVED_KEYS = frozenset({SPEC_KEY, MARK_KEY})  # entries that are no value

Kind = Any  # "Tensor" | "int" | ... | [container, [...]] (JSON data)


# -- flattening ---------------------------------------------------------------------------


def kind_of(value: Any) -> Kind:
    """The spec entry describing ``value``'s shape as a tree."""
    if isinstance(value, np.ndarray):
        return "Tensor"
    if value is None:
        return "None"
    if isinstance(value, (bool, np.bool_)):
        return "bool"
    if isinstance(value, (int, np.integer)):
        return "int"
    if isinstance(value, (float, np.floating)):
        return "float"
    if isinstance(value, (str, EnumValue)):
        return "str"
    if isinstance(value, tuple):
        return ["tuple", [kind_of(v) for v in value]]
    if isinstance(value, list):
        return ["list", [kind_of(v) for v in value]]
    if isinstance(value, dict):
        return ["dict", [[_json_key(k), kind_of(v)] for k, v in value.items()]]
    raise RunError(f"cannot store a value of type {type(value).__name__} in an .npz")


def flatten(prefix: str, value: Any, into: dict[str, np.ndarray]) -> None:
    """Store ``value`` under ``prefix`` (and dotted sub-keys) in ``into``; no spec."""
    if isinstance(value, np.ndarray):
        into[prefix] = value
    elif value is None:
        pass
    elif isinstance(value, (bool, np.bool_)):
        into[prefix] = np.array(bool(value), dtype=np.bool_)
    elif isinstance(value, (int, np.integer)):
        into[prefix] = np.array(int(value), dtype=np.int64)
    elif isinstance(value, (float, np.floating)):
        into[prefix] = np.array(float(value), dtype=np.float64)
    elif isinstance(value, str):
        into[prefix] = np.array(value)
    elif isinstance(value, EnumValue):
        into[prefix] = np.array(stored(value))  # an enum member as its name (=value), as tools/export_torch.py writes it
    elif isinstance(value, (tuple, list)):
        for i, item in enumerate(value):
            flatten(f"{prefix}.{i}", item, into)
    elif isinstance(value, dict):
        for key, item in value.items():
            flatten(f"{prefix}.{key}", item, into)
    else:
        raise RunError(f"cannot store a value of type {type(value).__name__} in an .npz")


def flatten_values(named: Mapping[str, Any]) -> dict[str, np.ndarray]:
    """Flatten several top-level values, with the ``__spec__`` entry describing them."""
    flat: dict[str, np.ndarray] = {}
    for name, value in named.items():
        flatten(name, value, flat)
    flat[SPEC_KEY] = np.array(json.dumps({name: kind_of(v) for name, v in named.items()}))
    return flat


def flatten_outputs(values: Sequence[Any]) -> dict[str, np.ndarray]:
    """``values`` is one entry per graph output; keys ``out0``..``outN-1`` (see module doc)."""
    return flatten_values({f"out{i}": v for i, v in enumerate(values)})


def save_outputs(path: str | Path, values: Sequence[Any]) -> None:
    """Write ``flatten_outputs(values)`` and the ``"outputs"`` mark to exactly ``path`` (an
    .npz, no pickle; numpy adds no ``.npz`` suffix to a name that lacks it)."""
    save_marked(path, flatten_outputs(values), "outputs")


def save_marked(path: str | Path, flat: Mapping[str, np.ndarray], role: str) -> None:
    """Write ``flat`` plus ``__irvm__ = role`` to exactly ``path``."""
    write_npz(path, {**flat, MARK_KEY: np.array(role)})


def save_values(path: str | Path, named: Mapping[str, Any]) -> None:
    """Write named values (inputs, say) with their spec."""
    write_npz(path, flatten_values(named))


def write_npz(path: str | Path, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` to exactly ``path`` as ``numpy.savez`` would (a zip of ``NAME.npy``
    members, no pickle), for any names: ``numpy.savez(**arrays)`` takes its own
    keywords ``file`` and ``allow_pickle`` out of them, so an input named ``file`` broke it."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, array in arrays.items():
            with archive.open(f"{name}.npy", "w", force_zip64=True) as member:
                np.lib.format.write_array(member, np.asanyarray(array), allow_pickle=False)


def outputs_as_list(result: Any, n_outputs: int) -> list[Any]:
    """A runtime's return value as one entry per graph output (it returns a tuple when the
    graph has several outputs, the bare value when it has one)."""
    return [result] if n_outputs == 1 else list(result)


# -- unflattening -------------------------------------------------------------------------


def read_npz(path: str | Path) -> dict[str, np.ndarray]:
    """Every array of an .npz file, loaded eagerly (no pickle), but irvm's ``__irvm__``
    mark, which says who wrote the file and is no value."""
    with np.load(path, allow_pickle=False) as data:
        return {k: data[k] for k in data.files if k != MARK_KEY}


def spec_of(flat: Mapping[str, np.ndarray]) -> dict[str, Kind]:
    """The ``__spec__`` entry of a flattened mapping, or {} when it has none."""
    if SPEC_KEY not in flat:
        return {}
    return json.loads(str(flat[SPEC_KEY]))


def unflatten(flat: Mapping[str, np.ndarray], name: str, kind: Kind | None = None) -> Any:
    """Rebuild the value stored under ``name``; ``kind`` defaults to the file's spec."""
    if kind is None:
        spec = spec_of(flat)
        if name not in spec:
            raise RunError(f"{name!r} is not described in the file's {SPEC_KEY}")
        kind = spec[name]
    return _rebuild(flat, name, kind)


def _rebuild(flat: Mapping[str, np.ndarray], key: str, kind: Kind) -> Any:
    if kind == "None":
        return None
    if isinstance(kind, list):
        container, items = kind
        if container == "dict":
            return {k: _rebuild(flat, f"{key}.{k}", sub) for k, sub in items}
        rebuilt = [_rebuild(flat, f"{key}.{i}", sub) for i, sub in enumerate(items)]
        return tuple(rebuilt) if container == "tuple" else rebuilt
    if key not in flat:
        raise RunError(f"missing entry {key!r}")
    array = flat[key]
    if kind == "Tensor":
        return np.asarray(array)
    return _scalar(array, kind, key)


def _scalar(array: np.ndarray, kind: str, key: str) -> Any:
    if array.ndim != 0:
        raise RunError(f"{key!r} should be a 0-d array holding a {kind}, got shape {array.shape}")
    if kind == "int":
        return int(array)
    if kind == "float":
        return float(array)
    if kind == "bool":
        return bool(array)
    if kind == "str":
        return str(array)
    raise RunError(f"{key!r}: unknown kind {kind!r}")


def _json_key(key: Any) -> Any:
    if isinstance(key, (str, int, float, bool)):
        return key
    raise RunError(f"cannot store a dict keyed by {type(key).__name__} in an .npz")


# -- inputs -------------------------------------------------------------------------------


def load_inputs(source: str | Path | Mapping[str, np.ndarray], program: Any) -> list[Any]:
    """The argument list for ``program`` (a Program, Module or Graph) from an .npz.

    Each graph input (but a leading ``%self`` of module type, which comes from the
    weights) is read under its name without ``%`` or under ``arg<i>`` (i counting the
    non-self inputs), or under the Python argument's name (``x`` for ``%x.1``, and ``x.1``
    for a tensor ``%x``, as a file made for a dump meets the graph of a ``.pt``) when no
    other input shares it, as its ``__spec__`` entry says, else as its graph type says.
    """
    flat = _positional(read_npz(source) if isinstance(source, (str, Path)) else dict(source))
    spec = spec_of(flat)
    params = [v for v in _graph_inputs(program)]
    if params and isinstance(params[0].type, T.ClassType):
        params = params[1:]
    known = {p.name for p in params} | {f"arg{i}" for i in range(len(params))}  # arr_<i> read as arg<i>
    stray = sorted({k.split(".")[0] for k in flat if k not in RESERVED_KEYS} - {n.split(".")[0] for n in known})
    if stray:
        raise RunError(f"inputs file has entries for no graph input: {', '.join(stray)} ({_expected(params)})")
    bases = [_python_name(p.name) for p in params]
    unique = {b for b in bases if bases.count(b) == 1}
    given_defaults = tuple(getattr(program, "input_defaults", ()))
    defaults = [_NO_DEFAULT] * (len(params) - len(given_defaults)) + list(given_defaults)
    try:
        return [
            _enum_input(_load_one(flat, spec, p.name, f"arg{i}", p.type, bases[i] if bases[i] in unique else None,
                                  defaults[i]),
                        p.type, p.name)
            for i, p in enumerate(params)
        ]
    except _MissingInput as err:
        have = ", ".join(sorted(k for k in flat if k not in RESERVED_KEYS)) or "nothing"
        raise RunError(f"input {err.args[0]!r} is missing from the inputs file, which has {have} ({_expected(params)})") from None


def _positional(flat: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """numpy's own keys for arrays saved without names (``numpy.savez(f, x, y)`` writes
    ``arr_0``, ``arr_1``...) read as the positions they are (``arg0``, ``arg1``...)."""
    keys = [k for k in flat if k not in RESERVED_KEYS]
    if not keys or not all(k.startswith("arr_") and k[4:].isdigit() for k in keys):
        return flat
    return {(f"arg{k[4:]}" if k in keys else k): v for k, v in flat.items()}


def _enum_input(value: Any, type_: Any, name: str) -> Any:
    """An input of type ``Enum<...>`` (or its Optional) given as its member's name: that member."""
    enum_type = T.unwrap_optional(type_) if type_ is not None else None
    if not isinstance(enum_type, T.EnumType) or value is None:
        return value
    member = parse_member(enum_type.qualname, value) if isinstance(value, str) else None
    if member is None:
        raise RunError(f"input {name!r} has type {enum_type}: give the name of one of its members as a string, "
                       f"not {value!r}")
    return member


class _MissingInput(Exception):
    pass


def _expected(params: Sequence[Any]) -> str:
    if not params:
        return "the graph takes no inputs"
    names = ", ".join(p.name for p in params)
    return f"the graph's inputs are {names}, or by position arg0..arg{len(params) - 1}"


def _python_name(name: str) -> str:
    """The Python argument name behind a graph input: TorchScript names ``x`` ``x.1``."""
    base, _, suffix = name.rpartition(".")
    return base if base and suffix.isdigit() else name


def _graph_inputs(program: Any) -> list[Any]:
    """The entry graph's input Values: from a Graph, a Module, or a Program (its IR module,
    else, for a program read from .irbc, its recorded input names and type strings)."""
    target = program
    if getattr(target, "module_if_loaded", None) is not None:
        target = target.module_if_loaded
    elif getattr(target, "input_names", None) is not None and hasattr(target, "input_types"):
        return _signature(target.input_names, target.input_types)
    if hasattr(target, "main"):
        target = target.main
    if hasattr(target, "inputs"):
        return list(target.inputs)
    raise RunError(f"cannot find the graph inputs of {type(program).__name__}")


class _Param(NamedTuple):
    name: str
    type: Any


def _signature(names: Sequence[str], type_texts: Sequence[str]) -> list[Any]:
    # The type strings are as ``str(type)`` prints them (``vm.core.type_text`` reads them back).
    from vm.core.type_text import parse_type_text

    return [_Param(n, parse_type_text(t)) for n, t in zip(names, type_texts)]


_NO_DEFAULT = object()  # an input the model's source gives no default


def _load_one(flat: Mapping[str, np.ndarray], spec: dict[str, Kind], name: str, alias: str, type_: Any,
              python_name: str | None = None, default: Any = _NO_DEFAULT) -> Any:
    for key in (name, alias):
        if key in spec:
            return _rebuild(flat, key, spec[key])
    for key in (name, alias):
        if key in flat:
            return _by_type(flat, key, type_ if type_ is not None else T.TENSOR)
    leaf = not isinstance(T.unwrap_optional(type_), (T.ListType, T.TupleType, T.DictType))
    if python_name is not None and leaf:
        # `x.1` for `%x` (a tensor or scalar has no elements), when no other input is `x` in Python
        twins = [k for k in flat if k not in RESERVED_KEYS and _python_name(k) == python_name]
        if len(twins) == 1:
            key = twins[0]
            return _rebuild(flat, key, spec[key]) if key in spec else _by_type(flat, key, type_ or T.TENSOR)
    for key in (name, alias):
        if any(k.startswith(key + ".") for k in flat):
            return _by_type(flat, key, type_ if type_ is not None else T.TENSOR)
    if python_name is not None and python_name != name:  # keyed by the Python argument's name
        if python_name in spec:
            return _rebuild(flat, python_name, spec[python_name])
        if python_name in flat:
            return _by_type(flat, python_name, type_ if type_ is not None else T.TENSOR)
    if default is not _NO_DEFAULT:  # what the model's source gives a caller who leaves it out
        return default
    if isinstance(type_, T.OptionalType) or type_ == T.NONE:
        return None
    raise _MissingInput(name)



def _by_type(flat: Mapping[str, np.ndarray], key: str, type_: Any) -> Any:
    """Read ``key`` guided by the graph's type (for files written without a spec)."""
    type_ = T.unwrap_optional(type_)
    if isinstance(type_, T.TensorType):
        return _rebuild(flat, key, "Tensor")
    if isinstance(type_, T.NamedType) and type_.name in ("int", "float", "bool", "str"):
        return _scalar(flat[key], type_.name, key) if key in flat else _missing(key)
    if isinstance(type_, T.ListType):
        if key in flat:  # a list of scalars given as one 1-d array
            return [_convert_item(x, type_.elem) for x in flat[key].tolist()]
        items, i = [], 0
        while f"{key}.{i}" in flat or any(k.startswith(f"{key}.{i}.") for k in flat):
            items.append(_by_type(flat, f"{key}.{i}", type_.elem))
            i += 1
        return items
    if isinstance(type_, T.TupleType):
        return tuple(_by_type(flat, f"{key}.{i}", t) for i, t in enumerate(type_.elems))
    if key in flat:
        return np.asarray(flat[key])
    return _missing(key)


def _convert_item(x: Any, elem: Any) -> Any:
    if isinstance(elem, T.NamedType) and elem.name in ("int", "float", "bool"):
        return {"int": int, "float": float, "bool": bool}[elem.name](x)
    return x


def _missing(key: str) -> Any:
    raise RunError(f"missing entry {key!r} in the inputs file")


# -- comparing ----------------------------------------------------------------------------


def compare_flat(
    expected: Mapping[str, np.ndarray], actual: Mapping[str, np.ndarray], rtol: float = 1e-4, atol: float = 1e-5
) -> list[str]:
    """Differences between two flattened results: spec, keys, dtypes, shapes, values.

    Floating arrays compare with ``rtol``/``atol`` (NaN equals NaN); everything else exactly.
    An empty list means they agree.
    """
    problems: list[str] = []
    if spec_of(expected) and spec_of(actual) and spec_of(expected) != spec_of(actual):
        problems.append(f"kinds differ: expected {spec_of(expected)}, got {spec_of(actual)}")
    keys_e, keys_a = set(expected) - RESERVED_KEYS, set(actual) - RESERVED_KEYS
    if keys_e != keys_a:
        problems.append(f"keys differ: missing {sorted(keys_e - keys_a)}, extra {sorted(keys_a - keys_e)}")
    for key in sorted(keys_e & keys_a):
        e, a = np.asarray(expected[key]), np.asarray(actual[key])
        if e.dtype != a.dtype:
            problems.append(f"{key}: dtype {a.dtype}, expected {e.dtype}")
        elif e.shape != a.shape:
            problems.append(f"{key}: shape {a.shape}, expected {e.shape}")
        elif e.dtype.kind in "fc":
            if not np.allclose(a, e, rtol=rtol, atol=atol, equal_nan=True):
                worst = float(np.nanmax(np.abs(a.astype(np.float64) - e.astype(np.float64))))
                problems.append(f"{key}: values differ (max abs error {worst:.3g})")
        elif not np.array_equal(a, e):
            problems.append(f"{key}: values differ: got {a!r}, expected {e!r}")
    return problems
