"""The protocol as the server speaks it, without vsbench in between."""

import socket
import subprocess
import sys
import time

import pytest

from vsbench_example_trafficgen.protocol import LineChannel


@pytest.fixture
def server(tmp_path):
    port_file = tmp_path / "port"
    proc = subprocess.Popen([sys.executable, "-m", "vsbench_example_trafficgen.server", "--listen",
                             "tcp:127.0.0.1:0", "--port-file", str(port_file), "--model-capacity-fps", "1000"])
    deadline = time.monotonic() + 10
    while not port_file.exists():
        assert proc.poll() is None and time.monotonic() < deadline, "server did not start"
        time.sleep(0.02)
    sock = socket.create_connection(("127.0.0.1", int(port_file.read_text())))
    channel = LineChannel(sock)
    yield channel
    channel.close()
    proc.terminate()
    proc.wait(timeout=5)


def test_a_modelled_trial_splits_the_load_and_loses_above_capacity(server):
    assert server.send({"cmd": "hello"}) is None
    assert server.receive()["mode"] == "model"
    server.send({"cmd": "configure", "ports": [{"iface": "0", "mac": "02:00:00:00:00:01"},
                                               {"iface": "1", "mac": "02:00:00:00:00:02"}]})
    assert server.receive() == {"ok": True}
    server.send({"cmd": "trial", "load_fps": 4000, "duration_s": 0.1, "drain_s": 0})
    reply = server.receive()
    assert [d["tx_frames"] for d in reply["directions"]] == [200, 200]
    assert [d["rx_frames"] for d in reply["directions"]] == [50, 50]  # 1000 fps aggregate


def test_errors_are_one_line_answers(server):
    server.send({"cmd": "trial", "load_fps": 1, "duration_s": 1})
    assert server.receive() == {"ok": False, "error": "trial before configure"}
    server.send({"cmd": "frobnicate"})
    assert "unknown command" in server.receive()["error"]
