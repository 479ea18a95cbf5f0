#!/usr/bin/env python3
"""What each way of sending frames gets out of one core here (issue 13 item 1).

Loopback testbed (generator port 0 wired to port 1, no DUT), 64 B frames, one direction,
everything on CPU 0, counted by the kernel at port 1 (the veth counters; no Python loop
touches a frame). Medians over ``--repeat`` interleaved rounds.

Unpaced (as fast as it goes, ``--frames`` frames or ``--seconds`` for tools without a count):

* ``trafgen ring``   netsniff-ng trafgen, TX_RING + PACKET_QDISC_BYPASS (its default)
* ``trafgen sendto`` trafgen's sendto() path through the qdisc (the old plugin default)
* ``pacer ring`` / ``pacer mmsg``  vsbench's sender, TX ring or sendmmsg(), qdisc bypass
* ``xdp``            vsbench's in-kernel sender (one live-frames XDP run; the peer port's
  GRO is switched on, as the plugin does)
* ``testpmd af_packet`` / ``testpmd af_xdp``  dpdk-testpmd txonly on net_af_packet /
  net_af_xdp (needs dpdk and librte-net-af-xdp23; skipped with the reason when missing)
* ``xdp-trafficgen`` xdp-tools' generator (IPv6 UDP frames; skipped when missing)

Paced, through the ``trafgen`` plugin as a run uses it: its ceiling (one unpaced burst), then
a ``--duration-s`` trial at 95 % of it; the rate it delivered if the trial was valid (exact
count, every 10 ms window within 0.5 %), else 0 -- for engines ``xdp``, ``pacer`` and
``trafgen`` (tbf shaper).

Run under ``flock /work/.testbed.lock``; needs root.

    .venv/bin/python tools/bench/generator_engines.py [--repeat 3] [--flows 1000000]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from vsbench.deployment.ports import generator_ports_of
from vsbench.interfaces.plugin import PluginContext
from vsbench.interfaces.traffic import FlowFields, TrafficProfile
from vsbench.measurement import ceiling as ceilings
from vsbench.measurement import validity
from vsbench.system import naming, runstate
from vsbench.system.netlink import LinkCounterReader
from vsbench.system.resources import ResourceStack
from vsbench.system.testbed import create_loopback_testbed


class Unavailable(Exception):
    pass


def counted(reader, a, b, action) -> tuple[int, int]:
    before = reader.read([a, b])
    action()
    time.sleep(0.3)
    after = reader.read([a, b])
    tx = after[a] - before[a]
    return tx.tx_packets + tx.tx_dropped, (after[b] - before[b]).rx_packets


def trafgen_unpaced(ns, a, cfg, frames, sendto: bool) -> float:
    from vsbench_plugins.trafficgen.trafgen import process

    argv = ["ip", "netns", "exec", ns, "trafgen", "--dev", a, "--conf", str(cfg), "--num", str(frames),
            "--cpus", "1", "--no-sock-mem", "--notouch-irq"]
    if sendto:
        argv += ["--qdisc-path", "--gap", "0"]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    report = process.parse_report(out.stdout + out.stderr)
    if out.returncode != 0 or not report.send_time_s:
        raise Unavailable(f"trafgen failed: {(out.stderr or out.stdout).strip()[-120:]}")
    return frames / report.send_time_s


def pacer_unpaced(ns, binary, cfg, frames, tx) -> float:
    from vsbench_plugins.trafficgen.trafgen import pacer

    out = subprocess.run(["ip", "netns", "exec", ns, *pacer.argv(binary, str(cfg), frames, None, cpu=0, tx=tx,
                                                                 wait_for_go=False)],
                         capture_output=True, text=True, timeout=300)
    summary = pacer.parse_summary(out.stdout)
    if summary is None:
        raise Unavailable(f"pacer failed: {out.stderr.strip()[-120:]}")
    return summary.sent / summary.send_time_s()


def xdp_unpaced(ns, binary, cfg, frames, peer) -> float:
    from vsbench.system.testbed import set_gro
    from vsbench_plugins.trafficgen.trafgen import pacer

    was_on = set_gro(ns, peer, True)  # a veth takes XDP frames only in NAPI mode
    try:
        out = subprocess.run(["ip", "netns", "exec", ns, *pacer.xdp_argv(binary, str(cfg), frames, None, cpu=0,
                                                                         wait_for_go=False)],
                             capture_output=True, text=True, timeout=300)
    finally:
        if not was_on:
            set_gro(ns, peer, False)
    summary = pacer.parse_summary(out.stdout)
    if summary is None:
        raise Unavailable(f"xdp sender failed: {out.stderr.strip()[-120:]}")
    return summary.sent / summary.send_time_s()


def timed_tool(ns, argv, seconds, reader, a, b) -> float:
    """Run a tool without a frame count for ``seconds``; its rate from the port counters."""
    before = reader.read([a, b])
    proc = subprocess.Popen(["ip", "netns", "exec", ns, *argv], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    time.sleep(1.0)  # start-up (EAL init) is not sending time
    mid = reader.read([a, b])
    time.sleep(seconds)
    end = reader.read([a, b])
    os.killpg(proc.pid, 15)
    try:
        out, _ = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        out, _ = proc.communicate()
    sent = (end[b] - mid[b]).rx_packets
    if sent <= 0:
        raise Unavailable(f"nothing arrived: {out.strip().splitlines()[-1] if out.strip() else 'no output'}")
    del before
    return sent / seconds


def testpmd_argv(a: str, pmd: str) -> list[str]:
    if shutil.which("dpdk-testpmd") is None:
        raise Unavailable("dpdk-testpmd missing (apt-get install dpdk)")
    vdev = f"net_af_packet0,iface={a},qdisc_bypass=1" if pmd == "af_packet" else f"net_af_xdp0,iface={a}"
    return ["dpdk-testpmd", "-l", "0", "--no-pci", "--no-huge", "-m", "256", "--vdev", vdev, "--",
            "--forward-mode=txonly", "--auto-start", "--stats-period", "100", "--txq=1", "--rxq=1"]


def plugin_paced(tb, resources, work, engine, flows, duration_s) -> float:
    from vsbench.interfaces import RunParameters
    from vsbench_plugins.trafficgen.trafgen import Trafgen

    ctx = PluginContext(run_id=tb.run_id, settings={"engine": engine}, log_dir=work / f"logs-{engine}",
                        resources=resources, work_dir=work / f"gen-{engine}",
                        run=RunParameters(drain_s=0.2))
    gen = Trafgen(ctx)
    gen.start()
    try:
        gen.configure(TrafficProfile(frame_size_bytes=64, flows=flows, bidirectional=False), generator_ports_of(tb))
        burst = gen.run_burst(ceilings.calibration_frames(1e6, 1))
        load = ceilings.ceiling_from(burst).max_load_fps
        r = gen.run_trial(load, duration_s)
        _, verdict = validity.apply(r)
        return r.tx_frames / r.tx_duration_s if verdict.valid and r.tx_duration_s else 0.0
    finally:
        gen.stop()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--flows", type=int, default=1_000_000)
    parser.add_argument("--duration-s", type=float, default=2.0)
    parser.add_argument("--skip", default="", help="comma-separated case names to leave out")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("generator_engines: needs root", file=sys.stderr)
        return 2
    from vsbench_plugins.trafficgen.trafgen import config, flows as flowplan, frames, pacer

    skip = set(filter(None, args.skip.split(",")))
    results: dict[str, list[float]] = {}
    notes: dict[str, str] = {}
    print(f"one core, 64 B, {args.flows} flows, loopback testbed; load average {Path('/proc/loadavg').read_text().split()[0]}",
          flush=True)
    with tempfile.TemporaryDirectory(prefix="vsb-engines-") as tmp:
        work = Path(tmp)
        binary = str(pacer.ensure_built())
        xdp_binary = str(pacer.ensure_built(sender=pacer.XDPGEN))
        xdp_problem = pacer.probe_xdp(xdp_binary)
        for _ in range(args.repeat):
            run_id = naming.new_run_id()
            with runstate.claim(run_id), ResourceStack() as resources:
                tb = create_loopback_testbed(run_id, resources)
                ns, a, b = tb.tg_netns, tb.links[0].tg_iface, tb.links[1].tg_iface
                reader = LinkCounterReader(ns)
                resources.register("reader", reader.close)
                fields = FlowFields()
                plan = flowplan.plan_flows(fields, args.flows)
                template = frames.bulk_template(fields, 64, 0)
                tcfg = work / "t.cfg"
                tcfg.write_text(config.render(template, fields, plan, [0]))
                pcfg = work / "p.cfg"
                pcfg.write_text(pacer.render_config([pacer.StreamSpec(a, template.data, template.ip_offset,
                                                                      tuple(pacer.counter_fields(fields, plan, 14)))]))
                cases = {
                    "trafgen ring (unpaced)": lambda: trafgen_unpaced(ns, a, tcfg, args.frames, False),
                    "trafgen sendto (unpaced)": lambda: trafgen_unpaced(ns, a, tcfg, args.frames, True),
                    "pacer ring (unpaced)": lambda: pacer_unpaced(ns, binary, pcfg, args.frames, "ring"),
                    "pacer mmsg (unpaced)": lambda: pacer_unpaced(ns, binary, pcfg, args.frames, "mmsg"),
                    "xdp (unpaced)": lambda: xdp_unpaced(ns, xdp_binary, pcfg, args.frames, b)
                        if not xdp_problem else (_ for _ in ()).throw(Unavailable(xdp_problem)),
                    "testpmd af_packet txonly (unpaced, 1 flow)":
                        lambda: timed_tool(ns, testpmd_argv(a, "af_packet"), args.seconds, reader, a, b),
                    "testpmd af_xdp txonly (unpaced, 1 flow)":
                        lambda: timed_tool(ns, testpmd_argv(a, "af_xdp"), args.seconds, reader, a, b),
                    "xdp-trafficgen (unpaced, IPv6)":
                        lambda: timed_tool(ns, ["xdp-trafficgen", "udp", "-t", "1", a], args.seconds, reader, a, b)
                        if shutil.which("xdp-trafficgen") else (_ for _ in ()).throw(
                            Unavailable("xdp-trafficgen missing (apt-get install xdp-tools)")),
                    "plugin engine xdp (paced at 95% of its ceiling)":
                        lambda: plugin_paced(tb, resources, work, "xdp", args.flows, args.duration_s)
                        if not xdp_problem else (_ for _ in ()).throw(Unavailable(xdp_problem)),
                    "plugin engine pacer (paced at 95% of its ceiling)":
                        lambda: plugin_paced(tb, resources, work, "pacer", args.flows, args.duration_s),
                    "plugin engine trafgen + tbf (paced at 95% of its ceiling)":
                        lambda: plugin_paced(tb, resources, work, "trafgen", args.flows, args.duration_s),
                }
                for name, fn in cases.items():
                    if name.split(" (")[0] in skip or name in notes:
                        continue
                    try:
                        results.setdefault(name, []).append(fn())
                    except (Unavailable, OSError, subprocess.SubprocessError) as exc:
                        notes[name] = str(exc)
                        results.pop(name, None)
    print(f"{'case':60s} {'median kfps':>12s}  rounds")
    for name, values in results.items():
        print(f"{name:60s} {statistics.median(values) / 1e3:12.0f}  {', '.join(f'{v / 1e3:.0f}' for v in values)}")
    for name, why in notes.items():
        print(f"{name:60s} {'-':>12s}  unavailable: {why}")
    print(f"load average after: {Path('/proc/loadavg').read_text().split()[0]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
