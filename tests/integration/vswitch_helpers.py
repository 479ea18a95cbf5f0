"""A throwaway netns+veth testbed and frame senders/counters for the vSwitch tests.

:func:`veth_testbed` is vsbench's own testbed; :func:`tiny_veth_testbed` a stand-alone
minimal one (two namespaces, N veth pairs, IPv6 off) written before that existed, kept to
tell a switch problem from a testbed problem. Frames are sent and counted with raw AF_PACKET
sockets in a subprocess inside the generator namespace (a real kernel path, no mocks), or
blasted with trafgen for a rate figure.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from vsbench.interfaces import PluginContext, PortSpec
from vsbench.system import naming
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import Testbed, TestbedLink, create_testbed

#: EtherType of our test frames (IEEE local experimental): nothing else sends it.
TEST_ETHERTYPE = 0x88B5


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


@contextlib.contextmanager
def veth_testbed(run_id: str, n_links: int = 2) -> Iterator[Testbed]:
    """vsbench's own embedded testbed (vsbench.system.testbed), torn down on exit."""
    with ResourceStack() as resources:
        yield create_testbed(run_id, n_links, resources)


@contextlib.contextmanager
def tiny_veth_testbed(run_id: str, n_links: int = 2) -> Iterator[Testbed]:
    """A minimal stand-alone netns+veth pair set (no tc, no NOARP), to tell a switch
    problem from a testbed problem."""
    tg, dut = naming.netns_name(run_id, "tg"), naming.netns_name(run_id, "dut")
    made: list[str] = []
    try:
        for ns in (tg, dut):
            ip("netns", "add", ns)
            made.append(ns)
            for key in ("all", "default"):
                subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw",
                                f"net.ipv6.conf.{key}.disable_ipv6=1"], check=True)
            ip("-n", ns, "link", "set", "lo", "up")
        links = []
        for i in range(n_links):
            t, d = naming.iface_name(run_id, "t", i), naming.iface_name(run_id, "d", i)
            tmac, dmac = f"02:00:00:00:0{i}:01", f"02:00:00:00:0{i}:02"
            ip("link", "add", t, "netns", tg, "address", tmac, "type", "veth",
               "peer", "name", d, "netns", dut, "address", dmac)
            ip("-n", tg, "link", "set", t, "up")
            ip("-n", dut, "link", "set", d, "up")
            links.append(TestbedLink(i, t, tmac, f"10.{i}.0.1", d, dmac))
        yield Testbed(run_id, tg, dut, tuple(links))
    finally:
        for ns in reversed(made):
            ip("netns", "del", ns, check=False)


def link_stats(netns: str, iface: str) -> dict:
    """Kernel counters of ``iface`` (rx/tx packets, dropped...)."""
    out = ip("-n", netns, "-s", "-j", "link", "show", "dev", iface).stdout
    return json.loads(out)[0]["stats64"]


_RECEIVER = textwrap.dedent("""
    import socket, sys, time
    iface, ethertype, duration = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
    expected, quiet = int(sys.argv[4]), float(sys.argv[5])
    # ETH_P_ALL: taps see frames before tc ingress (the testbed drops there); a socket
    # bound to one EtherType would be served after it and see nothing.
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(3))
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 8 << 20)
    s.bind((iface, 0))
    s.settimeout(0.05)
    print("ready", flush=True)
    count, end = 0, time.monotonic() + duration
    while time.monotonic() < end:
        try:
            frame = s.recv(2048)
        except socket.timeout:
            continue
        if len(frame) >= 20 and frame[12:14] == ethertype.to_bytes(2, "big") and frame[14:20] == b"vsbtst":
            count += 1
            if expected and count >= expected:  # all here: a duplicate would follow within ms
                end = min(end, time.monotonic() + quiet)
    print(count, flush=True)
""")

_SENDER = textwrap.dedent("""
    import socket, sys, time
    iface, ethertype, count, src, dst, gap = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5], float(sys.argv[6])
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((iface, 0))
    header = bytes.fromhex(dst.replace(":", "")) + bytes.fromhex(src.replace(":", "")) + ethertype.to_bytes(2, "big")
    for i in range(count):
        s.send(header + b"vsbtst" + i.to_bytes(4, "big") + bytes(36))
        if gap:
            time.sleep(gap)
""")


