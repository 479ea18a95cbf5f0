#!/usr/bin/env python3
"""The embedded generator against raw trafgen, on the same veth and through the same switch.

Issue 13's two figures, medians over ``--repeat`` rounds (interleaved, so a noisy minute
hits every case alike):

* ``ratio_vs_raw`` -- 64 B frames, ``--flows`` (1 M) flows, one direction, loopback testbed
  (generator port 0 wired to port 1, no DUT), generator on CPU 0. *Raw*: netsniff-ng
  trafgen as fast as it goes (TX_RING, qdisc bypass, one worker on CPU 0), its rate from
  its own sending clock. *Embedded*: the ``trafgen`` plugin with its default engine, as a
  run uses it: its ceiling measured as the runner does (one unpaced calibration burst,
  :mod:`vsbench.measurement.ceiling`), then a paced trial of ``--duration-s`` at the load
  the search may ask for (the ceiling x ``generator_ceiling_share``); delivered = frames
  sent over its sending time, counted only if the trial is valid (pacing within 0.5 % in
  every 10 ms window, no frame missing), else 0.
* ``ndr_vs_raw`` -- OvS-DPDK (PMD on CPU 1, generator on CPU 0) on the embedded testbed.
  *Raw*: trafgen as fast as it goes into port 0, counted at port 1 after the switch: its
  rate when nothing was lost (the switch kept up; else the rate that came through, an upper
  bound of the zero-loss rate, which makes the ratio stricter). *Embedded*: ``vsbench
  --test phy2phy_tput --vswitch ovs_dpdk`` at 64 B (bidirectional, as the testcase is;
  search trials ``--search-trial-s``, latency off), its NDR (aggregate).

Needs root, netsniff-ng, openvswitch-switch-dpdk and the DPDK PMD packages; run it under
``flock /work/.testbed.lock``. The last line is ``ratio_vs_raw=... ndr_vs_raw=...``.

    .venv/bin/python tools/bench/generator_vs_raw.py [--repeat 3] [--skip ndr]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "integration"))

from vsbench.deployment.ports import generator_ports_of  # noqa: E402
from vsbench.interfaces.plugin import PluginContext, RunParameters  # noqa: E402
from vsbench.interfaces.traffic import FlowFields, TrafficProfile  # noqa: E402
from vsbench.measurement import ceiling as ceilings  # noqa: E402
from vsbench.measurement import validity  # noqa: E402
from vsbench.system import naming, runstate  # noqa: E402
from vsbench.system.netlink import LinkCounterReader  # noqa: E402
from vsbench.system.resources import ResourceStack  # noqa: E402
from vsbench.system.testbed import create_loopback_testbed  # noqa: E402


def loadavg() -> str:
    return Path("/proc/loadavg").read_text().split(" ", 3)[0]


def trafgen_config(path: Path, fields: FlowFields, flows: int, frame_size: int) -> Path:
    """A trafgen configuration of the same frames the plugin sends (its own writer)."""
    from vsbench_plugins.trafficgen.trafgen import config, flows as flowplan, frames

    plan = flowplan.plan_flows(fields, flows)
    template = frames.bulk_template(fields, frame_size, 0)
    path.write_text(config.render(template, fields, plan, [0]), encoding="utf-8")
    return path


def raw_trafgen(netns: str, iface: str, cfg: Path, frames: int, reader: LinkCounterReader,
                rx_iface: str) -> tuple[float, int, int]:
    """trafgen unpaced (TX_RING + qdisc bypass, one worker on CPU 0): (rate by its own
    clock, frames counted out of ``iface``, frames counted into ``rx_iface``)."""
    from vsbench_plugins.trafficgen.trafgen import process

    before = reader.read([iface, rx_iface])
    out = subprocess.run(["ip", "netns", "exec", netns, "trafgen", "--dev", iface, "--conf", str(cfg),
                          "--num", str(frames), "--cpus", "1", "--no-sock-mem", "--notouch-irq"],
                         capture_output=True, text=True, timeout=300)
    time.sleep(0.3)
    after = reader.read([iface, rx_iface])
    report = process.parse_report(out.stdout + out.stderr)
    if out.returncode != 0 or not report.send_time_s:
        raise RuntimeError(f"trafgen failed: {(out.stderr or out.stdout).strip()[-200:]}")
    tx = (after[iface] - before[iface])
    rx = (after[rx_iface] - before[rx_iface])
    return frames / report.send_time_s, tx.tx_packets + tx.tx_dropped, rx.rx_packets


def embedded_delivered(gen, duration_s: float, share: float | None) -> tuple[float, float, dict]:
    """(delivered fps of a valid paced trial at the ceiling x share, or 0; the ceiling; facts).
    ``share`` None: the engine's own (``capabilities().ceiling_share``), as the runner asks."""
    frames = ceilings.calibration_frames(1e6, 1)
    burst = gen.run_burst(frames)
    ceiling = ceilings.ceiling_from(burst, ceilings.share_for(share, gen.capabilities().ceiling_share))
    r = gen.run_trial(ceiling.max_load_fps, duration_s)
    checked, verdict = validity.apply(r)
    delivered = r.tx_frames / r.tx_duration_s if verdict.valid and r.tx_duration_s else 0.0
    facts = {"asked": ceiling.max_load_fps, "valid": verdict.valid, "reasons": verdict.reasons,
             "max_frames_1ms": r.pacing.max_frames_per_burst_window if r.pacing else None}
    return delivered, ceiling.burst_rate_fps, facts


