"""The Open Inference Protocol codec (vm/serve/protocol.py): requests in JSON and in the binary
tensor data extension decode to the arrays they describe, responses decode back in
Triton's own client, and every malformed request is a ProtocolError naming what is wrong."""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest

from vm.serve.protocol import (
    DATATYPES,
    InferRequest,
    ProtocolError,
    TensorSpec,
    decode_request,
    encode_response,
)

X = TensorSpec("x", "FP32", (-1, 3), "tensor(float)")
N = TensorSpec("n", "INT64", (), "int")
S = TensorSpec("s", "BYTES", (), "str")
ANY = TensorSpec("a", None, None, "tensor(undefined)")
OUT = [TensorSpec("out0", None, None), TensorSpec("out1", None, None)]


def _json(obj: object) -> bytes:
    return json.dumps(obj).encode()


def test_json_data_flat_and_nested_decode_row_major() -> None:
    for data in ([1, 2, 3, 4, 5, 6], [[1, 2, 3], [4, 5, 6]]):
        body = _json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 3], "data": data}]})
        request = decode_request(body, None, [X], OUT)
        np.testing.assert_array_equal(request.feeds["x"], np.arange(1, 7, dtype=np.float32).reshape(2, 3))
        assert request.feeds["x"].dtype == np.float32 and request.outputs is None


@pytest.mark.parametrize("datatype", sorted(DATATYPES))
def test_binary_data_of_every_datatype_decodes_bit_exact(datatype: str) -> None:
    dtype = DATATYPES[datatype]
    x = (np.arange(12) % 2 == 0) if dtype.kind == "b" else np.arange(12).astype(dtype)
    x = x.reshape(4, 3)
    spec = TensorSpec("x", datatype, (-1, 3))
    head = _json({"inputs": [{"name": "x", "datatype": datatype, "shape": [4, 3],
                              "parameters": {"binary_data_size": x.nbytes}}]})
    request = decode_request(head + x.tobytes(), str(len(head)), [spec], OUT)
    assert request.feeds["x"].dtype == dtype and np.array_equal(request.feeds["x"], x)


def test_scalar_and_string_inputs_take_one_element() -> None:
    s = "héllo".encode()
    raw = struct.pack("<I", len(s)) + s
    head = _json({"inputs": [
        {"name": "n", "datatype": "INT64", "shape": [1], "data": [7]},
        {"name": "s", "datatype": "BYTES", "shape": [], "parameters": {"binary_data_size": len(raw)}},
    ]})
    request = decode_request(head + raw, str(len(head)), [N, S], OUT)
    assert request.feeds["n"].shape == () and int(request.feeds["n"]) == 7
    assert request.feeds["s"] == "héllo"


def test_an_input_of_unknown_dtype_and_rank_takes_any_numeric_tensor() -> None:
    body = _json({"inputs": [{"name": "a", "datatype": "INT32", "shape": [2, 1, 2], "data": [1, 2, 3, 4]}]})
    assert decode_request(body, None, [ANY], OUT).feeds["a"].shape == (2, 1, 2)


@pytest.mark.parametrize(
    ("request_", "header", "says"),
    [
        (b"{not json", None, "not JSON"),
        (_json([1, 2]), None, "'inputs' list"),
        (_json({"inputs": [{"name": "y", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]}]}), None,
         "unknown input 'y'; the model takes 'x'"),
        (_json({"inputs": [{"name": "x", "datatype": "FP64", "shape": [1, 3], "data": [1, 2, 3]}]}), None,
         "datatype FP64, but the model takes FP32"),
        (_json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 4], "data": [1, 2, 3, 4]}]}), None,
         "shape [1, 4], but the model takes [-1, 3]"),
        (_json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [3], "data": [1, 2, 3]}]}), None,
         "shape [3], but the model takes [-1, 3]"),
        (_json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [2, 3], "data": [1, 2, 3]}]}), None,
         "holds 6 elements, 'data' has 3"),
        (_json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [1, "a", 3]}]}), None,
         "'a' is not a FP32 value"),
        (_json({"inputs": [{"name": "x", "datatype": "BF16", "shape": [1, 3], "data": [1, 2, 3]}]}), None,
         "unsupported datatype 'BF16'"),
        (_json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, -3], "data": []}]}), None,
         "non-negative integers"),
        (_json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3]}]}), None,
         "neither 'data' nor a binary_data_size"),
        (_json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3],
                            "parameters": {"binary_data_size": 12}}]}) + b"\0" * 8, "9999", "is 9999, but the body has"),
        (_json({"inputs": [{"name": "n", "datatype": "INT64", "shape": [2], "data": [1, 2]}]}), None,
         "shape [] or [1]"),
        (_json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]}],
                "outputs": [{"name": "out7"}]}), None, "unknown output 'out7'"),
        (_json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]},
                           {"name": "x", "datatype": "FP32", "shape": [1, 3], "data": [1, 2, 3]}]}), None, "twice"),
    ],
)
def test_malformed_requests_are_400_naming_the_problem(request_: bytes, header: str | None, says: str) -> None:
    with pytest.raises(ProtocolError) as err:
        decode_request(request_, header, [X, N], OUT)
    assert err.value.status == 400 and says in err.value.message


def test_binary_sizes_must_add_up_to_the_body() -> None:
    x = np.ones((1, 3), np.float32)
    head = _json({"inputs": [{"name": "x", "datatype": "FP32", "shape": [1, 3],
                              "parameters": {"binary_data_size": 12}}]})
    with pytest.raises(ProtocolError, match="4 bytes of binary data no input claims"):
        decode_request(head + x.tobytes() + b"\0" * 4, str(len(head)), [X], OUT)
    with pytest.raises(ProtocolError, match="takes 12 bytes, binary_data_size is 8"):
        short = head.replace(b"12", b"8")
        decode_request(short + x.tobytes()[:8], str(len(short)), [X], OUT)


def _request(binary: dict[str, bool], default: bool) -> InferRequest:
    return InferRequest({}, None, binary, default, "r1")


def test_responses_decode_in_tritonclient_json_and_binary() -> None:
    http = pytest.importorskip("tritonclient.http")
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.array([[True, False]])
    for binary, default in (({}, False), ({}, True), ({"out0": True}, False)):
        body, headers = encode_response("m", "1", _request(binary, default), ["out0", "out1"], [a, b])
        length = headers.get("inference-header-content-length")
        result = http.InferResult.from_response_body(body, header_length=None if length is None else int(length))
        assert np.array_equal(result.as_numpy("out0"), a) and result.as_numpy("out0").dtype == np.float32
        assert np.array_equal(result.as_numpy("out1"), b) and result.as_numpy("out1").dtype == np.bool_
        assert result.get_response()["id"] == "r1"


def test_an_output_the_protocol_cannot_carry_is_500() -> None:
    with pytest.raises(ProtocolError) as err:
        encode_response("m", "1", _request({}, False), ["out0"], [[np.ones(2)]])
    assert err.value.status == 500 and "is a list" in err.value.message


def test_metadata_says_what_is_dynamic() -> None:
    assert X.metadata() == {"name": "x", "datatype": "FP32", "shape": [-1, 3]}
    assert ANY.metadata() == {"name": "a", "datatype": "ANY", "shape": [-1], "parameters": {"rank": "any"}}
    assert N.metadata() == {"name": "n", "datatype": "INT64", "shape": []}
