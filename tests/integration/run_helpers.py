"""What the end-to-end integration tests share: run a testcase as the CLI would, and prove
the run left nothing behind.

A run here is real (namespaces, veth pairs, a switch, trafgen); these helpers only spare each
test module its own copy of "load the plugins or skip", "build the plans", "run them into
tmp_path" and "no namespace, no process, nothing for cleanup".
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from io import StringIO
from pathlib import Path
from typing import Any, Callable

import pytest
from rich.console import Console

from vsbench.interfaces.traffic import INVALID_DISTURBED, INVALID_LIMITED
from vsbench.measurement import recheck
from vsbench.results import schema
from vsbench.runner import config as cfg
from vsbench.runner import plugins, testcases
from vsbench.runner.run import run_plans
from vsbench.system import cleanup, commands, runstate

#: The search of the PVP throughput tests: a plain binary search (traffic.trial_duration_s
#: trials) below 200 kfps, a handful of trials. Those tests check the VNF's accounting beside
#: an NDR, not the search; the default multi-goal search spent 65-70 s a run there (many
#: trials per load while the oversubscribed CPUs make loss noisy) and has its own tests
#: (test_measurement_engine.py).
PVP_SEARCH = "search.mode=binary;search.max_load_fps=200000"


def unavailable(kind: str, name: str) -> str | None:
    """Why plugin ``kind``/``name`` cannot run here (not installed, prerequisite missing), or
    None when it can."""
    try:
        cls = plugins.load(kind, name)
    except plugins.UnknownPluginError as exc:
        return str(exc)
    missing = cls.check_prerequisites({})
    return f"{kind} {name}: missing {missing[0]}" if missing else None


def require(*plugin_names: tuple[str, str]) -> None:
    """Skip the calling test unless every ``(kind, name)`` plugin can run here."""
    for kind, name in plugin_names:
        reason = unavailable(kind, name)
        if reason:
            pytest.skip(reason)


def build_plans(test: str, vswitch: str, params: str, trafficgen: str = "trafgen", vnf: str | None = None) -> list:
    """The plans ``vsbench --test TEST --vswitch VSWITCH [--vnf VNF] --test-params PARAMS`` would run."""
    base = cfg.load_layers(cfg.default_conf_dir(), [])
    case = testcases.find(test, testcases.default_testcase_dir())
    return testcases.build_plans(case, base, cfg.parse_test_params(params),
                                 {"vswitch": vswitch, "trafficgen": trafficgen, "vnf": vnf})


@dataclass(frozen=True)
class Outcome:
    """One run into an empty directory: exit code, console text and the run's files."""

    code: int
    console: str
    run_dir: Path
    run_id: str

    def results(self) -> dict[str, Any]:
        """results.json, validated against its schema."""
        results = json.loads((self.run_dir / "results.json").read_text())
        schema.validate(results, "results.schema.json")
        return results

    def trials(self) -> list[dict[str, Any]]:
        """trials.jsonl, every line validated against its schema."""
        trials = [json.loads(line) for line in (self.run_dir / "trials.jsonl").read_text().splitlines()]
        for trial in trials:
            schema.validate(trial, "trial.schema.json")
        return trials


def run(tmp_path: Path, plans: list) -> Outcome:
    """Run ``plans`` with results under ``tmp_path`` (which must hold nothing else)."""
    out = StringIO()
    code = run_plans(plans, tmp_path, Console(file=out, width=200))
    [run_dir] = list(tmp_path.iterdir())
    return Outcome(code, out.getvalue(), run_dir, run_dir.name.rsplit("-", 1)[1])


def host_disturbance(outcome: Outcome) -> str | None:
    """Why a fixed-rate run's frames may have been lost or mis-paced by this shared 2-core host
    rather than by what the test checks: a continuous trial that is invalid or lost frames (at
    10-20 kfps, far below what every testbed DUT forwards, that is a stalled pacer, switch
    thread or VNF). Wrong frames are never a disturbance: they are the DUT's fault."""
    if outcome.code != 0:
        return None
    for trial in outcome.trials():
        if trial["role"] != "continuous" or trial.get("rx_wrong_frames"):
            continue
        if trial["invalid_reasons"] or trial["rx_frames"] < trial["tx_frames"]:
            reasons = "; ".join(trial["invalid_reasons"]) or "no reason given"
            return f"{trial['tx_frames'] - trial['rx_frames']} of {trial['tx_frames']} frames lost ({reasons})"
    return None


def a_search_trial_came_back_whole(outcome: Outcome) -> bool:
    """Some search trial received every frame it sent: the generator's counters can show a
    loss-free trial, whatever the exceed-ratio median trial reported at the NDR lost."""
    return any(t["role"] == "search" and t["rx_frames"] == t["tx_frames"] > 0 for t in outcome.trials())


def only_its_sending_was_off(trial: dict[str, Any]) -> bool:
    """The trial is invalid only for how this shared host let the generator send it: every
    frame went out, late (the sender was descheduled; CI saw 10,000 frames take 1.034 s on a
    repeat too) or in time with a pacing window off. Tests of what the frames carry through
    the switch -- every one verified, none lost -- hold on it; the trial is reported invalid
    all the same."""
    intended_frames = round(trial["intended_load_fps"] * trial["intended_duration_s"])
    return (trial["invalid_kind"] in (INVALID_LIMITED, INVALID_DISTURBED)
            and trial["tx_frames"] >= intended_frames > 0)


def run_repeating_once(tmp_path: Path, plans: list, disturbed: Callable[[Outcome], str | None]) -> Outcome:
    """Run ``plans`` and, when ``disturbed`` says why the shared host (not what the test
    checks) may have spoiled the outcome, once more. The caller holds the repeat to every
    assertion, so a real fault still fails."""
    outcome = run(tmp_path / "first", plans)
    why = disturbed(outcome)
    if why:
        print(f"run disturbed by the host: {why}; repeated once")
        outcome = run(tmp_path / "again", plans)
    return outcome


def run_fixed_rate(tmp_path: Path, plans: list) -> Outcome:
    """Run ``plans`` (fixed-rate trials expected to arrive whole), repeated once when the
    shared host disturbed them (:func:`host_disturbance`): CI saw a 10 kfps VXLAN trial
    through testpmd lose frames on two switches in a row while the same tests pass alone."""
    return run_repeating_once(tmp_path, plans, host_disturbance)


def processes_mentioning(*texts: str) -> list[str]:
    """``pid: command line`` of live processes (this one aside) whose command line holds any
    of ``texts``: a run's id is in the name of every namespace, interface and file it makes."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit() or int(pid) == os.getpid():
            continue
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if any(text in cmdline for text in texts):
            found.append(f"{pid}: {cmdline[:160]}")
    return found


def assert_nothing_left(run_id: str) -> None:
    """No namespace and no process of run ``run_id``, and nothing ``vsbench cleanup`` would
    remove for it."""
    assert not runstate.is_live(run_id)
    assert cleanup.plan(cleanup.snapshot(), live=set(), only={run_id}) == []
    netns = commands.run(["ip", "netns", "list"]).stdout
    assert run_id not in netns, netns
    assert processes_mentioning(f"vsb{run_id}", f"vsb-{run_id}") == []


def assert_reproducible_and_clean(outcome: Outcome) -> None:
    """Every figure recomputes from the run's own files, and the run left nothing behind."""
    assert recheck.verify(outcome.run_dir) == []
    assert_nothing_left(outcome.run_id)
