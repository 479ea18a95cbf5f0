"""The kit's own small testbed: what a switch or VNF is checked on.

Two veth pairs between a generator namespace and a DUT namespace (the embedded testbed of
every run, :func:`vsbench.system.testbed.create_testbed`), a way to push marked frames
through the device under test and count what comes out (:mod:`.wire`, run inside the
generator namespace), and a look at what is left in the namespaces and in ``/proc`` once
the plugin is gone.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import json
import os
import struct
import sys
from dataclasses import dataclass, field
from pathlib import Path

from vsbench.interfaces.traffic import FlowFields, TrafficProfile
from vsbench.interfaces.vswitch import PortSpec, SwitchPort
from vsbench.system import commands, naming, runstate
from vsbench.system.netlink import list_links
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import Testbed, create_testbed

#: Frames per direction of a forwarding check, and the rate they are sent at.
FRAMES = 1000
FRAMES_PPS = 5000.0


class KitUnavailable(Exception):
    """The kit cannot build its testbed here (not root, no ``ip``); the checks that need
    one are skipped with this reason."""


def frame(fields: FlowFields, *, src_mac: str, dst_mac: str, size_bytes: int = 64, reverse: bool = False) -> bytes:
    """An Ethernet/IPv4/UDP frame of ``size_bytes`` (FCS included, as the frame sizes of a
    run count it) with the addresses of flow 0 of ``fields``; ``reverse`` swaps the IP
    addresses and ports, as the reverse direction of a profile does."""
    src_ip, dst_ip = fields.src_ip, fields.dst_ip
    sport, dport = fields.src_port, fields.dst_port
    if reverse:
        src_ip, dst_ip, sport, dport = dst_ip, src_ip, dport, sport
    payload_len = max(0, size_bytes - 4 - 14 - 20 - 8)
    udp = struct.pack("!HHHH", sport, dport, 8 + payload_len, 0) + bytes(payload_len)
    total = 20 + len(udp)
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, total, 0, 0x4000, 64, 17, 0,
                         ipaddress.IPv4Address(src_ip).packed, ipaddress.IPv4Address(dst_ip).packed)
    header = header[:10] + struct.pack("!H", _checksum(header)) + header[12:]
    eth = bytes.fromhex(dst_mac.replace(":", "")) + bytes.fromhex(src_mac.replace(":", "")) + b"\x08\x00"
    return eth + header + udp


def _checksum(data: bytes) -> int:
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF


@dataclass
class KitTestbed:
    """Namespaces and veth pairs of one check, torn down by :meth:`close`."""

    testbed: Testbed
    stack: ResourceStack
    netns_inodes: dict[str, int] = field(default_factory=dict)

    @classmethod
    def create(cls, links: int = 2) -> "KitTestbed":
        if os.geteuid() != 0:
            raise KitUnavailable("needs root (network namespaces)")
        if commands.which("ip") is None or commands.which("tc") is None:
            raise KitUnavailable("needs iproute2 (ip, tc)")
        stack = ResourceStack()
        run_id = naming.new_run_id()
        try:
            # claimed like a run's: `vsbench cleanup`, and whatever else tells a live run's
            # namespaces from a dead one's, leaves a check's testbed alone while it lives
            stack.register("the kit's run claim", runstate.claim(run_id).release)
            testbed = create_testbed(run_id, links, stack)
        except BaseException:
            stack.close()
            raise
        inodes = {}
        for ns in (testbed.tg_netns, testbed.dut_netns):
            try:
                inodes[ns] = os.stat(f"/run/netns/{ns}").st_ino
            except OSError:
                pass
        return cls(testbed, stack, inodes)

    @property
    def run_id(self) -> str:
        return self.testbed.run_id

    @property
    def dut_netns(self) -> str:
        return self.testbed.dut_netns

    def port_specs(self) -> list[PortSpec]:
        """The DUT ends of the veth pairs, as a deployment gives them to a switch."""
        return [PortSpec(kind="physical", name=link.dut_iface, iface=link.dut_iface) for link in self.testbed.links]

    def vnf_ports(self) -> list[SwitchPort]:
        """The DUT ends as the ports a VNF forwards between (pair 0 <-> 1), with the options
        a deployment gives a VNF's veth ends: ``peer_mac``, the generator port each one faces
        (where a VNF that rewrites MACs, l3fwd, addresses what leaves it), and ``vnf_mac``,
        its own."""
        return [SwitchPort(name=link.dut_iface, number=i,
                           spec=PortSpec(kind="physical", name=link.dut_iface, iface=link.dut_iface,
                                         options={"peer_mac": link.tg_mac, "vnf_mac": link.dut_mac}))
                for i, link in enumerate(self.testbed.links)]

    def profile(self, fields: FlowFields, *, to: str = "peer", size_bytes: int = 64) -> TrafficProfile:
        """What :meth:`send` sends both ways, as the traffic profile a deployment would give
        :meth:`~vsbench.interfaces.Vnf.configure`: one flow, flow 0 of ``fields`` from
        generator port 0 to 1, the reverse with addresses and ports swapped from port 1 to
        0, each addressed as :meth:`send` addresses it (``to``)."""
        macs = []
        for direction in (0, 1):
            tx, rx = self.testbed.links[direction], self.testbed.links[1 - direction]
            macs.append((tx.tg_mac, {"peer": rx.tg_mac, "port": tx.dut_mac, "fields": fields.dst_mac}[to]))
        forward = dataclasses.replace(fields, src_mac=macs[0][0], dst_mac=macs[0][1], vary=())
        reverse = dataclasses.replace(fields, src_mac=macs[1][0], dst_mac=macs[1][1], vary=(),
                                      src_ip=fields.dst_ip, dst_ip=fields.src_ip,
                                      src_port=fields.dst_port, dst_port=fields.src_port)
        return TrafficProfile(frame_size_bytes=size_bytes, flows=1, bidirectional=True, fields=forward,
                              reverse_fields=reverse)

    def dut_links(self) -> set[str]:
        return set(list_links(self.testbed.dut_netns))

    def send(self, direction: int, fields: FlowFields, *, count: int = FRAMES, size_bytes: int = 64,
             to: str = "peer") -> tuple[int, int]:
        """Send ``count`` frames of flow 0 into DUT port ``direction`` (0 or 1) and count
        them arriving at the other one; ``(sent, received)``. ``to`` says whom the frames
        are addressed to: ``"peer"`` the generator port they should reach (what a switch
        forwards), ``"port"`` the DUT port they enter (a router's MAC), ``"fields"``
        ``fields.dst_mac``."""
        tx, rx = self.testbed.links[direction], self.testbed.links[1 - direction]
        dst = {"peer": rx.tg_mac, "port": tx.dut_mac, "fields": fields.dst_mac}[to]
        data = frame(fields, src_mac=tx.tg_mac, dst_mac=dst, size_bytes=size_bytes, reverse=direction == 1)
        proc = commands.run(
            [sys.executable, "-m", "vsbench.conformance.wire", "--send-iface", tx.tg_iface,
             "--recv-iface", rx.tg_iface, "--frame", data.hex(), "--count", str(count),
             "--pps", str(FRAMES_PPS), "--wait", "2"],
            netns=self.testbed.tg_netns, timeout_s=60 + count / FRAMES_PPS, check=False)
        try:
            result = json.loads(proc.stdout.strip().splitlines()[-1])
        except (IndexError, ValueError):
            raise RuntimeError(f"the kit's frame sender failed: {proc.stderr.strip()[-300:]}") from None
        if "error" in result:
            raise RuntimeError(f"the kit's frame sender failed: {result['error']}")
        return int(result["sent"]), int(result["received"])

    def processes_in_namespaces(self) -> list[str]:
        """Processes (other than zombies) still running inside the testbed's namespaces."""
        found = []
        wanted = set(self.netns_inodes.values())
        if not wanted:
            return found
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                inode = os.stat(f"/proc/{entry}/ns/net").st_ino
                if inode not in wanted:
                    continue
                stat = Path(f"/proc/{entry}/stat").read_text()
                if stat[stat.rfind(")") + 2] == "Z":
                    continue
                cmd = Path(f"/proc/{entry}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            found.append(f"pid {entry} ({cmd.strip()[:120] or '?'})")
        return found

    def close(self) -> None:
        self.stack.close()


def mounts_under(roots: list[Path]) -> list[str]:
    """Mount points at or below any of ``roots``."""
    prefixes = [str(r.resolve()) for r in roots]
    out = []
    try:
        lines = Path("/proc/mounts").read_text().splitlines()
    except OSError:
        return out
    for line in lines:
        point = line.split()[1].replace("\\040", " ")
        if any(point == p or point.startswith(p + "/") for p in prefixes):
            out.append(point)
    return out


#: What tbf counts per 64 B frame: the frame without its FCS.
def _l2_bytes(frame_size_bytes: int) -> int:
    return frame_size_bytes - 4


def reference_dut(kit: KitTestbed, fps_per_port: int, frame_size_bytes: int = 64) -> None:
    """A device under test of known capacity for checking a generator on the testbed: a
    Linux bridge in the DUT namespace whose two ports each send at most ``fps_per_port``
    frames/s (``tbf``), so the capacity is set by the kernel, not by a model."""
    netns = kit.dut_netns
    bridge = naming.iface_name(kit.run_id, "rb", 0)
    commands.run(["ip", "-n", netns, "link", "add", bridge, "type", "bridge", "stp_state", "0"])
    rate_bit = fps_per_port * _l2_bytes(frame_size_bytes) * 8
    # a queue of 10 ms at the rate: a generator's scheduling jitter is absorbed, a rate
    # above the capacity still overflows it within the first tenth of a trial
    limit = max(3000, rate_bit // 8 // 100)
    for link in kit.testbed.links:
        commands.run(["ip", "-n", netns, "link", "set", link.dut_iface, "master", bridge])
        commands.run(["tc", "qdisc", "replace", "dev", link.dut_iface, "root", "tbf", "rate",
                      f"{rate_bit}bit", "burst", "1600", "limit", str(limit)], netns=netns)
    commands.run(["ip", "-n", netns, "link", "set", bridge, "up"])