def veth_round(args, work: Path) -> tuple[float, float, float, dict]:
    """One round on the loopback testbed: (raw fps, embedded delivered fps, ceiling, facts)."""
    from vsbench_plugins.trafficgen.trafgen import Trafgen

    run_id = naming.new_run_id()
    fields = FlowFields()
    with runstate.claim(run_id), ResourceStack() as resources:
        tb = create_loopback_testbed(run_id, resources)
        reader = LinkCounterReader(tb.tg_netns)
        resources.register("counter reader", reader.close)
        a, b = tb.links[0].tg_iface, tb.links[1].tg_iface
        cfg = trafgen_config(work / "raw.cfg", fields, args.flows, args.frame_size)
        raw, tx, rx = raw_trafgen(tb.tg_netns, a, cfg, args.raw_frames, reader, b)
        if rx != tx:
            raise RuntimeError(f"loopback lost frames ({tx} sent, {rx} received): not a generator figure")
        ctx = PluginContext(run_id=run_id, settings=dict(args.settings), log_dir=work / "logs",
                            resources=resources, work_dir=work / "gen", run=RunParameters(drain_s=0.2))
        gen = Trafgen(ctx)
        gen.start()
        gen.configure(TrafficProfile(frame_size_bytes=args.frame_size, flows=args.flows, bidirectional=False,
                                     fields=fields), generator_ports_of(tb))
        delivered, ceiling, facts = embedded_delivered(gen, args.duration_s, args.share)
        gen.stop()
    return raw, delivered, ceiling, facts


