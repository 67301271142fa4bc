"""The Open Inference Protocol v2 (KServe v2, Triton's HTTP/REST API) as data: requests
decoded into numpy feeds, results encoded back, every refusal a ``ProtocolError`` with the
HTTP status the protocol gives it.

A request body is JSON, optionally followed by the binary tensor data extension's raw
bytes: the ``Inference-Header-Content-Length`` header says where the JSON ends, and each
input whose ``parameters`` carry ``binary_data_size`` takes that many bytes, in input
order, instead of a ``data`` array::

    {"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3],
                 "data": [1, 2, 3]}],                         # row-major, flat or nested
     "outputs": [{"name": "out0", "parameters": {"binary_data": true}}],
     "parameters": {"binary_data_output": true}}              # every output in binary

Tensors are row-major; ``BYTES`` elements are strings in JSON and, in binary, each a
4-byte little-endian length followed by its bytes.  The checks against a model's declared
inputs (unknown name, datatype, rank, fixed dimensions, element count) are the protocol's;
what the program itself refuses (``vm.binding``'s checks, as ``irvm run`` makes them) comes
back from the run as a ``RunError`` and is a 400 too (``vm.serve.service``).

The JSON's nesting is bounded before it is parsed (``MAX_JSON_DEPTH``: the protocol's four
levels plus a tensor's at most 64 dimensions, with room to spare), by one pass of C-speed
byte operations: 100,000 nested ``[`` were a RecursionError inside ``json.loads`` (500),
and are a 400 naming the depth.  A request's ``parameters`` may carry ``timeout``, in
microseconds as Triton's clients send it; the server answers a request that is not done
by then with 504 (``vm.serve.asgi``).
"""

from __future__ import annotations

import json
import math
import re
import struct
from collections.abc import Mapping, Sequence
from typing import Any

import attrs
import numpy as np

# protocol datatype <-> numpy dtype (BF16 has no numpy dtype: refused by name)
DATATYPES: dict[str, np.dtype] = {
    "BOOL": np.dtype(np.bool_),
    "UINT8": np.dtype(np.uint8),
    "UINT16": np.dtype(np.uint16),
    "UINT32": np.dtype(np.uint32),
    "UINT64": np.dtype(np.uint64),
    "INT8": np.dtype(np.int8),
    "INT16": np.dtype(np.int16),
    "INT32": np.dtype(np.int32),
    "INT64": np.dtype(np.int64),
    "FP16": np.dtype(np.float16),
    "FP32": np.dtype(np.float32),
    "FP64": np.dtype(np.float64),
}
_BY_DTYPE = {dtype: name for name, dtype in DATATYPES.items()}
# a model input declared as a Python scalar or a string takes a one-element tensor
SCALAR_DATATYPES = {"int": "INT64", "float": "FP64", "bool": "BOOL", "str": "BYTES"}


class ProtocolError(Exception):
    """A request the protocol refuses: ``status`` (400, 404, 413...) and a message naming
    what is wrong, sent as ``{"error": message}``."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status = status
        self.message = message


def datatype_of(dtype: Any) -> str:
    """The protocol datatype of a numpy dtype (``float32`` -> ``FP32``; strings -> ``BYTES``)."""
    d = np.dtype(dtype)
    if d.kind in "OSU":
        return "BYTES"
    if d not in _BY_DTYPE:
        raise ProtocolError(500, f"a {d} tensor has no Open Inference Protocol datatype")
    return _BY_DTYPE[d]


@attrs.frozen
class TensorSpec:
    """An input or output as the protocol describes it: name, datatype (None when the program
    does not declare it), shape (-1 where a dimension is dynamic; None when even the rank is
    unknown) and the program's own type text."""

    name: str
    datatype: str | None
    shape: tuple[int, ...] | None
    type: str = "Tensor"

    def metadata(self) -> dict[str, Any]:
        """The ``$metadata_tensor`` object: an unknown datatype is ``"ANY"`` and an unknown
        rank ``[-1]`` with ``"parameters": {"rank": "any"}``, so a client reads what is not fixed."""
        out: dict[str, Any] = {"name": self.name, "datatype": self.datatype or "ANY"}
        if self.shape is None:
            out["shape"] = [-1]
            out["parameters"] = {"rank": "any"}
        else:
            out["shape"] = list(self.shape)
        return out


