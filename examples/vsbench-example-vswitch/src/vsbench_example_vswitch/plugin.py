"""tcswitch: a vSwitch made of Linux tc filters, driven as vsbench's contract asks.

The life cycle a deployment drives (see ``vsbench.interfaces.VSwitch``)::

    sw = TcSwitch(context)           # settings only
    sw.start()                       # our "instance": check the namespace, register teardown
    sw.add_bridge("br0")             # a name to group ports under
    a = sw.add_port("br0", spec)     # a DUT interface: give it a clsact qdisc
    sw.connect("br0", a, b)          # ingress of a -> egress of b, and back (mirred)
    sw.trial_begin(); ...; sw.trial_end()   # what each trial cost (filter hits)
    sw.stop()                        # remove every filter and qdisc we added

What a vendor's switch plugin should do the same way:

* import only ``vsbench.interfaces`` and read only ``self.settings`` and ``self.context``;
* run commands as argv lists through ``vsbench.interfaces.commands.run`` (a timeout, a
  one-line error), in ``context.dut_netns``;
* keep the undo of each thing installed as it is installed, and register ``stop()`` (which
  runs those undos) on ``context.resources`` before installing anything, so ``stop()``,
  Ctrl-C or a failure half-way all leave nothing behind;
* raise :class:`PluginError` with one line naming the switch and what failed.
"""

from __future__ import annotations

import json
import platform
from typing import Any, ClassVar

from vsbench.interfaces import PluginError, PortSpec, Prerequisite, SwitchPort, VSwitch
from vsbench.interfaces.commands import CommandError, run, which
from vsbench.interfaces.settings import with_defaults

#: Classic BPF that matches every frame (``ret #-1``): the classifier of our filters, which
#: this kernel always has (matchall or flower may be missing).
MATCH_ALL = "1,6 0 0 4294967295,"
FILTER_PREF = "49000"

SETTINGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "tcswitch settings (vswitch.tcswitch)",
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "egress_limit_bps": {
            "description": "shape each port's egress to this many bits/s of frames (tbf); null: no limit",
            "type": ["integer", "null"], "minimum": 8000, "default": None,
        },
        "command_timeout_s": {"type": "number", "exclusiveMinimum": 0, "default": 10},
    },
}


