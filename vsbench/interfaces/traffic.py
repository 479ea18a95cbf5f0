"""The traffic profile a generator is configured with and the trial result it returns.

These types are the contract between every traffic generator and the measurement engine.
Units are in the names: frames per second (``_fps``), bits per second (``_bps``, with L1
meaning the on-wire size including preamble, SFD and inter-frame gap, 20 B per frame),
nanoseconds (``_ns``), seconds (``_s``), bytes (``_bytes``). A frame size is the Ethernet
frame including its 4 B FCS, as in RFC 2544: a 64 B frame is a 60 B template on the wire.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

from vsbench.interfaces.frame_mix import FrameMix
from vsbench.interfaces.modification import FrameModification

#: Per-frame overhead on the wire besides the frame itself: preamble + SFD (8 B) + IFG (12 B).
L1_OVERHEAD_BYTES = 20
#: The Ethernet FCS, counted in the frame size but not written by software generators.
FCS_BYTES = 4
MIN_FRAME_SIZE_BYTES = 64
MAX_FRAME_SIZE_BYTES = 9216
#: The IANA VXLAN port (RFC 7348).
VXLAN_UDP_PORT = 4789
#: Bytes VXLAN over IPv4 adds to a frame: outer Ethernet 14 + IPv4 20 + UDP 8 + VXLAN 8
#: (the inner frame travels without its FCS; the outer frame has one).
VXLAN_OVERHEAD_BYTES = 50


def line_rate_fps(link_bps: float, frame_size_bytes: int) -> float:
    """Maximum frames per second on one link of ``link_bps`` (L1) for this frame size."""
    return link_bps / ((frame_size_bytes + L1_OVERHEAD_BYTES) * 8)


def l1_bps(rate_fps: float, frame_size_bytes: int) -> float:
    """On-wire bit rate of ``rate_fps`` frames of ``frame_size_bytes`` (incl. FCS)."""
    return rate_fps * (frame_size_bytes + L1_OVERHEAD_BYTES) * 8


def l2_bps(rate_fps: float, frame_size_bytes: int) -> float:
    """Frame bit rate (incl. FCS, excl. preamble and IFG) of ``rate_fps`` frames."""
    return rate_fps * frame_size_bytes * 8


@dataclass(frozen=True)
class FlowFields:
    """The header fields of the bulk stream, and which of them vary to make flows.

    ``vary`` lists the fields that change from one flow to the next, in the order they are
    combined: any of ``"src_ip"``, ``"dst_ip"``, ``"src_port"``, ``"dst_port"``,
    ``"src_mac"``, ``"dst_mac"``. With ``flows=N`` the generator cycles through N distinct
    combinations uniformly so each flow (and each rule matching it) gets 1/N of the frames.

    ``pattern`` says how the flows follow each other on the wire: ``"scatter"`` (the
    default) moves to the next flow on every frame; ``"burst"`` sends ``burst_run``
    consecutive frames of one flow before moving to the next (Intel's optimized-deployment
    report, F14: the outer source IP constant for 32 packets). Only a generator whose class
    lists the pattern in ``flow_patterns`` is given a profile with it.
    """

    src_mac: str = "02:00:00:00:00:01"
    dst_mac: str = "02:00:00:00:00:02"
    src_ip: str = "10.0.0.1"
    dst_ip: str = "10.1.0.1"
    l4_proto: str = "udp"
    src_port: int = 1024
    dst_port: int = 1024
    vlan_id: int | None = None
    vlan_pcp: int = 0
    vary: tuple[str, ...] = ("src_ip", "dst_ip")
    pattern: str = "scatter"
    burst_run: int = 32

    @property
    def frames_per_flow_run(self) -> int:
        """Consecutive frames of one flow: ``burst_run`` for the burst pattern, else 1."""
        return int(self.burst_run) if self.pattern == "burst" else 1


@dataclass(frozen=True)
class TunnelFields:
    """The overlay link of an encapsulated profile: which generator port faces the DUT's
    tunnel endpoint (VTEP), and the outer headers on that link.

    Frames the generator sends out of port ``port`` are VXLAN: outer Ethernet
    ``generator_mac`` -> ``dut_mac``, IPv4 ``generator_ip`` -> ``dut_ip`` (TTL 64, no
    options), UDP ``source_port`` -> ``udp_port`` with checksum 0 (RFC 7348 for IPv4),
    VXLAN flags 0x08 and ``vni``, then the profile's frame without its FCS. Frames the DUT
    sends to that port must carry the same outer addresses the other way round and the same
    VNI; their UDP source port is the VTEP's choice (a hash of the inner flow). Frames on
    every other port are plain -- unless the profile has a tunnel link on that port too
    (:attr:`TrafficProfile.tunnels`: a VXLAN PVP has one on every port).
    """

    port: int
    vni: int
    generator_mac: str
    generator_ip: str
    dut_mac: str
    dut_ip: str
    udp_port: int = VXLAN_UDP_PORT
    source_port: int = 49152


@dataclass(frozen=True)
class PortStream:
    """One stream of a multi-port profile: frames sent out of generator port ``tx_port``
    (an index into the ports given to ``configure``) with ``fields`` (and ``flows`` flows
    over ``fields.vary``), which the device under test delivers to port ``rx_port``.

    A router between the generator's ports sends each frame out of the port its
    destination address is routed to, so "which port sends to which" (the Intel/Brocade
    vRouter report's traffic profiles) is a set of such streams, each addressed to its own
    destination port's hosts."""

    tx_port: int
    rx_port: int
    fields: FlowFields


@dataclass(frozen=True)
class TrafficProfile:
    """What to send: one frame size, a flow set and the direction(s).

    ``flows`` is the number of distinct flows per direction. The reverse direction of a
    bidirectional profile swaps source and destination fields.

    ``encapsulation`` (``"vxlan"``) with ``tunnel``: the frames are the *inner* frames of
    an overlay; on the tunnel link (port ``tunnel.port``) they travel inside VXLAN, which
    adds :data:`VXLAN_OVERHEAD_BYTES`. ``frame_size_bytes`` is always the inner frame's
    size (FCS included, as it would be on a wire); :attr:`outer_frame_size_bytes` is the
    size on the tunnel link. A generator declares the encapsulations it builds in
    :attr:`~vsbench.interfaces.trafficgen.TrafficGenerator.encapsulations`.

    ``streams`` (a deployment that needs more than one pair of ports: several pairs
    ``2k <-> 2k+1``, each pair's directions a stream -- the runner builds those,
    ``vsbench.measurement.profiles.on_port_pairs`` --; a router with 4 or 8 ports and a
    traffic profile saying which port sends to which): the generator sends exactly these
    streams instead of ``fields``/``reverse_fields`` on its one port pair, each
    with ``flows`` flows and an equal share of the offered load, and counts each stream's
    frames received on its ``rx_port`` (a frame of a stream arriving on another port is a
    frame delivered wrong, not received). Only a generator that declares
    :attr:`GeneratorCapabilities.port_streams` takes such a profile.
    """

    frame_size_bytes: int
    flows: int = 1
    bidirectional: bool = True
    fields: FlowFields = field(default_factory=FlowFields)
    encapsulation: str | None = None  # None or "vxlan"
    #: The reverse direction's fields when they are not ``fields`` swapped: through a
    #: router each direction is addressed to the MAC of the router port it enters.
    reverse_fields: FlowFields | None = None
    #: The overlay link (the op2p deployment fills it in); None without encapsulation.
    tunnel: TunnelFields | None = None
    #: Every overlay link when more than one generator port faces a VTEP (the pvp_vxlan
    #: deployment: one per port, each its own VNI), ``tunnel`` being the first of them;
    #: empty when ``tunnel`` is the only one. Read them with :meth:`tunnel_on`.
    tunnels: tuple[TunnelFields, ...] = ()
    #: Port-to-port streams to send instead of the port pair (see above); None: the pair.
    streams: tuple[PortStream, ...] | None = None
    #: A weighted frame-size mix (IMIX): every stream's frames cycle through
    #: ``frame_mix.cycle`` and ``frame_size_bytes`` is only the mix's representative size
    #: (its mean, rounded). Only a generator whose capabilities say ``frame_mix`` is given
    #: one. None: every frame is ``frame_size_bytes``.
    frame_mix: FrameMix | None = None
    #: Generator ports that send nothing and where no stream is meant to arrive, whose
    #: received bulk frames are counted (``TrialResult.rx_monitor_frames``): RFC 2889's
    #: monitor port, where a learning switch floods a frame to an address it has not
    #: learned. Only a generator that declares :attr:`GeneratorCapabilities.monitor_ports`
    #: takes a profile with them.
    monitor_ports: tuple[int, ...] = ()
    #: What the device under test does to every frame, in every direction
    #: (``dut.frame_modification``): a generator that declares the kind in
    #: ``frame_modifications`` counts a frame received only when it arrives so modified,
    #: and an unmodified or wrongly modified one as delivered wrong. ``frame_size_bytes``
    #: stays the size sent; frames arrive ``frame_modification.size_delta_bytes`` longer.
    frame_modification: FrameModification | None = None

    @property
    def mean_frame_size_bytes(self) -> float:
        """The mean frame size on the wire: the mix's, else ``frame_size_bytes``. Bit
        rates and the line rate are computed with it."""
        if self.frame_mix is not None:
            return self.frame_mix.mean_frame_size_bytes
        return float(self.frame_size_bytes)

    @property
    def directions(self) -> int:
        """Streams the generator sends: one per direction of the port pair, or ``streams``."""
        if self.streams is not None:
            return len(self.streams)
        return 2 if self.bidirectional else 1

    def tunnel_links(self) -> tuple[TunnelFields, ...]:
        """Every overlay link of the profile (``tunnels``, else ``tunnel`` alone)."""
        if self.tunnels:
            return self.tunnels
        return (self.tunnel,) if self.tunnel is not None else ()

    def tunnel_on(self, port: int) -> TunnelFields | None:
        """The overlay link on generator port ``port``, None where frames are plain."""
        for link in self.tunnel_links():
            if link.port == port:
                return link
        return None

    @property
    def sending_ports(self) -> int:
        """Generator ports that send (the line rate is theirs, summed)."""
        return len(self.sending_port_indexes)

    @property
    def sending_port_indexes(self) -> tuple[int, ...]:
        """The generator ports that send, by index (:attr:`sending_ports` counts them)."""
        if self.streams is not None:
            return tuple(sorted({s.tx_port for s in self.streams}))
        return tuple(range(self.directions))

    @property
    def outer_frame_size_bytes(self) -> int:
        """The frame size on the tunnel link (the inner size when not encapsulated)."""
        if self.encapsulation == "vxlan":
            return self.frame_size_bytes + VXLAN_OVERHEAD_BYTES
        return self.frame_size_bytes


@dataclass(frozen=True)
class GeneratorPort:
    """One generator port as the deployment hands it to a generator.

    On the embedded testbed ``iface`` is an interface inside network namespace ``netns``;
    with a hardware generator ``iface`` is the generator's own port name or index and
    ``netns`` is ``None``. ``mac`` and ``ip`` are the port's own addresses, used as the
    source of frames it sends and the destination of frames sent to it.
    """

    index: int
    iface: str
    netns: str | None = None
    mac: str | None = None
    ip: str | None = None
    link_bps: float | None = None


@dataclass(frozen=True)
class GeneratorCapabilities:
    """What a generator can do; the runner checks a testcase against this before a run."""

    ports: int
    max_rate_fps: float | None = None  # aggregate over all ports; None when unknown
    latency: bool = False
    per_packet_latency: bool = False  # per-packet timestamps (else histograms only)
    max_flows: int = 1
    bidirectional: bool = True
    needs_testbed: bool = False  # needs the embedded netns/veth testbed ports
    native_search: bool = False
    #: Can measure its own latency without the DUT (``TrafficGenerator.measure_latency_floor``).
    latency_floor: bool = False
    #: Its ceiling depends on the host it runs on (a software generator): the runner
    #: measures it once per frame size with an unpaced ``run_burst`` and never asks more
    #: (:mod:`vsbench.measurement.ceiling`). Needs ``supports_bursts``.
    ceiling_calibration: bool = False
    #: The share of that unpaced rate its paced trials deliver on such a host, so the share
    #: of the ceiling the search may ask for when ``traffic.generator_ceiling_share`` is
    #: null (None: :data:`vsbench.measurement.ceiling.CEILING_SHARE`).
    ceiling_share: float | None = None
    #: Sends a profile's port-to-port ``streams`` (:class:`PortStream`), each counted on its
    #: own receiving port.
    port_streams: bool = False
    #: Sends a profile's ``frame_mix`` (IMIX): its frames cycle through the mix's sizes.
    frame_mix: bool = False
    #: Counts the bulk frames arriving at a profile's ``monitor_ports`` (RFC 2889's
    #: flooding check, ``TrialResult.rx_monitor_frames``).
    monitor_ports: bool = False


@dataclass(frozen=True)
class DirectionCounters:
    """Frames sent on one port and received on its peer during one trial."""

    tx_port: int
    rx_port: int
    tx_frames: int
    rx_frames: int


@dataclass(frozen=True)
class ProbeRecords:
    """Per-packet records of a latency probe stream, in arrival order.

    ``sequence[i]`` is the sequence number carried by the i-th probe that arrived and
    ``latency_ns[i]`` its one-way delay (receive timestamp minus send timestamp).
    ``sent`` is how many probes were sent, so loss, reordering and duplicates (RFC 4737) can
    be computed from these alone.
    """

    sequence: np.ndarray  # int64, arrival order
    latency_ns: np.ndarray  # int64, same length
    sent: int


@dataclass(frozen=True)
class LatencyHistogram:
    """A latency histogram for generators that only report histograms (TRex, IxNetwork).

    ``bucket_lower_ns[i]`` is the inclusive lower edge of bucket i and ``counts[i]`` how
    many samples fell in it; ``min_ns``/``max_ns``/``mean_ns`` are the generator's exact
    figures when it reports them.
    """

    bucket_lower_ns: Sequence[int]
    counts: Sequence[int]
    min_ns: float | None = None
    max_ns: float | None = None
    mean_ns: float | None = None


@dataclass(frozen=True)
class PacingStats:
    """How evenly a paced generator offered its load, as the generator itself measured it.

    The generator counts the frames it handed to the port in bins of ``resolution_s``.
    ``max_window_deviation_frames`` is the largest difference between the frames of one of
    the trial's consecutive ``window_s`` windows (from the first frame's due time) and the
    nominal ``nominal_frames_per_window`` (the trial's load x ``window_s``): a window more
    than :data:`vsbench.measurement.validity.PACING_TOLERANCE` off makes the trial invalid
    (the load it claims is not what was offered then). ``max_sliding_deviation_frames`` is
    the same over every window position, sliding by ``resolution_s``: it also sees a stall
    the sender caught up with inside its window. Burstiness: the most frames in any
    ``burst_window_s`` (1 ms) window, sliding; ``max_late_s`` is how far the sender ever
    fell behind its schedule (it catches up at once, at most as fast as it can send), and
    ``late_frames`` how many frames it sent more than 100 us behind it: the frames a stall
    displaced into a catch-up burst (a bound on what the unevenness can have cost a device:
    :mod:`vsbench.measurement.search.trial_checks`).
    """

    window_s: float
    resolution_s: float
    windows: int
    nominal_frames_per_window: float
    max_window_deviation_frames: float
    burst_window_s: float = 0.001
    max_frames_per_burst_window: int = 0
    max_late_s: float | None = None
    max_sliding_deviation_frames: float | None = None
    late_frames: int | None = None

    @property
    def max_window_deviation_ratio(self) -> float | None:
        if self.nominal_frames_per_window <= 0:
            return None
        return self.max_window_deviation_frames / self.nominal_frames_per_window

    @property
    def burst_ratio(self) -> float | None:
        """Most frames in a burst window over the nominal count in such a window."""
        nominal = self.nominal_frames_per_window * self.burst_window_s / self.window_s
        return self.max_frames_per_burst_window / nominal if nominal > 0 else None

    def to_json(self) -> dict:
        return {
            "window_s": self.window_s, "resolution_s": self.resolution_s, "windows": int(self.windows),
            "nominal_frames_per_window": self.nominal_frames_per_window,
            "max_window_deviation_frames": self.max_window_deviation_frames,
            "max_window_deviation_ratio": self.max_window_deviation_ratio,
            "burst_window_s": self.burst_window_s,
            "max_frames_per_burst_window": int(self.max_frames_per_burst_window),
            "burst_ratio": self.burst_ratio,
            "max_late_s": self.max_late_s,
            "max_sliding_deviation_frames": self.max_sliding_deviation_frames,
            "late_frames": self.late_frames,
        }

    @classmethod
    def from_json(cls, doc: dict) -> "PacingStats":
        return cls(
            window_s=float(doc["window_s"]), resolution_s=float(doc["resolution_s"]), windows=int(doc["windows"]),
            nominal_frames_per_window=float(doc["nominal_frames_per_window"]),
            max_window_deviation_frames=float(doc["max_window_deviation_frames"]),
            burst_window_s=float(doc.get("burst_window_s", 0.001)),
            max_frames_per_burst_window=int(doc.get("max_frames_per_burst_window", 0)),
            max_late_s=doc.get("max_late_s"),
            max_sliding_deviation_frames=doc.get("max_sliding_deviation_frames"),
            late_frames=doc.get("late_frames"),
        )


#: ``limited``: the generator could not deliver the asked load over the trial (frames
#: short, sending overran); retried, then the search lowers its max load.
INVALID_LIMITED = "limited"
#: ``disturbed``: every frame went out in the trial's time, but not evenly (a pacing window
#: off the nominal count, a stall): a property of that moment, not of the load. Retried at
#: the same load; never lowers the max load.
INVALID_DISTURBED = "disturbed"
#: ``untrusted``: the counters contradict themselves or the trial asked (inconsistent, rx
#: above tx, a missed deadline): they say nothing, neither about loss nor about the rate.
INVALID_UNTRUSTED = "untrusted"
INVALID_KINDS: tuple[str, ...] = (INVALID_LIMITED, INVALID_DISTURBED, INVALID_UNTRUSTED)
#: Why the search measured by an invalid trial (``ReportedPoint.sending_caveat``): a
#: disturbed one that met the goal (:data:`INVALID_DISTURBED`), or a limited one that sent
#: every frame late, filed at a load at or below the rate it delivered.
CAVEAT_LATE = "late"
SENDING_CAVEATS: tuple[str, ...] = (INVALID_DISTURBED, CAVEAT_LATE)


@dataclass(frozen=True)
class TrialResult:
    """What one trial at one offered load measured, as the generator saw it.

    ``intended_load_fps`` is the aggregate offered load over all directions;
    ``tx_frames``/``rx_frames`` are summed over directions and exclude latency probes
    (probes are accounted in ``probes``). ``tx_duration_s`` is how long the generator
    actually took to send (``None`` when it cannot tell); ``effective_duration_s`` is the
    wall time the trial cost including set-up and drain, used for time budgets.

    A generator sets ``valid=False`` with an ``invalid_reason`` when it knows the trial did
    not happen as asked; the measurement engine additionally applies the common validity
    rules (:mod:`vsbench.measurement.validity`), so a trial whose generator could not send
    the offered load is never counted as loss in the device under test. Those rules also
    set ``invalid_kind`` (:data:`INVALID_KINDS`), which tells the search what to do with an
    invalid trial; a plugin leaves it ``None``.
    """

    intended_load_fps: float
    intended_duration_s: float
    frame_size_bytes: int
    tx_frames: int
    rx_frames: int
    directions: tuple[DirectionCounters, ...] = ()
    tx_duration_s: float | None = None
    effective_duration_s: float | None = None
    probes: ProbeRecords | None = None
    latency_histogram: LatencyHistogram | None = None
    valid: bool = True
    invalid_reason: str | None = None
    generator_stats: dict = field(default_factory=dict)
    #: A burst trial (:meth:`TrafficGenerator.run_burst`): the frames asked for; None for
    #: a trial at a load for a duration.
    burst_frames: int | None = None
    #: Frames that arrived but not as they should (headers or payload other than what the
    #: DUT should have delivered, e.g. a wrong VNI or inner header after encapsulation),
    #: from a generator that verifies what it receives; None when it does not verify. They
    #: are not in ``rx_frames``: a frame delivered wrong is a frame lost.
    rx_wrong_frames: int | None = None
    #: Bulk frames counted at the profile's ``monitor_ports`` (frames a learning switch
    #: flooded there); None when the profile has none or the generator does not count them.
    #: Not in ``rx_frames`` and not loss: a flooded frame also reached its own port.
    rx_monitor_frames: int | None = None
    #: How exactly a paced generator kept the load (None: it does not measure that).
    pacing: PacingStats | None = None
    #: What kind of invalid trial this is, set by the core's validity rules (one of
    #: :data:`INVALID_KINDS`; None for a valid trial or one no rule has judged).
    invalid_kind: str | None = None

    @property
    def burst_rate_fps(self) -> float | None:
        """The rate frames really went out at (``tx_frames / tx_duration_s``), if known."""
        if not self.tx_duration_s or self.tx_duration_s <= 0:
            return None
        return self.tx_frames / self.tx_duration_s

    @property
    def intended_frames(self) -> float:
        return self.intended_load_fps * self.intended_duration_s

    @property
    def lost_frames(self) -> int:
        return self.tx_frames - self.rx_frames

    @property
    def loss_ratio(self) -> float:
        """Lost over sent frames; 1.0 when nothing was sent."""
        if self.tx_frames <= 0:
            return 1.0
        return (self.tx_frames - self.rx_frames) / self.tx_frames

    @property
    def achieved_tx_fps(self) -> float:
        """The rate the generator really offered, over the intended duration."""
        if self.intended_duration_s <= 0:
            return 0.0
        return self.tx_frames / self.intended_duration_s

    @property
    def rx_fps(self) -> float:
        if self.intended_duration_s <= 0:
            return 0.0
        return self.rx_frames / self.intended_duration_s
