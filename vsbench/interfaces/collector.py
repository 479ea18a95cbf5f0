"""The collector contract: sample something (CPU, counters) around each trial."""

from __future__ import annotations

import abc
from typing import Any, ClassVar

from vsbench.interfaces.plugin import Plugin


class Collector(Plugin):
    kind: ClassVar[str] = "collector"

    @abc.abstractmethod
    def begin(self) -> None:
        """Take the 'before' sample, just before traffic starts."""

    @abc.abstractmethod
    def end(self) -> dict[str, Any]:
        """Take the 'after' sample and return what was consumed in between (JSON-able)."""
