"""The absent VNF: deployments without a VNF (p2p) still name one, so plugins stay uniform."""

from __future__ import annotations

from typing import ClassVar, Sequence

from vsbench.interfaces import SwitchPort, Vnf


class NoVnf(Vnf):
    description: ClassVar[str] = "No VNF: the switch forwards port to port (p2p deployments)"
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = {"type": ["object", "null"], "additionalProperties": False}

    def start(self, ports: Sequence[SwitchPort]) -> None:
        """Nothing to start."""

    def stop(self) -> None:
        """Nothing to stop."""
