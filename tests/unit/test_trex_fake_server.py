"""The fake TRex server enforces what a real one enforces, over raw ZMQ.

These tests speak to the fake with hand-built JSON and zlib frames (no plugin code), so the
plugin is tested against a server that really rejects what TRex rejects.
"""

import base64
import json
import struct
import time
import zlib

import pytest
import zmq

from tests.fakes.trex.launcher import FakeTrex

MAGIC = bytes.fromhex("ABE85CEA")


class Raw:
    """A REQ socket and nothing else."""

    def __init__(self, port: int) -> None:
        self.sock = zmq.Context.instance().socket(zmq.REQ)
        self.sock.setsockopt(zmq.LINGER, 0)
        self.sock.setsockopt(zmq.RCVTIMEO, 3000)
        self.sock.connect(f"tcp://127.0.0.1:{port}")
        self.n = 0
        self.api_h = None

    def send(self, obj, zipped=True):
        data = json.dumps(obj).encode()
        frame = MAGIC + struct.pack(">I", len(data)) + zlib.compress(data) if zipped else data
        self.sock.send(frame)
        reply = self.sock.recv()
        if reply[:4] == MAGIC:
            body = zlib.decompress(reply[8:])
            assert struct.unpack(">I", reply[4:8])[0] == len(body)
            return json.loads(body), True
        return json.loads(reply), False

    def req(self, method, **params):
        self.n += 1
        if self.api_h and "api_h" not in params:
            params["api_h"] = self.api_h
        return {"jsonrpc": "2.0", "id": str(self.n), "method": method, "params": params}

    def call(self, method, **params):
        reply, _ = self.send(self.req(method, **params))
        return reply

    def sync(self, major=5, minor=0):
        self.api_h = self.call("api_sync_v2", name="STL", major=major, minor=minor)["result"]["api_h"]
        return self

    def close(self):
        self.sock.close(linger=0)


@pytest.fixture(scope="module")
def fake(tmp_path_factory):
    with FakeTrex(tmp_path_factory.mktemp("fake"), capacity_fps=100_000, dut_delay_ms=1) as f:
        yield f


@pytest.fixture
def raw(fake):
    client = Raw(fake.sync_port)
    yield client
    client.close()


def test_reply_is_compressed_iff_the_request_was(raw):
    reply, zipped = raw.send(raw.req("ping"), zipped=True)
    assert zipped and "ts" in reply["result"]
    reply, zipped = raw.send(raw.req("ping"), zipped=False)
    assert not zipped and reply["jsonrpc"] == "2.0"


def test_batch_answered_with_an_array_in_order(raw):
    raw.sync()
    reply, _ = raw.send([raw.req("get_version"), raw.req("no_such_method"), raw.req("ping")])
    assert isinstance(reply, list) and [r["id"] for r in reply] == ["2", "3", "4"]
    assert reply[0]["result"]["version"] == "v3.08"
    assert reply[1]["error"]["code"] == -32601
    assert "ts" in reply[2]["result"]


def test_api_h_is_required_except_for_sync_and_version(raw):
    err = raw.call("get_system_info")["error"]
    assert err["code"] == -32602 and "api_h" in err["specific_err"]
    err = raw.call("get_system_info", api_h="deadbeef")["error"]
    assert err["code"] == -32000 and "API verification failed" in err["specific_err"]
    assert "result" in raw.call("get_version")
    raw.sync()
    assert raw.call("get_system_info")["result"]["port_count"] == 2


def test_version_checks_use_trex_texts(raw):
    err = raw.call("api_sync_v2", name="STL", major=4, minor=8)["error"]
    assert err["code"] == -32000
    assert "newer client version is required" in err["specific_err"]
    assert "server: '5.1', client: '4.8'" in err["specific_err"]
    err = raw.call("api_sync_v2", name="STL", major=5, minor=9)["error"]
    assert "too new" in err["specific_err"]
    err = raw.call("api_sync_v2", name="ASTF", major=2, minor=3)["error"]
    assert "RPC configuration mismatch" in err["specific_err"]


def test_ownership_is_enforced(raw):
    raw.sync()
    err = raw.call("remove_all_streams", port_id=0, handler="x")["error"]
    assert "please acquire the port" in err["specific_err"]
    handler = raw.call("acquire", port_id=0, user="alice", session_id=7, force=False)["result"]
    try:
        err = raw.call("remove_all_streams", port_id=0, handler="wrong")["error"]
        assert "not owned by you" in err["specific_err"]
        bob = raw.call("acquire", port_id=0, user="bob", session_id=8, force=False)["error"]
        assert "already owned by 'alice'" in bob["specific_err"]
        assert raw.call("get_port_status", port_id=0)["result"]["owner"] == "alice"
    finally:
        assert raw.call("release", port_id=0, handler=handler)["result"] == {}
    assert raw.call("get_port_status", port_id=0)["result"]["owner"] == ""


def _stream(pps, pkt=b"\x02" * 60, vm=None, flow_stats=None):
    return {"enabled": True, "self_start": True, "isg": 0.0, "flags": 3, "action_count": 0,
            "next_stream_id": -1, "packet": {"binary": base64.b64encode(pkt).decode(), "meta": ""},
            "mode": {"type": "continuous", "rate": {"type": "pps", "value": pps}},
            "vm": vm or {"instructions": []}, "flow_stats": flow_stats or {"enabled": False}}


