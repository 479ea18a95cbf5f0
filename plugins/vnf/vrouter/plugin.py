"""vrouter: a router VNF — a Vyatta-style model rendered to Linux kernel routing.

The router runs in the DUT's network namespace (the embedded testbed's, or the one a
deployment gives it); the kernel forwards, with routes installed over netlink in bulk.
Its configuration is the declarative model of :mod:`vsbench.interfaces.router`, either in
the plugin's settings (``vnf.vrouter.config``) or handed over by a deployment through
:meth:`VRouter.configure_router`, which also reloads a running router with a new
configuration (the old one is removed first) -- the route-scaling testcases reconfigure
the router, they do not restart the run.

Frames arriving at the router's ports are routed on ``rx_cpus`` (RPS; by default the
highest online CPU), not on the CPU that sent them: on the embedded testbed that is the
generator's, which would then slow down instead of the router dropping, and every figure
would be the generator's. Those CPUs are in the run's CPU plan. Per trial the router's
port counters (received, transmitted, dropped on receive) are read, so a PVP run can say
whether the router or a switch pass lost the frames.

Everything the router installs is registered on the run's teardown stack when installed
and verified gone at :meth:`stop` (see :mod:`.kernel`). On a real host (no DUT namespace)
the plugin refuses to start: it would rewrite the host's own routing table.
"""

from __future__ import annotations

import json
import logging
import platform
import shutil
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces import PluginError, Prerequisite, SwitchPort, Vnf
from vsbench.interfaces.commands import CommandError
from vsbench.interfaces.host import cpu
from vsbench.interfaces.host.netlink import LinkCounterReader, LinkCounters, NetlinkError, list_links
from vsbench.interfaces.host.testbed import TestbedError, steer_receive

from vsbench.interfaces import router as model
from .kernel import KernelRouter, RenderError, fib_slab_bytes

log = logging.getLogger(__name__)

SETTINGS_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "vnf.vrouter settings",
    "type": ["object", "null"],
    "additionalProperties": False,
    "properties": {
        "dataplane": {"enum": ["kernel"], "default": "kernel",
                      "description": "what forwards: the Linux kernel in the DUT namespace"},
        "config": {**model.MODEL_SCHEMA, "description": "the router configuration (else a deployment supplies it)"},
        "rx_cpus": {"type": ["array", "null"], "items": {"type": "integer", "minimum": 0}, "uniqueItems": True,
                    "default": None,
                    "description": "CPUs that route the frames arriving at the router's ports (RPS on each "
                                   "port): null: the highest online CPU, away from the generator; []: the "
                                   "kernel's default, the CPU that sent the frame (the generator's, so the "
                                   "generator slows down instead of the router dropping)"},
    },
}


