"""RFC 2889 traffic types: ``rfc2889_forwarding``, ``rfc2889_learning``, ``rfc2889_caching``.

Thin runners over the pure functions of :mod:`vsbench.measurement.rfc2889` (the ladder's
figures, the binary search) and :mod:`vsbench.measurement.rfc2889_profiles` (what each
phase sends); every figure comes from trial records written to trials.jsonl.

* ``rfc2889_forwarding`` (section 5.1, on ``p2p``: two ports, each sending to the other,
  the fully meshed pattern of two ports): one trial of ``traffic.trial_duration_s`` at each
  ``traffic.rfc2889.load_percents`` of the frame size's max load. Reported: the forwarding
  rate at the maximum offered load (FRMOL) and the maximum forwarding rate (MFR), frames/s.
* ``rfc2889_caching`` (section 5.7) and ``rfc2889_learning`` (section 5.8), on
  ``p2p_learning`` (test, learning and monitor port on one learning bridge): iterations of
  "empty the address table, send N learning frames (one per address) at rate R from the
  learning port, then N test frames to those addresses from the test port"; an iteration
  passes when every test frame reached the learning port and none the monitor port.
  Caching searches N at a low R; learning searches R for a fixed N.
"""

from __future__ import annotations

import logging
import time
from typing import Any, Callable, Mapping

from vsbench.interfaces.plugin import PluginError
from vsbench.measurement import rfc2889 as r2889
from vsbench.measurement import rfc2889_profiles as phases
from vsbench.results import summary
from vsbench.results.model import FrameSizeResult, TrialRecord
from vsbench.results.rfc2889_model import Rfc2889Iteration, Rfc2889Result, Rfc2889Step
from vsbench.runner import traffic_job

log = logging.getLogger(__name__)

FORWARDING, LEARNING, CACHING = "rfc2889_forwarding", "rfc2889_learning", "rfc2889_caching"
#: Which deployment each traffic type runs on.
DEPLOYMENT_OF = {FORWARDING: None, LEARNING: "p2p_learning", CACHING: "p2p_learning"}
#: Defaults of ``traffic.rfc2889`` (conf/10_traffic.yaml repeats them for readers).
DEFAULTS: dict[str, Any] = {
    "load_percents": list(r2889.DEFAULT_LOAD_PERCENTS),
    "addresses": 1024,
    "min_addresses": 16,
    "max_addresses": 4096,
    "resolution_addresses": 16,
    "learning_rate_fps": 10000.0,
    "min_learning_rate_fps": 1000.0,
    "max_learning_rate_fps": None,
    "resolution_fps": None,
    "test_rate_fps": 10000.0,
    "settle_s": 0.1,
}
#: The learning-rate search's resolution when unset: this share of its range's top.
RESOLUTION_SHARE = 0.02


#: The keys of ``traffic.rfc2889`` the traffic types read (ageing time and table size are
#: the deployment's: :func:`vsbench.deployment.learning.learning_settings`).
SETTING_KEYS = ("load_percents", "addresses", "min_addresses", "max_addresses", "resolution_addresses",
                "learning_rate_fps", "min_learning_rate_fps", "max_learning_rate_fps", "resolution_fps",
                "test_rate_fps", "settle_s")


def rfc2889_settings(traffic: Mapping[str, Any]) -> dict[str, Any]:
    """``traffic.rfc2889`` over :data:`DEFAULTS` (a null value keeps the default)."""
    section = traffic.get("rfc2889") or {}
    out = dict(DEFAULTS)
    for key in SETTING_KEYS:
        value = section.get(key)
        if value is not None:
            out[key] = value
    return out