def spec_from_node_arg(arg: Any) -> TensorSpec:
    """A ``TensorSpec`` from a ``vm.NodeArg`` (``name``, ``type``, ``dtype``, ``shape``)."""
    type_text = str(getattr(arg, "type", "Tensor") or "Tensor")
    scalar = SCALAR_DATATYPES.get(type_text.rstrip("?"))
    if scalar is not None:
        return TensorSpec(arg.name, scalar, (), type_text)
    dtype = getattr(arg, "dtype", None)
    datatype = _BY_DTYPE.get(np.dtype(dtype)) if dtype is not None else None  # None: complex, unknown
    shape = getattr(arg, "shape", None)
    dims = None if shape is None else tuple(-1 if d is None else int(d) for d in shape)
    return TensorSpec(arg.name, datatype, dims, type_text)


@attrs.frozen
class InferRequest:
    """A decoded request: the feeds by input name, the outputs asked for (None: all), which
    of them go back in binary, and the request's id."""

    feeds: dict[str, Any]
    outputs: list[str] | None
    binary: dict[str, bool]
    binary_default: bool
    id: str | None = None
    timeout: float | None = None  # seconds (the request's 'timeout' parameter)


def decode_request(body: bytes, header_length: str | None, inputs: Sequence[TensorSpec],
                   outputs: Sequence[TensorSpec]) -> InferRequest:
    """``body`` (JSON, then binary tensor data when ``header_length`` is given) decoded and
    checked against the model's ``inputs`` and ``outputs``; a ProtocolError otherwise."""
    head, tail = _split(body, header_length)
    depth = json_depth(head)
    if depth > MAX_JSON_DEPTH:
        raise ProtocolError(400, f"the request's JSON nests {depth} levels deep; irvm reads at most {MAX_JSON_DEPTH} "
                                 "(a tensor's 'data' may nest once per dimension)")
    try:
        request = json.loads(head)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ProtocolError(400, f"the request body is not JSON: {err}") from None
    if not isinstance(request, dict) or not isinstance(request.get("inputs"), list):
        raise ProtocolError(400, "the request must be a JSON object with an 'inputs' list")
    declared = {spec.name: spec for spec in inputs}
    feeds: dict[str, Any] = {}
    offset = 0
    for i, tensor in enumerate(request["inputs"]):
        name, value, used = _decode_input(i, tensor, declared, tail, offset)
        if name in feeds:
            raise ProtocolError(400, f"input '{name}' is given twice")
        feeds[name] = value
        offset += used
    if offset != len(tail):
        raise ProtocolError(400, f"the body has {len(tail) - offset} bytes of binary data no input claims "
                                 f"(binary_data_size adds up to {offset}, after the JSON come {len(tail)})")
    missing = [spec.name for spec in inputs if spec.name not in feeds]
    if missing and len(missing) == len(inputs):
        raise ProtocolError(400, f"no input given; the model takes {_names(inputs)}")
    wanted, binary = _requested_outputs(request.get("outputs"), outputs)
    params = _parameters(request, "request")
    rid = request.get("id")
    return InferRequest(feeds, wanted, binary, bool(params.get("binary_data_output", False)),
                        None if rid is None else str(rid), _timeout(params))


def _timeout(params: Mapping[str, Any]) -> float | None:
    """The request's ``timeout`` parameter (microseconds, as Triton's) in seconds, or None."""
    value = params.get("timeout")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ProtocolError(400, f"the request's 'timeout' parameter is {value!r}: a positive number of microseconds")
    return value / 1e6


MAX_JSON_DEPTH = 100
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"')
_NEST = np.zeros(256, np.int8)
_NEST[[ord("["), ord("{")]] = 1
_NEST[[ord("]"), ord("}")]] = -1


