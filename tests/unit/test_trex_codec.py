"""TRex wire format: zlib framing and JSON-RPC envelopes (plugin codec vs the fake's own)."""

import json
import struct
import zlib

import pytest

from tests.fakes.trex import wire
from vsbench_plugins.trafficgen.trex import codec


def test_compressed_frame_has_magic_and_uncompressed_length_big_endian():
    payload = b'{"jsonrpc":"2.0","id":"1","method":"ping","params":{}}'
    frame = codec.compress(payload)
    assert frame[:4] == bytes.fromhex("abe85cea")
    assert struct.unpack(">I", frame[4:8])[0] == len(payload)
    assert zlib.decompress(frame[8:]) == payload


def test_round_trip_and_interop_with_the_fakes_independent_framing():
    payload = json.dumps({"x": list(range(500))}).encode()
    assert codec.decompress(codec.compress(payload)) == payload
    assert wire.unzip(codec.compress(payload)) == payload
    assert codec.decompress(wire.zip_frame(payload)) == payload


def test_plain_json_is_not_mistaken_for_a_frame():
    assert not codec.is_compressed(b'{"jsonrpc":"2.0"}')
    assert not codec.is_compressed(b"\xab\xe8\x5c")  # shorter than a header
    value, was_compressed = codec.decode(b'{"a": 1}')
    assert value == {"a": 1} and was_compressed is False


def test_length_mismatch_and_corrupt_stream_are_framing_errors():
    frame = codec.compress(b"hello world")
    bad_len = frame[:4] + struct.pack(">I", 99) + frame[8:]
    with pytest.raises(codec.FramingError, match="announces 99"):
        codec.decompress(bad_len)
    with pytest.raises(codec.FramingError, match="corrupt"):
        codec.decompress(frame[:8] + b"not zlib at all")


def test_encode_compressed_and_decode_reports_compression():
    frame = codec.encode([{"a": 1}], compressed=True)
    assert codec.is_compressed(frame)
    assert codec.decode(frame) == ([{"a": 1}], True)
    with pytest.raises(codec.ProtocolError):
        codec.decode(b"\xff\xfe not json")


def test_make_request_puts_api_h_in_params_and_params_is_an_object():
    req = codec.make_request("get_port_stats", {"port_id": 1}, api_h="abcd1234")
    assert req["jsonrpc"] == "2.0" and req["method"] == "get_port_stats"
    assert req["params"] == {"port_id": 1, "api_h": "abcd1234"}
    assert codec.make_request("ping")["params"] == {}


def test_result_error_and_id_checks():
    req = codec.make_request("ping", request_id="r1")
    assert codec.result_of(req, {"jsonrpc": "2.0", "id": "r1", "result": {"ts": 1}}) == {"ts": 1}
    with pytest.raises(codec.RpcError) as err:
        codec.result_of(req, {"jsonrpc": "2.0", "id": "r1", "error": {
            "code": -32000, "message": "Failed To Execute Method",
            "specific_err": "Version mismatch\n(API type 'STL')"}})
    assert err.value.code == -32000
    assert err.value.detail == "Version mismatch (API type 'STL')"  # one line
    with pytest.raises(codec.ProtocolError, match="does not match"):
        codec.result_of(req, {"jsonrpc": "2.0", "id": "other", "result": {}})
    with pytest.raises(codec.ProtocolError, match="malformed"):
        codec.result_of(req, {"id": "r1", "result": {}})


def test_batch_results_in_request_order_and_count_checked():
    reqs = [codec.make_request("a", request_id="1"), codec.make_request("b", request_id="2")]
    reply = [{"jsonrpc": "2.0", "id": "2", "result": "B"}, {"jsonrpc": "2.0", "id": "1", "result": "A"}]
    assert codec.results_of_batch(reqs, reply) == ["A", "B"]
    with pytest.raises(codec.ProtocolError, match="answered with 1"):
        codec.results_of_batch(reqs, reply[:1])
    # a batch of one may come back as a bare object
    assert codec.results_of_batch(reqs[:1], {"jsonrpc": "2.0", "id": "1", "result": 5}) == [5]