def check_plan(config: Mapping[str, Any]) -> None:
    """One-line :class:`TrafficTypeError` for settings no RFC 2889 type can run."""
    traffic = config.get("traffic") or {}
    kind = traffic.get("type")
    if kind not in DEPLOYMENT_OF:
        return
    s = rfc2889_settings(traffic)
    deployment = str((config.get("test") or {}).get("deployment") or "p2p")
    needed = DEPLOYMENT_OF[kind]
    if needed and deployment != needed:
        raise traffic_job.TrafficTypeError(f"traffic type {kind} runs on deployment {needed} (test, learning and "
                                           f"monitor port on one learning bridge), not {deployment}")
    if kind == FORWARDING and deployment == "p2p_learning":
        raise traffic_job.TrafficTypeError("traffic type rfc2889_forwarding runs between port pairs (p2p), "
                                           "not on p2p_learning")
    try:
        if kind == FORWARDING:
            r2889.offered_loads(1.0, s["load_percents"])
        if kind == CACHING and int(s["min_addresses"]) > int(s["max_addresses"]):
            raise r2889.Rfc2889Error(f"traffic.rfc2889.min_addresses {s['min_addresses']} is above "
                                     f"max_addresses {s['max_addresses']}")
        if kind == LEARNING and s["max_learning_rate_fps"] is not None and \
                float(s["min_learning_rate_fps"]) > float(s["max_learning_rate_fps"]):
            raise r2889.Rfc2889Error(f"traffic.rfc2889.min_learning_rate_fps {s['min_learning_rate_fps']} is above "
                                     f"max_learning_rate_fps {s['max_learning_rate_fps']}")
    except r2889.Rfc2889Error as exc:
        raise traffic_job.TrafficTypeError(str(exc)) from None
    if (config.get("latency") or {}).get("enabled"):
        log.info("%s measures no latency; latency.enabled is ignored", kind)


# -- forwarding rate (5.1) ---------------------------------------------------------------------


def forwarding(job) -> FrameSizeResult:
    tt = traffic_job
    start = len(job.trials.records)
    fs = job.result
    s = rfc2889_settings(job.traffic)
    max_load = tt.max_load_fps(job)
    loads = r2889.offered_loads(max_load, s["load_percents"])
    fs.max_load_fps = max_load
    job.on_start(max_load)
    tt.warm_up(job, loads[0])
    records: list[TrialRecord] = []
    steps: list[Rfc2889Step] = []
    for load in loads:
        rec = job.trials.run(load, job.trial_duration_s, role="continuous")
        r = rec.result
        records.append(rec)
        steps.append(Rfc2889Step(offered_load_fps=load, forwarding_rate_fps=r.rx_fps, tx_frames=int(r.tx_frames),
                                 rx_frames=int(r.rx_frames), trial_index=rec.trial_index, valid=rec.valid))
        log.info("rfc2889 forwarding: offered %.0f fps, forwarded %.0f fps%s", load, r.rx_fps,
                 "" if rec.valid else " (invalid)")
    figures = r2889.forwarding_figures([r2889.LoadStep(st.offered_load_fps, st.forwarding_rate_fps, st.valid,
                                                       st.trial_index) for st in steps])
    fs.rfc2889 = Rfc2889Result(
        test="forwarding", forwarding_rate_fps=figures.forwarding_rate_fps,
        max_offered_load_fps=figures.max_offered_load_fps, max_forwarding_rate_fps=figures.max_forwarding_rate_fps,
        max_forwarding_rate_offered_fps=figures.max_forwarding_rate_offered_fps, steps=steps)
    notes = []
    if figures.forwarding_rate_fps is None:
        notes.append("rfc2889_forwarding: no valid step (the generator sent no offered load as asked)")
    elif figures.max_offered_load_fps < loads[-1]:
        notes.append(f"rfc2889_forwarding: the top offered load{'s' if len(loads) > 1 else ''} were invalid; "
                     f"FRMOL is at {figures.max_offered_load_fps:.0f} fps, the highest load sent as asked")
    by_index = {rec.trial_index: rec for rec in records}
    points = []
    for name, load in (("FRMOL", figures.max_offered_load_fps), ("MFR", figures.max_forwarding_rate_offered_fps)):
        if load is None:
            continue
        step = next(st for st in steps if st.valid and st.offered_load_fps == load)
        points.append(summary.fixed_point(name, frame_size_bytes=job.frame_size_bytes,
                                          nominal_line_rate_fps=job.nominal_line_rate_fps,
                                          trial=by_index[step.trial_index]))
    return tt._finish(job, start, points, notes)


# -- address iterations (5.7, 5.8) ----------------------------------------------------------------


