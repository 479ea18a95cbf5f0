"""``trafgen``: the embedded default generator — netsniff-ng trafgen on the netns/veth testbed.

One trial, per direction (port 0 -> 1, and 1 -> 0 when bidirectional):

1. a tbf shaper is set to the trial rate (:mod:`.shaper`) on the interface trafgen sends
   from: the generator port itself for a unidirectional trial (and for each direction with
   ``bidirectional_shaper: per_port``); for a bidirectional trial by default one shared
   shaper on the generator's own veth pair, whose far end redirects each frame out of its
   direction's port (:meth:`Trafgen._shaper_pair`);
2. the ports' counters are read;
3. with latency, the probe helper is started inside the generator namespace;
4. trafgen sends exactly ``rate x duration`` frames per direction through the shaper
   (:mod:`.process`) on its CPUs; once every trafgen is running, the probes start;
5. when trafgen has exited and the shaper queue is empty, the drain time passes (or ends
   as soon as every frame sent has arrived: :meth:`Trafgen._drain`), the probe helper
   finishes, and the counters are read again.

Frames sent = the sending port's ``tx_packets`` + ``tx_dropped`` delta (a veth counts a frame
its peer could not take as a TX drop; it left the generator all the same), minus the
probes sent on that port. Frames received = the peer port's ``rx_packets`` delta minus the
probes that reached the probe socket, minus frames that are neither (a DUT's own chatter,
:mod:`.foreign`). Counters are only read when no traffic flows.

A trial trafgen could not send at the asked rate keeps its real counters: it is cut at a
deadline (fewer frames than intended) or, when it finished late, marked invalid with the
time it took. ``tx_duration_s`` is trafgen's own clock for its sending loop plus what its
shaper still held when trafgen's exit was seen, at the shaper's rate. When trafgen is the
bottleneck the queue is empty and that is the sending time, measured by trafgen itself (not
by this process's polling, which a busy machine delays); when the shaper sets the pace the
figure may fall a few milliseconds short (what drained while trafgen was exiting), and the
shaper's pace is exact then.

Engines ``pacer`` and ``xdp`` replace steps 1 and 4 with one of vsbench's own senders
(:mod:`.pacer`), which paces itself, sends both directions and reports how evenly it did
(the trial's ``pacing``); everything else is the same.

A profile of port-to-port streams (``TrafficProfile.streams``: several port pairs, each
pair's two directions; a router with 4 or 8 ports and a traffic profile) is sent as one
direction per stream, up to 16 ports, by every engine; several streams
may leave one port or arrive at one. A stream's frames sent are its port's counter shared
over the port's streams (the senders send them in turn, so each gets its share to within a
frame); its frames received are counted by their direction byte on its own receiving port
(:mod:`.streamcount`), and a frame of it that arrived on any other port was delivered
wrong (``rx_wrong_frames``), not received.

The latency floor (:meth:`Trafgen.measure_latency_floor`) is the probe stream alone over a
veth pair of the plugin's own in the generator namespace, no DUT (:mod:`.floor`).
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import os
import resource
import signal
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Mapping, Sequence

from vsbench.interfaces.plugin import PluginContext, PluginError, Prerequisite
from vsbench.interfaces.traffic import (
    DirectionCounters,
    FCS_BYTES,
    FlowFields,
    GeneratorCapabilities,
    GeneratorPort,
    TrafficProfile,
    TrialResult,
)
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.interfaces.modification import KINDS as modification_kinds
from vsbench.interfaces.host import host_check, link_speed, naming
from vsbench.interfaces.commands import CommandError, ManagedProcess, run, spawn, which
from vsbench.interfaces.host.netlink import LinkCounterReader, LinkCounters, NetlinkError, list_links
from vsbench.interfaces.host.testbed import DROP_ALL_BYTECODE, TestbedError, set_gro, veth_peer

from vsbench_plugins.trafficgen.trafgen import pacer as pacer_engine, process, shaper
from vsbench_plugins.trafficgen.trafgen.foreign import ForeignFrameCounter
from vsbench_plugins.trafficgen.trafgen.settings import DEFAULTS, SETTINGS_SCHEMA, resolve
from vsbench_plugins.trafficgen.trafgen_probe import RX_PAYLOAD_OFFSET

log = logging.getLogger(__name__)

DEFAULT_DRAIN_S = 0.5
#: The drain first looks whether every frame has arrived after this long, then at twice
#: the interval each time, up to the longest (a lossy trial waits its whole drain anyway).
DRAIN_FIRST_LOOK_S = 0.002
DRAIN_LONGEST_LOOK_S = 0.05
DEFAULT_PROBE_RATE_FPS = 1000.0
#: Ports trafgen sends between: one pair (p2p, pvp), or the ports of a profile's streams
#: (several pairs: p2p/phy_vnf_phy topology.port_pairs, lanes; a router's 4 or 8 ports,
#: two routers side by side).
MAX_PORTS = 16
#: Streams of one profile (a direction byte numbers them; the senders take 128).
MAX_STREAM_COUNT = 128
#: What each engine's paced trials deliver of its unpaced calibration burst on a shared
#: 2-core host (the ceiling share the search may ask for): trafgen through its tbf shaper
#: 0.78..0.87 of the burst in the quick start through OvS-DPDK (7 frame sizes; 0.95 asked
#: 23 % of the trials to be invalid, generator-limited); the pacer paces without a qdisc;
#: the xdp sender sends paced and unpaced alike, and keeps a fifth for catching up after a
#: stall.
CEILING_SHARE = {"trafgen": 0.75, "pacer": 0.95, "xdp": 0.8}
#: Engines whose sender is one of vsbench's own (:mod:`.pacer`): both directions from one
#: process on ``cpus[0]``, paced by it, reporting its pacing.
OWN_SENDERS = {"pacer": pacer_engine.PACER, "xdp": pacer_engine.XDPGEN}
#: Engines that send a frame mix (the xdp sender's frames live in one fixed-size page run).
MIX_ENGINES = ("trafgen", "pacer")
#: Largest frame the xdp sender takes (a live XDP frame lives in one page).
XDP_MAX_FRAME_BYTES = 3000


@dataclass
class _Direction:
    """One direction of the configured profile: its ports, flows and frame template."""

    index: int
    tx: GeneratorPort
    rx: GeneratorPort
    fields: FlowFields
    plan: Any  # flows.FlowPlan
    template: Any  # frames.Template
    #: How the frame must arrive at ``rx`` (encapsulated profiles; :mod:`.verify`).
    expected: Any = None  # verify.ExpectedFrame | None
    #: A frame mix: one template per frame of the mix's cycle, in sending order (``template``
    #: is then the largest, which the pacer truncates to each size); () without a mix.
    mix: tuple = ()

    def packets(self) -> list[tuple]:
        """(template, fields, plan) of each trafgen packet this direction sends in turn:
        its one template, or a mix's cycle (trafgen sends a configuration's packets round
        robin, so the cycle's order is the order on the wire)."""
        return [(t, self.fields, self.plan) for t in (self.mix or (self.template,))]

    @property
    def mean_frame_bytes(self) -> float:
        if self.mix:
            return sum(t.frame_size_bytes for t in self.mix) / len(self.mix)
        return float(self.template.frame_size_bytes)


@dataclass
class _Stream:
    """What one trafgen process sends in a trial: the packets of ``directions`` in turn,
    out of ``iface``, whose shaper paces them together."""

    iface: str
    directions: tuple[_Direction, ...]
    config_path: Path
    log_path: Path
    cpus: tuple[int, ...]


@dataclass
class _Sender:
    """One running trafgen process of a trial."""

    stream: _Stream
    frames: int
    process: ManagedProcess
    log_offset: int
    cut: bool = False
    exited_at: float | None = None
    drained_at: float | None = None
    queued_at_exit: int | None = None  # frames in the shaper when trafgen's exit was seen


def _config():
    """The configuration writer, imported on first use (it imports scapy, which is slow,
    and listing plugins must not pay for it)."""
    from vsbench_plugins.trafficgen.trafgen import config

    return config


def split_cpus(cpus: Sequence[int], directions: int) -> list[tuple[int, ...]]:
    """CPUs of each direction: consecutive shares of the sorted list (trafgen needs each
    direction's CPUs contiguous); all directions share the list when it is too short."""
    ordered = tuple(sorted(set(int(c) for c in cpus)))
    if directions <= 1 or len(ordered) < directions:
        return [ordered] * max(1, directions)
    size, extra = divmod(len(ordered), directions)
    shares, start = [], 0
    for i in range(directions):
        end = start + size + (1 if i < extra else 0)
        shares.append(ordered[start:end])
        start = end
    return shares


def _read_from(path: Path, offset: int) -> str:
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            return f.read().decode("utf-8", "replace")
    except OSError:
        return ""


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