def json_depth(text: bytes) -> int:
    """How deep ``text``'s arrays and objects nest (brackets inside strings not counted),
    without parsing it: strings blanked by one regex, then a running sum over the bytes.
    A text with at most ``MAX_JSON_DEPTH`` brackets cannot nest deeper: it is not scanned,
    and its count of brackets is returned (a bound, not the depth)."""
    openers = text.count(b"[") + text.count(b"{")
    if openers <= MAX_JSON_DEPTH:
        return openers
    bare = _STRING.sub(b'""', text)
    steps = _NEST[np.frombuffer(bare, np.uint8)]
    brackets = steps[steps != 0].astype(np.int64)  # the sum runs over the brackets only
    return int(np.cumsum(brackets).max(initial=0))


def _split(body: bytes, header_length: str | None) -> tuple[bytes, bytes]:
    if header_length is None:
        return body, b""
    try:
        n = int(header_length)
    except ValueError:
        raise ProtocolError(400, f"Inference-Header-Content-Length is not a number: {header_length!r}") from None
    if not 0 <= n <= len(body):
        raise ProtocolError(400, f"Inference-Header-Content-Length is {n}, but the body has {len(body)} bytes")
    return body[:n], body[n:]


def _names(specs: Sequence[TensorSpec]) -> str:
    return ", ".join(f"'{s.name}'" for s in specs) or "none"


def _parameters(obj: Mapping[str, Any], where: str) -> dict[str, Any]:
    params = obj.get("parameters") or {}
    if not isinstance(params, dict):
        raise ProtocolError(400, f"the {where}'s 'parameters' must be an object")
    return params


def _decode_input(i: int, tensor: Any, declared: Mapping[str, TensorSpec], tail: bytes,
                  offset: int) -> tuple[str, Any, int]:
    """(name, value, binary bytes used) of the request's input ``i``."""
    if not isinstance(tensor, dict) or not isinstance(tensor.get("name"), str):
        raise ProtocolError(400, f"inputs[{i}] must be an object with a 'name'")
    name = tensor["name"]
    if name not in declared:
        raise ProtocolError(400, f"unknown input '{name}'; the model takes {_names(list(declared.values()))}")
    spec = declared[name]
    datatype, shape = tensor.get("datatype"), tensor.get("shape")
    if not isinstance(datatype, str):
        raise ProtocolError(400, f"input '{name}' has no 'datatype'")
    if not isinstance(shape, list) or not all(isinstance(d, int) and not isinstance(d, bool) and d >= 0
                                              for d in shape):
        raise ProtocolError(400, f"input '{name}': 'shape' must be a list of non-negative integers, got {shape!r}")
    _check_against(spec, datatype, shape)
    size = _binary_size(name, _parameters(tensor, f"input '{name}'"))
    if size is not None:
        if offset + size > len(tail):
            raise ProtocolError(400, f"input '{name}' says binary_data_size {size}, but only "
                                     f"{len(tail) - offset} bytes of binary data are left in the body")
        array = _from_bytes(name, datatype, shape, tail[offset : offset + size])
        used = size
    else:
        if "data" not in tensor:
            raise ProtocolError(400, f"input '{name}' has neither 'data' nor a binary_data_size parameter")
        array = _from_json(name, datatype, shape, tensor["data"])
        used = 0
    return name, _as_feed(spec, array), used


def _binary_size(name: str, params: Mapping[str, Any]) -> int | None:
    size = params.get("binary_data_size")
    if size is None:
        return None
    if not isinstance(size, int) or isinstance(size, bool) or size < 0:
        raise ProtocolError(400, f"input '{name}': binary_data_size must be a non-negative integer, got {size!r}")
    return size


