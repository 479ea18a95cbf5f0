"""The official TRex Python client (lbr-trex-client, the test extra) against the fake TRex.

If the client TRex ships can run a whole session against the fake, the fake speaks TRex's
protocol as TRex's own client expects it -- the plugin tests against the fake then mean
something for a real server.
"""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fakes.trex.launcher import FakeTrex

SESSION = Path(__file__).resolve().parents[1] / "fakes" / "trex" / "official_client_session.py"


@pytest.mark.skipif(importlib.util.find_spec("lbr_trex_client") is None,
                    reason="lbr-trex-client missing: pip install -e '.[test]'")
def test_official_client_runs_a_session_against_the_fake(tmp_path):
    with FakeTrex(tmp_path, capacity_fps=150_000, speed_gbps=1, latency_us=30, latency_spread_us=2) as fake:
        proc = subprocess.run([sys.executable, str(SESSION), str(fake.sync_port), str(fake.async_port)],
                              capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out = json.loads(proc.stdout.strip().splitlines()[-1])
        assert fake.alive()
    assert out["server_version"] == "v3.08"
    assert 0.5 <= out["wait_s"] < 2.0  # ended by the 'profile finished tx' event
    assert out["opackets0"] == 100_000 + 500  # bulk + latency stream, 0.5 s
    # 201 kpps offered into a 150 kfps DUT: the model's share arrives
    assert out["ipackets1"] == pytest.approx(out["opackets0"] * 150_000 / 201_000, rel=0.002)
    assert out["pg7_tx"] == 500 and 0 < out["pg7_rx"] < 500
    assert min(int(k) for k in out["histogram_us"]) >= 10  # overloaded: beyond 30 µs
    assert out["latency_us"]["total_min"] <= out["latency_us"]["average"] <= out["latency_us"]["total_max"]
    assert out["over_line_rate"] == "Port 0 : *** Expected L1 B/W: '2 Gbps' exceeds port line rate: '1 Gbps'"