def _iteration(job, addresses: int, rate_fps: float, s: Mapping[str, Any],
               iterations: list[Rfc2889Iteration]) -> bool | None:
    """One learning + test iteration; True/False: passed or not, None: invalid."""
    deployment = job.deployment
    if deployment is None or not hasattr(deployment, "flush_learned") or not job.ports:
        raise traffic_job.TrafficTypeError("RFC 2889 address tests need the p2p_learning deployment")
    test_mac = deployment.test_mac
    deployment.flush_learned()
    job.generator.configure(phases.learning_profile(job.profile, addresses, test_mac), job.ports)
    learn = job.trials.run_burst(addresses, role="learning", rate_fps=float(rate_fps))
    if float(s["settle_s"]) > 0:
        time.sleep(float(s["settle_s"]))
    job.generator.configure(phases.test_profile(job.profile, addresses, test_mac), job.ports)
    test = job.trials.run_burst(addresses, role="search", rate_fps=float(s["test_rate_fps"]))
    lr, tr = learn.result, test.result
    valid = learn.valid and test.valid and lr.tx_frames == addresses and tr.rx_monitor_frames is not None
    it = r2889.AddressIteration(addresses=addresses, learning_rate_fps=float(rate_fps), test_tx_frames=int(tr.tx_frames),
                                test_rx_frames=int(tr.rx_frames), flooded_frames=int(tr.rx_monitor_frames or 0),
                                valid=valid, learning_trial=learn.trial_index, test_trial=test.trial_index)
    iterations.append(Rfc2889Iteration(addresses=addresses, learning_rate_fps=float(rate_fps),
                                       test_tx_frames=it.test_tx_frames, test_rx_frames=it.test_rx_frames,
                                       flooded_frames=it.flooded_frames, passed=it.passed, valid=valid,
                                       learning_trial=learn.trial_index, test_trial=test.trial_index))
    log.info("rfc2889: %d addresses at %.0f fps: %d/%d test frames delivered, %d flooded -> %s", addresses, rate_fps,
             it.test_rx_frames, it.test_tx_frames, it.flooded_frames,
             "pass" if it.passed else ("invalid" if not valid else "fail"))
    return it.passed if valid else None


def _first_fail(iterations: list[Rfc2889Iteration], key: Callable[[Rfc2889Iteration], float],
                value: float | None) -> Rfc2889Iteration | None:
    """The iteration at the lowest failing (valid) value above ``value``."""
    failed = [it for it in iterations if it.valid and not it.passed and (value is None or key(it) > value)]
    return min(failed, key=key) if failed else None


def _bounded(fail: Rfc2889Iteration | None) -> bool:
    """A figure is bounded only when a valid iteration above it failed: when the top of
    the range passed, or every higher iteration was invalid (the generator could not send
    the learning frames that fast), the device was never shown to fail above it and the
    figure is a lower bound."""
    return fail is not None


def _address_notes(result: Rfc2889Result, kind: str, unit: str) -> list[str]:
    notes = []
    if result.bounded is False and result.search_high is not None and result.iterations and \
            not any(it.valid and not it.passed for it in result.iterations):
        value = result.caching_capacity_addresses if result.test == "caching" else result.learning_rate_addresses_per_s
        if value is not None and value < result.search_high:
            notes.append(f"{kind}: every iteration above {value:g} {unit} was not sent as asked (generator-limited); "
                         "the device did not fail there: the figure is a lower bound")
    if result.bounded is False and not notes:
        notes.append(f"{kind}: the top of the searched range ({result.search_high:g} {unit}) passed; the figure "
                     "is a lower bound (raise the range)")
    if result.invalid_iterations:
        notes.append(f"{kind}: {result.invalid_iterations} iteration(s) not sent as asked counted as failing")
    return notes


