"""A device under test vsbench does not manage: nothing to start, configure or stop.

Use it when the switch is outside vsbench's control (a hardware switch, a remote host, or
the DUT a generator fake models internally): the deployment still calls the usual switch
methods, and this plugin answers them without touching anything.
"""

from __future__ import annotations

from typing import ClassVar

from vsbench.interfaces import PortSpec, SwitchPort, VSwitch


class ExternalDut(VSwitch):
    description: ClassVar[str] = "A DUT vsbench does not manage (external device or generator-modelled DUT)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = {
        "type": ["object", "null"],
        "additionalProperties": False,
        "properties": {
            "description": {"type": "string", "description": "what the external DUT is, for the report"},
            "version": {"type": "string", "description": "its software version, for sysinfo.json"},
        },
    }

    def start(self) -> None:
        self._ports: dict[str, list[SwitchPort]] = {}

    def add_bridge(self, name: str) -> None:
        self._ports.setdefault(name, [])

    def add_port(self, bridge: str, spec: PortSpec) -> SwitchPort:
        ports = self._ports.setdefault(bridge, [])
        port = SwitchPort(name=spec.name, number=len(ports) + 1, spec=spec)
        ports.append(port)
        return port

    def connect(self, bridge: str, a: SwitchPort, b: SwitchPort) -> None:
        """The external DUT forwards on its own; nothing to install."""

    def stop(self) -> None:
        """Nothing was started."""

    def version(self) -> dict[str, str]:
        settings = self.settings or {}
        out = {}
        if settings.get("description"):
            out["external_dut"] = str(settings["description"])
        if settings.get("version"):
            out["external_dut_version"] = str(settings["version"])
        return out