class VRouter(Vnf):
    description: ClassVar[str] = "vRouter: Vyatta-style static routes/ECMP rendered to kernel routing (bulk netlink)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    routing: ClassVar[bool] = True

    def __init__(self, context) -> None:
        super().__init__(context)
        self.settings = context.settings or {}
        self._router: KernelRouter | None = None
        self._ports: list[SwitchPort] = []
        self._last: dict[str, Any] = {}
        self._rx_cpus: tuple[int, ...] = ()
        self._steered: list[str] = []
        self._counters: LinkCounterReader | None = None
        self._before: dict[str, LinkCounters] = {}
        self._cpu_before: cpu.CpuSample | None = None

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        missing = []
        if shutil.which("ip") is None:
            missing.append(Prerequisite("the ip command", "apt-get install iproute2"))
        if shutil.which("sysctl") is None:
            missing.append(Prerequisite("the sysctl command", "apt-get install procps"))
        return missing

    def version(self) -> dict[str, str]:
        return {"dataplane": "kernel", "kernel": platform.release()}

    def start(self, ports: Sequence[SwitchPort]) -> None:
        netns = self.context.dut_netns
        if not netns:
            raise PluginError("vrouter: the kernel data plane runs only inside a DUT network namespace "
                              "(the embedded testbed); on a real host it would rewrite the host's routes")
        try:
            present = set(list_links(netns))
        except NetlinkError as exc:
            raise PluginError(f"vrouter: cannot list the interfaces of {netns}: {exc}") from None
        missing = [p.spec.iface or p.name for p in ports if (p.spec.iface or p.name) not in present]
        if missing:  # found here, not at the first apply(): start() is what was asked to use them
            raise PluginError(f"vrouter: no interface {', '.join(missing)} in {netns}")
        self._ports = list(ports)
        self._router = KernelRouter(netns)
        self.context.resources.register(f"vrouter {netns}", self.stop)
        self._steer([self._iface(p) for p in self._ports])
        if self.settings.get("config"):
            self.configure_router(self.settings["config"])

    @staticmethod
    def _iface(port: SwitchPort) -> str:
        return port.spec.iface or port.name

    def _steer(self, ifaces: list[str]) -> None:
        """Route on ``rx_cpus``: RPS on each port, so the kernel's forwarding work runs
        there and not on the CPU that sent the frame (the generator's, on the embedded
        testbed, which would then measure itself instead of the router)."""
        wanted = self.settings.get("rx_cpus")
        online = set(cpu.online_cpus())
        if wanted is None:
            wanted = [max(online)] if len(online) > 1 else []
        bad = sorted(set(wanted) - online)
        if bad:
            raise PluginError(f"vrouter: rx_cpus {bad} are not online (online: {sorted(online)})")
        self._rx_cpus = tuple(sorted(wanted))
        if not self._rx_cpus:
            return
        netns = self.context.dut_netns
        for iface in ifaces:
            try:
                steer_receive(netns, iface, self._rx_cpus)
            except (TestbedError, CommandError, OSError) as exc:
                raise PluginError(f"vrouter: cannot steer {iface}'s receive to CPUs {list(self._rx_cpus)}: "
                                  f"{exc}") from None
            self._steered.append(iface)

    def busy_poll_cpus(self) -> dict[str, set[int]]:
        """The CPUs the kernel routes on (RPS): not a polling thread, but under load its
        softirq work takes them as fully as one, so it belongs in the run's CPU plan."""
        return {f"{self.name or 'vrouter'} kernel forwarding (RPS)": set(self._rx_cpus)} if self._rx_cpus else {}

    def trial_begin(self) -> None:
        self._cpu_before = cpu.sample() if self._rx_cpus else None
        try:
            if self._counters is None:
                self._counters = LinkCounterReader(self.context.dut_netns)
            self._before = self._counters.read([self._iface(p) for p in self._ports])
        except NetlinkError as exc:
            log.warning("vrouter: cannot read port counters: %s", exc)
            self._before = {}

    def trial_end(self) -> dict[str, Any]:
        """Per-port counter deltas of the router's interfaces (the kernel's own count:
        frames received, transmitted, and dropped on receive -- a full backlog), and the
        softirq time of its ``rx_cpus`` (where RPS has it route; nothing else is steered
        there, so that is the router's cost)."""
        if not self._before or self._counters is None:
            return {}
        usage = cpu.delta(self._cpu_before, cpu.sample()) if self._cpu_before is not None else None
        self._cpu_before = None
        try:
            after = self._counters.read([self._iface(p) for p in self._ports])
        except NetlinkError as exc:
            return {"error": str(exc)}
        figures: dict[str, Any] = {}
        if usage is not None:
            figures = {"cpu_s": sum(usage.softirq_s.get(f"cpu{c}", 0.0) for c in self._rx_cpus),
                       "elapsed_s": usage.elapsed_s, "cpu_source": "softirq of rx_cpus",
                       "rx_cpus": list(self._rx_cpus)}
        ports = []
        for number, port in enumerate(self._ports):
            name = self._iface(port)
            if name not in after or name not in self._before:
                continue
            d = after[name] - self._before[name]
            ports.append({"port": number, "rx_frames": d.rx_packets, "tx_frames": d.tx_packets,
                          "rx_missed": d.rx_dropped, "tx_errors": d.tx_dropped})
        return {"ports": ports, **figures}

    def configure_router(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Install (or reload with) ``config``, the model's JSON form; returns the figures
        of the install (:meth:`stats`)."""
        if self._router is None:
            raise PluginError("vrouter: configure_router() before start()")
        try:
            parsed = model.parse(config)
        except model.ModelError as exc:
            raise PluginError(f"vrouter: {exc}") from None
        before = fib_slab_bytes()
        try:
            state = self._router.apply(parsed)
        except RenderError as exc:
            raise PluginError(f"vrouter: {exc}") from None
        after = fib_slab_bytes()
        self._last = {
            "routes": state.routes,
            "nexthops": parsed.nexthop_count,
            "nexthop_groups": len(parsed.nexthop_groups),
            "ecmp_groups": sum(1 for g in parsed.nexthop_groups if g.ecmp),
            "neighbours": state.neighbour_count,
            "install_s": round(state.install_s, 4),
            "nexthop_install_s": round(state.nexthop_install_s, 4),
            "route_install_s": round(state.route_install_s, 4),
            "sendmsg_calls": state.sendmsg_calls,
            "fib_slab_delta_bytes": None if before is None or after is None else after - before,
        }
        self._write_record(parsed, config)
        return dict(self._last)

    def _write_record(self, parsed: model.RouterConfig, config: Mapping[str, Any]) -> None:
        """The configuration on record next to the logs: JSON and Vyatta config.boot."""
        log_dir = Path(self.context.log_dir)
        # routers in series share the plan's log dir: each file names its namespace's role
        stem = f"vrouter-{str(self.context.dut_netns).rsplit('-', 1)[-1]}"
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
            (log_dir / f"{stem}.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
            (log_dir / f"{stem}.config.boot").write_text(model.to_config_boot(parsed))
        except OSError as exc:
            log.warning("vrouter: cannot write the configuration record in %s: %s", log_dir, exc)

    def stats(self) -> dict[str, Any]:
        return dict(self._last)

    def stop(self) -> None:
        reader, self._counters = self._counters, None
        if reader is not None:
            reader.close()
        router, self._router = self._router, None
        steered, self._steered = self._steered, []
        for iface in steered:  # back to the kernel's default (the interface may be gone already)
            try:
                steer_receive(self.context.dut_netns, iface, ())
            except Exception as exc:  # noqa: BLE001 - keep tearing down
                log.debug("vrouter: RPS of %s not reset: %s", iface, exc)
        if router is None:
            return
        try:
            router.remove()
        except RenderError as exc:
            raise PluginError(f"vrouter: {exc}") from None
