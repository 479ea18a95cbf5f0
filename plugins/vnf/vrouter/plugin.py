"""vrouter: a router VNF — a Vyatta-style model rendered to Linux kernel routing.

The router runs in the DUT's network namespace (the embedded testbed's, or the one a
deployment gives it); the kernel forwards, with routes installed over netlink in bulk.
Its configuration is the declarative model of :mod:`.model`, either in the plugin's
settings (``vnf.vrouter.config``) or handed over by a deployment through :meth:`apply`,
which also reloads a running router with a new configuration (the old one is removed
first) — the route-scaling testcases reconfigure the router, they do not restart the run.

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
from vsbench.interfaces.host.netlink import NetlinkError, list_links

from . import model
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
    },
}


class VRouter(Vnf):
    description: ClassVar[str] = "vRouter: Vyatta-style static routes/ECMP rendered to kernel routing (bulk netlink)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA

    def __init__(self, context) -> None:
        super().__init__(context)
        self.settings = context.settings or {}
        self._router: KernelRouter | None = None
        self._ports: list[SwitchPort] = []
        self._last: dict[str, Any] = {}

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
        if self.settings.get("config"):
            self.apply(self.settings["config"])

    def apply(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """Install (or reload with) ``config``, the model's JSON form; returns the figures
        of the install (:meth:`stats`)."""
        if self._router is None:
            raise PluginError("vrouter: apply() before start()")
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
            "install_s": round(state.install_s, 4),
            "route_install_s": round(state.route_install_s, 4),
            "sendmsg_calls": state.sendmsg_calls,
            "fib_slab_delta_bytes": None if before is None or after is None else after - before,
        }
        self._write_record(parsed, config)
        return dict(self._last)

    def _write_record(self, parsed: model.RouterConfig, config: Mapping[str, Any]) -> None:
        """The configuration on record next to the logs: JSON and Vyatta config.boot."""
        log_dir = Path(self.context.log_dir)
        try:
            log_dir.mkdir(parents=True, exist_ok=True)
            (log_dir / "vrouter.json").write_text(json.dumps(config, indent=1, sort_keys=True) + "\n")
            (log_dir / "vrouter.config.boot").write_text(model.to_config_boot(parsed))
        except OSError as exc:
            log.warning("vrouter: cannot write the configuration record in %s: %s", log_dir, exc)

    def stats(self) -> dict[str, Any]:
        return dict(self._last)

    def stop(self) -> None:
        router, self._router = self._router, None
        if router is None:
            return
        try:
            router.remove()
        except RenderError as exc:
            raise PluginError(f"vrouter: {exc}") from None