class FrameCounter:
    """Counts our test frames arriving on ``iface`` in ``netns`` for ``duration_s``, or, with
    ``expected``, until that many have arrived and ``quiet_s`` more passed (to see one too
    many: a duplicate or a flooded copy arrives within milliseconds of its original)."""

    def __init__(self, netns: str, iface: str, duration_s: float, expected: int | None = None,
                 quiet_s: float = 0.3) -> None:
        self.proc = subprocess.Popen(
            ["ip", "netns", "exec", netns, sys.executable, "-c", _RECEIVER, iface,
             str(TEST_ETHERTYPE), str(duration_s), str(expected or 0), str(quiet_s)],
            stdout=subprocess.PIPE, text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline().strip() == "ready"

    def result(self) -> int:
        out, _ = self.proc.communicate(timeout=60)
        return int(out.strip().splitlines()[-1])


def send_frames(netns: str, iface: str, count: int, src_mac: str, dst_mac: str, gap_s: float = 0.0) -> None:
    subprocess.run(
        ["ip", "netns", "exec", netns, sys.executable, "-c", _SENDER, iface,
         str(TEST_ETHERTYPE), str(count), src_mac, dst_mac, str(gap_s)],
        check=True, timeout=120,
    )


def trafgen_config(path: Path, src_mac: str, dst_mac: str, frame_bytes: int = 64) -> Path:
    """One fixed UDP/IPv4 frame of ``frame_bytes`` on the wire (FCS included, so software
    writes 4 bytes fewer)."""
    mac = lambda m: ",".join(f"0x{b}" for b in m.split(":"))  # noqa: E731
    payload = frame_bytes - 4 - 14 - 20 - 8
    ip_len, udp_len = 20 + 8 + payload, 8 + payload
    path.write_text(
        "{ " + mac(dst_mac) + ", " + mac(src_mac) + ", 0x08, 0x00,\n"
        f"  0x45, 0x00, c16({ip_len}), 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, csumip(14, 33),\n"
        "  10, 0, 0, 1, 10, 1, 0, 1,\n"
        f"  c16(1024), c16(1024), c16({udp_len}), 0x00, 0x00, fill(0x00, {payload}) }}\n"
    )
    return path


def run_in_group(argv: list[str], timeout_s: float) -> None:
    """Run ``argv`` in its own process group; on timeout KILL the whole group (trafgen
    forks workers that would outlive a killed parent and spin on a CPU)."""
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        raise
    if proc.returncode != 0:
        raise subprocess.CalledProcessError(proc.returncode, argv, stderr=err)


@dataclass(frozen=True)
class BlastResult:
    sent: int
    received: int
    elapsed_s: float

    @property
    def rx_fps(self) -> float:
        return self.received / self.elapsed_s

    @property
    def tx_fps(self) -> float:
        return self.sent / self.elapsed_s


def trafgen_blast(testbed: Testbed, cfg: Path, count: int, tx: int = 0, rx: int = 1, cpu: int = 0,
                  rate_pps: int | None = None, jumbo: bool = False) -> BlastResult:
    """Send ``count`` frames from link ``tx`` (one trafgen process pinned to ``cpu``), as
    fast as it can or at ``rate_pps``, and count what the kernel received on link ``rx``.
    Elapsed time is trafgen's run."""
    tx_if, rx_if = testbed.links[tx].tg_iface, testbed.links[rx].tg_iface
    # trafgen pins its i-th process to CPU i whatever the inherited affinity (taskset is
    # ignored); a packet block prefixed cpu(N): with N+1 processes runs on CPU N only.
    pinned = cfg.with_name(f"{cfg.stem}.cpu{cpu}{cfg.suffix}")
    pinned.write_text(f"cpu({cpu}): " + cfg.read_text())
    before = link_stats(testbed.tg_netns, rx_if)["rx"]["packets"]
    t0 = time.monotonic()
    run_in_group(
        ["ip", "netns", "exec", testbed.tg_netns, "trafgen",
         "--dev", tx_if, "--conf", str(pinned), "--cpus", str(cpu + 1), "--no-sock-mem", "--no-cpu-stats",
         "-n", str(count),
         *(["--rate", f"{rate_pps}pps"] if rate_pps else []), *(["--jumbo-support"] if jumbo else [])],
        timeout_s=120,
    )
    elapsed = time.monotonic() - t0
    # let the switch drain its queues: 0.3 s, or until every frame has arrived
    end = time.monotonic() + 0.3
    while (after := link_stats(testbed.tg_netns, rx_if)["rx"]["packets"]) - before < count and time.monotonic() < end:
        time.sleep(0.01)
    return BlastResult(count, after - before, elapsed)


#: Stands in for the runner's state dir in the VNF tests (each run's work dir below it).
PVP_WORK_ROOT = Path("/run/vsbench-test")


def _rmdir_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError:
        pass


class PvpRig:
    """testbed port 0 -> OvS -> l3fwd port 0 ... l3fwd port 1 -> OvS -> testbed port 1."""

    def __init__(self, testbed, stack: ResourceStack, tmp_path: Path, settings: dict, vnf_class=None) -> None:
        self.testbed = testbed
        self.run_id = testbed.run_id
        work = PVP_WORK_ROOT / self.run_id
        work.mkdir(parents=True, exist_ok=True)
        stack.register(f"work dir {work}", _rmdir_if_empty, work)  # after everything in it
        from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk

        self.switch = OvsDpdk(PluginContext(self.run_id, {}, tmp_path / "logs", stack,
                                            dut_netns=testbed.dut_netns, work_dir=work))
        self.switch.name = "ovs_dpdk"
        stack.register("switch", self.switch.stop)
        self.switch.start()
        self.switch.add_bridge("br0")
        phy = [self.switch.add_port("br0", PortSpec("physical", f"p{l.index}", iface=l.dut_iface))
               for l in testbed.links]
        self.vhost = [self.switch.add_port("br0", PortSpec("vhostuser", naming.iface_name(self.run_id, "u", i)))
                      for i in range(2)]
        self.switch.connect("br0", phy[0], self.vhost[0])
        self.switch.connect("br0", self.vhost[1], phy[1])
        if vnf_class is None:
            from vsbench_plugins.vnf.l3fwd import L3fwd as vnf_class
        self.vnf = vnf_class(PluginContext(self.run_id, settings, tmp_path / "logs", stack,
                                       dut_netns=testbed.dut_netns, work_dir=work))
        self.vnf.name = "l3fwd"
        self.vnf.start(self.vhost)

    def blast(self, tmp_path: Path, count: int, rate_pps: int | None = None, cpu: int = 0):
        cfg = trafgen_config(tmp_path / "udp.cfg", self.testbed.links[0].tg_mac, self.testbed.links[0].dut_mac)
        return trafgen_blast(self.testbed, cfg, count, tx=0, rx=1, cpu=cpu, rate_pps=rate_pps)


def nr_hugepages() -> int:
    return int(Path("/proc/sys/vm/nr_hugepages").read_text())


def _one_burst(rig, tmp_path: Path, frames: int) -> tuple[int, int]:
    result = rig.blast(tmp_path, frames)
    time.sleep(0.2)
    return result.sent, result.received


def forwarded_bursts(rig, tmp_path: Path, bursts: int = 10, frames: int = 250) -> tuple[int, int, int]:
    """(sent, received, bursts of which 95 % came through) for ``bursts`` bursts of
    ``frames`` (fewer than a vhost-user ring holds), 0.2 s apart. The OvS PMD and the VNF's
    poller share a CPU on this 2-core host and a descheduled poller loses a burst whole now
    and then (CI lost 1 of 10 once), so forwarding is judged burst by burst."""
    results = [_one_burst(rig, tmp_path, frames) for _ in range(bursts)]
    through = sum(1 for s, r in results if r >= 0.95 * s)
    return sum(s for s, _ in results), sum(r for _, r in results), through


def vnf_left_behind(run_id: str, hugepages_before: int, dpdk_prefix: str, what: str) -> list[str]:
    """What a PVP rig's run ``run_id`` left: processes naming it, its work directory, a
    changed hugepage count, the VNF's DPDK runtime directory (``vsb<run_id><dpdk_prefix>*``)."""
    from run_helpers import processes_mentioning

    found = processes_mentioning(f"vsb{run_id}", f"vsb-{run_id}")
    if (PVP_WORK_ROOT / run_id).exists():
        found.append(f"{PVP_WORK_ROOT / run_id}: {sorted(p.name for p in (PVP_WORK_ROOT / run_id).iterdir())}")
    if nr_hugepages() != hugepages_before:
        found.append(f"nr_hugepages {nr_hugepages()} != {hugepages_before}")
    if list(Path("/var/run/dpdk").glob(f"vsb{run_id}{dpdk_prefix}*")):
        found.append(f"DPDK runtime dir of {what}")
    return found