def switch_raw_round(args, work: Path) -> tuple[float, float, float]:
    """Raw trafgen through OvS-DPDK: (tx fps by trafgen's clock, rx fps over the same time, loss)."""
    from vswitch_helpers import veth_testbed

    from vsbench.interfaces import PortSpec
    from vsbench_plugins.vswitch.ovs_dpdk import OvsDpdk

    run_id = naming.new_run_id()
    with runstate.claim(run_id), veth_testbed(run_id, 2) as tb, ResourceStack() as stack:
        sw = OvsDpdk(PluginContext(run_id, {"pmd_cpu_mask": "0x2", "dpdk_lcore_mask": "0x1"}, work / "ovs-logs",
                                   stack, dut_netns=tb.dut_netns))
        sw.start()
        sw.add_bridge("br0")
        ports = [sw.add_port("br0", PortSpec("physical", f"p{l.index}", iface=l.dut_iface)) for l in tb.links]
        sw.connect("br0", *ports)
        reader = LinkCounterReader(tb.tg_netns)
        stack.register("counter reader", reader.close)
        fields = FlowFields(src_mac=tb.links[0].tg_mac, dst_mac=tb.links[1].tg_mac)
        cfg = trafgen_config(work / "raw-ovs.cfg", fields, 1, args.frame_size)
        a, b = tb.links[0].tg_iface, tb.links[1].tg_iface
        raw_trafgen(tb.tg_netns, a, cfg, args.raw_frames // 4, reader, b)  # warm the switch's caches
        rate, tx, rx = raw_trafgen(tb.tg_netns, a, cfg, args.raw_frames, reader, b)
        loss = 1.0 - rx / tx if tx else 1.0
        return rate, rate * (rx / tx if tx else 0.0), loss


def vsbench_ndr(args, work: Path, index: int) -> tuple[float | None, dict]:
    """NDR (aggregate fps) of phy2phy_tput at 64 B through OvS-DPDK, and facts of the run."""
    results_dir = work / f"ndr-{index}"
    params = (f"frame_sizes=[{args.frame_size}];latency.enabled=false;"
              f"search.trial_duration_s={args.search_trial_s}")
    if args.engine:
        params += f";trafficgen.trafgen.engine={args.engine}"
    argv = [str(ROOT / ".venv" / "bin" / "vsbench"), "--test", "phy2phy_tput", "--vswitch", "ovs_dpdk",
            "--test-params", params, "--results-dir", str(results_dir)]
    t0 = time.monotonic()
    out = subprocess.run(argv, capture_output=True, text=True, timeout=1800)
    elapsed = time.monotonic() - t0
    if out.returncode != 0:
        raise RuntimeError(f"vsbench failed (exit {out.returncode}): {(out.stderr or out.stdout).strip()[-300:]}")
    [run_dir] = list(results_dir.iterdir())
    doc = json.loads((run_dir / "results.json").read_text())
    fs = doc["tests"][0]["frame_sizes"][0]
    ndr = next((p for p in fs["points"] if p["name"] == "NDR"), None)
    facts = {"trials": fs["trial_count"], "invalid": fs["invalid_trial_count"], "elapsed_s": round(elapsed),
             "ceiling_fps": fs.get("generator_ceiling_fps"), "max_load_fps": fs.get("max_load_fps"),
             "at_ceiling": bool(ndr and ndr.get("at_generator_ceiling"))}
    return (ndr["throughput_fps"] if ndr else None), facts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--frame-size", type=int, default=64)
    parser.add_argument("--flows", type=int, default=1_000_000)
    parser.add_argument("--duration-s", type=float, default=2.0, help="the embedded generator's paced trial")
    parser.add_argument("--raw-frames", type=int, default=2_000_000)
    parser.add_argument("--share", type=float, default=None,
                        help="share of the ceiling the paced trial asks (traffic.generator_ceiling_share; "
                             "default: the engine's own, as a run asks)")
    parser.add_argument("--search-trial-s", type=float, default=1.0)
    parser.add_argument("--engine", default=None, help="trafficgen.trafgen.engine (default: the plugin's)")
    parser.add_argument("--skip", default="", help="comma-separated: veth,ndr")
    args = parser.parse_args(argv)
    if os.geteuid() != 0:
        print("generator_vs_raw: needs root (network namespaces)", file=sys.stderr)
        return 2
    args.settings = {"engine": args.engine} if args.engine else {}
    skip = set(filter(None, args.skip.split(",")))
    print(f"embedded generator vs raw trafgen: {args.frame_size} B, {args.repeat} round(s), "
          f"load average {loadavg()} ({os.cpu_count()} CPUs)", flush=True)
    raws, delivereds, ratios, sw_raws, ndrs, ndr_ratios = [], [], [], [], [], []
    with tempfile.TemporaryDirectory(prefix="vsb-bench-") as tmp:
        work = Path(tmp)
        for i in range(args.repeat):
            if "veth" not in skip:
                raw, delivered, ceiling, facts = veth_round(args, work)
                raws.append(raw)
                delivereds.append(delivered)
                ratios.append(delivered / raw)
                print(f"round {i + 1} veth ({args.flows} flows, 1 direction): raw trafgen {raw / 1e3:.0f} kfps; "
                      f"embedded ceiling {ceiling / 1e3:.0f} kfps, paced at {facts['asked'] / 1e3:.0f} kfps "
                      f"delivered {delivered / 1e3:.0f} kfps (valid {facts['valid']}, max frames in 1 ms "
                      f"{facts['max_frames_1ms']}) -> {delivered / raw:.3f}"
                      + (f"  [{'; '.join(facts['reasons'])}]" if facts["reasons"] else ""), flush=True)
            if "ndr" not in skip:
                rate, rx_rate, loss = switch_raw_round(args, work)
                reference = rate if loss == 0 else rx_rate
                sw_raws.append(reference)
                ndr, facts = vsbench_ndr(args, work, i)
                ndrs.append(ndr or 0.0)
                ndr_ratios.append((ndr or 0.0) / reference)
                print(f"round {i + 1} ovs_dpdk: raw trafgen {rate / 1e3:.0f} kfps, through the switch "
                      f"{rx_rate / 1e3:.0f} kfps (loss {loss:.2%}); phy2phy_tput NDR "
                      f"{(ndr or 0) / 1e3:.0f} kfps ({facts['trials']} trials, {facts['invalid']} invalid, "
                      f"{facts['elapsed_s']} s; ceiling {(facts['ceiling_fps'] or 0) / 1e3:.0f} kfps, "
                      f"NDR at ceiling: {facts['at_ceiling']}) -> {(ndr or 0) / reference:.3f}", flush=True)
    med = statistics.median
    print(f"load average after: {loadavg()}")
    parts = []
    if ratios:
        print(f"veth: raw trafgen median {med(raws) / 1e3:.0f} kfps, embedded delivered median "
              f"{med(delivereds) / 1e3:.0f} kfps")
        parts.append(f"ratio_vs_raw={med(ratios):.3f}")
    if ndr_ratios:
        print(f"ovs_dpdk: raw trafgen zero-loss reference median {med(sw_raws) / 1e3:.0f} kfps, "
              f"phy2phy_tput NDR median {med(ndrs) / 1e3:.0f} kfps")
        parts.append(f"ndr_vs_raw={med(ndr_ratios):.3f}")
    print(" ".join(parts))
    return 0


if __name__ == "__main__":
    sys.exit(main())