def _check_against(spec: TensorSpec, datatype: str, shape: list[int]) -> None:
    """The datatype and shape a request gives for ``spec``, checked where the model fixes them."""
    if datatype not in DATATYPES and datatype != "BYTES":
        known = ", ".join([*DATATYPES, "BYTES"])
        extra = " (numpy has no bfloat16)" if datatype == "BF16" else ""
        raise ProtocolError(400, f"input '{spec.name}': unsupported datatype {datatype!r}{extra}; one of {known}")
    if spec.datatype is not None and datatype != spec.datatype:
        raise ProtocolError(400, f"input '{spec.name}': datatype {datatype}, but the model takes {spec.datatype}")
    if spec.datatype is None and datatype == "BYTES":
        raise ProtocolError(400, f"input '{spec.name}' is a tensor ({spec.type}); BYTES is for string inputs")
    if spec.shape == ():  # a scalar input: one element, as [] or [1]
        if shape not in ([], [1]):
            raise ProtocolError(400, f"input '{spec.name}' is a {spec.type}: shape [] or [1], got {shape}")
        return
    if spec.shape is None:
        return
    if len(shape) != len(spec.shape) or any(d != -1 and d != g for d, g in zip(spec.shape, shape)):
        raise ProtocolError(400, f"input '{spec.name}': shape {shape}, but the model takes {list(spec.shape)}"
                                 f" (-1: any size)")


def _from_bytes(name: str, datatype: str, shape: list[int], raw: bytes) -> np.ndarray:
    count = math.prod(shape)
    if datatype == "BYTES":
        items = _split_bytes(name, raw)
        if len(items) != count:
            raise ProtocolError(400, f"input '{name}': shape {shape} holds {count} elements, the binary data {len(items)}")
        return np.array(items, dtype=object).reshape(shape)
    dtype = DATATYPES[datatype]
    if len(raw) != count * dtype.itemsize:
        raise ProtocolError(400, f"input '{name}': shape {shape} of {datatype} takes {count * dtype.itemsize} bytes, "
                                 f"binary_data_size is {len(raw)}")
    array = np.frombuffer(raw, dtype=dtype.newbyteorder("<")).astype(dtype, copy=True)
    return array.reshape(shape)


def _split_bytes(name: str, raw: bytes) -> list[bytes]:
    items, at = [], 0
    while at < len(raw):
        if at + 4 > len(raw):
            raise ProtocolError(400, f"input '{name}': BYTES data ends inside an element's 4-byte length")
        (n,) = struct.unpack_from("<I", raw, at)
        if at + 4 + n > len(raw):
            raise ProtocolError(400, f"input '{name}': a BYTES element of {n} bytes runs past the data")
        items.append(raw[at + 4 : at + 4 + n])
        at += 4 + n
    return items


def _from_json(name: str, datatype: str, shape: list[int], data: Any) -> np.ndarray:
    count = math.prod(shape)
    flat = _flatten(name, data)
    if len(flat) != count:
        raise ProtocolError(400, f"input '{name}': shape {shape} holds {count} elements, 'data' has {len(flat)}")
    if datatype == "BYTES":
        if not all(isinstance(v, str) for v in flat):
            raise ProtocolError(400, f"input '{name}': BYTES data in JSON are strings")
        return np.array([v.encode() for v in flat], dtype=object).reshape(shape)
    kind = DATATYPES[datatype].kind
    for v in flat:
        if not _fits(kind, v):
            raise ProtocolError(400, f"input '{name}': {v!r} is not a {datatype} value")
    try:
        return np.array(flat, dtype=DATATYPES[datatype]).reshape(shape)
    except OverflowError as err:
        raise ProtocolError(400, f"input '{name}': a value does not fit {datatype} ({err})") from None


def _flatten(name: str, data: Any) -> list[Any]:
    """Row-major elements of ``data``, a flat list or nested lists (the protocol allows both)."""
    if not isinstance(data, list):
        return [data]
    out: list[Any] = []
    stack = [iter(data)]
    while stack:
        for item in stack[-1]:
            if isinstance(item, list):
                stack.append(iter(item))
                break
            out.append(item)
        else:
            stack.pop()
    return out


