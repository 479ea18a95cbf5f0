"""Recompute a frame size's RFC 2889 figures from its trials (``vsbench recompute``).

Forwarding: every step's forwarding rate is its trial's received rate, and FRMOL and MFR
follow from the steps (:func:`vsbench.results.rfc2889_figures.forwarding_figures`). Address
tests: every iteration's test frames, delivered and flooded frames are its test trial's
counters, its verdict follows from them and its learning trial, and the reported figure
is the highest passing value among the iterations. Which values the binary search chose
to try is not replayed.
"""

from __future__ import annotations

import math
from typing import Any, Callable

from vsbench.results import rfc2889_figures as r2889
from vsbench.results.model import TrialRecord

FORWARDING_FIGURES = ("forwarding_rate_fps", "max_offered_load_fps", "max_forwarding_rate_fps",
                      "max_forwarding_rate_offered_fps")


def _differs(a: Any, b: Any) -> bool:
    if a is None or b is None:
        return a is not b
    if isinstance(a, float) or isinstance(b, float):
        return not math.isclose(float(a), float(b), rel_tol=1e-9, abs_tol=1e-9)
    return a != b


def verify(fs: dict, trial: Callable[[int, str], TrialRecord | None], where: str) -> list[str]:
    """Mismatches between ``fs["rfc2889"]`` and its recomputation ([] when none or no result)."""
    r = fs.get("rfc2889")
    if not r:
        return []
    problems: list[str] = []

    def check(what: str, reported: Any, again: Any) -> None:
        if _differs(reported, again):
            problems.append(f"{where} rfc2889 {what}: {reported} != recomputed {again}")

    if r["test"] == "forwarding":
        steps = []
        for st in r.get("steps") or []:
            rec = trial(st["trial_index"], "rfc2889 step")
            if rec is None:
                continue
            check(f"step #{st['trial_index']} forwarding_rate_fps", st["forwarding_rate_fps"], rec.result.rx_fps)
            check(f"step #{st['trial_index']} valid", st["valid"], rec.valid)
            steps.append(r2889.LoadStep(st["offered_load_fps"], rec.result.rx_fps, rec.valid, rec.trial_index))
        figures = r2889.forwarding_figures(steps)
        for name in FORWARDING_FIGURES:
            check(name, r.get(name), getattr(figures, name))
        return problems
    passing = []
    for it in r.get("iterations") or []:
        learn = trial(it["learning_trial"], "rfc2889 learning")
        test = trial(it["test_trial"], "rfc2889 test")
        if learn is None or test is None:
            continue
        t = test.result
        valid = learn.valid and test.valid and learn.result.tx_frames == it["addresses"] and t.rx_monitor_frames is not None
        again = r2889.AddressIteration(addresses=it["addresses"], learning_rate_fps=it["learning_rate_fps"],
                                       test_tx_frames=t.tx_frames, test_rx_frames=t.rx_frames,
                                       flooded_frames=int(t.rx_monitor_frames or 0), valid=valid)
        label = f"iteration #{it['test_trial']}"
        for name in ("test_tx_frames", "test_rx_frames", "flooded_frames", "valid"):
            check(f"{label} {name}", it[name], getattr(again, name))
        check(f"{label} passed", it["passed"], again.passed)
        if again.passed:
            passing.append(again)
    if r["test"] == "caching":
        check("caching_capacity_addresses", r.get("caching_capacity_addresses"),
              max((it.addresses for it in passing), default=None))
    else:
        check("learning_rate_addresses_per_s", r.get("learning_rate_addresses_per_s"),
              max((it.learning_rate_fps for it in passing), default=None))
    return problems
