#!/usr/bin/env python3
"""How much vsbench adds to installing a big rule set: vsbench's path versus bare ovs-ofctl.

A src/dst-IP rule set (``vsbench.measurement.rules``, the rule_complexity template) of
``--rules`` rules is generated once to a file. Then, on one private OvS instance
(userspace datapath: this bench runs on the development kernel, which has no openvswitch
module; the rule-install path is the same for every OvS datapath), each repetition
installs the file

* through vsbench: ``OvsSwitchBase.install_rules`` (file check, rule count, one
  ``ovs-ofctl --bundle add-flows``), on bridge A, and
* bare: ``ovs-ofctl -O OpenFlow13 --bundle add-flows`` of the same file, on bridge B,

in alternating order (after an untimed warm-up install: the first install into a fresh
vswitchd also grows its heap, which would be charged to whichever side went first), checks that each bridge holds exactly the rules, and empties both
(untimed). Medians over the repetitions; the last line is the figure:

    rules=1000000 vsbench_s=.. bare_s=.. ratio=..

Target: ratio <= 1.2. The generation time is printed separately (``gen_s``): it is
vsbench's own cost of a rule set, paid once per rule count, not part of the install.

    sudo .venv/bin/python tools/bench/rule_install.py [--rules 1000000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import ClassVar

from vsbench.interfaces import PluginContext
from vsbench.measurement import rules
from vsbench.system import commands, naming
from vsbench.system.resources import ResourceStack
from vsbench_plugins.vswitch.ovs.ctl import OFCTL_PROTOCOL
from vsbench_plugins.vswitch.ovs.settings import ovs_schema
from vsbench_plugins.vswitch.ovs.switch import OvsSwitchBase


class UserspaceOvs(OvsSwitchBase):
    """The OvS base on the userspace datapath without DPDK: runs on any kernel."""

    datapath_type: ClassVar[str] = "netdev"
    settings_schema: ClassVar[dict] = ovs_schema("bench", {
        "vswitchd": {"type": "string", "default": "/usr/sbin/ovs-vswitchd"},
    })


def bare_install(switch: UserspaceOvs, bridge: str, path: Path, timeout_s: float) -> None:
    sock = switch.instance.paths.mgmt_socket(switch.bridge_name(bridge))  # type: ignore[union-attr]
    subprocess.run(["ovs-ofctl", "-O", OFCTL_PROTOCOL, "--bundle", "add-flows", f"unix:{sock}", str(path)],
                   check=True, timeout=timeout_s, capture_output=True, env={**switch.instance.paths.env(),  # type: ignore[union-attr]
                                                                          "PATH": "/usr/bin:/usr/sbin:/bin:/sbin"})


def empty(switch: UserspaceOvs, bridge: str) -> None:
    switch.ctl.ofctl("del-flows", switch.bridge_name(bridge), timeout_s=900)
    if switch.flow_count(bridge) != 0:
        raise SystemExit(f"rule_install: bridge {bridge} not empty after del-flows")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rules", type=int, default=1_000_000)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1,
                        help="untimed installs first: the first one also grows vswitchd's heap")
    parser.add_argument("--settle-s", type=float, default=3.0,
                        help="pause after emptying the bridge, so vswitchd's deferred frees of the "
                             "last rule set are not charged to the next install")
    args = parser.parse_args()
    if args.rules < 1 or args.repeat < 1:
        parser.error("--rules and --repeat must be positive")
    if commands.which("ovs-vswitchd") is None:
        print("rule_install: ovs-vswitchd missing (apt-get install openvswitch-switch)", file=sys.stderr)
        return 2

    run_id = naming.new_run_id()
    # The stack (OvS, its bridge) is closed before the temp dir holding OvS's sockets goes.
    with tempfile.TemporaryDirectory(prefix=f"vsb-{run_id}-bench-") as tmp, ResourceStack() as stack:
        work = Path(tmp)
        spec = rules.RuleSetSpec("src_dst_ip", args.rules, flows=args.rules, bidirectional=False)
        path = work / "rules.flows"
        t0 = time.perf_counter()
        written = rules.write_rule_file(path, spec, [rules.Direction(1, 2)])
        gen_s = time.perf_counter() - t0
        print(f"generated {written} rules ({path.stat().st_size / 1e6:.0f} MB) in {gen_s:.2f} s", flush=True)

        context = PluginContext(run_id=run_id, settings={}, log_dir=work / "logs", resources=stack, work_dir=work)
        switch = UserspaceOvs(context)
        switch.name = "bench-ovs"
        switch.start()
        switch.add_bridge("a")
        timeout = float(switch.cfg["rule_install_timeout_s"])

        for _ in range(args.warmup):
            bare_install(switch, "a", path, timeout)
            empty(switch, "a")

        vsbench_times, bare_times = [], []
        for rep in range(args.repeat):
            order = ("vsbench", "bare") if rep % 2 == 0 else ("bare", "vsbench")
            for which in order:
                t0 = time.perf_counter()
                if which == "vsbench":
                    count = switch.install_rules("a", path)
                    elapsed = time.perf_counter() - t0
                    vsbench_times.append(elapsed)
                else:
                    bare_install(switch, "a", path, timeout)
                    elapsed = time.perf_counter() - t0
                    count = written
                    bare_times.append(elapsed)
                held = switch.flow_count("a")
                if held != written or count != written:
                    raise SystemExit(f"rule_install: {which} left {held} rules (reported {count}), expected {written}")
                print(f"rep {rep + 1} {which:7s} {elapsed:7.2f} s  ({written / elapsed:,.0f} rules/s)", flush=True)
                empty(switch, "a")
                time.sleep(args.settle_s)

    vsbench_s = statistics.median(vsbench_times)
    bare_s = statistics.median(bare_times)
    print(f"gen_s={gen_s:.2f}")
    print(f"rules={written} vsbench_s={vsbench_s:.2f} bare_s={bare_s:.2f} ratio={vsbench_s / bare_s:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
