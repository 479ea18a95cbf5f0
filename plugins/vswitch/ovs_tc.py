"""ovs_tc: Open vSwitch with TC flower offload (OVS-TC), private instance.

The kernel datapath with ``other_config:hw-offload=true``: ovs-vswitchd puts each datapath
flow into the ports' TC ingress as a ``flower`` filter with a ``mirred`` action, and
``tc-policy`` says where TC may run it: ``skip_sw`` only in a SmartNIC, ``skip_hw`` only in
the kernel's TC software datapath, ``none`` either. Without a SmartNIC ``skip_hw`` is the
honest default: it measures the TC software path, which is what OVS-TC does on a plain NIC.

Whether a flow really went to TC is decided by OvS at run time (a match TC cannot express
stays in the kernel datapath), so after traffic this plugin records what *was* offloaded:
``upcall/show`` (flow counts), ``dpctl/dump-flows type=tc`` (in TC, software or hardware),
``type=offloaded`` (taken by a device: ``in_hw``; always empty with ``skip_hw``) and
``type=ovs`` (kernel datapath), and ``tc -s filter show dev <port> ingress`` for every port,
and says "N of M datapath flows were in TC" in :meth:`stats` (``datapath.offload``).
"""

from __future__ import annotations

import logging
import re
from typing import Any, ClassVar, Mapping

from vsbench.interfaces.plugin import PluginError, Prerequisite
from vsbench.interfaces import commands
from vsbench.interfaces.settings import with_defaults

from vsbench_plugins.vswitch.ovs.settings import ovs_schema
from vsbench_plugins.vswitch.ovs_kernel import OvsKernel, parse_upcall_show

log = logging.getLogger(__name__)

TC_POLICIES = ("none", "skip_sw", "skip_hw")
#: The offload report's counts a trial record keeps (the per-flow dumps stay out of it).
OFFLOAD_COUNTS = ("tc_policy", "offloaded_flows", "kernel_flows", "datapath_flows", "summary", "tc_packets")

SETTINGS_SCHEMA = ovs_schema("vswitch.ovs_tc settings", {
    "vswitchd": {"type": "string", "default": "/usr/sbin/ovs-vswitchd",
                 "description": "ovs-vswitchd without DPDK (openvswitch-switch)"},
    "handler_wait_s": {"type": "number", "exclusiveMinimum": 0, "default": 30,
                       "description": "how long to wait for the upcall handler threads after add_bridge"},
    "tc_policy": {"type": "string", "enum": list(TC_POLICIES), "default": "skip_hw",
                  "description": "where TC runs offloaded flows: skip_hw = TC software datapath "
                                 "(no SmartNIC), skip_sw = hardware only, none = either"},
    "tc_binary": {"type": "string", "default": "tc"},
    "offload_detail_limit": {"type": "integer", "minimum": 0, "default": 20000,
                             "description": "dump per-flow and per-filter details only up to this "
                                            "many datapath flows (counts are always recorded)"},
})


# --------------------------------------------------------------------------- parsers

_DP_FLOW_PACKETS = re.compile(r"\bpackets:(\d+)")
_DP_FLOW_BYTES = re.compile(r"\bbytes:(\d+)")
_DP_FLOW_IN_PORT = re.compile(r"\bin_port\(([^)]*)\)")
_DP_FLOW_DP = re.compile(r"\bdp:(\w+)")


def parse_dump_flows(text: str) -> dict[str, Any]:
    """``ovs-appctl dpctl/dump-flows [type=...]`` -> ``{"flows", "packets", "bytes",
    "by_in_port": {port: flows}, "by_dp": {"tc": n, "ovs": n}}``.

    One datapath flow per line; ``dp:`` is present only in verbose or offload listings.
    """
    flows = packets = nbytes = 0
    by_port: dict[str, int] = {}
    by_dp: dict[str, int] = {}
    for line in text.splitlines():
        m = _DP_FLOW_PACKETS.search(line)
        if not m or "actions:" not in line:
            continue
        flows += 1
        packets += int(m[1])
        if b := _DP_FLOW_BYTES.search(line):
            nbytes += int(b[1])
        if p := _DP_FLOW_IN_PORT.search(line):
            by_port[p[1]] = by_port.get(p[1], 0) + 1
        if d := _DP_FLOW_DP.search(line):
            by_dp[d[1]] = by_dp.get(d[1], 0) + 1
    return {"flows": flows, "packets": packets, "bytes": nbytes, "by_in_port": by_port, "by_dp": by_dp}


_TC_FILTER = re.compile(r"^filter .*\bhandle (0x[0-9a-f]+|\d+)")
_TC_SENT = re.compile(r"^\s*Sent (\d+) bytes (\d+) pkt")