def test_field_engine_and_streams_are_validated(raw):
    raw.sync()
    h = raw.call("acquire", port_id=1, user="t", session_id=9, force=True)["result"]
    try:
        bad_vm = {"instructions": [
            {"type": "flow_var", "name": "a", "size": 4, "op": "inc", "init_value": 0,
             "min_value": 0, "max_value": 9, "step": 1},
            {"type": "write_flow_var", "name": "a", "pkt_offset": 58, "add_value": 0, "is_big_endian": True}]}
        err = raw.call("add_stream", port_id=1, handler=h, stream_id=1, stream=_stream(10, vm=bad_vm))["error"]
        assert "bigger than the packet" in err["specific_err"]
        err = raw.call("add_stream", port_id=1, handler=h, stream_id=1,
                       stream=_stream(10, vm={"instructions": [{"type": "bogus"}]}))["error"]
        assert err["code"] == -32602
        assert "result" in raw.call("add_stream", port_id=1, handler=h, stream_id=1, stream=_stream(10))
        err = raw.call("add_stream", port_id=1, handler=h, stream_id=1, stream=_stream(10))["error"]
        assert "already exists" in err["specific_err"]
        assert raw.call("get_port_status", port_id=1)["result"]["state"] == "STREAMS"
    finally:
        raw.call("remove_all_streams", port_id=1, handler=h)
        raw.call("release", port_id=1, handler=h)


def test_timed_trial_counts_model_and_finished_event(fake, raw):
    """Below and above the DUT capacity, over raw RPC, with the event channel."""
    raw.sync()
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(f"tcp://127.0.0.1:{fake.async_port}")
    session = 4242
    h = raw.call("acquire", port_id=0, user="t", session_id=session, force=True)["result"]
    try:
        raw.call("get_async_events", session_id=session)
        for pps, expected_ratio in ((50_000, 1.0), (200_000, 0.5)):
            raw.call("remove_all_streams", port_id=0, handler=h)
            raw.call("add_stream", port_id=0, handler=h, stream_id=1, stream=_stream(pps))
            before = raw.call("get_port_stats", port_id=1)["result"]["ipackets"]
            tx0 = raw.call("get_port_stats", port_id=0)["result"]["opackets"]
            res = raw.call("start_traffic", port_id=0, handler=h, profile_id="_", duration=0.3,
                           force=False, mul={"type": "raw", "op": "abs", "value": 1.0})["result"]
            assert res["multiplier"] == 1.0
            deadline, done, seen_trigger = time.monotonic() + 3, False, False
            while not done and time.monotonic() < deadline:
                if sub.poll(200):
                    seen_trigger = seen_trigger or sub.recv() == b"{}"
                evs = raw.call("get_async_events", session_id=session)["result"]["data"]
                done = any(e["type"] == 14 and e["data"]["port_id"] == 0 for e in evs)
            assert done and seen_trigger
            time.sleep(0.05)  # drain (DUT delay 1 ms)
            tx = raw.call("get_port_stats", port_id=0)["result"]["opackets"] - tx0
            rx = raw.call("get_port_stats", port_id=1)["result"]["ipackets"] - before
            assert tx == int(pps * 0.3)
            assert rx == pytest.approx(tx * expected_ratio, abs=2)
    finally:
        raw.call("remove_all_streams", port_id=0, handler=h)
        raw.call("release", port_id=0, handler=h)
        sub.close(linger=0)


def test_event_seq_is_contiguous_per_session_and_global_snapshots_are_zipped(fake, raw):
    raw.sync()
    sub = zmq.Context.instance().socket(zmq.SUB)
    sub.setsockopt(zmq.LINGER, 0)
    sub.setsockopt(zmq.SUBSCRIBE, b"")
    sub.connect(f"tcp://127.0.0.1:{fake.async_port}")
    try:
        raw.call("get_async_events", session_id=99)
        for _ in range(3):
            h = raw.call("acquire", port_id=1, user="s", session_id=99, force=True)["result"]
            raw.call("release", port_id=1, handler=h)
        evs = raw.call("get_async_events", session_id=99)["result"]["data"]
        seqs = [e["seq"] for e in evs]
        assert len(seqs) == 6 and seqs == list(range(seqs[0], seqs[0] + 6))
        assert [e["type"] for e in evs[:2]] == [5, 6]
        zipped = False
        deadline = time.monotonic() + 3
        while not zipped and time.monotonic() < deadline:
            if sub.poll(200):
                msg = sub.recv()
                if msg[:4] == MAGIC:
                    snap = json.loads(zlib.decompress(msg[8:]))
                    zipped = snap["name"] == "trex-global"
        assert zipped
    finally:
        sub.close(linger=0)


def test_start_above_line_rate_needs_force(raw):
    raw.sync()
    h = raw.call("acquire", port_id=1, user="t", session_id=11, force=True)["result"]
    try:
        raw.call("add_stream", port_id=1, handler=h, stream_id=1, stream=_stream(20_000_000))
        start = dict(port_id=1, handler=h, duration=0.05, mul={"type": "raw", "op": "abs", "value": 1.0})
        err = raw.call("start_traffic", force=False, **start)["error"]
        assert err["code"] == -32000
        assert err["specific_err"] == "Expected L1 B/W: '13.44 Gbps' exceeds port line rate: '10 Gbps'"
        assert "result" in raw.call("start_traffic", force=True, **start)
        time.sleep(0.1)
    finally:
        raw.call("stop_traffic", port_id=1, handler=h)
        raw.call("remove_all_streams", port_id=1, handler=h)
        raw.call("release", port_id=1, handler=h)
