"""Run one trial the way every trial of a run is run: measure, judge, persist, report.

``generator.run_trial`` -> common validity rules (:mod:`vsbench.measurement.validity`) ->
one line appended to ``trials.jsonl`` and fsync-ed -> progress callback. Only then does
the caller (a search, a fixed-rate test) see the result, so no trial that influenced a
decision can be missing from disk (DESIGN.md principle 4).

The search engine gets :meth:`TrialRunner.trial_fn`, a plain ``(load_fps, duration_s) ->
TrialResult`` callable; it never learns about files or terminals.
"""

from __future__ import annotations

import dataclasses
import logging
import time
from datetime import datetime, timezone
from typing import Any, Callable, Sequence

from vsbench.interfaces.collector import Collector
from vsbench.interfaces.traffic import TrialResult
from vsbench.interfaces.trafficgen import TrafficGenerator
from vsbench.interfaces.vswitch import VSwitch
from vsbench.measurement import validity
from vsbench.measurement import warmup as warmups
from vsbench.measurement.warmup import WarmupPlan
from vsbench.results.model import TRIAL_ROLES, TrialIdentity, TrialRecord
from vsbench.results.trial_log import TrialLog

log = logging.getLogger(__name__)

TrialListener = Callable[[TrialRecord], None]


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
    ) -> None:
        self.generator = generator
        self.vswitch = vswitch
        self.sink = sink
        self.identity = identity
        self.collectors = list(collectors)
        self.records: list[TrialRecord] = []

    def run(
        self, load_fps: float, duration_s: float, *, role: str, latency: bool = False,
        warmup: WarmupPlan | None = None,
    ) -> TrialRecord:
        """One trial at aggregate ``load_fps`` for ``duration_s``; durable when returned.

        A warm-up trial passes its ``warmup`` plan: what it covered is written with it."""
        if role not in TRIAL_ROLES:
            raise ValueError(f"unknown trial role {role!r}")
        started_at = utc_now_iso()
        self._switch_begin()
        self._begin_collectors()
        t0 = time.monotonic()
        # a trial that raises leaves the switch's 'before' sample; the next trial_begin replaces it
        result = self.generator.run_trial(float(load_fps), float(duration_s), latency=latency)
        wall_s = time.monotonic() - t0
        collected = self._end_collectors()
        switch = self._switch_end()
        if result.effective_duration_s is None:
            # The wall time the trial cost, so time budgets and reports see the overhead.
            result = dataclasses.replace(result, effective_duration_s=wall_s)
        checked, verdict = validity.apply(result)
        if not verdict.valid:
            log.info("trial at %.0f fps invalid: %s", load_fps, "; ".join(verdict.reasons))
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
        )
        self.records.append(rec)
        return rec

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
        started_at = utc_now_iso()
        self._begin_collectors()
        t0 = time.monotonic()
        result = self.generator.measure_latency_floor(float(duration_s))
        wall_s = time.monotonic() - t0
        collected = self._end_collectors()
        if result.effective_duration_s is None:
            result = dataclasses.replace(result, effective_duration_s=wall_s)
        checked, verdict = validity.apply(result)
        rec = self.sink.record(self.identity, "floor", checked, verdict, started_at=started_at,
                               latency_requested=True, collectors=collected)
        self.records.append(rec)
        return rec

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
            log.warning("vswitch %s: trial_begin failed: %s", self.vswitch.name, exc)

    def _switch_end(self) -> dict[str, Any]:
        if self.vswitch is None:
            return {}
        try:
            return dict(self.vswitch.trial_end() or {})
        except Exception as exc:  # noqa: BLE001
            log.warning("vswitch %s: trial_end failed: %s", self.vswitch.name, exc)
            return {"error": str(exc)}

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
        started_at = utc_now_iso()
        self._switch_begin()
        self._begin_collectors()
        t0 = time.monotonic()
        result = self.generator.run_burst(int(frames), rate_fps=rate_fps, latency=latency)
        wall_s = time.monotonic() - t0
        collected = self._end_collectors()
        switch = self._switch_end()
        if result.effective_duration_s is None:
            result = dataclasses.replace(result, effective_duration_s=wall_s)
        if result.burst_frames is None:
            result = dataclasses.replace(result, burst_frames=int(frames))
        checked, verdict = validity.apply(result)
        if not verdict.valid:
            log.info("burst of %d frames invalid: %s", frames, "; ".join(verdict.reasons))
        rec = self.sink.record(self.identity, role, checked, verdict, started_at=started_at,
                               latency_requested=latency, collectors=collected, switch=switch)
        self.records.append(rec)
        return rec
