"""The result model: what one trial recorded and what a run reports, with units in names.

Two levels, on purpose:

* :class:`TrialRecord` is one line of ``trials.jsonl``: a :class:`TrialResult` exactly as
  the generator measured it (after the common validity rules), plus where it belongs (run,
  plan, frame size) and why it was run (its *role*). Every reported number is a function of
  these records and ``config.yaml`` (see :mod:`vsbench.results.recompute`).
* :class:`RunResults` > :class:`TestResult` > :class:`FrameSizeResult` >
  :class:`ReportedPoint` is ``results.json``: per testcase and frame size, one reported
  point per search goal (or one for a fixed-rate trial), each naming the trials it came
  from by ``trial_index``.
"""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np

from vsbench.results.rfc2889_model import Rfc2889Result

from vsbench.interfaces.traffic import (
    DirectionCounters,
    LatencyHistogram,
    PacingStats,
    ProbeRecords,
    TrialResult,
)

#: ``floor`` is the generator's own latency on a direct loop without the DUT
#: (:meth:`vsbench.interfaces.trafficgen.TrafficGenerator.measure_latency_floor`).
#: ``calibration`` is the unpaced trial that measures the generator's ceiling at a frame
#: size (:mod:`vsbench.measurement.ceiling`).
TrialRole = Literal["warmup", "search", "final", "continuous", "floor", "tcp", "calibration", "learning"]
TRIAL_ROLES: tuple[str, ...] = ("warmup", "search", "final", "continuous", "floor", "tcp", "calibration", "learning")
TRIAL_SCHEMA_ID = "vsbench.trial/1"
RESULTS_SCHEMA_ID = "vsbench.results/1"

Status = Literal["running", "complete", "failed", "interrupted", "not-run"]


@dataclass(frozen=True)
class TrialIdentity:
    """Where a trial belongs: the run, the plan (index into config.yaml ``plans``)."""

    run_id: str
    plan_index: int
    plan_label: str


