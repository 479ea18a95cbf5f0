"""What every plugin is given and what every plugin must answer, whatever its kind.

A plugin class is found through a stevedore entry point (namespaces ``vsbench.vswitch``,
``vsbench.trafficgen``, ``vsbench.vnf``, ``vsbench.collector``) and instantiated with one
:class:`PluginContext`. The core never imports a plugin module by name: a vendor's package
registers its classes exactly as the built-in ones in ``setup.cfg`` do.

A plugin is given two things and nothing else: its own settings section (validated
against its ``settings_schema`` before it is constructed) and the run's context -- the
run id, where to log, the teardown stack, the DUT's namespace and the few run-wide
parameters a plugin may need (:class:`RunParameters`). It never sees the global
configuration, so what it depends on is written here, typed, and versioned by
:data:`API_VERSION`.
"""

from __future__ import annotations

import abc
import re
import socket
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Mapping

from vsbench.interfaces.modification import FrameModification
from vsbench.interfaces.rules import RuleSetSpec
from vsbench.interfaces.traffic import FlowFields
from vsbench.system.resources import ResourceStack

#: The version of this contract, ``"MAJOR.MINOR"``. A plugin declares the version it was
#: written for in :attr:`Plugin.api_version`. MINOR grows when something is added (a new
#: optional method, a new field with a default): a plugin written for 1.0 still works with
#: 1.3. MAJOR grows when something a plugin relies on changes or goes: a plugin written
#: for another MAJOR is refused before it is constructed, with one line saying why.
API_VERSION = "1.0"

_VERSION_RE = re.compile(r"^(\d+)\.(\d+)$")


def api_incompatibility(declared: object, provided: str = API_VERSION) -> str | None:
    """Why a plugin declaring ``declared`` cannot run against contract ``provided``, or
    None when it can (same MAJOR, and a MINOR no newer than the one provided)."""
    if declared is None:
        return (f"declares no api_version (set api_version = \"{provided}\" on the class, "
                f"the plugin API it was written for)")
    match = _VERSION_RE.match(str(declared))
    if not isinstance(declared, str) or match is None:
        return f"api_version {declared!r} is not \"MAJOR.MINOR\""
    major, minor = int(match[1]), int(match[2])
    have_major, have_minor = (int(x) for x in _VERSION_RE.match(provided).groups())  # type: ignore[union-attr]
    if major != have_major:
        return (f"written for plugin API {declared}, this vsbench provides {provided} "
                f"(a different major version: install a release of the plugin made for {have_major}.x)")
    if minor > have_minor:
        return (f"written for plugin API {declared}, newer than this vsbench's {provided} "
                f"(upgrade vsbench)")
    return None


class PluginError(Exception):
    """A plugin could not do what it was asked; the message is one line for the user."""


class DutGoneError(PluginError):
    """The device under test is gone: a process of the switch or a VNF died (``kill -9``,
    a crash). Raised by a plugin's ``trial_begin``/``trial_end``; unlike any other failure
    of those statistics probes it ends the plan, because every trial after it would measure
    a dead switch and the search would report its 100 % loss as a throughput (found by
    tools/bench/faults.py: ovs-vswitchd killed mid-trial, the run ended ``complete``)."""


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


#: How long a reachability probe waits for a TCP connection: a server that is up answers a
#: connect in milliseconds, and the probe runs before every run and in ``vsbench doctor``.
REACHABILITY_TIMEOUT_S = 3.0


def tcp_unreachable(host: str, port: int, timeout_s: float = REACHABILITY_TIMEOUT_S) -> str | None:
    """Why nothing accepts a TCP connection at ``host:port`` ("connection refused", "no
    answer within 3 s", "cannot resolve the host name"), or None when something does.

    For :meth:`Plugin.check_reachable`: opening and closing one connection is enough to
    tell a server that is down (or an address that is wrong) from one that answers, and
    costs the server nothing; the protocol itself is spoken only once the run starts."""
    try:
        with socket.create_connection((host, int(port)), timeout=min(timeout_s, REACHABILITY_TIMEOUT_S)):
            return None
    except ConnectionRefusedError:
        return "connection refused"
    except socket.gaierror as exc:
        return f"cannot resolve the host name ({exc.strerror})"
    except (socket.timeout, TimeoutError):
        return f"no answer within {min(timeout_s, REACHABILITY_TIMEOUT_S):g} s"
    except OSError as exc:
        return exc.strerror or type(exc).__name__


