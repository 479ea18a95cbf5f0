"""The real PROX as the VNF of a PVP chain: testbed port 0 -> OvS-DPDK -> vhost-user ->
PROX (``swap``/``nop``, one worker core) -> vhost-user -> OvS-DPDK -> testbed port 1.

Frames sent on the testbed must come out of the far port only because PROX forwarded them
(its own DPDK counters, read through telemetry, agree), and teardown leaves no PROX, no
hugepages, no DPDK runtime directory. Skips, saying why, when the samplevnf tarball is not
in ../shared/third_party (PROX cannot be built) or OvS-DPDK cannot run here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from vsbench.interfaces import TrafficProfile
from vsbench.system import naming
from vsbench.system.resources import ResourceStack

from run_helpers import processes_mentioning
from test_prox_real import prox_binary  # noqa: F401  (the session fixture that builds PROX)
from vswitch_helpers import PvpRig, forwarded_bursts, nr_hugepages, veth_testbed, vnf_left_behind

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (namespaces, hugepages)", allow_module_level=True)


def left_behind(run_id: str, hugepages_before: int) -> list[str]:
    return vnf_left_behind(run_id, hugepages_before, "prv", "PROX")


@pytest.mark.long  # tools/test.sh --long (CI runs it after the test command)
@pytest.mark.parametrize("mode", ["swap", "nop"])
def test_prox_forwards_between_vhost_user_ports(tmp_path, prox_binary, mode):  # noqa: F811
    from vsbench_plugins.vnf.prox import ProxVnf
    from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk

    missing = OvsDpdk.check_prerequisites({})
    if missing:
        pytest.skip(f"missing: {missing[0]}")
    run_id = naming.new_run_id()
    hp_before = nr_hugepages()
    with veth_testbed(run_id, 2) as testbed, ResourceStack() as stack:
        rig = PvpRig(testbed, stack, tmp_path, {"binary": prox_binary, "forward_mode": mode}, vnf_class=ProxVnf)
        rig.vnf.configure(TrafficProfile(64, flows=1))
        assert rig.vnf.proc is not None and rig.vnf.proc.alive()
        assert f"mode={mode}" in (rig.vnf.run_dir / "prox-vnf.cfg").read_text()
        rig.vnf.trial_begin()
        sent, received, through = forwarded_bursts(rig, tmp_path, bursts=8)
        deltas = rig.vnf.trial_end()["ports"]
        assert through >= 6 and received >= 0.7 * sent, (sent, received, through)
        # PROX's own counters: port 0 took in what OvS delivered, port 1 sent it on
        assert deltas[0]["rx_frames"] >= received and deltas[1]["tx_frames"] >= received, deltas
        assert deltas[0]["rx_frames"] <= sent + 100, deltas
        pid = rig.vnf.proc.pid
    assert not Path(f"/proc/{pid}").exists()
    assert processes_mentioning(prox_binary) == []
    assert left_behind(run_id, hp_before) == []