class Trafgen(TrafficGenerator):
    """netsniff-ng trafgen on the embedded testbed, paced by tbf, with a latency probe stream."""

    name: ClassVar[str] = "trafgen"
    description: ClassVar[str] = (
        "netsniff-ng trafgen on the netns/veth testbed (tbf-paced), kernel-timestamped latency probes"
    )
    api_version: ClassVar[str] = "1.0"
    settings_schema: ClassVar[dict] = SETTINGS_SCHEMA
    #: VXLAN out of (and expected back on) the profile's tunnel port(s); see :mod:`.verify`.
    encapsulations: ClassVar[tuple[str, ...]] = ("vxlan",)
    #: Every kind is verified at the receiving port (:func:`.verify.modified_frame`).
    frame_modifications: ClassVar[tuple[str, ...]] = tuple(modification_kinds)
    #: Every engine sends runs of one flow (``traffic.fields.pattern: burst``): trafgen
    #: with a packet per frame of the run (:func:`.config.render_packets`), the pacer and
    #: xdp senders with their ``run`` line (``csrc/vsbench_streams.h``).
    flow_patterns: ClassVar[tuple[str, ...]] = ("scatter", "burst")
    #: Frame mixes (IMIX) on engines trafgen (a packet per frame of the cycle, sent round
    #: robin) and pacer (its ``sizes`` line: ``csrc/vsbench_streams.h``); not xdp.
    supports_frame_mix: ClassVar[bool] = True
    #: A streams profile's receive counter (:mod:`.streamcount`) and its reading at the
    #: start of the trial; None otherwise.
    _streamcount: Any = None
    _streams_before: dict[str, list[int]] | None = None
    #: Interfaces of the profile's monitor ports and the bulk frames counted there in the
    #: last trial (RFC 2889's flooding check; TrialResult.rx_monitor_frames).
    _monitors: tuple[str, ...] = ()
    _monitor_frames: int | None = None

    def __init__(self, context: PluginContext) -> None:
        super().__init__(context)
        self.cfg: dict[str, Any] = resolve(context.settings)
        self._profile: TrafficProfile | None = None
        self._directions: list[_Direction] = []
        self._netns: str | None = None
        self._reader: LinkCounterReader | None = None
        self._foreign: ForeignFrameCounter | None = None
        #: A frame mix on a plain port pair: bulk frames received per size (:mod:`.sizecount`).
        self._by_size: Any = None
        self._wrong: ForeignFrameCounter | None = None
        self._streamcount = None
        self._streams_before = None
        self._senders: list[_Sender] = []
        self._streams: list[_Stream] = []
        self._pair_ready = False
        self._probe = None
        self._shaped: set[str] = set()
        self._started = False
        self._trial = 0
        self._sender_path: str | None = None
        self._sender_config: Path | None = None
        self._sender_proc: pacer_engine.PacerProcess | None = None
        self._gro_restore: list[tuple[str | None, str]] = []
        self._ports: list[GeneratorPort] = []
        self._speeds: dict[tuple[str | None, str], link_speed.LinkSpeed] = {}

    # -- plugin contract ---------------------------------------------------------------

    @classmethod
    def check_prerequisites(cls, settings: Mapping[str, Any]) -> list[Prerequisite]:
        cfg = resolve(settings)
        missing = []
        if cfg["engine"] in OWN_SENDERS:
            missing += _sender_prerequisites(cfg)
        elif which(cfg["binary"]) is None:
            missing.append(Prerequisite(f"the trafgen binary ({cfg['binary']})", "apt-get install netsniff-ng"))
        for binary in ("ip", "tc"):
            if which(binary) is None:
                missing.append(Prerequisite(f"the {binary} command", "apt-get install iproute2"))
        if which("sysctl") is None:
            missing.append(Prerequisite("the sysctl command (testbed set-up)", "apt-get install procps"))
        if not missing:  # the embedded testbed's netns + veth, tried for real (~50 ms)
            missing += [Prerequisite(f.what, f.remedy) for f in host_check.check_testbed_kernel()]
        online = os.sched_getaffinity(0)
        bad = [c for c in cfg["cpus"] if c not in online]
        if bad:
            missing.append(Prerequisite(
                f"CPUs {bad} for trafgen (trafficgen.trafgen.cpus)",
                f"choose among the CPUs this process may use: {sorted(online)}"))
        if cfg["engine"] == "trafgen" and cfg["tx_path"] == "sendto" and list(cfg["cpus"]) != [process.SENDTO_CPU]:
            missing.append(Prerequisite(
                f"trafficgen.trafgen.cpus {list(cfg['cpus'])} with tx_path sendto",
                f"trafgen's sendto path runs one worker, pinned to CPU {process.SENDTO_CPU}: "
                f"set cpus: [{process.SENDTO_CPU}], or tx_path: ring to choose CPUs"))
        return missing

    def capabilities(self) -> GeneratorCapabilities:
        max_rate = self.cfg.get("max_rate_fps")
        return GeneratorCapabilities(
            ports=MAX_PORTS,
            max_rate_fps=float(max_rate) if max_rate else None,
            latency=True,
            per_packet_latency=True,
            max_flows=int(self.cfg["max_flows"]),
            bidirectional=True,
            needs_testbed=True,
            native_search=False,
            latency_floor=True,
            ceiling_calibration=True,
            ceiling_share=CEILING_SHARE[self.cfg["engine"]],
            port_streams=True,
            frame_mix=self.cfg["engine"] in MIX_ENGINES,
            monitor_ports=True,
        )

    def version(self) -> dict[str, str]:
        binary = which(self.cfg["binary"]) or self.cfg["binary"]
        try:
            out = run([binary, "-v"], check=False, timeout_s=10)
        except CommandError:
            return {}
        found = process.parse_version(out.stdout + out.stderr)
        versions = {"trafgen": found} if found else {}
        sender = OWN_SENDERS.get(self.cfg["engine"])
        if sender is not None:
            versions[sender.name] = pacer_engine.source_digest(sender)
        return versions

    def generator_cpus(self) -> set[int]:
        """CPUs the bulk sender runs on (for the runner's placement check)."""
        if self.cfg["engine"] in OWN_SENDERS:
            return {self._sender_cpu()}
        if self.cfg["tx_path"] == "sendto":
            return {process.SENDTO_CPU}
        return set(int(c) for c in self.cfg["cpus"])

    def start(self) -> None:
        if self._started:
            return
        problems = self.check_prerequisites(self.cfg)
        if problems:
            raise PluginError(f"trafgen: missing {problems[0]}")
        if self.cfg["engine"] in OWN_SENDERS:
            self._sender_path = _sender_binary(self.cfg)
        self._work_dir.mkdir(parents=True, exist_ok=True)
        self.context.resources.register("trafgen generator", self.stop)
        self._started = True

    def stop(self) -> None:
        for sender in self._senders:
            sender.process.stop(grace_s=2.0)
        self._senders = []
        if self._sender_proc is not None:
            self._sender_proc.stop()
            self._sender_proc = None
        if self._probe is not None:
            self._probe.stop()
            self._probe = None
        self._remove_shapers()
        self._restore_gro()
        self._close_readers()
        self._started = False

    def _close_readers(self) -> None:
        if getattr(self, "_by_size", None) is not None:
            self._by_size.close()
            self._by_size = None
        if self._streamcount is not None:
            self._streamcount.close()
            self._streamcount = None
        if self._foreign is not None:
            self._foreign.close()
            self._foreign = None
        if self._wrong is not None:
            self._wrong.close()
            self._wrong = None
        if self._reader is not None:
            try:
                self._reader.close()
            except Exception:  # noqa: BLE001 - the namespace may be gone already
                pass
            self._reader = None

    # -- configuration -------------------------------------------------------------------

    @property
    def _work_dir(self) -> Path:
        base = self.context.work_dir or self.context.log_dir
        return Path(base) / "trafgen"

    def configure(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> None:
        from vsbench_plugins.trafficgen.trafgen import flows, frames

        if profile.streams is None and len(ports) != 2:
            raise PluginError(f"trafgen sends a profile without streams between one pair of ports, got {len(ports)} "
                              "(several pairs come as port-to-port streams, TrafficProfile.streams)")
        if len(ports) > MAX_PORTS:
            raise PluginError(f"trafgen sends between at most {MAX_PORTS} ports, got {len(ports)}")
        ports = list(ports)
        namespaces = {p.netns for p in ports}
        if len(namespaces) != 1 or None in namespaces:
            raise PluginError("trafgen needs both ports in one testbed network namespace "
                              "(it runs on the embedded netns/veth testbed)")
        tunnels = self._tunnels_of(profile, ports)
        if profile.flows > int(self.cfg["max_flows"]):
            raise PluginError(f"trafgen: {profile.flows} flows exceed max_flows {self.cfg['max_flows']}")
        try:
            if profile.streams is not None:
                specs = self._stream_specs(profile, ports)
            else:
                plan = flows.plan_flows(profile.fields, profile.flows)
                a, b = ports
                specs = [(a, b, profile.fields, plan)]
                if profile.bidirectional:
                    specs.append((b, a, profile.reverse_fields or flows.reverse_fields(profile.fields), plan.swapped()))
            mix = profile.frame_mix
            if mix is not None and (tunnels or self.cfg["engine"] not in MIX_ENGINES):
                raise PluginError(f"trafgen: frame mix {mix.name} is sent by engines {' and '.join(MIX_ENGINES)}, "
                                  "without encapsulation" + (f" (engine is {self.cfg['engine']})"
                                                             if self.cfg["engine"] not in MIX_ENGINES else ""))
            directions = []
            for i, (tx, rx, fields, dir_plan) in enumerate(specs):
                if mix is None:
                    directions.append(_Direction(index=i, tx=tx, rx=rx, fields=fields, plan=dir_plan,
                                                 template=frames.bulk_template(fields, profile.frame_size_bytes,
                                                                               direction=i)))
                    continue
                by_size = {size: frames.bulk_template(fields, size, direction=i) for size in mix.sizes_bytes}
                directions.append(_Direction(index=i, tx=tx, rx=rx, fields=fields, plan=dir_plan,
                                             template=by_size[mix.largest_bytes],
                                             mix=tuple(by_size[size] for size in mix.cycle)))
            if tunnels:
                directions = [self._through_tunnel(d, profile) for d in directions]
            if profile.frame_modification is not None:
                directions = self._modified(directions, profile)
        except (flows.FlowPlanError, frames.FrameError, ValueError) as exc:
            raise PluginError(f"trafgen: {exc}") from None

        netns = ports[0].netns
        self._ports = ports
        self._open_readers(netns, [p.iface for p in ports])
        if tunnels or profile.frame_modification is not None:
            self._open_verifiers(netns, [p.iface for p in ports], directions)
        self._open_size_counter(netns, directions, profile, tunnels)
        monitors = self._monitor_ifaces(profile, ports)
        self._monitors = monitors
        if profile.streams is not None and not tunnels:
            self._open_stream_counter(netns, directions, monitors)
        elif self._streamcount is not None:  # plain pair, or streams each on ports of their own (tunnels)
            self._streamcount.close()
            self._streamcount = None
        self._work_dir.mkdir(parents=True, exist_ok=True)
        Path(self.context.log_dir).mkdir(parents=True, exist_ok=True)
        self._remove_shapers()  # a previous profile may have shaped other interfaces
        self._profile = profile
        self._directions = directions
        engine = self.cfg["engine"]
        if engine in OWN_SENDERS:
            if engine == "xdp":
                self._prepare_xdp(directions)
            self._streams = []
            self._sender_config = self._work_dir / "pacer.cfg"
            comment = "\n".join(
                f"vsbench trafgen ({engine}): direction {d.index} {d.tx.iface} -> {d.rx.iface}, "
                f"{_frames_text(profile)}, {profile.flows} flow(s), periods {dict(d.plan.periods)}"
                for d in directions)
            self._sender_config.write_text(
                pacer_engine.render_config(pacer_engine.streams_for(directions), comment), encoding="utf-8")
            log.info("trafgen: %s B, %d flow(s), %s; %s sender on CPU %d (%s)", profile.frame_size_bytes,
                     profile.flows, "bidirectional" if profile.bidirectional else "unidirectional", engine,
                     self._sender_cpu(),
                     ", ".join(d.tx.iface for d in directions))
            return
        streams = self._plan_streams(directions, profile)
        self._write_configs(streams, profile)
        self._streams = streams
        log.info("trafgen: %s B, %d flow(s), %s; trafgen on %s", profile.frame_size_bytes, profile.flows,
                 "bidirectional" if profile.bidirectional else "unidirectional",
                 ", ".join(f"{st.iface} (CPUs {list(st.cpus) or [process.SENDTO_CPU]})" for st in streams))

    def port_speeds(self) -> list[link_speed.LinkSpeed]:
        """ethtool's word on each port, read once per port: none of its own on the
        testbed's veth, so the line rate stays nominal there."""
        for p in self._ports:
            if (p.netns, p.iface) not in self._speeds:
                self._speeds[(p.netns, p.iface)] = link_speed.probe(p.iface, p.netns)
        return [self._speeds[(p.netns, p.iface)] for p in self._ports]

    @staticmethod
    def _stream_specs(profile: TrafficProfile, ports: list[GeneratorPort]) -> list[tuple]:
        """(tx port, rx port, fields, flow plan) of each of the profile's streams."""
        from vsbench_plugins.trafficgen.trafgen import flows

        streams = profile.streams or ()
        if not 1 <= len(streams) <= MAX_STREAM_COUNT:
            raise PluginError(f"trafgen sends 1 to {MAX_STREAM_COUNT} streams, the profile has {len(streams)}")
        if profile.encapsulation is not None and (len({s.tx_port for s in streams}) != len(streams)
                                                  or len({s.rx_port for s in streams}) != len(streams)):
            raise PluginError("trafgen: an encapsulated profile's streams must each send from and arrive at a "
                              "port of their own (each port's VXLAN link verifies one stream)")
        specs = []
        for s in streams:
            if not (0 <= s.tx_port < len(ports) and 0 <= s.rx_port < len(ports)) or s.tx_port == s.rx_port:
                raise PluginError(f"trafgen: stream {s.tx_port} -> {s.rx_port} is not between two of the "
                                  f"{len(ports)} ports given")
            specs.append((ports[s.tx_port], ports[s.rx_port], s.fields, flows.plan_flows(s.fields, profile.flows)))
        return specs

    def _open_size_counter(self, netns: str, directions: list[_Direction], profile: TrafficProfile,
                           tunnels: Any) -> None:
        """A frame mix on a plain port pair: count what arrives per size on the receiving
        ports (its trials' ``rx_frames_by_size``); nothing otherwise."""
        from vsbench_plugins.trafficgen.trafgen.sizecount import SizeCounter

        if self._by_size is not None:
            self._by_size.close()
            self._by_size = None
        if profile.frame_mix is None or tunnels or profile.streams is not None:
            return
        # a packet socket sees the frame without FCS, and without an 802.1Q tag the kernel took out
        tag = 4 if profile.fields.vlan_id is not None else 0
        wire = {size: size - FCS_BYTES - tag for size in profile.frame_mix.sizes_bytes}
        try:
            self._by_size = SizeCounter(netns, sorted({d.rx.iface for d in directions}), wire)
        except OSError as exc:
            raise PluginError(f"trafgen: cannot count received frames per size: {exc}") from None

    @staticmethod
    def _monitor_ifaces(profile: TrafficProfile, ports: list[GeneratorPort]) -> tuple[str, ...]:
        """The interfaces of the profile's monitor ports (RFC 2889's flooding check): only
        with port-to-port streams (their counter tells a stream's frames apart), never a
        port a stream sends from or is meant to arrive at."""
        if not profile.monitor_ports:
            return ()
        if profile.streams is None or profile.encapsulation is not None:
            raise PluginError("trafgen counts monitor ports only with a plain port-to-port streams profile")
        used = {s.tx_port for s in profile.streams} | {s.rx_port for s in profile.streams}
        for index in profile.monitor_ports:
            if not 0 <= index < len(ports) or index in used:
                raise PluginError(f"trafgen: monitor port {index} is not a port of the profile's that no stream uses")
        return tuple(ports[i].iface for i in profile.monitor_ports)

    def _open_stream_counter(self, netns: str, directions: list[_Direction], monitors: tuple[str, ...] = ()) -> None:
        """Count each stream's frames on every port that receives any, and on the monitor
        ports (:mod:`.streamcount`)."""
        from vsbench_plugins.trafficgen.trafgen.streamcount import StreamCounter, StreamCountError

        if self._streamcount is not None:
            self._streamcount.close()
            self._streamcount = None
        self._monitors = monitors
        ifaces = list(dict.fromkeys([*(d.rx.iface for d in directions), *monitors]))
        try:
            self._streamcount = StreamCounter(netns, ifaces, len(directions))
        except (StreamCountError, OSError) as exc:
            raise PluginError(f"trafgen: cannot count the streams received on {ifaces[0]}: {exc}") from None

    def _prepare_xdp(self, directions: list[_Direction]) -> None:
        """What the xdp sender needs before its first trial: frames that fit a live XDP
        frame, and each sending port's veth peer in NAPI mode (GRO on; a veth takes XDP
        frames only then), put back as found when the generator stops."""
        largest = max(len(d.template.data) for d in directions)
        if largest > XDP_MAX_FRAME_BYTES:
            raise PluginError(f"trafgen: engine xdp sends frames of at most {XDP_MAX_FRAME_BYTES} B "
                              f"(a live XDP frame is one page), this profile's are {largest} B: "
                              f"use engine trafgen or pacer for them")
        for d in {d.tx.iface: d for d in directions}.values():  # each sending port once
            try:
                peer = veth_peer(d.tx.netns, d.tx.iface)
                if peer is None or (peer.netns, peer.iface) in self._gro_restore:
                    continue
                if not set_gro(peer.netns, peer.iface, True):
                    self._gro_restore.append((peer.netns, peer.iface))
            except TestbedError as exc:
                raise PluginError(f"trafgen: engine xdp: {exc}") from None

    def _restore_gro(self) -> None:
        restore, self._gro_restore = self._gro_restore, []
        for netns, iface in restore:
            try:
                set_gro(netns, iface, False)
            except TestbedError as exc:  # the namespace may be gone already
                log.debug("trafgen: GRO of %s not switched back off: %s", iface, exc)

    def _tunnels_of(self, profile: TrafficProfile, ports: Sequence[GeneratorPort]) -> tuple:
        """The profile's tunnel links (empty when plain), checked against what trafgen builds."""
        if profile.encapsulation is None:
            return ()
        if profile.encapsulation not in self.encapsulations:
            raise PluginError(f"trafgen does not generate {profile.encapsulation} encapsulation "
                              f"(it builds {', '.join(self.encapsulations)})")
        links = profile.tunnel_links()
        if not links:
            raise PluginError(f"trafgen: a {profile.encapsulation} profile needs its tunnel link (the op2p "
                              "or pvp_vxlan deployment describes it)")
        indices = {p.index for p in ports}
        for link in links:
            if link.port not in indices:
                raise PluginError(f"trafgen: the tunnel is on port {link.port}, not one of the ports given")
        return links

    def _through_tunnel(self, d: _Direction, profile: TrafficProfile) -> _Direction:
        """Direction ``d`` of an encapsulated profile: its frames leave encapsulated when it
        sends out of a port with a tunnel link, and must arrive encapsulated by the DUT's
        VTEP of the receiving port's link, if it has one (:mod:`.verify`)."""
        from vsbench_plugins.trafficgen.trafgen import frames, verify

        frames.check_encapsulated_fields(d.fields)
        sent = profile.tunnel_on(d.tx.index)
        template = frames.encapsulate(d.template, sent) if sent is not None else d.template
        expected = verify.expected_frame(d.fields, d.plan, d.index, profile.tunnel_on(d.rx.index))
        return dataclasses.replace(d, template=template, expected=expected)

    def _modified(self, directions: list[_Direction], profile: TrafficProfile) -> list[_Direction]:
        """Directions whose frames the DUT modifies (``profile.frame_modification``, every
        direction alike): each must arrive so modified (:func:`.verify.modified_frame`)."""
        from vsbench_plugins.trafficgen.trafgen import verify

        mod = profile.frame_modification
        assert mod is not None
        if mod.kind not in self.frame_modifications:
            raise ValueError(f"it does not verify frame modification {mod.kind}")
        if profile.encapsulation is not None or profile.streams is not None:
            raise ValueError("a frame modification is verified on one plain pair of ports "
                             "(no encapsulation, no port-to-port streams)")
        return [dataclasses.replace(d, expected=verify.modified_frame(d.fields, d.plan, d.index, mod, d.template.data))
                for d in directions]

    def _open_verifiers(self, netns: str, ifaces: list[str], directions: list[_Direction]) -> None:
        """Encapsulated profiles: foreign frames are looked for at both payload offsets
        (plain and inside VXLAN), and each receiving port counts the bulk frames that
        arrive other than expected (:mod:`.verify`)."""
        from vsbench_plugins.trafficgen.trafgen import verify

        if self._foreign is not None:
            self._foreign.close()
            self._foreign = None
        offsets = sorted({o for d in directions for o in (d.expected.payload_offset, d.expected.other_payload_offset)})
        programs = {d.rx.iface: verify.wrong_frame_program(d.expected) for d in directions}
        try:
            self._foreign = ForeignFrameCounter(netns, ifaces, {i: verify.foreign_program(offsets) for i in ifaces})
            self._wrong = ForeignFrameCounter(netns, list(programs), programs, keep_samples=3,
                                              snap=verify.SAMPLE_BYTES)
        except OSError as exc:
            raise PluginError(f"trafgen: cannot verify received frames on {ifaces[0]}: {exc}") from None

    def _open_readers(self, netns: str, ifaces: list[str]) -> None:
        if self._reader is None or self._netns != netns:
            self._close_readers()
            try:
                self._reader = LinkCounterReader(netns)
            except NetlinkError as exc:
                raise PluginError(f"trafgen: {exc}") from None
            self._netns = netns
            self._pair_ready = False
        try:
            for iface in ifaces:
                self._reader.index(iface)
        except NetlinkError as exc:
            raise PluginError(f"trafgen: {exc}") from None
        if self._foreign is not None:
            self._foreign.close()
            self._foreign = None
        if self._wrong is not None:
            self._wrong.close()
            self._wrong = None
        try:
            self._foreign = ForeignFrameCounter(netns, ifaces)
        except OSError as exc:
            raise PluginError(f"trafgen: cannot count foreign frames on {ifaces[0]}: {exc}") from None

    def _plan_streams(self, directions: list[_Direction], profile: TrafficProfile) -> list[_Stream]:
        """Which trafgen processes send what, out of which interface, on which CPUs."""
        ring = self.cfg["tx_path"] == "ring"
        cpus = tuple(sorted(set(int(c) for c in self.cfg["cpus"]))) if ring else ()
        log_dir = Path(self.context.log_dir)
        if len(directions) >= 2 and self.cfg["bidirectional_shaper"] == "shared":
            if cpus and cpus[0] != 0:
                # trafgen 0.6.8 hangs when a worker below the pinned range has no packet
                # and the others have several (verified with two packets on cpu(1)).
                raise PluginError("trafgen: a shared-shaper bidirectional trial sends two packets, which trafgen "
                                  "can pin only to CPUs starting at 0 (trafficgen.trafgen.cpus); "
                                  "use cpus: [0] or [0, 1], or bidirectional_shaper: per_port")
            a, _ = self._shaper_pair(directions)
            return [_Stream(iface=a, directions=tuple(directions), config_path=self._work_dir / f"{a}.cfg",
                            log_path=log_dir / f"trafgen-{a}.log", cpus=cpus)]
        shares = split_cpus(cpus, len(directions)) if cpus else [()] * len(directions)
        streams = []
        for d, share in zip(directions, shares):
            if share:
                try:
                    _config().cpu_range(share)
                except ValueError as exc:
                    raise PluginError(f"trafgen: {exc} (trafficgen.trafgen.cpus)") from None
            streams.append(_Stream(iface=d.tx.iface, directions=(d,), config_path=self._work_dir / f"{d.tx.iface}.cfg",
                                   log_path=log_dir / f"trafgen-{d.tx.iface}.log", cpus=share))
        return streams

    def _write_configs(self, streams: list[_Stream], profile: TrafficProfile) -> None:
        for st in streams:
            comment = "\n".join(
                f"vsbench trafgen: direction {d.index} {d.tx.iface} -> {d.rx.iface}, "
                f"{_frames_text(profile)}, {profile.flows} flow(s), periods {dict(d.plan.periods)}"
                for d in st.directions)
            packets = [p for d in st.directions for p in d.packets()]
            st.config_path.write_text(_config().render_packets(packets, st.cpus, comment), encoding="utf-8")

    def _shaper_pair(self, directions: list[_Direction]) -> tuple[str, str]:
        """The generator's own veth pair that paces both directions through one shaper.

        trafgen sends the two directions' packets in turn out of end A, whose tbf sets the
        aggregate rate; at end B's tc ingress a classic BPF classifier reads each frame's
        direction byte and ``mirred`` redirects it out of its generator port, where the
        port's TX counter counts it as usual. One shaper instead of one per port halves the
        timer interrupts, which on this VM cost ~10 us each and, with a shaper per port,
        left both directions of a one-CPU generator about 1.5 % short of the asked rate.
        """
        from vsbench.interfaces.host.testbed import add_internal_pair

        names = (naming.iface_name(self.context.run_id, "sh", 0), naming.iface_name(self.context.run_id, "sh", 1))
        a, b = names
        if not self._pair_ready:
            existing = set(list_links(self._netns))
            if not set(names) <= existing:
                digest = hashlib.blake2b(self.context.run_id.encode(), digest_size=3).hexdigest()
                macs = tuple(f"02:{digest[0:2]}:{digest[2:4]}:{digest[4:6]}:03:{i:02x}" for i in (0, 1))
                try:
                    add_internal_pair(self._netns, names, macs, self.context.resources)
                except Exception as exc:  # TestbedError, NetlinkError
                    raise PluginError(f"trafgen: {exc}") from None
            self._pair_ready = True
        try:
            run(["tc", "qdisc", "del", "dev", b, "clsact"], netns=self._netns, check=False, timeout_s=10)
            run(["tc", "qdisc", "add", "dev", b, "clsact"], netns=self._netns, timeout_s=10)
            for d in directions:
                run(["tc", "filter", "add", "dev", b, "ingress", "pref", str(d.index + 1), "bpf",
                     "bytecode", direction_match_bytecode(d.index, _tc_payload_offset(d.template)),
                     "action", "mirred", "egress", "redirect", "dev", d.tx.iface], netns=self._netns, timeout_s=10)
            run(["tc", "filter", "add", "dev", b, "ingress", "pref", "100", "bpf", "da",
                 "bytecode", DROP_ALL_BYTECODE], netns=self._netns, timeout_s=10)
        except CommandError as exc:
            raise PluginError(f"trafgen: cannot set up the shared shaper on {b}: {exc}") from None
        return a, b

    # -- trials --------------------------------------------------------------------------

    def _drain_s(self) -> float:
        value = self.cfg.get("drain_s")
        if value is None:
            value = self.context.run.drain_s
        return float(DEFAULT_DRAIN_S if value is None else value)

    def _probe_rate(self) -> float:
        value = self.cfg.get("probe_rate_fps")
        if value is None:
            value = self.context.run.probe_rate_fps
        return float(DEFAULT_PROBE_RATE_FPS if value is None else value)

    def _ifaces(self) -> list[str]:
        names = []
        for d in self._directions:
            for p in (d.tx, d.rx):
                if p.iface not in names:
                    names.append(p.iface)
        return names + [m for m in self._monitors if m not in names]

    def _read_counters(self) -> dict[str, LinkCounters]:
        assert self._reader is not None
        try:
            return self._reader.read(self._ifaces())
        except NetlinkError as exc:
            raise PluginError(f"trafgen: {exc}") from None

    def run_trial(self, load_fps: float, duration_s: float, *, latency: bool = False) -> TrialResult:
        if self._profile is None or not self._directions:
            raise PluginError("trafgen: run_trial before configure")
        if load_fps < 0 or duration_s <= 0:
            raise PluginError(f"trafgen: cannot run {load_fps} fps for {duration_s} s")
        per_dir_fps = load_fps / len(self._directions)
        return self._run(load_fps, duration_s, int(round(per_dir_fps * duration_s)), latency=latency)

    #: Bursts: :meth:`run_burst` sends exactly N frames, unpaced or paced.
    supports_bursts: ClassVar[bool] = True

    def run_burst(self, frames: int, *, rate_fps: float | None = None, latency: bool = False) -> TrialResult:
        """One burst of ``frames`` frames (aggregate, split evenly over the directions).

        Paced (``rate_fps``): an ordinary trial of ``frames / rate_fps`` seconds. Unpaced:
        the shapers are removed (the ports' default ``noqueue``), trafgen hands the frames
        to the kernel as fast as it can, and its own clock for the sending loop is
        ``tx_duration_s``, from which the achieved burst rate follows. A bidirectional
        profile with the shared shaper still sends through the generator's own veth pair
        (one hop more; frames it drops show as frames not sent, an invalid trial).
        """
        if self._profile is None or not self._directions:
            raise PluginError("trafgen: run_burst before configure")
        frames = int(frames)
        dirs = len(self._directions)
        if frames < dirs or frames % dirs:
            raise PluginError(f"trafgen: a burst of {frames} frames cannot be split evenly over {dirs} direction(s)")
        if rate_fps is not None:
            if rate_fps <= 0:
                raise PluginError(f"trafgen: cannot pace a burst at {rate_fps} fps")
            result = self._run(rate_fps, frames / rate_fps, frames // dirs, latency=latency)
            return dataclasses.replace(result, burst_frames=frames)
        # the probe stream needs a length: the burst at the generator's nominal rate, at least 0.1 s
        nominal = float(self.cfg.get("max_rate_fps") or 1e6)
        result = self._run(None, max(0.1, frames / nominal), frames // dirs, latency=latency)
        rate = result.burst_rate_fps
        return dataclasses.replace(
            result,
            burst_frames=frames,
            intended_load_fps=float(rate or 0.0),
            intended_duration_s=float(frames / rate) if rate else 0.0,
        )

    def _run(self, load_fps: float | None, duration_s: float, frames_per_dir: int, *,
             latency: bool) -> TrialResult:
        """Send ``frames_per_dir`` frames in each direction, through shapers at ``load_fps``
        over ``duration_s``, or unpaced when ``load_fps`` is None (a burst)."""
        if not self._started:
            self.start()
        if self.cfg["engine"] in OWN_SENDERS:
            return self._run_own_sender(load_fps, duration_s, frames_per_dir, latency=latency)
        t0 = time.monotonic()
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._trial += 1
        profile = self._profile
        paced = load_fps is not None
        per_dir_fps = load_fps / len(self._directions) if paced else None
        drain_s = self._drain_s()
        stats: dict[str, Any] = {
            "tx_path": self.cfg["tx_path"],
            "shaper_burst_s": float(self.cfg["shaper_burst_s"]) if paced else None,
            "frames_per_direction": frames_per_dir,
            "streams": [],
            "directions": [],
        }

        if frames_per_dir > 0 and paced:
            for st in self._streams:
                self._set_shaper(st.iface, per_dir_fps * len(st.directions), _mean_frame_bytes(st.directions))
        elif not paced:
            self._remove_shapers()  # back to back: nothing between trafgen and the port
        assert self._foreign is not None
        self._foreign.read()  # resets the kernel's counts
        if self._by_size is not None:
            self._by_size.read()
        if self._wrong is not None:
            self._wrong.read()
        before = self._read_counters()
        self._streams_before = self._streamcount.read() if self._streamcount is not None else None

        probe_outcome = None
        cut_reasons: list[str] = []
        send_times: list[float | None] = []
        try:
            if latency:
                self._probe = self._start_probe(duration_s, drain_s)
            if frames_per_dir > 0:
                self._senders = [self._spawn(st, frames_per_dir * len(st.directions)) for st in self._streams]
                self._wait_running()
            if self._probe is not None:
                self._probe.go()
            if paced:
                deadline = (t0 + float(self.cfg["startup_allowance_s"])
                            + duration_s * (1.0 + max(0.05, 10 * float(self.cfg["rate_tolerance"]))) + 1.0)
            else:  # a burst has no pace to keep; a generator below 10 kfps is broken
                deadline = t0 + float(self.cfg["startup_allowance_s"]) + 5.0 + frames_per_dir * len(self._directions) / 1e4
            self._wait_senders(deadline)
            for sender in self._senders:
                st = sender.stream
                text = _read_from(st.log_path, sender.log_offset)
                report = process.parse_report(text)
                code = sender.process.popen.returncode
                if code != 0 and not sender.cut:
                    tail = text.strip().splitlines()
                    raise PluginError(f"trafgen on {st.iface} failed (exit {code}): "
                                      f"{tail[-1] if tail else 'no output'} (see {st.log_path})")
                if not sender.cut and (report.tx_packets or 0) < sender.frames:
                    raise PluginError(f"trafgen on {st.iface} sent {report.tx_packets} of "
                                      f"{sender.frames} frames without an error (see {st.log_path})")
                if sender.cut:
                    cut_reasons.append(f"trafgen on {st.iface} had not finished at the deadline "
                                       f"({report.tx_packets} of {sender.frames} frames)")
                loop_s = report.send_time_s
                # trafgen's own clock stops when its last frame is queued; what the shaper
                # still held then leaves at the shaper's rate. Frames that left while trafgen
                # was exiting are not seen, so this is a lower bound of the sending time --
                # exact when trafgen, not the shaper, was the bottleneck (queue empty).
                queued = sender.queued_at_exit or 0
                rate = per_dir_fps * len(st.directions) if paced else None
                send_time = None if loop_s is None else loop_s + (queued / rate if rate else 0.0)
                send_times.append(send_time)
                stats["streams"].append({
                    "iface": st.iface,
                    "directions": [d.index for d in st.directions],
                    "cpus": list(st.cpus) or [process.SENDTO_CPU],
                    "trafgen_tx_frames": report.tx_packets,
                    "send_time_s": send_time,
                    "queued_at_exit": sender.queued_at_exit,
                })
            stats["drain_s"] = self._drain(before, drain_s)
            if self._probe is not None:
                probe_outcome = self._probe.finish()
        finally:
            for sender in self._senders:
                sender.process.stop(grace_s=2.0)  # also closes its log file
            self._senders = []
            if self._probe is not None:
                self._probe.stop()
                self._probe = None
        result_dirs, rx_wrong = self._trial_counters(before, probe_outcome, stats, cpu0)
        tx_duration = max(send_times) if send_times and None not in send_times else None
        return self._trial_result(
            "trafgen", "; ".join(cut_reasons) or None, paced, load_fps, duration_s, profile,
            result_dirs, tx_duration, t0, probe_outcome, stats, rx_wrong)

    def _trial_counters(self, before, probe_outcome, stats: dict[str, Any],
                        cpu0) -> tuple[list[DirectionCounters], int]:
        """Both engines' counting once the senders are gone: per-direction frames from the
        ports' counters (less what the probes and wrong frames account for) and the CPU time
        of the children reaped during the trial (the senders and the probe helper)."""
        after = self._read_counters()
        foreign = self._foreign.read()
        if self._by_size is not None:  # a mix: what arrived of each size, as counted here
            stats["rx_frames_by_size"] = {str(size): n for size, n in self._by_size.read().items()}
        if self._streamcount is not None:
            result_dirs, rx_wrong = self._stream_counters(before, after, foreign, probe_outcome, stats)
            if probe_outcome is not None:
                stats["probes"] = probe_outcome.stats
        else:
            result_dirs = self._direction_counters(before, after, foreign, probe_outcome, stats)
            if probe_outcome is not None:
                stats["probes"] = probe_outcome.stats
            result_dirs, rx_wrong = self._subtract_wrong(result_dirs, stats)
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        stats["generator_cpu_s"] = round((cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime), 4)
        return result_dirs, rx_wrong

    def _trial_result(self, sender: str, cut_reason: str | None, paced: bool, load_fps: float | None,
                      duration_s: float, profile: TrafficProfile, result_dirs: list[DirectionCounters],
                      tx_duration: float | None, t0: float, probe_outcome, stats: dict[str, Any],
                      rx_wrong: int, *, pacing=None) -> TrialResult:
        """One trial's result, the same for both engines: invalid when a sender was cut at the
        deadline, or when a paced sender needed more than the rate tolerance beyond the
        trial's duration to send what it was asked (it did not offer the load it claims)."""
        tx_total = sum(c.tx_frames for c in result_dirs)
        if profile.flows > 1:  # how the flows followed each other (traffic.fields.pattern)
            stats = {**stats, "flow_pattern": {"pattern": profile.fields.pattern,
                                               "frames_per_flow_run": self._directions[0].plan.run}}
        valid, reason = True, None
        if cut_reason:
            valid, reason = False, cut_reason
        elif paced and tx_duration is not None and tx_duration > duration_s * (1.0 + float(self.cfg["rate_tolerance"])):
            valid = False
            reason = (f"{sender} needed {tx_duration:.4f} s to send what was asked for {duration_s:g} s "
                      f"(achieved {tx_total / tx_duration:.0f} of {load_fps:.0f} fps)")
        return TrialResult(
            intended_load_fps=float(load_fps or 0.0),
            intended_duration_s=float(duration_s),
            frame_size_bytes=profile.frame_size_bytes,
            tx_frames=tx_total,
            rx_frames=sum(c.rx_frames for c in result_dirs),
            directions=tuple(result_dirs),
            tx_duration_s=tx_duration,
            effective_duration_s=time.monotonic() - t0,
            probes=probe_outcome.records if probe_outcome is not None else None,
            valid=valid,
            invalid_reason=reason,
            generator_stats=stats,
            pacing=pacing,
            rx_wrong_frames=rx_wrong,
            rx_monitor_frames=self._monitor_frames if self._monitors else None,
        )

    def _subtract_wrong(self, result_dirs: list[DirectionCounters], stats: dict[str, Any]
                        ) -> tuple[list[DirectionCounters], int | None]:
        """Encapsulated and modified profiles: bulk frames that arrived other than expected are not
        received frames; each direction's count, and a few of them with what was wrong,
        go into ``stats["directions"]``. (None, unchanged counters: nothing verified.)"""
        if self._wrong is None:
            return result_dirs, None
        wrong = self._wrong.read()
        samples = self._wrong.samples
        out, total = [], 0
        for d, counters, entry in zip(self._directions, result_dirs, stats["directions"]):
            n = int(wrong.get(d.rx.iface, 0))
            total += n
            entry["rx_wrong_frames"] = n
            entry["rx_verified_frames"] = counters.rx_frames - n
            if samples.get(d.rx.iface):
                entry["rx_wrong_samples"] = [{"why": d.expected.verdict(frame), "hex": frame.hex()}
                                             for frame in samples[d.rx.iface]]
            out.append(dataclasses.replace(counters, rx_frames=counters.rx_frames - n))
        return out, total
    # -- engines pacer and xdp: vsbench's own senders -------------------------------------

    def _sender_cpu(self) -> int:
        return int(sorted(int(c) for c in self.cfg["cpus"])[0])

    def _sender_argv(self, frames_per_dir: int, load_fps: float | None) -> list[str]:
        """The command line of the engine's own sender (pacer or xdp) for one trial."""
        cfg = self.cfg
        if cfg["engine"] == "xdp":
            return pacer_engine.xdp_argv(
                self._sender_path, str(self._sender_config), frames_per_dir, load_fps, cpu=self._sender_cpu(),
                batch=int(cfg["xdp_batch"]), nice=int(cfg["xdp_nice"]),
                catchup_share=float(cfg["xdp_catchup_share"]))
        return pacer_engine.argv(
            self._sender_path, str(self._sender_config), frames_per_dir, load_fps, cpu=self._sender_cpu(),
            tx=cfg["pacer_tx"], batch=int(cfg["pacer_batch"]), ring_slots=int(cfg["pacer_ring_slots"]),
            fifo_priority=int(cfg["pacer_fifo_priority"]), yield_period_us=int(cfg["pacer_yield_period_us"]),
            yield_us=int(cfg["pacer_yield_us"]), catchup_share=float(cfg["pacer_catchup_share"]))

    def _run_own_sender(self, load_fps: float | None, duration_s: float, frames_per_dir: int, *,
                   latency: bool) -> TrialResult:
        """One trial with the engine's own sender (pacer or xdp): ``frames_per_dir`` frames
        out of each direction's port, all from one process on one CPU, frame ``j`` (both
        directions in turn) at ``j / load_fps``; unpaced when ``load_fps`` is None. Counters
        as for trafgen (the ports' kernel counters, read when nothing flows); the sender's
        own figures say how long it sent and how evenly (``pacing``)."""
        t0 = time.monotonic()
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        self._trial += 1
        profile = self._profile
        paced = load_fps is not None
        drain_s = self._drain_s()
        dirs = len(self._directions)
        engine = self.cfg["engine"]
        who = "the pacer" if engine == "pacer" else f"the {engine} sender"
        stats: dict[str, Any] = {
            "engine": engine,
            "cpu": self._sender_cpu(),
            "frames_per_direction": frames_per_dir,
            "directions": [],
        }
        assert self._foreign is not None
        self._foreign.read()  # resets the kernel's counts
        if self._by_size is not None:
            self._by_size.read()
        if self._wrong is not None:
            self._wrong.read()
        before = self._read_counters()
        self._streams_before = self._streamcount.read() if self._streamcount is not None else None
        probe_outcome = None
        summary = None
        cut_reason = None
        sender = None
        try:
            if latency:
                self._probe = self._start_probe(duration_s, drain_s)
            if frames_per_dir > 0:
                sender = pacer_engine.PacerProcess(self._sender_argv(frames_per_dir, load_fps), netns=self._netns,
                                                   log_path=Path(self.context.log_dir) / f"trafgen-{engine}.log")
                self._sender_proc = sender
                try:
                    sender.start(float(self.cfg["startup_allowance_s"]))
                except RuntimeError as exc:
                    raise PluginError(f"trafgen: {exc}") from None
            if self._probe is not None:
                self._probe.go()
            if sender is not None:
                sender.go()
                nominal = duration_s if paced else frames_per_dir * dirs / 1e4  # a burst: >= 10 kfps
                slack = max(0.05, 10 * float(self.cfg["rate_tolerance"]))
                deadline = time.monotonic() + nominal * (1.0 + slack) + 1.0
                summary, code = sender.wait(deadline)
                if summary is None:
                    raise PluginError(f"trafgen: {who} ended without a summary (exit {code}; "
                                      f"see {sender.log_path})")
                if sender.cut or summary.stopped:
                    cut_reason = (f"{who} had not finished at the deadline "
                                  f"({summary.sent} of {summary.asked} frames)")
                elif code != 0:
                    raise PluginError(f"trafgen: {who} failed (exit {code}; see {sender.log_path})")
            stats["drain_s"] = self._drain(before, drain_s)
            if self._probe is not None:
                probe_outcome = self._probe.finish()
        finally:
            if sender is not None:
                sender.stop()
            self._sender_proc = None
            if self._probe is not None:
                self._probe.stop()
                self._probe = None
        result_dirs, rx_wrong = self._trial_counters(before, probe_outcome, stats, cpu0)
        tx_duration = None
        pacing = None
        if summary is not None:
            tx_duration = summary.send_time_s()
            pacing = summary.pacing()
            stats["sender"] = {"sent": summary.sent, "asked": summary.asked, "per_port": summary.per_stream,
                              "send_time_s": tx_duration, "max_late_s": summary.max_late_s,
                              "max_gap_s": summary.max_gap_s, "elapsed_s": summary.elapsed_s}
        return self._trial_result(
            who, cut_reason, paced, load_fps, duration_s, profile,
            result_dirs, tx_duration, t0, probe_outcome, stats, rx_wrong, pacing=pacing)

    def _drain(self, before: dict[str, LinkCounters], drain_s: float) -> float:
        """Wait for the frames still on their way after the last was sent: ``drain_s`` at
        most, less once each direction's receiving port has counted exactly the frames its
        sending port sent -- nothing is in flight then, so a trial that lost nothing (most
        of a search's trials, and every continuous one on a healthy DUT) does not sleep the
        drain out. A trial short of a frame (lost, or still in a queue), with frames the
        DUT made itself (more received than sent), or with latency probes (their helper
        listens for the whole drain) waits all of it. Returns the seconds waited."""
        start = time.monotonic()
        end = start + drain_s
        if self._probe is not None:
            time.sleep(drain_s)
        else:
            pause_s = DRAIN_FIRST_LOOK_S
            while time.monotonic() < end and not self._all_arrived(before):
                time.sleep(min(pause_s, max(0.0, end - time.monotonic())))
                pause_s = min(2 * pause_s, DRAIN_LONGEST_LOOK_S)
        return round(time.monotonic() - start, 4)

    def _all_arrived(self, before: dict[str, LinkCounters]) -> bool:
        """True when every direction's receiving port counted as many frames as its
        sending port sent (or its peer dropped) since ``before`` (a streams profile: the
        receiving ports together, as many as the sending ports sent)."""
        now = self._read_counters()
        if self._monitors:  # a flooded frame reaches its own port and the monitor: wait the whole drain
            return False
        if self._streamcount is not None:
            sent = sum((now[i] - before[i]).tx_packets + (now[i] - before[i]).tx_dropped
                       for i in dict.fromkeys(d.tx.iface for d in self._directions))
            received = sum((now[i] - before[i]).rx_packets for i in dict.fromkeys(d.rx.iface for d in self._directions))
            return received == sent
        for d in self._directions:
            sent = now[d.tx.iface] - before[d.tx.iface]
            received = now[d.rx.iface] - before[d.rx.iface]
            if received.rx_packets != sent.tx_packets + sent.tx_dropped:
                return False
        return True

    def _direction_counters(self, before, after, foreign, probe_outcome, stats) -> list[DirectionCounters]:
        """Frames sent and received per direction from the ports' counters (see the module doc)."""
        result_dirs = []
        for d in self._directions:
            tx_delta = after[d.tx.iface] - before[d.tx.iface]
            rx_delta = after[d.rx.iface] - before[d.rx.iface]
            tx_frames = tx_delta.tx_packets + tx_delta.tx_dropped
            rx_frames = rx_delta.rx_packets - foreign.get(d.rx.iface, 0)
            if probe_outcome is not None:
                if probe_outcome.tx_iface == d.tx.iface:
                    tx_frames -= probe_outcome.sent + probe_outcome.send_failed
                if probe_outcome.rx_iface == d.rx.iface:
                    rx_frames -= probe_outcome.rx_frames
            result_dirs.append(DirectionCounters(tx_port=d.tx.index, rx_port=d.rx.index,
                                                 tx_frames=tx_frames, rx_frames=rx_frames))
            stats["directions"].append({
                "tx_iface": d.tx.iface,
                "rx_iface": d.rx.iface,
                "tx_dropped_by_peer": tx_delta.tx_dropped,
                "rx_dropped": rx_delta.rx_dropped,
                "foreign_rx_frames": foreign.get(d.rx.iface, 0),
                # bytes the ports counted (no FCS; probes and foreign frames included): the
                # mean size on the wire, which a frame mix's trial shows is the mix's
                "tx_bytes": tx_delta.tx_bytes,
                "rx_bytes": rx_delta.rx_bytes,
            })
        return result_dirs

    def _stream_counters(self, before, after, foreign, probe_outcome, stats) -> tuple[list[DirectionCounters], int]:
        """A streams profile's counters: each stream's share of its port's frames sent, its
        frames counted on its own receiving port, and the frames of any stream that arrived
        on another port (delivered wrong, returned second)."""
        from vsbench_plugins.trafficgen.trafgen import streamcount

        assert self._streamcount is not None and self._streams_before is not None
        counts = streamcount.delta(self._streams_before, self._streamcount.read())
        sent: dict[int, int] = {}
        for iface in dict.fromkeys(d.tx.iface for d in self._directions):
            mine = [d for d in self._directions if d.tx.iface == iface]
            delta = after[iface] - before[iface]
            total = delta.tx_packets + delta.tx_dropped
            if probe_outcome is not None and probe_outcome.tx_iface == iface:
                total -= probe_outcome.sent + probe_outcome.send_failed
            share, extra = divmod(max(0, total), len(mine))  # the senders send the streams in turn
            for k, d in enumerate(mine):
                sent[d.index] = share + (1 if k < extra else 0)
        wrong = 0
        monitored = 0
        ports = []
        for iface, per_stream in counts.items():
            delta = after[iface] - before[iface]
            elsewhere = sum(n for j, n in enumerate(per_stream) if self._directions[j].rx.iface != iface)
            if iface in self._monitors:  # flooded there: counted apart, not a wrong delivery
                monitored += elsewhere
                ports.append({"rx_iface": iface, "monitor": True, "rx_packets": delta.rx_packets,
                              "monitor_frames": elsewhere})
                continue
            wrong += elsewhere
            probes = probe_outcome.rx_frames if probe_outcome is not None and probe_outcome.rx_iface == iface else 0
            ports.append({"rx_iface": iface, "rx_packets": delta.rx_packets, "rx_dropped": delta.rx_dropped,
                          "foreign_rx_frames": foreign.get(iface, 0), "probe_rx_frames": probes,
                          "stream_frames": sum(per_stream), "rx_wrong_frames": elsewhere,
                          "rx_uncounted_frames": delta.rx_packets - foreign.get(iface, 0) - probes - sum(per_stream)})
        result_dirs = []
        for d in self._directions:
            received = counts.get(d.rx.iface, [0] * len(self._directions))[d.index]
            result_dirs.append(DirectionCounters(tx_port=d.tx.index, rx_port=d.rx.index,
                                                 tx_frames=sent[d.index], rx_frames=received))
            stats["directions"].append({"tx_iface": d.tx.iface, "rx_iface": d.rx.iface, "stream": d.index})
        stats["stream_ports"] = ports
        self._monitor_frames = monitored if self._monitors else None
        return result_dirs, wrong

    # -- trial steps ---------------------------------------------------------------------

    def _set_shaper(self, iface: str, rate_fps: float, frame_size_bytes: float) -> None:
        largest = max((d.template.frame_size_bytes for d in self._directions), default=None)
        argv = shaper.tbf_argv(iface, rate_fps, frame_size_bytes, float(self.cfg["shaper_burst_s"]), largest)
        try:
            run(argv, netns=self._netns, timeout_s=10)
        except CommandError as exc:
            raise PluginError(f"trafgen: cannot set the rate shaper on {iface}: {exc}") from None
        self._shaped.add(iface)

    def _remove_shapers(self) -> None:
        for iface in sorted(self._shaped):
            try:
                run(shaper.remove_argv(iface), netns=self._netns, check=False, timeout_s=10)
            except CommandError:
                pass
        self._shaped.clear()

    def _spawn(self, st: _Stream, frames: int) -> _Sender:
        binary = which(self.cfg["binary"]) or self.cfg["binary"]
        packets = sum(len(d.packets()) for d in st.directions) * max(max(1, int(d.plan.run)) for d in st.directions)  # burst: copies
        cpus = st.cpus if st.cpus and frames >= process.worker_count(st.cpus) * packets else None
        if cpus is None and st.cpus:
            # Fewer frames than worker packets: trafgen would drop workers and with them the
            # pinned packets; such a trial is tiny, send it unpinned.
            cfg_path = st.config_path.with_suffix(".unpinned.cfg")
            packets = [p for d in st.directions for p in d.packets()]
            cfg_path.write_text(_config().render_packets(packets, None), encoding="utf-8")
        else:
            cfg_path = st.config_path
        argv = process.trafgen_argv(binary, st.iface, str(cfg_path), frames, cpus,
                                    tx_path=self.cfg["tx_path"],
                                    wire_len_bytes=max(d.template.frame_size_bytes for d in st.directions) - FCS_BYTES)
        if int(self.cfg["nice"]) != 0:
            # a tbf-paced trafgen that loses its CPU to another task for a few ms falls
            # behind and the trial is generator-limited; niceness keeps it its share
            argv = [which("nice") or "nice", "-n", str(int(self.cfg["nice"])), *argv]
        offset = _size(st.log_path)
        proc = spawn(argv, netns=self._netns, log_path=st.log_path)
        return _Sender(stream=st, frames=frames, process=proc, log_offset=offset)

    def _wait_running(self) -> None:
        """Wait until every trafgen printed that it is sending (or died)."""
        deadline = time.monotonic() + float(self.cfg["startup_allowance_s"])
        pending = list(self._senders)
        while pending and time.monotonic() < deadline:
            pending = [s for s in pending
                       if s.process.alive()
                       and process.RUNNING_MARK not in _read_from(s.stream.log_path, s.log_offset)]
            if pending:
                time.sleep(0.002)

    def _wait_senders(self, deadline: float, poll_s: float = 0.001) -> None:
        """Wait for every trafgen to exit and its shaper queue to empty, noting when.

        A trafgen still running at ``deadline`` is stopped (SIGTERM: it prints its summary;
        KILL after a grace period); its queued frames still go out and are counted.
        """
        assert self._reader is not None
        pending = list(self._senders)
        while pending:
            now = time.monotonic()
            for sender in list(pending):
                if sender.exited_at is None:
                    if sender.process.alive():
                        if now < deadline:
                            continue
                        sender.cut = True
                        log.warning("trafgen on %s still sending at the deadline; stopping it",
                                    sender.stream.iface)
                        sender.process.stop(grace_s=5.0, sig=signal.SIGTERM)
                    sender.exited_at = time.monotonic()
                try:
                    backlog = self._reader.backlog(sender.stream.iface)
                except NetlinkError as exc:
                    raise PluginError(f"trafgen: {exc}") from None
                if sender.queued_at_exit is None:
                    sender.queued_at_exit = backlog.packets
                if backlog.packets == 0:
                    sender.drained_at = time.monotonic()
                    pending.remove(sender)
                elif time.monotonic() - sender.exited_at > 10.0:
                    raise PluginError(f"trafgen: {backlog.packets} frames still queued on "
                                      f"{sender.stream.iface} 10 s after trafgen ended")
            if pending:
                time.sleep(poll_s)

    def measure_latency_floor(self, duration_s: float) -> TrialResult:
        """The probe stream of the configured profile alone, over the floor loop (:mod:`.floor`)."""
        from vsbench_plugins.trafficgen.trafgen import floor
        from vsbench_plugins.trafficgen.trafgen.probes import ProbeStream

        if self._profile is None or not self._directions or self._netns is None:
            raise PluginError("trafgen: measure_latency_floor before configure")
        if duration_s <= 0:
            raise PluginError(f"trafgen: cannot measure the latency floor for {duration_s} s")
        if not self._started:
            self.start()
        t0 = time.monotonic()
        self._trial += 1
        names = floor.ensure_loop(self._netns, self.context.run_id, self.context.resources)
        d = self._directions[0]
        stream = ProbeStream(
            netns=self._netns,
            tx_iface=names[0],
            rx_iface=names[1],
            frame=d.template.data,
            ip_offset=d.template.ip_offset,
            rate_fps=self._probe_rate(),
            duration_s=duration_s,
            drain_s=self._drain_s(),
            out_prefix=self._work_dir / f"floor-{self._trial}",
            log_path=Path(self.context.log_dir) / "trafgen-probe.log",
            python=self.cfg.get("python"),
            rx_payload_offset=d.template.payload_offset if d.template.outer_bytes else None,
        )
        self._probe = stream
        try:
            stream.start()
            stream.go()
            outcome = stream.finish()
        finally:
            stream.stop()
            self._probe = None
        return TrialResult(
            intended_load_fps=0.0,
            intended_duration_s=float(duration_s),
            frame_size_bytes=self._profile.frame_size_bytes,
            tx_frames=0,
            rx_frames=0,
            effective_duration_s=time.monotonic() - t0,
            probes=outcome.records,
            generator_stats={"loop": floor.describe(self._netns, names), "probes": outcome.stats},
        )

    def _start_probe(self, duration_s: float, drain_s: float):
        from vsbench_plugins.trafficgen.trafgen.probes import ProbeStream

        d = self._directions[0]
        stream = ProbeStream(
            netns=self._netns,
            tx_iface=d.tx.iface,
            rx_iface=d.rx.iface,
            frame=d.template.data,
            ip_offset=d.template.ip_offset,
            rate_fps=self._probe_rate(),
            duration_s=duration_s,
            drain_s=drain_s,
            out_prefix=self._work_dir / f"probes-{self._trial}",
            log_path=Path(self.context.log_dir) / "trafgen-probe.log",
            python=self.cfg.get("python"),
            rx_payload_offset=d.expected.payload_offset if d.expected is not None else None,
        )
        stream.start()
        return stream


def _tc_payload_offset(template: Any) -> int:
    """Where tc ingress sees a sent frame's UDP payload (the kernel strips a VLAN tag)."""
    return RX_PAYLOAD_OFFSET + (template.outer_bytes or 0)


def _frames_text(profile: TrafficProfile) -> str:
    """What the frames are, for a configuration's comment: ``64 B frames`` or a mix's cycle."""
    mix = profile.frame_mix
    if mix is None:
        return f"{profile.frame_size_bytes} B frames"
    return f"frame mix {mix.name} (cycle {' '.join(str(s) for s in mix.cycle)} B)"


def _mean_frame_bytes(directions: Sequence[_Direction]) -> float:
    """Mean size on the wire (FCS included) of the frames one sender alternates between:
    the byte rate its shaper needs (a tunnel's frames are larger than the plain ones)."""
    return sum(d.mean_frame_bytes for d in directions) / len(directions)


def _sender_binary(cfg: Mapping[str, Any]) -> str:
    """The engine's own sender: ``<engine>_binary`` or the shipped source, built once."""
    engine = cfg["engine"]
    if cfg.get(f"{engine}_binary"):
        return str(cfg[f"{engine}_binary"])
    try:
        return str(pacer_engine.ensure_built(sender=OWN_SENDERS[engine]))
    except (pacer_engine.PacerBuildError, OSError) as exc:
        raise PluginError(f"trafgen: {exc}") from None


def _sender_prerequisites(cfg: Mapping[str, Any]) -> list[Prerequisite]:
    """Engines pacer and xdp need their sender: a prebuilt one, or a compiler to build it
    (done here, once per source version, so a run that cannot have it stops before it
    starts); the xdp sender also a kernel that runs live XDP frames (probed for real)."""
    engine = cfg["engine"]
    if engine == "xdp" and which("ethtool") is None:  # GRO on at the ports' veth peers (_prepare_xdp)
        return [Prerequisite("ethtool, to put the xdp sender's veth peers in NAPI mode (GRO on)",
                             "apt-get install ethtool")]
    configured = cfg.get(f"{engine}_binary")
    binary = configured
    if configured:
        if not (os.path.isfile(configured) and os.access(configured, os.X_OK)):
            return [Prerequisite(f"the {engine} sender {configured} (trafficgen.trafgen.{engine}_binary)",
                                 "point it at an executable, or set it to null to build it")]
    else:
        try:
            binary = str(pacer_engine.ensure_built(sender=OWN_SENDERS[engine]))
        except pacer_engine.PacerBuildError as exc:
            return [Prerequisite(f"the {engine} sender of trafficgen trafgen", f"{exc}; or engine: trafgen")]
        except OSError as exc:
            return [Prerequisite(f"a cache directory for the {engine} sender ({pacer_engine.cache_dir()}: {exc})",
                                 "set VSBENCH_CACHE_DIR to a writable directory")]
    if engine == "xdp":
        problem = pacer_engine.probe_xdp(binary)
        if problem:
            return [Prerequisite(f"live XDP frames for trafficgen trafgen engine xdp ({problem})",
                                 "run on Linux >= 5.18 as root, or use engine: trafgen")]
    return []


def direction_match_bytecode(direction: int, payload_offset: int = RX_PAYLOAD_OFFSET) -> str:
    """Classic BPF (tc ``bytecode`` syntax) matching bulk frames of ``direction``: the byte
    after the bulk magic in the UDP payload (offset 44 once the kernel has moved any VLAN
    tag out of the frame data; further in for a frame sent into a tunnel)."""
    from vsbench_plugins.trafficgen.trafgen.frames import DIRECTION_BYTE_OFFSET

    offset = payload_offset + DIRECTION_BYTE_OFFSET
    program = [(0x30, 0, 0, offset), (0x15, 0, 1, direction), (0x06, 0, 0, 0xFFFFFFFF), (0x06, 0, 0, 0)]
    return f"{len(program)}," + ",".join(f"{c} {jt} {jf} {k}" for c, jt, jf, k in program)


__all__ = ["Trafgen", "DEFAULTS", "SETTINGS_SCHEMA", "split_cpus"]
