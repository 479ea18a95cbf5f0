"""The testpmd VNF on its own, as a conformance kit would drive any VNF plugin.

No switch and no generator: a throwaway namespace with two veth pairs, testpmd on one end
of each (``net_af_packet``), frames written into the other ends. Checks the VNF contract:
it starts on the ports it is given, ``stats()`` and ``trial_end()`` are well-formed (valid
against trial.schema.json's ``vnf`` item) and count exactly the frames forwarded, a second
``start`` is refused in one line, and ``stop()`` -- called twice -- leaves no process, no
hugepage, no mount and no DPDK runtime directory.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from run_helpers import processes_mentioning, require
from vsbench.interfaces import PluginContext, PluginError, PortSpec, SwitchPort
from vsbench.results import schema
from vsbench.runner import plugins
from vsbench.system import naming, runstate
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import _add_netns, add_internal_pair

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)

HUGEPAGES = Path("/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages")
FRAMES = 200

SENDER = """
import socket, sys
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind((sys.argv[1], 0))
frame = bytes.fromhex("02000000000202000000000108004500002e0000000040110000c0a80001c0a80002")
frame += bytes(64 - len(frame))
for _ in range(int(sys.argv[2])):
    s.send(frame)
"""


def test_testpmd_forwards_counts_and_stops_clean(tmp_path):
    require(("vnf", "testpmd"))
    cls = plugins.load("vnf", "testpmd")
    run_id = naming.new_run_id()
    pages = int(HUGEPAGES.read_text())
    resources = ResourceStack()
    with runstate.claim(run_id):
        try:
            netns = naming.netns_name(run_id, "dut")
            _add_netns(netns, resources)
            ends = []
            for i in (0, 1):
                outer, inner = naming.iface_name(run_id, "o", i), naming.iface_name(run_id, "v", i)
                add_internal_pair(netns, (outer, inner), (f"02:00:00:00:01:0{i}", f"02:00:00:00:02:0{i}"), resources)
                ends.append((outer, inner))
            context = PluginContext(run_id=run_id, settings={"forward_mode": "io", "memory_mb": 64},
                                    log_dir=tmp_path / "logs", resources=resources, dut_netns=netns,
                                    work_dir=tmp_path / "work")
            vnf = cls(context)
            ports = [SwitchPort(inner, i, PortSpec(kind="physical", name=inner, iface=inner))
                     for i, (_, inner) in enumerate(ends)]
            vnf.start(ports)
            with pytest.raises(PluginError, match="already started"):
                vnf.start(ports)
            assert vnf.version()["dpdk"].startswith("DPDK") and "--no-pci" in vnf.version()["command_line"]
            assert vnf.busy_poll_cpus() and all(vnf.busy_poll_cpus().values())

            vnf.trial_begin()
            subprocess.run(["ip", "netns", "exec", netns, sys.executable, "-c", SENDER, ends[0][0], str(FRAMES)],
                           check=True, timeout=30)
            doc = vnf.trial_end()
            item = schema.load("trial.schema.json")["properties"]["vnf"]["properties"]["vnfs"]["items"]
            jsonschema.validate({"index": 0, "name": "testpmd", **doc}, item)
            by_port = {p["port"]: p for p in doc["ports"]}
            assert by_port[0]["rx_frames"] == FRAMES and by_port[1]["tx_frames"] == FRAMES
            assert by_port[1]["rx_frames"] == 0 and doc["elapsed_s"] > 0
            stats = vnf.stats()
            assert [p["port"] for p in stats["ports"]] == [0, 1]
            vnf.stop()
            vnf.stop()  # idempotent
            assert processes_mentioning(f"vsb{run_id}tp") == []
            assert int(HUGEPAGES.read_text()) == pages
            assert not any(p.name.startswith(f"vsb{run_id}") for p in Path("/var/run/dpdk").glob("*"))
            assert f"vsb{run_id}" not in Path("/proc/mounts").read_text() and str(tmp_path) not in Path("/proc/mounts").read_text()
        finally:
            resources.close()
    assert processes_mentioning(f"vsb{run_id}") == []