def _fits(kind: str, v: Any) -> bool:
    if kind == "b":
        return isinstance(v, bool)
    if kind in "iu":
        return isinstance(v, int) and not isinstance(v, bool)
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _as_feed(spec: TensorSpec, array: np.ndarray) -> Any:
    """What the model takes for ``spec``: the array, a 0-d array for a scalar input, or a str."""
    if spec.shape == ():
        value = array.reshape(())
        if spec.datatype == "BYTES":
            try:
                return bytes(value.item()).decode()
            except UnicodeDecodeError:
                raise ProtocolError(400, f"input '{spec.name}' is a str: its bytes are not UTF-8") from None
        return value
    return array


def _requested_outputs(asked: Any, outputs: Sequence[TensorSpec]) -> tuple[list[str] | None, dict[str, bool]]:
    if asked is None:
        return None, {}
    if not isinstance(asked, list):
        raise ProtocolError(400, "'outputs' must be a list of objects with a 'name'")
    known = {spec.name for spec in outputs}
    names, binary = [], {}
    for i, out in enumerate(asked):
        if not isinstance(out, dict) or not isinstance(out.get("name"), str):
            raise ProtocolError(400, f"outputs[{i}] must be an object with a 'name'")
        if out["name"] not in known:
            raise ProtocolError(400, f"unknown output '{out['name']}'; the model gives {_names(outputs)}")
        names.append(out["name"])
        flag = _parameters(out, f"output '{out['name']}'").get("binary_data")
        if flag is not None:
            binary[out["name"]] = bool(flag)
    return names, binary


def encode_response(model_name: str, version: str, request: InferRequest, names: Sequence[str],
                    values: Sequence[Any]) -> tuple[bytes, dict[str, str]]:
    """The response body and its extra headers: JSON, or JSON then the binary outputs with
    ``Inference-Header-Content-Length`` when any output goes back in binary."""
    tensors, chunks = [], []
    for name, value in zip(names, values):
        array = _as_array(name, value)
        entry: dict[str, Any] = {"name": name, "datatype": datatype_of(array.dtype), "shape": list(array.shape)}
        if request.binary.get(name, request.binary_default):
            raw = _to_bytes(array)
            entry["parameters"] = {"binary_data_size": len(raw)}
            chunks.append(raw)
        else:
            entry["data"] = _to_json(array)
        tensors.append(entry)
    response: dict[str, Any] = {"model_name": model_name, "model_version": version, "outputs": tensors}
    if request.id is not None:
        response["id"] = request.id
    head = json.dumps(response, separators=(",", ":")).encode()
    if not chunks:
        return head, {"content-type": "application/json"}
    return head + b"".join(chunks), {"content-type": "application/octet-stream",
                                     "inference-header-content-length": str(len(head))}


def _as_array(name: str, value: Any) -> np.ndarray:
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (bool, int, float, np.generic)):
        return np.asarray(value)
    if isinstance(value, str):
        return np.array([value.encode()], dtype=object).reshape(())
    raise ProtocolError(500, f"output '{name}' is a {type(value).__name__}, which the protocol cannot carry "
                             f"(a tensor, a number or a string)")


def _to_bytes(array: np.ndarray) -> bytes:
    if array.dtype.kind in "OSU":
        parts = []
        for item in array.reshape(-1):
            b = item if isinstance(item, bytes) else str(item).encode()
            parts.append(struct.pack("<I", len(b)) + b)
        return b"".join(parts)
    return np.ascontiguousarray(array, dtype=array.dtype.newbyteorder("<")).tobytes()


def _to_json(array: np.ndarray) -> list[Any]:
    if array.dtype.kind in "OSU":
        return [v.decode(errors="replace") if isinstance(v, bytes) else str(v) for v in array.reshape(-1)]
    return array.reshape(-1).tolist()


__all__ = ["DATATYPES", "InferRequest", "ProtocolError", "TensorSpec", "datatype_of", "decode_request",
           "encode_response", "spec_from_node_arg"]