def parse_tc_filters(text: str) -> dict[str, int]:
    """``tc -s filter show dev X ingress`` -> ``{"filters", "skip_hw", "skip_sw", "in_hw",
    "not_in_hw", "packets", "bytes"}``.

    A filter is a ``filter ... handle H`` line (the bare ``filter ... chain N`` lines
    announce a chain/priority and are not filters). Packets and bytes are those of the
    first action of each filter: every packet a filter matched passes its first action,
    and summing all actions would count a packet once per action.
    """
    out = {"filters": 0, "skip_hw": 0, "skip_sw": 0, "in_hw": 0, "not_in_hw": 0, "packets": 0, "bytes": 0}
    counted = True  # whether the current filter's first action statistics were taken
    for raw in text.splitlines():
        line = raw.strip()
        if _TC_FILTER.match(line):
            out["filters"] += 1
            counted = False
            continue
        words = line.split()
        if not words:
            continue
        if words[0] in ("skip_hw", "skip_sw", "not_in_hw") and len(words) == 1:
            out[words[0]] += 1
        elif words[0] == "in_hw":
            out["in_hw"] += 1
        elif not counted and (m := _TC_SENT.match(line)):
            out["bytes"] += int(m[1])
            out["packets"] += int(m[2])
            counted = True
    return out


def offload_summary(offloaded: int, in_kernel: int, policy: str) -> str:
    """The sentence a report quotes: "N of M datapath flows were in TC (policy P)"."""
    return f"{offloaded} of {offloaded + in_kernel} datapath flows were in TC (tc-policy {policy})"


# --------------------------------------------------------------------------- the plugin

class OvsTc(OvsKernel):
    """Open vSwitch kernel datapath with TC flower offload (hw-offload=true)."""

    description: ClassVar[str] = "Open vSwitch with TC flower offload (OVS-TC; skip_hw = TC software path)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    required_modules: ClassVar[tuple[str, ...]] = ("openvswitch", "cls_flower", "act_mirred", "sch_ingress")

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        missing = super().check_prerequisites(settings)
        cfg = with_defaults(cls.settings_schema, settings)
        if commands.which(cfg["tc_binary"]) is None:
            missing.append(Prerequisite(f"binary {cfg['tc_binary']}", "apt-get install iproute2"))
        return missing

    def other_config(self) -> dict[str, str]:
        return {**super().other_config(), "hw-offload": "true", "tc-policy": self.cfg["tc_policy"]}

    def vswitchd_ready(self) -> None:
        """hw-offload is read once at start: make sure it took (a typo'd key would not)."""
        super().vswitchd_ready()
        if self.ctl.get("Open_vSwitch", ".", "other_config:hw-offload") != "true":
            raise PluginError("ovs-vswitchd did not take other_config:hw-offload=true")

    # ------------------------------------------------------------------ offload accounting

    def _iface_names(self) -> list[str]:
        names = []
        for ports in self._ports.values():
            names += [p.spec.iface or p.name for p in ports if p.spec.kind == "physical"]
        return names

    def offload_report(self) -> dict[str, Any]:
        """What is in TC right now versus in the kernel datapath (call after traffic, within
        ``max_idle_ms`` of it, before the datapath flows expire)."""
        upcall = parse_upcall_show(self.ctl.appctl("upcall/show"))
        offloaded = sum(d.get("offloaded_flows", 0) for d in upcall.values())
        in_kernel = sum(d.get("flows_current", 0) for d in upcall.values())
        report: dict[str, Any] = {
            "tc_policy": self.cfg["tc_policy"],
            "offloaded_flows": offloaded,
            "kernel_flows": in_kernel,
            "datapath_flows": offloaded + in_kernel,
            "summary": offload_summary(offloaded, in_kernel, self.cfg["tc_policy"]),
        }
        if offloaded + in_kernel > int(self.cfg["offload_detail_limit"]):
            report["detail"] = "skipped: more datapath flows than offload_detail_limit"
            return report
        timeout = 120.0
        # type=tc: flows TC holds (software or hardware); type=offloaded: only those a
        # device took (in_hw; none with skip_hw or without a SmartNIC); type=ovs: kernel datapath.
        for key, kind in (("dump_tc", "tc"), ("dump_hw_offloaded", "offloaded"), ("dump_kernel", "ovs")):
            report[key] = parse_dump_flows(self.ctl.appctl("dpctl/dump-flows", f"type={kind}", timeout_s=timeout))
        filters = {}
        for iface in self._iface_names():
            try:
                out = commands.run([self.cfg["tc_binary"], "-s", "filter", "show", "dev", iface, "ingress"],
                                   netns=self.context.dut_netns, timeout_s=timeout).stdout
            except commands.CommandError as exc:
                raise PluginError(f"tc filter show dev {iface}: {exc}") from exc
            filters[iface] = parse_tc_filters(out)
        report["tc_filters"] = filters
        report["tc_packets"] = sum(f["packets"] for f in filters.values())
        return report

    def datapath_delta(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
        """The kernel datapath's figures plus what was in TC at the trial's end
        ("N of M datapath flows were in TC") and the packets TC's filters matched."""
        out = super().datapath_delta(before, after)
        offload = after.get("offload") or {}
        out["offload"] = {k: offload[k] for k in OFFLOAD_COUNTS if k in offload}
        return out

    def datapath_stats(self) -> dict[str, Any]:
        stats = super().datapath_stats()
        stats["kind"] = "kernel+tc"
        stats["offload"] = self.offload_report()
        return stats