def caching(job) -> FrameSizeResult:
    start = len(job.trials.records)
    fs = job.result
    s = rfc2889_settings(job.traffic)
    low, high = int(s["min_addresses"]), int(s["max_addresses"])
    rate = float(s["learning_rate_fps"])
    fs.max_load_fps = rate
    job.on_start(None)
    iterations: list[Rfc2889Iteration] = []
    outcome = r2889.search_highest_pass(lambda n: _iteration(job, int(n), rate, s, iterations), low=low, high=high,
                                        resolution=int(s["resolution_addresses"]), integer=True)
    value = None if outcome.value is None else int(outcome.value)
    fail = _first_fail(iterations, lambda it: it.addresses, value)
    result = Rfc2889Result(test="caching", caching_capacity_addresses=value, learning_rate_fps=rate,
                           test_rate_fps=float(s["test_rate_fps"]), search_low=low, search_high=high,
                           bounded=_bounded(fail), first_fail_addresses=fail.addresses if fail else None,
                           flooded_frames=fail.flooded_frames if fail else None,
                           invalid_iterations=outcome.invalid, iterations=iterations)
    fs.rfc2889 = result
    notes = _address_notes(result, CACHING, "addresses")
    if value is None:
        notes.append(f"{CACHING}: even {low} addresses were not all held")
    return traffic_job._finish(job, start, [], notes)


def learning(job) -> FrameSizeResult:
    tt = traffic_job
    start = len(job.trials.records)
    fs = job.result
    s = rfc2889_settings(job.traffic)
    addresses = int(s["addresses"])
    high = s["max_learning_rate_fps"]
    high = float(high) if high is not None else tt.max_load_fps(job)
    low = min(float(s["min_learning_rate_fps"]), high)
    resolution = float(s["resolution_fps"] or max(1.0, RESOLUTION_SHARE * high))
    fs.max_load_fps = high
    job.on_start(high)
    iterations: list[Rfc2889Iteration] = []
    outcome = r2889.search_highest_pass(lambda r: _iteration(job, addresses, float(r), s, iterations), low=low,
                                        high=high, resolution=resolution)
    fail = _first_fail(iterations, lambda it: it.learning_rate_fps, outcome.value)
    result = Rfc2889Result(test="learning", learning_rate_addresses_per_s=outcome.value, addresses=addresses,
                           test_rate_fps=float(s["test_rate_fps"]), search_low=low, search_high=high,
                           bounded=_bounded(fail), first_fail_rate_fps=fail.learning_rate_fps if fail else None,
                           flooded_frames=fail.flooded_frames if fail else None,
                           invalid_iterations=outcome.invalid, iterations=iterations)
    fs.rfc2889 = result
    notes = _address_notes(result, LEARNING, "fps")
    if outcome.value is None:
        notes.append(f"{LEARNING}: {addresses} addresses were not all learned even at {low:.0f} addresses/s")
    return tt._finish(job, start, [], notes)


TYPES: dict[str, Callable] = {FORWARDING: forwarding, LEARNING: learning, CACHING: caching}


def line(fs: FrameSizeResult) -> str | None:
    """The console's line for an RFC 2889 frame size (None when it has no such result)."""
    r = fs.rfc2889
    if r is None:
        return None
    if r.test == "forwarding":
        if r.forwarding_rate_fps is None:
            return "forwarding rate: no valid step"
        return (f"forwarding rate {r.forwarding_rate_fps:,.0f} fps at max offered load {r.max_offered_load_fps:,.0f} fps; "
                f"max forwarding rate {r.max_forwarding_rate_fps:,.0f} fps (offered {r.max_forwarding_rate_offered_fps:,.0f})")
    bound = "" if r.bounded is not False else " (a lower bound, see the notes)"
    if r.test == "caching":
        value = "none" if r.caching_capacity_addresses is None else f"{r.caching_capacity_addresses:,}"
        fail = (f"; {r.first_fail_addresses:,} failed with {r.flooded_frames:,} frames flooded"
                if r.first_fail_addresses is not None else "")
        return f"address caching capacity {value} addresses{bound} at {r.learning_rate_fps:,.0f} fps{fail}"
    value = "none" if r.learning_rate_addresses_per_s is None else f"{r.learning_rate_addresses_per_s:,.0f}"
    fail = (f"; {r.first_fail_rate_fps:,.0f} failed with {r.flooded_frames:,} frames flooded"
            if r.first_fail_rate_fps is not None else "")
    return f"address learning rate {value} addresses/s{bound} for {r.addresses:,} addresses{fail}"