@dataclass(frozen=True)
class RunParameters:
    """The run-wide parameters a plugin may know besides its own settings, typed.

    The runner fills them from the resolved configuration; a plugin reads only these
    (never the configuration itself), so a key moving in ``conf/`` never breaks a plugin.

    * ``drain_s`` -- how long a generator waits after traffic stops before it reads its
      counters (``traffic.drain_s``), when its own settings do not say;
    * ``probe_rate_fps`` -- the latency probe stream's rate (``latency.probe_rate_fps``);
    * ``flow_fields`` -- the header fields of the run's traffic (``traffic.fields``), for a
      generator that must know them before :meth:`TrafficGenerator.configure` (to launch
      a process configured with them, or to tell its flow capacity);
    * ``rule_set`` -- the OpenFlow rule set the run asks the switch to forward with
      (``dut.rules`` / ``dut.rule_template``), None for plain port-to-port forwarding (a
      plan with ``dut.rules`` is refused for a switch not declaring ``supports_rule_sets``);
    * ``meter_pps``, ``meter_window_s`` -- the reference meter on the switch's forwarding
      path (``dut.meter_pps``, ``dut.meter_window_s``; refused likewise without
      ``supports_meters``).
    * ``frame_modification`` -- what the switch must do to every frame it forwards
      (``dut.frame_modification``, :mod:`vsbench.interfaces.modification`); refused
      for a switch whose :meth:`VSwitch.modification_refusal` gives a reason.

    ``None`` means "not set": use your own default.
    """

    drain_s: float | None = None
    probe_rate_fps: float | None = None
    flow_fields: FlowFields = field(default_factory=FlowFields)
    rule_set: RuleSetSpec | None = None
    meter_pps: int | None = None
    meter_window_s: float | None = None
    frame_modification: FrameModification | None = None


@dataclass
class PluginContext:
    """Everything a plugin instance may use; nothing else is global.

    ``settings`` is this plugin's own section of the resolved configuration (for example
    ``config["vswitch"]["ovs_dpdk"]``), validated against the class's ``settings_schema``.
    ``run`` holds the run-wide parameters a plugin may need (:class:`RunParameters`).
    ``resources`` is the run's teardown stack: register the undo of every resource in the
    same breath as acquiring it. ``dut_netns`` is the network namespace the device under
    test runs in on the embedded testbed (``None`` on a real host). ``log_dir`` is where
    the plugin's processes write their logs; ``work_dir`` a private directory removed at
    the end of the plan (``None`` outside a run: use ``log_dir``).
    """

    run_id: str
    settings: Mapping[str, Any]
    log_dir: Path
    resources: ResourceStack
    run: RunParameters = field(default_factory=RunParameters)
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
    #: The plugin API (:data:`API_VERSION`) this class was written for, ``"MAJOR.MINOR"``.
    #: Required: a class that does not declare it is refused, as is one written for
    #: another MAJOR or a newer MINOR than this vsbench provides.
    api_version: ClassVar[str | None] = None
    #: A JSON schema (draft 2020-12) of the plugin's settings section. The runner refuses
    #: a configuration it does not accept, in one line, before anything is created.
    settings_schema: ClassVar[Mapping[str, Any] | None] = None
    #: Longer deadlines (seconds) than the run's defaults for calls that take long by
    #: nature, by call name: e.g. ``{"start": 600}`` for a VNF that boots a VM. The
    #: longer of this and the run's ``deadlines`` setting applies.
    deadlines_s: ClassVar[Mapping[str, float]] = {}

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

    @classmethod
    def check_reachable(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        """Return what does not answer at the address the settings name: the remote server
        or host this plugin drives (a TRex server, an IxNetwork API server, a generator
        host reached over ssh). Optional: the default reaches nothing, and a core
        that predates the hook never calls it (so adding it breaks no 1.0 plugin).

        Called by the run's preflight and by ``vsbench doctor`` after
        :meth:`check_prerequisites` found nothing missing, before anything is created: a
        server that is down is then one line naming its address and exit 2, not a run
        directory whose first trial fails. A TCP connect with a short timeout per port is
        enough (:func:`tcp_unreachable`); keep it well under a few seconds, and name the
        address and the fix in each :class:`Prerequisite`.
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
