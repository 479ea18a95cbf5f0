"""Run one trial the way every trial of a run is run: measure, judge, persist, report.

``generator.run_trial`` -> common validity rules (:mod:`vsbench.measurement.validity`,
against what was asked: a plugin's result is third-party data) ->
one line appended to ``trials.jsonl`` and fsync-ed -> progress callback. Only then does
the caller (a search, a fixed-rate test) see the result, so no trial that influenced a
decision can be missing from disk (DESIGN.md principle 4).

The search engine gets :meth:`TrialRunner.trial_fn`, a plain ``(load_fps, duration_s) ->
TrialResult`` callable; it never learns about files or terminals.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

import numpy as np

from vsbench.interfaces.collector import Collector
from vsbench.interfaces.plugin import DutGoneError
from vsbench.interfaces.traffic import MIN_FRAME_SIZE_BYTES, TrialResult
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.interfaces.vnf import Vnf
from vsbench.interfaces.vswitch import VSwitch
from vsbench.measurement import stages, validity
from vsbench.measurement.stages import TrafficPath
from vsbench.measurement import warmup as warmups
from vsbench.measurement.warmup import WarmupPlan
from vsbench.results.model import TRIAL_ROLES, TrialIdentity, TrialRecord
from vsbench.results.trial_log import TrialLog
from vsbench.system.deadline import DeadlineExceeded

log = logging.getLogger(__name__)

TrialListener = Callable[[TrialRecord], None]

#: What a TCP run's record keeps of each client when several ran at once (beside ``gbps``).
CLIENT_FIELDS = ("duration_s", "sent_bytes", "received_bytes", "streams", "retransmits", "sender_cpu_percent",
                 "receiver_cpu_percent", "rtt_mean_us")


def utc_now_iso() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


class TrialSink:
    """The run-wide end of every trial: numbers it, makes it durable, tells listeners.

    One per run, shared by every plan, so ``trial_index`` is unique in the run and equals
    the record's line number in ``trials.jsonl`` (0-based).
    """

    def __init__(self, trial_log: TrialLog, listeners: Sequence[TrialListener] = ()) -> None:
        self.trial_log = trial_log
        self.listeners: list[TrialListener] = list(listeners)
        self.next_index = 0
        self.records: list[TrialRecord] = []

    def record(
        self,
        identity: TrialIdentity,
        role: str,
        result: TrialResult,
        verdict: validity.Verdict,
        *,
        started_at: str,
        latency_requested: bool,
        collectors: dict[str, Any],
        switch: dict[str, Any] | None = None,
        warmup: dict[str, Any] | None = None,
        vnf: dict[str, Any] | None = None,
    ) -> TrialRecord:
        rec = TrialRecord(
            identity=identity,
            trial_index=self.next_index,
            role=role,
            started_at=started_at,
            latency_requested=latency_requested,
            result=result,
            invalid_reasons=verdict.reasons,
            collectors=collectors,
            switch=dict(switch or {}),
            warmup=dict(warmup or {}),
            vnf=dict(vnf or {}),
        )
        self.trial_log.append(rec)  # durable before anybody acts on it
        self.next_index += 1
        self.records.append(rec)
        for listener in self.listeners:
            try:
                listener(rec)
            except Exception:  # noqa: BLE001 - a display problem must not lose a run
                log.exception("trial listener failed")
        return rec


class TrialRunner:
    """Runs trials of one plan through its generator into the run's :class:`TrialSink`."""

    def __init__(
        self,
        generator: TrafficGenerator,
        sink: TrialSink,
        identity: TrialIdentity,
        collectors: Sequence[Collector] = (),
        vswitch: VSwitch | None = None,
        vnfs: Sequence[Vnf] = (),
        paths: Sequence[TrafficPath] = (),
    ) -> None:
        self.generator = generator
        self.vswitch = vswitch
        self.vnfs = list(vnfs)
        self.paths = list(paths)
        self.sink = sink
        self.identity = identity
        self.collectors = list(collectors)
        self.records: list[TrialRecord] = []
        #: The frame size of the profile the generator is configured with (set by the
        #: runner per profile): what every trial is checked to echo.
        self.frame_size_bytes: int | None = None

    def run(
        self, load_fps: float, duration_s: float, *, role: str, latency: bool = False,
        warmup: WarmupPlan | None = None,
    ) -> TrialRecord:
        """One trial at aggregate ``load_fps`` for ``duration_s``; durable when returned.

        A warm-up trial passes its ``warmup`` plan: what it covered is written with it."""
        if role not in TRIAL_ROLES:
            raise ValueError(f"unknown trial role {role!r}")
        asked = validity.Asked(float(load_fps), float(duration_s), self.frame_size_bytes)
        rec = self._measure(
            "run_trial", lambda: self.generator.run_trial(float(load_fps), float(duration_s), latency=latency),
            asked, role=role, latency=latency, sample_switch=True, warmup=warmup)
        if not rec.result.valid:
            log.info("trial at %.0f fps invalid: %s", load_fps, rec.result.invalid_reason)
        return rec

    def run_tcp(self, spec: Any) -> TrialRecord:
        """One TCP workload run (:meth:`TrafficGenerator.run_tcp`, role ``tcp``) between the
        switch's samples; durable when returned. A TCP run offers no load and counts no
        frames: what the endpoints measured is the record's ``generator_stats["tcp"]``
        (with several clients, each client's figures in its ``clients`` list)."""
        asked = validity.Asked(0.0, float(spec.duration_s), self.frame_size_bytes)

        def measure() -> TrialResult:
            tcp = self.generator.run_tcp(spec)
            doc = {k: getattr(tcp, k) for k in ("duration_s", "sent_bytes", "received_bytes", "streams", "retransmits",
                                                "sender_cpu_percent", "receiver_cpu_percent", "rtt_min_us",
                                                "rtt_mean_us", "rtt_max_us")}
            doc.update(gbps=tcp.gbps, stats=dict(tcp.stats), spec=dataclasses.asdict(spec))
            if tcp.clients:  # several clients at once: each one's own figures beside the sums
                doc["clients"] = [{**{k: getattr(c, k) for k in CLIENT_FIELDS}, "gbps": c.gbps} for c in tcp.clients]
            return TrialResult(intended_load_fps=0.0, intended_duration_s=float(spec.duration_s),
                               frame_size_bytes=self.frame_size_bytes, tx_frames=0, rx_frames=0,
                               generator_stats={"tcp": doc})

        return self._measure("run_tcp", measure, asked, role="tcp", latency=False, sample_switch=True)

    def _measure(self, call: str, measure: Callable[[], Any], asked: validity.Asked, *, role: str,
                 latency: bool, sample_switch: bool, warmup: WarmupPlan | None = None) -> TrialRecord:
        """Run ``measure`` (one generator call) between the samples, judge, persist.

        What the generator returns is checked before anything reads it: something that is
        not a :class:`TrialResult` is recorded as an inconsistent trial (zero counters) and
        the run goes on; a call that misses its deadline is recorded as an invalid trial
        with the reason, then the :class:`DeadlineExceeded` goes on up (the run ends)."""
        started_at = utc_now_iso()
        if sample_switch:
            self._switch_begin()
            self._vnf_begin()
        self._begin_collectors()
        t0 = time.monotonic()
        missed: DeadlineExceeded | None = None
        try:
            # a trial that raises leaves the switch's 'before' sample; the next trial_begin replaces it
            result = measure()
        except DeadlineExceeded as exc:
            missed = exc
            result = None
        wall_s = time.monotonic() - t0
        collected = self._end_collectors()
        vnf = self._vnf_end(result if isinstance(result, TrialResult) else None) if sample_switch else {}
        switch = self._switch_end() if sample_switch else {}
        if missed is not None or not isinstance(result, TrialResult):
            reason = (f"{validity.DEADLINE}: {missed}" if missed is not None else
                      f"{validity.INCONSISTENT}: {call} returned {type(result).__name__}, not a TrialResult")
            checked, verdict = self._placeholder(asked, reason, wall_s), validity.Verdict((reason,))
        else:
            if result.effective_duration_s is None:
                # The wall time the trial cost, so time budgets and reports see the overhead.
                result = dataclasses.replace(result, effective_duration_s=wall_s)
            if asked.burst_frames is not None and result.burst_frames is None:
                result = dataclasses.replace(result, burst_frames=asked.burst_frames)
            checked, verdict = validity.apply(result, asked)
            if validity.INCONSISTENT in verdict.tags:
                checked = _recordable(checked, asked)
        rec = self.sink.record(
            self.identity,
            role,
            checked,
            verdict,
            started_at=started_at,
            latency_requested=latency,
            collectors=collected,
            switch=switch,
            warmup=None if warmup is None else warmups.coverage(warmup, checked),
            vnf=vnf,
        )
        self.records.append(rec)
        if missed is not None:
            raise missed
        return rec

    def _placeholder(self, asked: validity.Asked, reason: str, wall_s: float) -> TrialResult:
        """The record of a trial whose result cannot be used: what was asked, nothing
        counted, invalid with ``reason``."""
        return TrialResult(
            intended_load_fps=float(asked.load_fps or 0.0),
            intended_duration_s=float(asked.duration_s or 0.0),
            frame_size_bytes=int(asked.frame_size_bytes or 0),
            tx_frames=0,
            rx_frames=0,
            effective_duration_s=wall_s,
            valid=False,
            invalid_reason=reason,
            invalid_kind=validity.INVALID_UNTRUSTED,
            burst_frames=asked.burst_frames,
        )

    def trial_fn(self, role: str = "search", latency: bool = False) -> Callable[[float, float], TrialResult]:
        """A ``(load_fps, duration_s) -> TrialResult`` callable for the search engine."""

        def trial(load_fps: float, duration_s: float) -> TrialResult:
            return self.run(load_fps, duration_s, role=role, latency=latency).result

        return trial

    def run_floor(self, duration_s: float) -> TrialRecord:
        """The generator's own latency on a direct loop (role ``floor``); durable when returned.

        :meth:`TrafficGenerator.measure_latency_floor` sends the probe stream past the DUT,
        so the switch's statistics are not sampled (they would describe an idle switch as
        if it had been measured); collectors run as for any trial. The same validity rules
        apply: a floor the generator says it could not measure as asked is marked invalid.
        """
        asked = validity.Asked(0.0, float(duration_s), self.frame_size_bytes)
        return self._measure("measure_latency_floor", lambda: self.generator.measure_latency_floor(float(duration_s)),
                             asked, role="floor", latency=True, sample_switch=False)

    def record_of(self, result: TrialResult) -> TrialRecord | None:
        """The record of a result this runner returned (by identity), or None."""
        for rec in reversed(self.records):
            if rec.result is result:
                return rec
        return None

    # -- the switch's cost ----------------------------------------------------------------

    def _switch_begin(self) -> None:
        if self.vswitch is None:
            return
        try:
            self.vswitch.trial_begin()
        except Exception as exc:  # noqa: BLE001 - a statistics probe must not cost the trial
            if dut_gone(exc):
                raise  # ...but a dead switch costs the plan
            log.warning("vswitch %s: trial_begin failed: %s", self.vswitch.name, exc)

    def _switch_end(self) -> dict[str, Any]:
        if self.vswitch is None:
            return {}
        try:
            return dict(self.vswitch.trial_end() or {})
        except Exception as exc:  # noqa: BLE001
            if dut_gone(exc):
                raise
            log.warning("vswitch %s: trial_end failed: %s", self.vswitch.name, exc)
            return {"error": str(exc)}

    # -- the VNFs' counters ---------------------------------------------------------------

    def _vnf_begin(self) -> None:
        for vnf in self.vnfs:
            try:
                vnf.trial_begin()
            except Exception as exc:  # noqa: BLE001 - a statistics probe must not cost the trial
                if dut_gone(exc):
                    raise  # ...but a dead VNF costs the plan (else its 100 % loss is a "result")
                log.warning("vnf %s: trial_begin failed: %s", vnf.name, exc)

    def _vnf_end(self, result: TrialResult | None) -> dict[str, Any]:
        """Each VNF's ``trial_end()`` and, per generator direction, the loss of each stage
        (switch pass or VNF) from the VNFs' port counters and the generator's."""
        if not self.vnfs:
            return {}
        docs: list[dict[str, Any]] = []
        for index, vnf in enumerate(self.vnfs):
            try:
                doc = dict(vnf.trial_end() or {})
            except Exception as exc:  # noqa: BLE001
                if dut_gone(exc):
                    raise
                log.warning("vnf %s: trial_end failed: %s", vnf.name, exc)
                doc = {"error": str(exc)}
            docs.append({"index": index, "name": vnf.name, **doc})
        counters = [{int(p["port"]): p for p in doc.get("ports") or ()} for doc in docs]
        directions = [{"tx_port": d.tx_port, "rx_port": d.rx_port, "tx_frames": d.tx_frames,
                       "rx_frames": d.rx_frames} for d in (result.directions if result is not None else ())]
        if result is not None and result.probes is not None and directions:
            # the latency probes cross the VNFs too but are not in the bulk counters
            directions[0]["probe_frames"] = (int(result.probes.sent), int(len(result.probes.sequence)))
        return {"vnfs": docs, "stages": stages.attribute(directions, counters, self.paths)}

    # -- collectors ----------------------------------------------------------------------

    def _begin_collectors(self) -> None:
        for collector in self.collectors:
            try:
                collector.begin()
            except Exception as exc:  # noqa: BLE001 - a collector must not cost the trial
                log.warning("collector %s: begin failed: %s", collector.name, exc)

    def _end_collectors(self) -> dict[str, Any]:
        collected: dict[str, Any] = {}
        for collector in self.collectors:
            try:
                collected[collector.name or type(collector).__name__] = collector.end()
            except Exception as exc:  # noqa: BLE001
                log.warning("collector %s: end failed: %s", collector.name, exc)
                collected[collector.name or type(collector).__name__] = {"error": str(exc)}
        return collected

    # -- bursts ----------------------------------------------------------------------------

    def run_burst(
        self, frames: int, *, role: str, rate_fps: float | None = None, latency: bool = False
    ) -> TrialRecord:
        """One burst of ``frames`` frames (:meth:`TrafficGenerator.run_burst`), unpaced when
        ``rate_fps`` is None; measured, judged and made durable exactly as :meth:`run` does."""
        if role not in TRIAL_ROLES:
            raise ValueError(f"unknown trial role {role!r}")
        asked = validity.Asked(rate_fps, None, self.frame_size_bytes, burst_frames=int(frames))
        rec = self._measure("run_burst", lambda: self.generator.run_burst(int(frames), rate_fps=rate_fps, latency=latency),
                            asked, role=role, latency=latency, sample_switch=True)
        if not rec.result.valid:
            log.info("burst of %d frames invalid: %s", frames, rec.result.invalid_reason)
        return rec


