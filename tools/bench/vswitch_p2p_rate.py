#!/usr/bin/env python3
"""Quick p2p forwarding figure of the switches that run here, measured with trafgen.

One trafgen process (pinned to one CPU) sends N frames of 64 B as fast as it can into
generator link 0; we count what the kernel receives on generator link 1 after crossing
the switch in the DUT namespace. Repeated, medians printed, with the CPU each side used
and the oversubscription verdict of the placement. Unidirectional: on 2 cores a second
generator process would share a CPU with the PMD.

Cases: bare veth (trafgen's own ceiling, counted at the DUT end), linux_bridge, ovs_dpdk
with PMD on CPU 1 / generator on CPU 0 (the default), the mirror placement, a
deliberately oversubscribed one (generator on the PMD's CPU), and the metered reference
DUT (``dut.meter_pps``) with the ratio of forwarded rate to meter rate.

    sudo .venv/bin/python tools/bench/vswitch_p2p_rate.py [--frames 2000000] [--repeat 5]

Needs root, trafgen and openvswitch-switch-dpdk. Uses the throwaway netns+veth testbed of
the switch integration tests (tests/integration/vswitch_helpers.py).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from vswitch_helpers import link_stats, trafgen_blast, trafgen_config, veth_testbed  # noqa: E402

from vsbench.interfaces import PluginContext, PortSpec, RunParameters  # noqa: E402
from vsbench.system import cpu, naming  # noqa: E402
from vsbench.system.resources import ResourceStack  # noqa: E402
from vsbench_plugins.vswitch.linux_bridge import LinuxBridge  # noqa: E402
from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk  # noqa: E402


def measure(testbed, cfg, frames, repeat, gen_cpu, pids=(), count_at_dut=False):
    rows = []
    usage = None
    for _ in range(repeat):
        if count_at_dut:
            before = link_stats(testbed.dut_netns, testbed.links[0].dut_iface)["rx"]["packets"]
        sample = cpu.sample(pids=pids)
        result = trafgen_blast(testbed, cfg, frames, cpu=gen_cpu)
        usage = cpu.delta(sample, cpu.sample(pids=pids))
        received = result.received
        if count_at_dut:
            received = link_stats(testbed.dut_netns, testbed.links[0].dut_iface)["rx"]["packets"] - before
        rows.append((result.tx_fps, received / result.elapsed_s, 1 - received / result.sent))
    return rows, usage


def report(name, rows, usage, warnings=()):
    tx = statistics.median(r[0] for r in rows)
    rx = statistics.median(r[1] for r in rows)
    loss = statistics.median(r[2] for r in rows)
    spread = (max(r[1] for r in rows) - min(r[1] for r in rows)) / rx if rx else 0.0
    pmd = [t for t in usage.threads if t.name.startswith("pmd")]
    extra = f" pmd_util={pmd[0].utilization:.2f}" if pmd else ""
    softirq = " ".join(f"{k}={v / usage.elapsed_s:.2f}" for k, v in sorted(usage.softirq_s.items()) if k != "cpu")
    verdict = ",".join(w.code + ("!" if w.oversubscribed else "") for w in warnings) or "-"
    print(f"{name:38s} tx {tx / 1e3:7.0f} kpps  rx {rx / 1e3:7.0f} kpps  loss {loss * 100:5.1f}%  "
          f"rx spread {spread * 100:4.1f}%  softirq/s[{softirq}]{extra}  placement: {verdict}", flush=True)


def run_bare(args, work):
    with veth_testbed(naming.new_run_id(), 2) as tb:
        cfg = trafgen_config(work / "t64.cfg", tb.links[0].tg_mac, tb.links[1].tg_mac)
        rows, usage = measure(tb, cfg, args.frames, args.repeat, 0, count_at_dut=True)
        report("bare veth (gen cpu0, counted at DUT)", rows, usage)


def run_bridge(args, work):
    run_id = naming.new_run_id()
    with veth_testbed(run_id, 2) as tb, ResourceStack() as stack:
        sw = LinuxBridge(PluginContext(run_id, {}, work / "logs", stack, dut_netns=tb.dut_netns))
        sw.start()
        sw.add_bridge("br0")
        ports = [sw.add_port("br0", PortSpec("physical", f"p{l.index}", iface=l.dut_iface)) for l in tb.links]
        sw.connect("br0", *ports)
        cfg = trafgen_config(work / "t64.cfg", tb.links[0].tg_mac, tb.links[1].tg_mac)
        rows, usage = measure(tb, cfg, args.frames, args.repeat, 0)
        report("linux_bridge (gen cpu0)", rows, usage)


def run_ovs(args, work, pmd_mask, lcore_mask, gen_cpu, meter_pps=None):
    run_id = naming.new_run_id()
    with veth_testbed(run_id, 2) as tb, ResourceStack() as stack:
        settings = {"pmd_cpu_mask": pmd_mask, "dpdk_lcore_mask": lcore_mask}
        sw = OvsDpdk(PluginContext(run_id, settings, work / "logs", stack, dut_netns=tb.dut_netns,
                                   run=RunParameters(meter_pps=meter_pps)))
        sw.start()
        sw.add_bridge("br0")
        ports = [sw.add_port("br0", PortSpec("physical", f"p{l.index}", iface=l.dut_iface)) for l in tb.links]
        sw.connect("br0", *ports)
        cfg = trafgen_config(work / "t64.cfg", tb.links[0].tg_mac, tb.links[1].tg_mac)
        pid = sw.instance.vswitchd_pid()
        rows, usage = measure(tb, cfg, args.frames, args.repeat, gen_cpu, pids=[pid])
        warnings = cpu.check_oversubscription(sw.busy_poll_cpus(), {gen_cpu}) + cpu.starved_busy_pollers(usage)
        meter = f", meter {meter_pps / 1e3:.0f}k" if meter_pps else ""
        report(f"ovs_dpdk (pmd {pmd_mask}, lcore {lcore_mask}, gen cpu{gen_cpu}{meter})", rows, usage, warnings)
        if meter_pps:
            print(f"{'':38s} meter accuracy: rx/meter = {statistics.median(r[1] for r in rows) / meter_pps:.3f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--meter", type=int, nargs="*", default=[100_000, 250_000],
                        help="also measure the reference DUT with these dut.meter_pps")
    args = parser.parse_args()
    print(f"{args.frames} frames of 64 B per trial, {args.repeat} trials, medians; "
          f"online CPUs {sorted(cpu.online_cpus())}")
    with tempfile.TemporaryDirectory(prefix="vsb-bench-") as tmp:
        work = Path(tmp)
        run_bare(args, work)
        run_bridge(args, work)
        run_ovs(args, work, "0x2", "0x1", 0)
        run_ovs(args, work, "0x1", "0x2", 1)
        run_ovs(args, work, "0x2", "0x1", 1)
        for meter_pps in args.meter:
            run_ovs(args, work, "0x2", "0x1", 0, meter_pps=meter_pps)
    return 0


if __name__ == "__main__":
    sys.exit(main())