class TcSwitch(VSwitch):
    """Port-to-port forwarding with tc mirred in the DUT namespace."""

    description: ClassVar[str] = "Example vendor switch: port-to-port forwarding with Linux tc (mirred)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    # tcswitch has no OpenFlow table and no meters: vsbench refuses plans asking for
    # them (dut.rules, dut.meter_pps) before anything starts
    supports_rule_sets: ClassVar[bool] = False
    supports_meters: ClassVar[bool] = False

    def __init__(self, context) -> None:
        super().__init__(context)
        self.cfg = with_defaults(SETTINGS_SCHEMA, self.settings)
        self._netns: str | None = None
        self._bridges: dict[str, list[SwitchPort]] = {}
        self._before: dict[str, int] = {}
        #: what stop() undoes, newest last: (what, argv)
        self._installed: list[tuple[str, list[str]]] = []

    @classmethod
    def check_prerequisites(cls, settings) -> list[Prerequisite]:
        return [Prerequisite(f"the {tool} command", "apt-get install iproute2")
                for tool in ("ip", "tc") if which(tool) is None]

    def version(self) -> dict[str, str]:
        try:
            tc = self._tc("-V").stdout.strip()
        except PluginError:
            tc = "unknown"
        return {"tcswitch": "0.1.0", "tc": tc, "kernel": platform.release()}

    # ------------------------------------------------------------------ life cycle

    def start(self) -> None:
        if not self.context.dut_netns:
            raise PluginError("tcswitch: runs only in the DUT namespace of the embedded testbed "
                              "(it would rewire the host's own interfaces)")
        self._netns = self.context.dut_netns
        # registered before anything is installed: whatever happens later (an error, Ctrl-C,
        # a run that fails elsewhere) the run's teardown calls stop(), which removes it all
        self.context.resources.register("tcswitch", self.stop)

    def add_bridge(self, name: str) -> None:
        self._started()
        self._bridges.setdefault(name, [])

    def add_port(self, bridge: str, spec: PortSpec) -> SwitchPort:
        self._started()
        if bridge not in self._bridges:
            raise PluginError(f"tcswitch: no bridge {bridge}")
        if spec.kind != "physical" or not spec.iface:
            raise PluginError(f"tcswitch: port {spec.name}: only physical interfaces ({spec.kind} asked)")
        try:
            link = json.loads(run(["ip", "-j", "link", "show", "dev", spec.iface], netns=self._netns,
                                  timeout_s=self.cfg["command_timeout_s"]).stdout)[0]
        except CommandError:
            raise PluginError(f"tcswitch: port {spec.name}: no interface {spec.iface} in {self._netns}") from None
        self._install(f"clsact on {spec.iface}", ["qdisc", "add", "dev", spec.iface, "clsact"],
                      undo=["qdisc", "del", "dev", spec.iface, "clsact"])
        if self.cfg["egress_limit_bps"]:
            self._install(f"tbf on {spec.iface}",
                          ["qdisc", "replace", "dev", spec.iface, "root", "tbf", "rate",
                           f"{self.cfg['egress_limit_bps']}bit", "burst", "1600", "limit", "3000"],
                          undo=["qdisc", "del", "dev", spec.iface, "root"])
        port = SwitchPort(name=spec.name, number=int(link["ifindex"]), spec=spec)
        self._bridges[bridge].append(port)
        return port

    def connect(self, bridge: str, a: SwitchPort, b: SwitchPort) -> None:
        self._started()
        for src, dst in ((a, b), (b, a)):
            self._install(f"filter {src.name}->{dst.name}",
                          ["filter", "add", "dev", src.spec.iface, "ingress", "pref", FILTER_PREF, "bpf",
                           "bytecode", MATCH_ALL, "action", "mirred", "egress", "redirect", "dev", dst.spec.iface],
                          undo=["filter", "del", "dev", src.spec.iface, "ingress", "pref", FILTER_PREF])

    def stop(self) -> None:
        """Remove every filter and qdisc we installed, newest first. Idempotent: what is
        removed is forgotten, and a failure is reported once all the rest is removed."""
        failed = []
        while self._installed:
            what, undo = self._installed.pop()
            done = run(["tc", *undo], netns=self._netns, check=False, timeout_s=self.cfg["command_timeout_s"])
            if done.returncode != 0 and "Cannot find device" not in done.stderr:
                failed.append(f"{what}: {done.stderr.strip()[:100]}")
        self._bridges.clear()
        if failed:
            raise PluginError("tcswitch: could not remove " + "; ".join(failed))

    # ------------------------------------------------------------------ figures

    def stats(self) -> dict[str, Any]:
        """Frames each port's filter redirected: {"<port>": {"redirected_frames": N}}."""
        return {port.name: {"redirected_frames": self._hits(port.spec.iface)}
                for ports in self._bridges.values() for port in ports}

    def trial_begin(self) -> None:
        self._before = {name: figures["redirected_frames"] for name, figures in self.stats().items()}

    def trial_end(self) -> dict[str, Any]:
        after = self.stats()
        delta = {name: figures["redirected_frames"] - self._before.get(name, 0) for name, figures in after.items()}
        return {"datapath": {"redirected_frames": delta}}

    # ------------------------------------------------------------------ helpers

    def _started(self) -> None:
        if self._netns is None:
            raise PluginError("tcswitch: not started")

    def _install(self, what: str, argv: list[str], undo: list[str]) -> None:
        self._tc(*argv)
        self._installed.append((what, undo))  # remembered the moment it exists

    def _tc(self, *args: str):
        try:
            return run(["tc", *args], netns=self._netns, timeout_s=self.cfg["command_timeout_s"])
        except CommandError as exc:
            raise PluginError(f"tcswitch: {exc}") from None

    def _hits(self, iface: str) -> int:
        try:
            filters = json.loads(self._tc("-s", "-j", "filter", "show", "dev", iface, "ingress").stdout or "[]")
        except (PluginError, ValueError):
            return 0
        return sum(action.get("stats", {}).get("packets", 0)
                   for f in filters for action in (f.get("options") or {}).get("actions", []))
