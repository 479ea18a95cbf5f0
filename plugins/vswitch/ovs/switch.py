"""OvsSwitchBase: the VSwitch contract implemented once for every OvS datapath.

A concrete plugin (ovs_dpdk, ovs_kernel, ovs_tc) subclasses it and overrides hooks:

- ``datapath_type``         class attribute: ``"netdev"`` (userspace) or ``"system"`` (kernel)
- ``package_remedy``        class attribute: the apt-get line for missing binaries
- ``settings_schema``       class attribute, built with :func:`.settings.ovs_schema`; must
                            have a ``vswitchd`` property (binary path)
- ``other_config()``        Open_vSwitch other_config set before vswitchd starts
- ``prepare_vswitchd()``    acquire what vswitchd needs (hugepages...), registering undos
                            on ``self.stack``; called after the DB exists, before vswitchd
- ``vswitchd_ready()``      extra readiness check after the control socket answers
- ``interface_config()``    OvS port name and Interface columns for a :class:`PortSpec`
- ``datapath_stats()``      datapath-specific statistics for :meth:`stats`

Lifecycle: :meth:`start` registers :meth:`stop` on the run's stack *first*, then acquires
each piece (run dir, ovsdb-server, hugepages, vswitchd) registering its undo on the
plugin's own stack, which :meth:`stop` closes (idempotent). Bridge names carry the run id
(``vsb<run>br<N>``) because a bridge's internal port is a kernel device.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.plugin import DutGoneError, PluginContext, PluginError, Prerequisite
from vsbench.interfaces.vswitch import FlowSpec, PortSpec, SwitchPort, SwitchThread, VSwitch
from vsbench.interfaces import ResourceStack, commands
from vsbench.interfaces import rules as rulesets
from vsbench.interfaces.modification import KINDS as modification_kinds
from vsbench.interfaces.host import cpu, naming

from vsbench_plugins.vswitch.ovs import flows, parse
from vsbench_plugins.vswitch.ovs.ctl import OPENFLOW_PROTOCOLS, OvsCtl
from vsbench_plugins.vswitch.ovs.instance import OvsInstance
from vsbench_plugins.vswitch.ovs.modify import modification_flow
from vsbench.interfaces.settings import with_defaults

log = logging.getLogger(__name__)

#: Control tools every OvS plugin needs besides its vswitchd.
OVS_TOOLS = ("ovs-vsctl", "ovs-ofctl", "ovs-appctl")


class OvsSwitchBase(VSwitch):
    """Private OvS instance with bridges, ports, bulk flows, a meter, stats and threads."""

    datapath_type: ClassVar[str] = "system"
    package_remedy: ClassVar[str] = "apt-get install openvswitch-switch"
    settings_schema: ClassVar[dict] = {}
    #: every OvS flavour installs ``dut.rules`` rule sets (:meth:`install_rules`, one bundle)
    supports_rule_sets: ClassVar[bool] = True
    supports_meters: ClassVar[bool] = True
    supports_learning: ClassVar[bool] = True
    #: every kind: OpenFlow actions on the forwarding flows (:mod:`.modify`)
    frame_modifications: ClassVar[tuple[str, ...]] = tuple(modification_kinds)

    def __init__(self, context: PluginContext) -> None:
        super().__init__(context)
        #: Settings with the schema's defaults filled in.
        self.cfg: dict[str, Any] = with_defaults(self.settings_schema, context.settings)
        #: Undo actions of everything this instance acquired; closed by stop().
        self.stack = ResourceStack()
        self.instance: OvsInstance | None = None
        self._bridges: dict[str, str] = {}
        self._ports: dict[str, list[SwitchPort]] = {}
        self._next_ofport: dict[str, int] = {}
        self._meters: set[str] = set()
        #: Bridges and ports ever created: names and DPDK vdev indices stay unique after a
        #: delete_bridge/delete_port (a count of the live ones would hand one out twice).
        self._bridges_created = 0
        self._ports_created = 0
        self.reference_dut: dict[str, Any] = {}
        self._started = False
        #: Rules of the configured rule set installed by :meth:`connect`, over every bridge
        #: (0: none): a chain of bridges (pvp: 2) holds the rule set on each.
        self.rules_installed = 0
        #: CPU and datapath samples taken by :meth:`trial_begin`, consumed by :meth:`trial_end`.
        self._trial_before: tuple[Any, dict[str, Any]] | None = None

    # ------------------------------------------------------------------ prerequisites

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        cfg = with_defaults(cls.settings_schema, settings)
        missing = []
        for binary in (cfg["vswitchd"], cfg["ovsdb_server"], cfg["ovsdb_tool"], *OVS_TOOLS):
            if commands.which(binary) is None:
                missing.append(Prerequisite(f"binary {binary}", cls.package_remedy))
        if not Path(cfg["ovs_schema"]).is_file():
            missing.append(Prerequisite(f"OvS schema {cfg['ovs_schema']}", cls.package_remedy))
        return missing

    @classmethod
    def cleanup_dead_run(cls, run_id: str, work_dirs: list[Path]) -> list[str]:
        """Stop the daemons of a killed run's private OvS instances (by pid file, only if
        the process's command line names the run dir), give back its hugepages and remove
        its run dirs (``vsb-<run>-ovs-*`` directly in one of ``work_dirs``)."""
        from vsbench_plugins.vswitch.ovs.instance import cleanup_dead_run_dir

        if not naming.RUN_ID_RE.match(run_id):
            return []
        done: list[str] = []
        for work_dir in work_dirs:
            for run_dir in sorted(Path(work_dir).glob(f"vsb-{run_id}-ovs-*")):
                if run_dir.is_dir() and not run_dir.is_symlink():
                    done += cleanup_dead_run_dir(run_dir)
        return done

    # ------------------------------------------------------------------ hooks

    def other_config(self) -> dict[str, str]:
        """Open_vSwitch other_config applied before vswitchd starts (user extras last).

        ``max-revalidator``: every 500 ms by default the revalidator threads dump and check
        every datapath flow. With 64K flows and more that dump is most of a core, taken from
        the generator's CPU on a 2-core machine (measured, rule_complexity on ovs_dpdk at 64K
        rules: trafgen 12-88% late on every trial above 56 kfps, NDR 55.6 kfps; with 10 s,
        NDR 303.6 kfps). Flow stats and idle eviction are not what these tests measure."""
        return {"max-idle": str(self.cfg["max_idle_ms"]),
                "max-revalidator": str(self.cfg["max_revalidator_ms"])}

    def prepare_vswitchd(self) -> None:
        """Acquire what vswitchd needs before it starts; register undos on ``self.stack``."""

    def vswitchd_ready(self) -> None:
        """Raise PluginError if vswitchd runs but is not usable (e.g. DPDK not initialized)."""

    def vswitchd_args(self) -> list[str]:
        """Extra command-line arguments for ovs-vswitchd."""
        return []

    def interface_config(self, spec: PortSpec, index: int) -> tuple[str, list[str]]:
        """OvS port name and Interface column assignments for ``spec``.

        Default (kernel datapath): a testbed interface is added as a ``system`` port
        under its own kernel name. ``index`` counts ports added so far (0-based).
        """
        if spec.kind == "physical" and spec.iface and not spec.pci:
            return spec.iface, []
        if spec.kind == "tunnel":
            return spec.name, tunnel_columns(spec)
        raise PluginError(f"{self.name or type(self).__name__} cannot add a {spec.kind} port like {spec.name!r}")

    def datapath_stats(self) -> dict[str, Any]:
        """Datapath-specific statistics merged into :meth:`stats` under ``datapath``."""
        return {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def ctl(self) -> OvsCtl:
        if self.instance is None or self.instance.ctl is None:
            raise PluginError(f"{self.name or type(self).__name__} is not started")
        return self.instance.ctl

    def start(self) -> None:
        if self._started:
            return
        self._started = True
        self.context.resources.register(f"{self.name or type(self).__name__} instance", self.stop)
        self.instance = OvsInstance(
            self.context.run_id, self.stack, Path(self.context.log_dir) / "ovs",
            netns=self.context.dut_netns,
            schema=Path(self.cfg["ovs_schema"]),
            ovsdb_server=self.cfg["ovsdb_server"],
            ovsdb_tool=self.cfg["ovsdb_tool"],
            start_timeout_s=float(self.cfg["start_timeout_s"]),
            run_dir_parent=Path(self.context.work_dir) if self.context.work_dir else None,
        )
        ctl = self.instance.start_db()
        config = {**self.other_config(), **{k: _ovs_value(v) for k, v in self.cfg["other_config"].items()}}
        if config:
            ctl.vsctl("set", "Open_vSwitch", ".",
                      *(f'other_config:{k}="{_escape(v)}"' for k, v in config.items()), wait=False)
        self.prepare_vswitchd()
        self.instance.start_vswitchd(self.cfg["vswitchd"], self.vswitchd_args())
        self.vswitchd_ready()
        log.info("%s started (run dir %s)", self.name or type(self).__name__, self.instance.paths.run_dir)

    def stop(self) -> None:
        self.stack.close()

    # ------------------------------------------------------------------ bridges and ports

    def bridge_name(self, bridge: str) -> str:
        """The OvS (and kernel) name of the bridge the caller calls ``bridge``."""
        try:
            return self._bridges[bridge]
        except KeyError:
            raise PluginError(f"no bridge {bridge!r}; add_bridge() it first") from None

    def add_bridge(self, name: str) -> None:
        if name in self._bridges:
            raise PluginError(f"bridge {name!r} already exists")
        real = naming.iface_name(self.context.run_id, "br", self._bridges_created)
        self._bridges_created += 1
        self.ctl.vsctl(
            "add-br", real, "--", "set", "Bridge", real,
            f"datapath_type={self.datapath_type}", "fail_mode=secure",
            f"protocols={OPENFLOW_PROTOCOLS}", "other_config:disable-in-band=true",
        )
        self._bridges[name] = real
        self._ports[name] = []
        self._next_ofport[name] = 1

    def add_port(self, bridge: str, spec: PortSpec) -> SwitchPort:
        real = self.bridge_name(bridge)
        index = self._ports_created
        port_name, columns = self.interface_config(spec, index)
        self._ports_created += 1
        ofport = self._next_ofport[bridge]
        self.ctl.vsctl(
            "add-port", real, port_name, "--", "set", "Interface", port_name,
            f"ofport_request={ofport}", *columns,
        )
        got = self.ctl.get("Interface", port_name, "ofport")
        if got in ("", "[]", "-1"):
            error = self.ctl.get("Interface", port_name, "error") or "no OpenFlow port number"
            cause = self.instance.last_error_line() if self.instance else ""
            raise PluginError(f"port {port_name} was not added: {error}" + (f" [{cause}]" if cause else ""))
        port = SwitchPort(port_name, int(got), spec)
        self._next_ofport[bridge] = int(got) + 1
        self._ports[bridge].append(port)
        return port

    def ports(self, bridge: str) -> list[SwitchPort]:
        self.bridge_name(bridge)
        return list(self._ports[bridge])

    # ------------------------------------------------------------------ integration steps

    vport_kinds: ClassVar[tuple[str, ...]] = ()

    def delete_bridge(self, name: str) -> None:
        """``ovs-vsctl del-br``: the bridge and its ports go (OvS releases a testbed
        interface; the kernel device stays, the testbed owns it)."""
        real = self.bridge_name(name)
        self.ctl.vsctl("del-br", real)
        del self._bridges[name]
        self._ports.pop(name, None)
        self._next_ofport.pop(name, None)
        self._meters.discard(name)

    def delete_port(self, bridge: str, port: SwitchPort) -> None:
        real = self.bridge_name(bridge)
        if all(p.name != port.name for p in self._ports[bridge]):
            raise PluginError(f"port {port.name} is not in bridge {bridge!r}")
        self.ctl.vsctl("del-port", real, port.name)
        self._ports[bridge] = [p for p in self._ports[bridge] if p.name != port.name]

    def add_flow(self, bridge: str, flow: FlowSpec) -> None:
        """``ovs-ofctl add-flow`` of :func:`openflow_text` (one flow: a step's, not a rule set)."""
        self.ctl.ofctl("add-flow", self.bridge_name(bridge), openflow_text(flow))

    def delete_flow(self, bridge: str, flow: FlowSpec) -> None:
        """``ovs-ofctl del-flows --strict``: the flow with exactly that match and priority."""
        self.ctl.ofctl("del-flows", self.bridge_name(bridge), "--strict", openflow_match(flow, priority=True))

    def dump_flows(self, bridge: str) -> str:
        """``ovs-ofctl dump-flows --no-stats``: one OpenFlow flow per line."""
        return self.ctl.ofctl("dump-flows", self.bridge_name(bridge), "--no-stats")

    def dump_state(self) -> str:
        """``ovs-vsctl show`` of the private instance."""
        return self.ctl.vsctl("show", wait=False)

    def port_counters(self, bridge: str, port: SwitchPort) -> dict[str, int]:
        """``ovs-ofctl dump-ports BRIDGE PORT`` (a counter OvS does not keep reads 0)."""
        parsed = parse.parse_dump_ports(self.ctl.ofctl("dump-ports", self.bridge_name(bridge), str(port.number)))
        entry = parsed.get(str(port.number)) or next(iter(parsed.values()), None)
        if entry is None:
            raise PluginError(f"ovs-ofctl dump-ports has no counters for port {port.name}")
        return {key: int(entry.get(key) or 0) for key in ("rx_packets", "tx_packets", "rx_dropped", "tx_dropped")}

    # ------------------------------------------------------------------ flows

    def meter_pps(self) -> int | None:
        """``dut.meter_pps`` (``context.run.meter_pps``): the reference DUT's capacity."""
        return self.context.run.meter_pps

    def ensure_meter(self, bridge: str) -> int | None:
        """Create the forwarding meter on ``bridge`` once, if ``dut.meter_pps`` asks for
        one; return its id (None without a meter). One meter is shared by both directions:
        its rate is the DUT's aggregate capacity, as loads are aggregate."""
        rate = self.meter_pps()
        if rate is None:
            return None
        if bridge not in self._meters:
            burst = flows.meter_burst_pkts(rate, float(self.cfg["meter_burst_ms"]))
            window = self.meter_window_s()
            try:
                band_rate = flows.meter_band_rate_pps(rate, burst, window)
            except ValueError as exc:
                raise PluginError(f"dut.meter_window_s: {exc}") from exc
            self.ctl.ofctl("add-meter", self.bridge_name(bridge),
                           flows.meter_spec(flows.FORWARD_METER_ID, band_rate, burst))
            self._meters.add(bridge)
            self.reference_dut = {"capacity_pps": rate, "band_rate_pps": band_rate,
                                  "bucket_frames": burst, "window_s": window}
            log.info("reference DUT: meter band %d pps, bucket %d frames, window %s s",
                     band_rate, burst, window)
        return flows.FORWARD_METER_ID

    def meter_window_s(self) -> float | None:
        """``dut.meter_window_s``: the shortest trial the meter's capacity must hold for."""
        return self.context.run.meter_window_s

    def rule_set(self) -> rulesets.RuleSetSpec | None:
        """The rule set the run asks for (``dut.rules``: ``context.run.rule_set``), or None."""
        return self.context.run.rule_set

    def connect(self, bridge: str, a: SwitchPort, b: SwitchPort) -> None:
        """Forward ``a`` <-> ``b``: with ``dut.rules`` (or ``dut.rule_template: in_out``)
        the generated rule set is the bridge's whole forwarding path, installed in one
        ``--bundle`` transaction (a frame no rule matches is dropped and counted as loss);
        otherwise two port-to-port flows. Either way through the ``dut.meter_pps`` meter
        when one is configured. Every bridge a deployment connects gets the rule set, so
        each switch pass of a chain (pvp: phy -> VNF, VNF -> phy) classifies the frame
        against it; a tunnel's underlay bridge is never connected and keeps its own flows."""
        spec = self.rule_set()
        if spec is not None:
            self._install_rule_set(bridge, spec, a, b)
            return
        meter = self.ensure_meter(bridge)
        match, modify = modification_flow(self.context.run.frame_modification)
        lines = flows.port_to_port_flows(a.number, b.number, meter_id=meter, match=match, modify=modify)
        flow_file = self.instance.paths.run_dir / f"connect-{bridge}-{a.number}-{b.number}.flows"  # type: ignore[union-attr]
        flows.write_flow_file(flow_file, lines)
        self.ctl.add_flows_bundle(self.bridge_name(bridge), flow_file)

    def connect_many(self, bridge: str, hub: SwitchPort, spokes: Sequence[tuple[SwitchPort, str]]) -> None:
        """N spokes and one hub (:func:`.flows.hub_flows`): a spoke's frames to the hub, the
        hub's to the spoke whose endpoint MAC they are addressed to; through the
        ``dut.meter_pps`` meter when one is configured. A rule set (``dut.rules``) describes
        port-to-port forwarding and is refused here."""
        if len(spokes) == 1:
            self.connect(bridge, spokes[0][0], hub)
            return
        if self.rule_set() is not None:
            raise PluginError("dut.rules describes forwarding between two ports; it cannot forward "
                              f"{len(spokes)} ports to one")
        meter = self.ensure_meter(bridge)
        lines = flows.hub_flows(hub.number, [(port.number, mac) for port, mac in spokes], meter_id=meter)
        flow_file = self.instance.paths.run_dir / f"connect-{bridge}-hub-{hub.number}.flows"  # type: ignore[union-attr]
        flows.write_flow_file(flow_file, lines)
        self.ctl.add_flows_bundle(self.bridge_name(bridge), flow_file)

    def connect_learning(self, bridge: str, ports: Sequence[SwitchPort], *, aging_time_s: int,
                         table_size: int | None = None) -> None:
        """One ``actions=NORMAL`` flow: OvS's own MAC-learning switch between the bridge's
        ports (the port-to-port flows of :meth:`connect` would forward without learning).
        ``other_config:mac-aging-time`` (OvS default 300 s) and, when given,
        ``mac-table-size`` (OvS default 8192) go on the Bridge record. A rule set
        (``dut.rules``) or a meter describes port-to-port forwarding and is refused."""
        if self.rule_set() is not None or self.meter_pps() is not None:
            raise PluginError("dut.rules and dut.meter_pps describe port-to-port forwarding; a learning bridge "
                              "takes neither")
        real = self.bridge_name(bridge)
        columns = [f"other_config:mac-aging-time={int(aging_time_s)}"]
        if table_size is not None:
            columns.append(f"other_config:mac-table-size={int(table_size)}")
        self.ctl.vsctl("set", "Bridge", real, *columns)
        names = {p.name for p in self._ports[bridge]}
        missing = [p.name for p in ports if p.name not in names]
        if missing:
            raise PluginError(f"port(s) {', '.join(missing)} not in bridge {real}")
        flow_file = self.instance.paths.run_dir / f"connect-{bridge}-normal.flows"  # type: ignore[union-attr]
        flows.write_flow_file(flow_file, ["priority=1,actions=NORMAL"])
        self.ctl.add_flows_bundle(real, flow_file)

    def flush_learned(self, bridge: str) -> None:
        """``ovs-appctl fdb/flush`` (the bridge's MAC table emptied), then
        ``revalidator/purge`` (every datapath flow removed). Without the purge a frame of
        an earlier iteration's megaflow keeps hitting it and never reaches the slow path,
        where OvS learns: measured, a 1000 fps iteration after a 470 kfps one had all
        1024 test frames flooded, the addresses being learned only at the revalidators'
        next round (every ``max_revalidator_ms``)."""
        self.ctl.appctl("fdb/flush", self.bridge_name(bridge))
        self.ctl.appctl("revalidator/purge")

    def _install_rule_set(self, bridge: str, spec: rulesets.RuleSetSpec, a: SwitchPort, b: SwitchPort) -> None:
        directions = rulesets.default_directions(a.number, b.number, spec.bidirectional)
        path = Path(self.instance.paths.run_dir) / f"rules-{bridge}.flows"  # type: ignore[union-attr]
        match, modify = modification_flow(self.context.run.frame_modification)
        written = rulesets.write_rule_file(path, spec, directions, match=match, modify=modify)
        installed = self.install_rules(bridge, path)
        actual = self.flow_count(bridge)
        if actual != written or installed != written:
            raise PluginError(f"rule set: wrote {written} rules, bridge holds {actual}")
        self.rules_installed += written
        log.info("%s: %d %s rules on bridge %s", self.name or type(self).__name__, written, spec.template, bridge)

    def install_rules(self, bridge: str, rules_file: Path) -> int:
        """Install an ovs-ofctl flow file in one bundle; return its rule count. With
        ``dut.meter_pps`` set, each rule's actions go through the forwarding meter first
        (the rules *are* the forwarding path then, above the port-to-port flows)."""
        rules_file = Path(rules_file)
        if not rules_file.is_file():
            raise PluginError(f"rule file {rules_file} does not exist")
        meter = self.ensure_meter(bridge)
        if meter is not None:
            metered = self.instance.paths.run_dir / f"rules-{bridge}-metered.flows"  # type: ignore[union-attr]
            count = flows.add_meter_to_rules(rules_file, metered, meter)
            rules_file = metered
        else:
            count = flows.count_rules(rules_file)
        self.ctl.add_flows_bundle(self.bridge_name(bridge), rules_file,
                                  timeout_s=float(self.cfg["rule_install_timeout_s"]))
        return count

    def flow_count(self, bridge: str) -> int:
        """OpenFlow rules currently in ``bridge`` (``dump-aggregate``)."""
        out = self.ctl.ofctl("dump-aggregate", self.bridge_name(bridge))
        for token in out.replace(",", " ").split():
            if token.startswith("flow_count="):
                return int(token.split("=", 1)[1])
        raise PluginError(f"cannot read flow_count from dump-aggregate: {out.strip()[:200]}")

    # ------------------------------------------------------------------ reporting

    def version(self) -> dict[str, str]:
        try:
            out = commands.run([self.cfg["vswitchd"], "--version"], timeout_s=10).stdout
        except commands.CommandError as exc:
            raise PluginError(f"cannot read the OvS version: {exc}") from exc
        return parse.parse_version(out)

    def stats(self) -> dict[str, Any]:
        bridges = {}
        for logical, real in self._bridges.items():
            entry: dict[str, Any] = {
                "name": real,
                "ports": parse.parse_dump_ports(self.ctl.ofctl("dump-ports", real)),
                "port_names": {str(p.number): p.name for p in self._ports[logical]},
                "flow_count": self.flow_count(logical),
            }
            if logical in self._meters:
                entry["meters"] = parse.parse_meter_stats(self.ctl.ofctl("meter-stats", real))
                entry["reference_dut"] = dict(self.reference_dut)
            bridges[logical] = entry
        return {"bridges": bridges, "datapath": self.datapath_stats()}

    def flow_limit_sample(self) -> dict[str, int | None]:
        """The datapath flow limit and how often it turned a flow away, cumulative:
        ``flow_limit_hits`` (coverage counter ``upcall_flow_limit_hit``: a miss whose
        megaflow was not installed because the datapath held ``flows_limit`` flows -- that
        frame, and every later one of its flow, takes the slow path), ``flows_limit`` and
        ``flows_current`` (``upcall/show``, over the datapaths). OvS starts the limit at
        10,000 flows and raises it by 1,000 per revalidator round that dumps fast enough
        (``max_revalidator_ms``), so a larger flow set than that is installed only in
        part for a while. None where OvS does not say."""
        try:
            hits: int | None = int(self.ctl.appctl("coverage/read-counter", "upcall_flow_limit_hit").strip())
        except (PluginError, ValueError):
            hits = None
        try:
            upcall = parse.parse_upcall_show(self.ctl.appctl("upcall/show"))
        except PluginError:
            upcall = {}
        limits = [d["flows_limit"] for d in upcall.values() if "flows_limit" in d]
        current = [d["flows_current"] for d in upcall.values() if "flows_current" in d]
        return {"flow_limit_hits": hits, "flows_limit": min(limits) if limits else None,
                "flows_current": sum(current) if current else None}

    # ------------------------------------------------------------------ per-trial cost

    def datapath_counters(self) -> dict[str, Any]:
        """Cumulative datapath counters sampled around each trial (default: the whole
        :meth:`datapath_stats`); :meth:`datapath_delta` turns two of them into the trial's."""
        return self.datapath_stats()

    def datapath_delta(self, before: Mapping[str, Any], after: Mapping[str, Any]) -> dict[str, Any]:
        """The trial's datapath figures from two :meth:`datapath_counters` samples."""
        return {}

    def cpu_cost(self, usage: cpu.CpuUsage) -> tuple[float, str]:
        """(CPU seconds, what they are) the switch consumed in ``usage``. Default, for a
        userspace datapath: the busy time (user + system) of every vswitchd thread. With
        tick-based accounting (no CONFIG_IRQ_TIME_ACCOUNTING) a softirq that runs in a
        thread's context -- a PMD's transmit into a veth runs the peer's receive path -- is
        already in the thread's system time; adding the CPU's softirq time would count it
        twice."""
        return usage.threads_busy_s, "threads"

    def _cpu_sample(self) -> cpu.CpuSample:
        pid = self.instance.vswitchd_pid() if self.instance else None
        return cpu.sample(pids=[pid] if pid else [])

    def check_alive(self) -> None:
        """:class:`DutGoneError` naming the daemon of this instance that died."""
        instance = self.instance
        for name, proc in (("ovs-vswitchd", getattr(instance, "vswitchd_proc", None)),
                           ("ovsdb-server", getattr(instance, "ovsdb_proc", None))):
            if proc is not None and not proc.alive():
                raise DutGoneError(f"{name} (pid {proc.pid}) died")

    def trial_begin(self) -> None:
        self.check_alive()
        counters = self.datapath_counters()  # the slower sample first: the CPU one is closest to traffic
        self._trial_before = (self._cpu_sample(), counters)

    def trial_end(self) -> dict[str, Any]:
        if self._trial_before is None:
            return {}
        before_cpu, before_counters = self._trial_before
        self._trial_before = None
        self.check_alive()
        usage = cpu.delta(before_cpu, self._cpu_sample())
        after_counters = self.datapath_counters()
        cpu_s, source = self.cpu_cost(usage)
        return trial_cost(usage, cpu_s, source, self.datapath_delta(before_counters, after_counters))

    def threads(self) -> list[SwitchThread]:
        """Every thread of ovs-vswitchd (PMDs ``pmd-c*`` first, then main, handlers,
        revalidators...): all of them are the switch's CPU cost."""
        pid = self.instance.vswitchd_pid() if self.instance else None
        if pid is None:
            return []
        found = [SwitchThread(pid, tid, name) for tid, name in cpu.task_names(pid).items()]
        return sorted(found, key=lambda t: (not t.name.startswith("pmd"), t.tid))


def trial_cost(usage: cpu.CpuUsage, cpu_s: float, source: str, datapath: Mapping[str, Any]) -> dict[str, Any]:
    """The ``trial_end()`` document of a switch: CPU consumed, the busy threads, softirq
    per CPU, datapath deltas, and a warning per busy-polling thread that did not get its
    CPU (the trial then measured contention, not the switch). Pure."""
    return {
        "cpu_s": cpu_s,
        "cpu_source": source,
        "elapsed_s": usage.elapsed_s,
        "threads_busy_s": usage.threads_busy_s,
        "softirq_s": dict(usage.softirq_s),
        "threads": [
            {"tid": t.tid, "name": t.name, "busy_s": t.busy_s, "utilization": t.utilization, "last_cpu": t.last_cpu}
            for t in usage.threads if t.busy_s > 0 or t.name.startswith("pmd")
        ],
        "datapath": dict(datapath),
        "warnings": [w.to_dict() for w in cpu.starved_busy_pollers(usage)],
    }


def openflow_match(flow: FlowSpec, *, priority: bool) -> str:
    """The OpenFlow match of ``flow`` (``in_port=1,dl_dst=...``), priority first when asked.
    Pure; only the closed set of :data:`~vsbench.interfaces.vswitch.FLOW_MATCH_FIELDS`."""
    names = {"in_port": "in_port", "eth_dst": "dl_dst", "eth_src": "dl_src", "eth_type": "dl_type"}
    parts = [f"priority={int(flow.priority)}"] if priority else []
    for key, value in flow.match.items():
        if key not in names:
            raise PluginError(f"OvS flow: unknown match field {key!r}")
        if key == "eth_type":
            value = f"0x{int(value):04x}"
        elif key == "in_port":
            value = int(value)
        parts.append(f"{names[key]}={value}")
    return ",".join(parts)


def openflow_text(flow: FlowSpec) -> str:
    """An ``ovs-ofctl add-flow`` line for ``flow``: its match, then output to the port or drop."""
    action = f"output:{flow.output.number}" if flow.output is not None else "drop"
    return f"{openflow_match(flow, priority=True)},actions={action}"


#: The tunnel port options OvS itself takes (the rest of a tunnel PortSpec's options
#: describe its underlay, which the plugin builds).
OVS_TUNNEL_OPTIONS = ("remote_ip", "local_ip", "key", "dst_port", "tos", "ttl", "df_default", "csum")


def tunnel_columns(spec: PortSpec, allowed: tuple[str, ...] | None = None) -> list[str]:
    """Interface columns of a tunnel port (``options`` carry type, remote_ip, key...);
    only the ``allowed`` options when given."""
    options = dict(spec.options)
    kind = str(options.pop("type", "vxlan"))
    if allowed is not None:
        options = {k: v for k, v in options.items() if k in allowed}
    if "remote_ip" not in options:
        raise PluginError(f"tunnel port {spec.name!r} needs options.remote_ip")
    return [f"type={kind}", *(f'options:{k}="{_escape(_ovs_value(v))}"' for k, v in sorted(options.items()))]


def _ovs_value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _escape(value: str) -> str:
    """Quote-safe value for ovs-vsctl's ``key="value"`` syntax."""
    return value.replace("\\", "\\\\").replace('"', '\\"')