def _whole(value: Any) -> int | None:
    """``value`` as a count of frames, if it is one (a non-negative whole number)."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 0:
        return None
    return int(value)


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)):
        return None
    value = float(value)
    return value if math.isfinite(value) and value >= 0 else None


def _recordable(result: TrialResult, asked: validity.Asked) -> TrialResult:
    """An inconsistent result in a form every output can hold (trials.jsonl's schema):
    the asked load, duration and frame size; the counters where they are whole
    non-negative numbers (else 0); and what the plugin reported, verbatim, in
    ``generator_stats["reported"]`` -- nothing of it is lost, and nothing of it is used."""
    reported = {name: repr(getattr(result, name)) for name in (
        "intended_load_fps", "intended_duration_s", "frame_size_bytes", "tx_frames", "rx_frames",
        "directions", "tx_duration_s", "effective_duration_s")}
    size = asked.frame_size_bytes
    if size is None:
        size = result.frame_size_bytes if _whole(result.frame_size_bytes) else MIN_FRAME_SIZE_BYTES
    directions = tuple(d for d in result.directions
                       if _whole(d.tx_frames) is not None and _whole(d.rx_frames) is not None)
    stats = dict(result.generator_stats) if isinstance(result.generator_stats, dict) else {}
    return TrialResult(
        intended_load_fps=float(asked.load_fps if asked.load_fps is not None
                                else _finite(result.intended_load_fps) or 0.0),
        intended_duration_s=float(asked.duration_s if asked.duration_s is not None
                                  else _finite(result.intended_duration_s) or 0.0),
        frame_size_bytes=int(size),
        tx_frames=_whole(result.tx_frames) or 0,
        rx_frames=_whole(result.rx_frames) or 0,
        directions=directions if len(directions) == len(result.directions) else (),
        tx_duration_s=_finite(result.tx_duration_s),
        effective_duration_s=_finite(result.effective_duration_s),
        valid=False,
        invalid_reason=result.invalid_reason,
        invalid_kind=validity.INVALID_UNTRUSTED,
        generator_stats={**stats, "reported": reported},
        burst_frames=result.burst_frames if _whole(result.burst_frames) else asked.burst_frames,
    )


def dut_gone(exc: BaseException) -> bool:
    """Whether ``exc`` is, or was caused by (through the plugin guard), :class:`DutGoneError`."""
    seen: BaseException | None = exc
    for _ in range(5):
        if seen is None:
            return False
        if isinstance(seen, DutGoneError):
            return True
        seen = getattr(seen, "cause", None) or seen.__cause__
    return False
