"""The VNF contract: a forwarding function between given ports (process or VM)."""

from __future__ import annotations

import abc
from typing import Any, ClassVar, Sequence

from vsbench.interfaces.plugin import Plugin
from vsbench.interfaces.vswitch import SwitchPort


class Vnf(Plugin):
    kind: ClassVar[str] = "vnf"

    @abc.abstractmethod
    def start(self, ports: Sequence[SwitchPort]) -> None:
        """Start forwarding between ``ports`` (pairs: 0<->1, 2<->3, ...)."""

    def stats(self) -> dict[str, Any]:
        return {}

    @abc.abstractmethod
    def stop(self) -> None: ...