@dataclass(frozen=True)
class TrialRecord:
    """One trial as persisted in ``trials.jsonl``.

    ``trial_index`` counts trials of the whole run from 0 in the order they ran (and the
    order of the lines on disk). ``result`` is the validity-checked trial; its
    ``invalid_reason`` is ``"; ".join(invalid_reasons)``. ``collectors`` holds what each
    collector measured around the trial (JSON-able, keyed by collector name).
    """

    identity: TrialIdentity
    trial_index: int
    role: str
    started_at: str  # ISO 8601, UTC
    latency_requested: bool
    result: TrialResult
    invalid_reasons: tuple[str, ...] = ()
    collectors: dict[str, Any] = field(default_factory=dict)
    #: What the trial cost the switch (``VSwitch.trial_end()``): CPU seconds, datapath
    #: counter deltas, starved busy-poller warnings; {} when the switch does not say.
    switch: dict[str, Any] = field(default_factory=dict)
    #: Warm-up trials only: the warm-up's plan and the flows it really covered
    #: (:func:`vsbench.measurement.warmup.coverage`); {} for every other trial.
    warmup: dict[str, Any] = field(default_factory=dict)
    #: Topologies with VNFs: each VNF's ``Vnf.trial_end()`` (``vnfs``: per-port counter
    #: deltas, CPU time) and, per generator direction, the loss of each stage it crossed
    #: (``stages``, :func:`vsbench.measurement.stages.attribute`); {} without a VNF.
    vnf: dict[str, Any] = field(default_factory=dict)

    @property
    def frame_size_bytes(self) -> int:
        return self.result.frame_size_bytes

    @property
    def valid(self) -> bool:
        return self.result.valid

    # -- serialisation -------------------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        r = self.result
        return {
            "schema": TRIAL_SCHEMA_ID,
            "run_id": self.identity.run_id,
            "trial_index": self.trial_index,
            "plan_index": self.identity.plan_index,
            "plan_label": self.identity.plan_label,
            "frame_size_bytes": r.frame_size_bytes,
            "role": self.role,
            "started_at": self.started_at,
            "latency_requested": self.latency_requested,
            "intended_load_fps": float(r.intended_load_fps),
            "intended_duration_s": float(r.intended_duration_s),
            "tx_frames": int(r.tx_frames),
            "rx_frames": int(r.rx_frames),
            "directions": [
                {
                    "tx_port": int(d.tx_port),
                    "rx_port": int(d.rx_port),
                    "tx_frames": int(d.tx_frames),
                    "rx_frames": int(d.rx_frames),
                }
                for d in r.directions
            ],
            "tx_duration_s": _opt_float(r.tx_duration_s),
            "effective_duration_s": _opt_float(r.effective_duration_s),
            "valid": bool(r.valid),
            "invalid_reasons": list(self.invalid_reasons),
            "probes": _probes_to_json(r.probes),
            "latency_histogram": _histogram_to_json(r.latency_histogram),
            "generator_stats": _jsonable(r.generator_stats),
            "collectors": _jsonable(self.collectors),
            "switch": _jsonable(self.switch),
            **({"burst_frames": int(r.burst_frames)} if r.burst_frames is not None else {}),
            **({"rx_wrong_frames": int(r.rx_wrong_frames)} if r.rx_wrong_frames is not None else {}),
            **({"rx_monitor_frames": int(r.rx_monitor_frames)} if r.rx_monitor_frames is not None else {}),
            **({"pacing": r.pacing.to_json()} if r.pacing is not None else {}),
            **({"invalid_kind": r.invalid_kind} if not r.valid and r.invalid_kind else {}),
            **({"warmup": _jsonable(self.warmup)} if self.warmup else {}),
            **({"vnf": _jsonable(self.vnf)} if self.vnf else {}),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "TrialRecord":
        probes = doc.get("probes")
        hist = doc.get("latency_histogram")
        reasons = tuple(doc.get("invalid_reasons") or ())
        result = TrialResult(
            intended_load_fps=float(doc["intended_load_fps"]),
            intended_duration_s=float(doc["intended_duration_s"]),
            frame_size_bytes=int(doc["frame_size_bytes"]),
            tx_frames=int(doc["tx_frames"]),
            rx_frames=int(doc["rx_frames"]),
            directions=tuple(DirectionCounters(**d) for d in doc.get("directions") or ()),
            tx_duration_s=doc.get("tx_duration_s"),
            effective_duration_s=doc.get("effective_duration_s"),
            probes=None
            if probes is None
            else ProbeRecords(
                sequence=np.asarray(probes["sequence"], dtype=np.int64),
                latency_ns=np.asarray(probes["latency_ns"], dtype=np.int64),
                sent=int(probes["sent"]),
            ),
            latency_histogram=None
            if hist is None
            else LatencyHistogram(
                bucket_lower_ns=list(hist["bucket_lower_ns"]),
                counts=list(hist["counts"]),
                min_ns=hist.get("min_ns"),
                max_ns=hist.get("max_ns"),
                mean_ns=hist.get("mean_ns"),
            ),
            valid=bool(doc["valid"]),
            invalid_reason="; ".join(reasons) if reasons else None,
            generator_stats=dict(doc.get("generator_stats") or {}),
            burst_frames=None if doc.get("burst_frames") is None else int(doc["burst_frames"]),
            rx_wrong_frames=None if doc.get("rx_wrong_frames") is None else int(doc["rx_wrong_frames"]),
            rx_monitor_frames=None if doc.get("rx_monitor_frames") is None else int(doc["rx_monitor_frames"]),
            pacing=None if doc.get("pacing") is None else PacingStats.from_json(doc["pacing"]),
            invalid_kind=None if doc.get("valid", True) else doc.get("invalid_kind"),
        )
        return cls(
            identity=TrialIdentity(doc["run_id"], int(doc["plan_index"]), doc["plan_label"]),
            trial_index=int(doc["trial_index"]),
            role=doc["role"],
            started_at=doc["started_at"],
            latency_requested=bool(doc.get("latency_requested", False)),
            result=result,
            invalid_reasons=reasons,
            collectors=dict(doc.get("collectors") or {}),
            switch=dict(doc.get("switch") or {}),
            warmup=dict(doc.get("warmup") or {}),
            vnf=dict(doc.get("vnf") or {}),
        )


@dataclass
class LatencyStats:
    """Simple one-way latency statistics of one trial's probe stream (or histogram).

    ``source`` says where they came from: ``probes`` (exact, per packet) or ``histogram``
    (the generator's own min/mean/max, else bucket edges).
    """

    source: str
    samples: int
    min_ns: float | None
    avg_ns: float | None
    max_ns: float | None
    probes_sent: int | None = None


@dataclass
class ReportedPoint:
    """One reported figure of a frame size: a search goal's throughput or a fixed rate.

    For ``rfc2544_throughput``: ``throughput_fps`` is the goal's lower bound (the highest
    load classified as passing), ``trial_index`` the trial at that load and
    ``offered_load_fps`` equals ``throughput_fps``. For ``continuous``: ``offered_load_fps``
    is the configured rate and ``throughput_fps`` the measured forwarding rate (RX).
    Mbps and % of line rate are of ``throughput_fps``; ``loss_ratio``, ``tx_fps`` and
    ``rx_fps`` are those of trial ``trial_index``. ``latency`` comes from trial
    ``latency_trial_index``.
    """

    name: str
    goal_loss_ratio: float | None = None
    goal_exceed_ratio: float | None = None
    throughput_fps: float | None = None
    throughput_l1_mbps: float | None = None
    throughput_l2_mbps: float | None = None
    line_rate_percent: float | None = None
    offered_load_fps: float | None = None
    tx_fps: float | None = None
    rx_fps: float | None = None
    loss_ratio: float | None = None
    trial_index: int | None = None
    valid: bool | None = None
    #: Trial ``trial_index`` is invalid for how it was sent, yet the search measured by it,
    #: so ``valid`` is True and this says how: ``disturbed`` (every frame in its time but
    #: unevenly -- a host task preempted the sender -- and it met the goal) or ``late``
    #: (every frame, over longer than asked: filed at a load at or below the rate it
    #: delivered). None for a valid trial.
    sending_caveat: str | None = None
    lower_bound_fps: float | None = None
    upper_bound_fps: float | None = None
    upper_bound_trial_index: int | None = None
    conditional_throughput_fps: float | None = None
    regular: bool | None = None
    irregular_reason: str | None = None
    latency: LatencyStats | None = None
    latency_trial_index: int | None = None
    # -- search statistics behind the bounds (multi-goal search; n=1 in binary modes) --
    lower_bound_trials: int | None = None
    lower_bound_bad: int | None = None
    upper_bound_trials: int | None = None
    upper_bound_bad: int | None = None
    relative_width: float | None = None
    confirmed_fps: float | None = None
    #: Spread over whole-search repetitions (``search.repetitions`` > 1), else None.
    repetitions: dict[str, Any] | None = None
    #: What the switch spent forwarding at trial ``trial_index``
    #: (:func:`vsbench.results.summary.efficiency`): switch_cpu_s, switch_cores, fps_per_core.
    efficiency: dict[str, Any] | None = None
    #: The switch's datapath counters over trial ``trial_index`` (cache hits, upcalls,
    #: lookups, offloaded flows), as the switch reported them.
    datapath: dict[str, Any] | None = None
    #: The full latency summary of trial ``latency_trial_index``
    #: (:func:`vsbench.results.summary.latency_summary`).
    latency_summary: dict[str, Any] | None = None
    #: ``throughput_fps`` x the deployment's switching operations (ONP 2.1 section 5.2):
    #: the frames the switch forwarded per second, comparable across p2p/pvp/pvvp.
    switched_fps: float | None = None
    #: Topologies with VNFs: the VNFs' own counters at trial ``trial_index`` beside the
    #: generator's and the loss of each stage (:func:`vsbench.results.summary.vnf_figures`).
    vnf: dict[str, Any] | None = None
    #: The run's CPU plan placed more busy-polling threads than there are CPUs (or one was
    #: starved): the figure measures contention, not the DUT's capacity.
    cpu_oversubscribed: bool | None = None
    #: CPU time of each thread of the switch and of the VNFs at trial ``trial_index``
    #: (:func:`vsbench.results.summary.thread_cpu`).
    thread_cpu: list[dict[str, Any]] | None = None
    #: The goal's lower bound is the search's max_load and that was the generator's
    #: measured ceiling: the device forwarded all the generator could send, so the figure is
    #: a lower bound of the device's (``FrameSizeResult.generator_ceiling_fps``).
    at_generator_ceiling: bool = False
    #: The search ran out of its time budget before its final test passed any load: the
    #: throughput is the best load an earlier, shorter stage passed -- a provisional lower
    #: bound (``irregular_reason`` says from which trials), never nothing.
    lower_bound_provisional: bool = False
    #: A frame mix (``FrameSizeResult.frame_mix``): the point per size -- each size's share
    #: of the frames, its fps and bit/s at ``throughput_fps``, frames of it sent in trial
    #: ``trial_index`` and received where the generator counted them
    #: (:mod:`vsbench.results.frame_mix_figures`). None for a single frame size.
    per_size: list[dict[str, Any]] | None = None


@dataclass
class GeneratorFloor:
    """The generator's own one-way latency without the DUT -- its floor -- at one frame size.

    The same probe stream as the latency trials, sent over a direct loop between the
    generator's own ports (``loop`` says which), in trial ``trial_index`` (role ``floor``)
    before the frame size's latency trials. It is reported beside every latency figure: a
    latency near the floor says the generator, not the DUT, dominates it. It is never
    subtracted (distributions do not subtract). Percentiles are null when too few samples
    back them, as for every latency summary.

    ``measured`` False: ``reason`` says why (switched off with ``latency.generator_floor:
    false``, the generator has no such path, or the measurement failed).
    """

    measured: bool
    reason: str | None = None
    trial_index: int | None = None
    loop: str | None = None
    samples: int | None = None
    probes_sent: int | None = None
    min_ns: float | None = None
    mean_ns: float | None = None
    p50_ns: float | None = None
    p99_ns: float | None = None
    max_ns: float | None = None


@dataclass
class LatencyPoint:
    """One latency trial after the search: at ``fraction`` of goal ``reference``'s
    throughput (``load_fps`` = fraction x throughput; 0 = probes only).

    ``generator_floor`` is the generator's own latency at this frame size without the DUT
    (the frame size's :class:`GeneratorFloor`), so every latency figure carries it.
    ``valid`` is the trial's: False when the generator could not send the load as asked
    (``invalid_reason``), so the figures were not measured at ``load_fps``.
    """

    label: str
    reference: str
    fraction: float
    load_fps: float
    trial_index: int
    latency: LatencyStats | None = None
    summary: dict[str, Any] | None = None
    loss_ratio: float | None = None
    generator_floor: GeneratorFloor | None = None
    valid: bool = True
    invalid_reason: str | None = None

    def caveat(self) -> str | None:
        """One line for an invalid point (the run's notes, the terminal), else None."""
        if self.valid:
            return None
        return (f"latency '{self.label}' (trial {self.trial_index}) is not the latency at {self.load_fps:,.0f} fps: "
                f"the generator did not send that load as asked ({self.invalid_reason})")


@dataclass
class BurstPoint:
    """One burst trial (traffic types ``burst`` and ``back2back``): ``burst_frames`` asked,
    sent and received, and the rate the burst really went out at (``tx_frames`` over the
    generator's sending time ``send_time_s``)."""

    trial_index: int
    burst_frames: int
    tx_frames: int
    rx_frames: int
    lost_frames: int
    loss_ratio: float | None
    send_time_s: float | None
    burst_rate_fps: float | None
    valid: bool
    latency: LatencyStats | None = None


@dataclass
class Back2BackRepetition:
    """One complete burst-length search: the longest burst with zero loss in every trial of
    its length (``frames``; 0 when even the shortest lost frames) and its trials."""

    frames: int
    trial_indices: list[int] = field(default_factory=list)


@dataclass
class Back2BackResult:
    """Back-to-back frames of RFC 2544 section 26.4 as updated by RFC 9004.

    ``frames_avg`` is the benchmark: the average over ``repetitions`` complete searches of
    the longest zero-loss burst. ``implied_buffer_time_s`` = frames_avg /
    ``max_rate_fps``; ``corrected_buffer_time_s`` = (1 / max_rate) x (frames_avg -
    frames_avg / max_rate x ``throughput_fps``), the frames the DUT forwarded during the
    burst removed (RFC 9004 section 5). ``max_rate_source`` says what stood for the max
    theoretical frame rate: ``achieved_burst_rate`` (the mean rate the valid bursts went out
    at) or ``nominal_line_rate``. ``bursts_at_line_rate`` False: the bursts were slower
    than the nominal line rate (RFC 9004 asks for bursts at the max theoretical rate).
    ``bounded`` False: the longest burst tried (``max_frames``) never lost a frame, so the
    figure is a lower bound.
    """

    frames_avg: float | None
    frames_min: int | None
    frames_max: int | None
    frames_stdev: float | None
    repetitions: list[Back2BackRepetition]
    trials_per_length: int
    max_frames: int
    resolution_frames: int
    bounded: bool
    burst_rate_fps: float | None
    nominal_line_rate_fps: float | None
    bursts_at_line_rate: bool | None
    max_rate_fps: float | None
    max_rate_source: str
    throughput_fps: float | None
    throughput_source: str | None
    implied_buffer_time_s: float | None
    corrected_buffer_time_s: float | None


@dataclass
class SweepStep:
    """One step of a ``load_sweep``: ``percent`` of ``FrameSizeResult.sweep_reference_fps``
    offered for one trial (``trial_index``)."""

    percent: float
    offered_load_fps: float
    tx_fps: float
    rx_fps: float
    loss_ratio: float | None
    lost_frames: int
    trial_index: int
    valid: bool
    latency: LatencyStats | None = None


@dataclass
class TcpPoint:
    """A TCP workload (traffic type ``tcp``), from its median run (``trial_index``) of
    ``runs`` (``trial_indices``; ``gbps_runs`` their goodputs).

    ``gbps`` is TCP payload received per second (both ways summed when bidirectional);
    ``retransmits`` the senders' retransmitted segments; ``sender_cpu_percent`` and
    ``receiver_cpu_percent`` the endpoint processes' CPU (percent of one CPU);
    ``switch_cores`` what the switch consumed over the run (its threads, or softirq for a
    kernel datapath); ``cores`` the three together and ``cores_per_gbps`` that over the
    goodput -- report 5's "CPU per Gbit/s"; ``rtt_*_us`` the connections' smoothed RTTs
    under this load. ``options`` are the endpoint options the run had (streams, MTU, TSO,
    GSO, GRO, clients). ``cpu_oversubscribed``: the CPU plan had more busy pollers than CPUs.
    With several clients sending to one server at once (``tcp.clients``), ``gbps``,
    ``retransmits`` and the endpoints' CPU are their sums, and ``client_gbps`` /
    ``client_retransmits`` each client's own, in client order (empty for one client).
    ``interface_drops``: packets the endpoints' own interfaces dropped (a tap's queue that
    overflowed), where the generator counts them."""

    trial_index: int
    gbps: float
    retransmits: int | None
    sender_cpu_percent: float | None
    receiver_cpu_percent: float | None
    switch_cores: float | None
    cores: float | None
    cores_per_gbps: float | None
    rtt_min_us: float | None = None
    rtt_mean_us: float | None = None
    rtt_max_us: float | None = None
    options: dict[str, Any] = field(default_factory=dict)
    trial_indices: list[int] = field(default_factory=list)
    gbps_runs: list[float] = field(default_factory=list)
    cpu_oversubscribed: bool | None = None
    client_gbps: list[float] = field(default_factory=list)
    client_retransmits: list[int | None] = field(default_factory=list)
    #: Packets the endpoints' interfaces dropped during the run, both directions (None:
    #: the generator did not say).
    interface_drops: int | None = None


@dataclass
class FrameSizeResult:
    """Everything reported for one testcase × frame size.

    ``nominal_line_rate_fps`` is aggregate over the sending ports at their link speed
    (:attr:`link_speed_source`); ``max_load_fps`` the upper
    limit the search used. ``trial_count``/``trial_seconds`` cover every trial of this
    frame size (warm-up, search, final), ``trial_seconds`` summing intended durations and
    ``effective_seconds`` the wall time the generator reported where it did.
    """

    frame_size_bytes: int
    status: str = "running"
    nominal_line_rate_fps: float | None = None
    max_load_fps: float | None = None
    min_load_fps: float | None = None
    points: list[ReportedPoint] = field(default_factory=list)
    trial_count: int = 0
    invalid_trial_count: int = 0
    trial_seconds: float = 0.0
    effective_seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    error: str | None = None
    # -- search and latency follow-ups (present-if-present for older readers) --
    search_mode: str | None = None
    #: The max_load the search started with (before any generator-limited lowering).
    search_max_load_fps: float | None = None
    #: The search took that max_load for an estimate (the generator's calibrated ceiling:
    #: no retry of a limited trial at a load not yet delivered). Absent in older results,
    #: whose searches always retried: the replay reads it as False.
    search_max_load_is_estimate: bool = False
    #: The rules the search ran under (``SearchConfig.revision``); None when no search ran.
    #: Absent in older results, which the replay reads as revision 1.
    search_revision: int | None = None
    #: True when the generator could not deliver and max_load was lowered to ``max_load_fps``.
    generator_limited: bool = False
    #: The generator's own ceiling at this frame size (unpaced rate of the slower of its
    #: calibration bursts, trial ``generator_ceiling_trial``), measured once per run; None when not
    #: measured. ``max_load_is_ceiling``: the search's max_load was that ceiling (times
    #: ``traffic.generator_ceiling_share``), so a goal at max_load is a lower bound.
    generator_ceiling_fps: float | None = None
    generator_ceiling_trial: int | None = None
    max_load_is_ceiling: bool = False
    latency_points: list[LatencyPoint] = field(default_factory=list)
    #: The generator's own latency without the DUT at this frame size; None when no latency
    #: was measured (else measured or said why not).
    generator_floor: GeneratorFloor | None = None

    #: Traffic types beside throughput (present-if-present): ``back2back`` and ``burst``
    #: bursts, the back-to-back benchmark, the load sweep's steps and what 100% was.
    bursts: list[BurstPoint] = field(default_factory=list)
    back2back: Back2BackResult | None = None
    #: Encapsulated profiles (op2p): the frame size on the tunnel link (``frame_size_bytes``
    #: is the inner frame's) and the frames that arrived other than the DUT should have
    #: delivered them over every trial of this frame size (None: nothing was verified).
    outer_frame_size_bytes: int | None = None
    rx_wrong_frames: int | None = None
    #: RFC 2889 traffic types (``rfc2889_*``): forwarding rate, learning rate or caching
    #: capacity (:mod:`vsbench.results.rfc2889_model`); None otherwise.
    rfc2889: Rfc2889Result | None = None
    #: Frame modification (``dut.frame_modification``): the size frames arrive at after the
    #: DUT modified them (a pushed VLAN tag: 4 B more); rates and bit rates stay those of
    #: ``frame_size_bytes``, the frames sent. None without a modification.
    received_frame_size_bytes: int | None = None
    #: Traffic type ``tcp``: the TCP workload's figures (None for frame trials).
    tcp: TcpPoint | None = None
    #: A noisy neighbour's (``load:``) load measured over this frame size's trials:
    #: per loaded CPU the CPU seconds of stress-ng's processes over the trials' wall time
    #: (:func:`vsbench.runner.noisy_load.aggregate`); None without a load.
    load: dict[str, Any] | None = None
    sweep: list[SweepStep] = field(default_factory=list)
    sweep_reference_fps: float | None = None
    #: What the line rate rests on (present-if-present): ``port`` -- every sending port's
    #: own speed (``link_speeds_bps``, ethtool or the generator's port), ``nominal`` --
    #: ``testbed.link_gbps`` (a veth has no speed), with ``link_speed_reason`` saying why
    #: or what reported the speeds. None in older results: nominal.
    link_speed_source: str | None = None
    link_speeds_bps: list[float] | None = None
    link_speed_reason: str | None = None
    #: A weighted frame-size mix (IMIX) measured as one load: ``name``, ``sizes_bytes``,
    #: ``weights``, ``mean_frame_size_bytes`` (what every bit rate and the line rate of
    #: this entry are computed with) and ``cycle_bytes`` (the sizes in sending order).
    #: ``frame_size_bytes`` is then the mix's mean rounded, the key results are filed
    #: under. None (absent in older results): every frame was ``frame_size_bytes``.
    frame_mix: dict[str, Any] | None = None

    @property
    def primary(self) -> ReportedPoint | None:
        return self.points[0] if self.points else None

    def latency_trial_of(self, point: ReportedPoint) -> LatencyPoint | None:
        """The latency trial ``point``'s latency figures come from (its validity says
        whether they may be plotted), None when it has none recorded."""
        return next((lp for lp in self.latency_points if lp.trial_index == point.latency_trial_index), None)


@dataclass
class StepResult:
    """One step of an integration testcase (``deployment: clean``) as it ran."""

    index: int
    kind: str
    label: str
    #: passed | failed (a check did not hold) | error (the step could not be done) |
    #: skipped (the switch cannot do it) | not-run (an earlier step ended the test)
    status: str
    name: str | None = None
    duration_s: float = 0.0
    detail: str = ""
    #: The step's result fields (``${name.field}``), e.g. tx_frames/rx_frames.
    values: dict[str, Any] = field(default_factory=dict)


@dataclass
class TestResult:
    """One plan (testcase × matrix assignment) of the run."""

    __test__ = False  # not a pytest test class

    plan_index: int
    label: str
    testcase: str
    description: str = ""
    variant: dict[str, Any] = field(default_factory=dict)
    deployment: str = ""
    #: Bridges a frame crosses (a mean over lanes of different lengths: pvp topology.lane_vnfs).
    switching_operations: int | float | None = None
    vswitch: str = ""
    trafficgen: str = ""
    traffic_type: str = ""
    link_gbps: float | None = None
    bidirectional: bool = True
    flows: int = 1
    status: str = "not-run"
    error: str | None = None
    notes: list[str] = field(default_factory=list)
    frame_sizes: list[FrameSizeResult] = field(default_factory=list)
    #: The deployment's shape: ``topology``, ``vnf_count``, ``vnf_port_kind``, ``paths``...
    topology: dict[str, Any] | None = None
    #: The VNF plugin ("" or ``none``: no VNF).
    vnf: str = ""
    #: Where every busy-polling thread runs (:func:`vsbench.runner.placement.cpu_plan`).
    cpu_plan: dict[str, Any] | None = None
    #: True when the CPU plan puts more busy pollers than CPUs (or they share): every
    #: figure of this test measures CPU contention.
    cpu_oversubscribed: bool | None = None
    #: ``{"index": i, "count": K}``: the i-th of K repeats (``--repeat K``); None otherwise.
    #: Repeats share the label; comparisons take their median and spread.
    repeat: dict[str, int] | None = None
    #: An integration testcase's steps, in order (empty for a performance test).
    steps: list[StepResult] = field(default_factory=list)
    #: The noisy neighbour asked for (``load:``): tool, pattern, CPUs and why, pids;
    #: None without one (:meth:`vsbench.runner.noisy_load.NoisyLoad.describe`).
    load: dict[str, Any] | None = None


@dataclass
class RunResults:
    run_id: str
    started_at: str
    vsbench_version: str
    finished_at: str | None = None
    status: str = "running"
    tests: list[TestResult] = field(default_factory=list)
    #: The user's ``--tag KEY=VALUE`` labels (:mod:`vsbench.results.run_tags`), verbatim.
    tags: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        doc = dataclasses.asdict(self)
        return {"schema": RESULTS_SCHEMA_ID, **_jsonable(doc)}

    @classmethod
    def from_json(cls, doc: dict[str, Any]) -> "RunResults":
        """The model of a results.json document, the inverse of :meth:`to_json`, so what a
        run printed at its end can be printed again from its files (``vsbench show``).
        Read present-if-present: a field an older file lacks takes its default, one a newer
        file adds is ignored."""
        return _from_plain(cls, doc)


# -- helpers -------------------------------------------------------------------------------


def _opt_float(value: float | None) -> float | None:
    return None if value is None else float(value)


def _probes_to_json(probes: ProbeRecords | None) -> dict[str, Any] | None:
    if probes is None:
        return None
    return {
        "sent": int(probes.sent),
        "sequence": np.asarray(probes.sequence, dtype=np.int64).tolist(),
        "latency_ns": np.asarray(probes.latency_ns, dtype=np.int64).tolist(),
    }


def _histogram_to_json(hist: LatencyHistogram | None) -> dict[str, Any] | None:
    if hist is None:
        return None
    return {
        "bucket_lower_ns": [int(x) for x in hist.bucket_lower_ns],
        "counts": [int(x) for x in hist.counts],
        "min_ns": _opt_float(hist.min_ns),
        "max_ns": _opt_float(hist.max_ns),
        "mean_ns": _opt_float(hist.mean_ns),
    }


def _from_plain(kind: Any, value: Any) -> Any:
    """``value`` (plain JSON) as type ``kind``: dataclasses field by field (by their type
    hints), lists and dicts element by element, ``X | None`` as X when not None."""
    if value is None:
        return None
    origin = typing.get_origin(kind)
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(kind) if a is not type(None)]
        return _from_plain(options[0], value) if len(options) == 1 else value
    if origin is list and isinstance(value, list):
        (item,) = typing.get_args(kind) or (Any,)
        return [_from_plain(item, v) for v in value]
    if dataclasses.is_dataclass(kind) and isinstance(value, dict):
        hints = typing.get_type_hints(kind)
        known = {f.name: f for f in dataclasses.fields(kind) if f.init}
        args = {name: _from_plain(hints[name], value[name]) for name in known if name in value}
        for name, f in known.items():  # an older file's missing required field: unknown
            if name not in args and f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING:
                args[name] = None
        return kind(**args)
    return value


def _jsonable(value: Any) -> Any:
    """Plain JSON types from dicts/lists/tuples/numpy scalars and arrays (NaN -> None)."""
    if isinstance(value, dict):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist())
    if isinstance(value, np.generic):
        return _jsonable(value.item())
    if isinstance(value, float) and not math.isfinite(value):  # JSON has no NaN/inf
        return None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _jsonable(dataclasses.asdict(value))
    return value
