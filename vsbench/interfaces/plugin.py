"""What every plugin is given and what every plugin must answer, whatever its kind.

A plugin class is found through a stevedore entry point (namespaces ``vsbench.vswitch``,
``vsbench.trafficgen``, ``vsbench.vnf``, ``vsbench.collector``) and instantiated with one
:class:`PluginContext`. The core never imports a plugin module by name: a vendor's package
registers its classes exactly as the built-in ones in ``setup.cfg`` do.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping

from vsbench.system.resources import ResourceStack


class PluginError(Exception):
    """A plugin could not do what it was asked; the message is one line for the user."""


@dataclass(frozen=True)
class Prerequisite:
    """One thing a plugin needs that is missing, and how a user gets it.

    ``what`` names the missing piece ("kernel module openvswitch"); ``remedy`` says how to
    get it ("apt-get install linux-image-amd64 and boot it, or use tools/kernel-lab").
    """

    what: str
    remedy: str

    def __str__(self) -> str:
        return f"{self.what} ({self.remedy})"


@dataclass
class PluginContext:
    """Everything a plugin instance may use; nothing else is global.

    ``settings`` is this plugin's own section of the resolved configuration (for example
    ``config["vswitch"]["ovs_dpdk"]``); ``run_config`` is the whole resolved configuration,
    read-only, for the rare plugin that needs a shared key. ``resources`` is the run's
    teardown stack: register the undo of every resource in the same breath as acquiring it.
    ``dut_netns`` is the network namespace the device under test runs in on the embedded
    testbed (``None`` on a real host).
    """

    run_id: str
    settings: Mapping[str, Any]
    log_dir: Path
    resources: ResourceStack
    run_config: Mapping[str, Any] = field(default_factory=dict)
    dut_netns: str | None = None
    work_dir: Path | None = None


class Plugin(abc.ABC):
    """Base of all plugin kinds.

    ``description`` is the one line ``vsbench --list-plugins`` prints. ``name`` is filled
    in by the loader from the entry-point name the user typed.
    """

    kind: ClassVar[str] = "plugin"
    name: ClassVar[str] = ""
    description: ClassVar[str] = ""

    def __init__(self, context: PluginContext) -> None:
        self.context = context
        self.settings: Mapping[str, Any] = context.settings

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        """Return what is missing on this machine, before anything is touched.

        The runner calls this for every selected plugin before it creates any resource, so a
        missing binary or kernel module is one line and nothing is left behind.
        """
        return []

    def version(self) -> dict[str, str]:
        """Versions of the software behind the plugin, for sysinfo.json."""
        return {}

    @classmethod
    def cleanup_dead_run(cls, run_id: str, work_dirs: list[Path]) -> list[str]:
        """Undo what an instance of this plugin left behind in run ``run_id``, which is
        known to be dead (killed with ``kill -9``: no teardown ran). ``vsbench cleanup``
        calls it before its generic removal of the run's namespaces, processes and
        directories, so a plugin can stop its daemons in order and give back what only it
        knows about (hugepages, mounts). ``work_dirs`` are the directories the run's
        plugins may have created their files directly in (``PluginContext.work_dir`` of
        each plan, and the system temp dir). Return one line per thing undone; the default
        undoes nothing. Must only touch what provably belongs to ``run_id``."""
        return []
