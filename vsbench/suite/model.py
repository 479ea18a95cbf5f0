"""A suite as typed data, built from its schema-valid YAML document (:func:`from_document`).

Names follow the file: a suite has *profiles* (``quick``, ``full``), *runs* (one testcase
with its plugins and parameters; each profile may add parameters, a repeat count, or leave
the run out) and *tables* (one per id of the report: the runs whose results fill it as
*series*, the row key fields, the metric columns, the report's own printed figures).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

#: Profiles every suite has: ``quick`` on the embedded 2-core testbed, ``full`` as the report ran.
REQUIRED_PROFILES = ("quick", "full")


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    params: dict[str, Any] = field(default_factory=dict)
    budget_minutes: float | None = None


@dataclass(frozen=True)
class RunProfile:
    """What a profile changes of one run."""

    params: dict[str, Any] = field(default_factory=dict)
    repeat: int | None = None
    skip: str | None = None
    note: str | None = None


@dataclass(frozen=True)
class SuiteRun:
    name: str
    test: str
    vswitch: str | None = None
    trafficgen: str | None = None
    vnf: str | None = None
    params: dict[str, Any] = field(default_factory=dict)
    profiles: dict[str, RunProfile] = field(default_factory=dict)
    repeat: int = 1
    requires: dict[str, Any] = field(default_factory=dict)
    note: str | None = None

    def profile(self, name: str) -> RunProfile:
        return self.profiles.get(name) or RunProfile()

    def params_for(self, profile: Profile) -> dict[str, Any]:
        """The run's --test-params under ``profile``: the profile's own, the run's, then the
        run's for that profile (later wins)."""
        return {**profile.params, **self.params, **self.profile(profile.name).params}

    def repeat_for(self, profile: str) -> int:
        return self.profile(profile).repeat or self.repeat

    def flags(self) -> dict[str, str | None]:
        return {"vswitch": self.vswitch, "trafficgen": self.trafficgen, "vnf": self.vnf}


@dataclass(frozen=True)
class Series:
    """One run's results in a table, under ``label``; ``key`` adds row key fields the run
    stands for (``cores: 2``); ``report_series`` is the report's label for the same
    configuration, matched against the reference rows' ``series``."""

    run: str
    label: str
    key: dict[str, Any] = field(default_factory=dict)
    report_series: str | None = None
    frame_sizes: tuple[int, ...] = ()


@dataclass(frozen=True)
class Reference:
    """The report's own figures for one id, as printed (``shared/reference/seeds``)."""

    printed: bool = False
    source: str = ""
    conditions: str = ""
    note: str = ""
    rows: tuple[dict[str, Any], ...] = ()
    unreadable: tuple[str, ...] = ()


@dataclass(frozen=True)
class Plot:
    x: str
    y: str
    kind: str = "line"
    log_x: bool = False
    error_bars: bool = False


@dataclass(frozen=True)
class Gain:
    """Each row's gain in ``metric`` over a baseline row: the ``over`` series' row with the
    same key, or the row whose key has the ``baseline`` values and the same other keys."""

    metric: str
    over: str | None = None
    baseline: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class SuiteTable:
    id: str
    title: str
    series: tuple[Series, ...]
    columns: tuple[str, ...]
    rows: tuple[str, ...] = ("frame_size",)
    keys: dict[str, str] = field(default_factory=dict)
    goal: str = "NDR"
    #: The report's metric names that stand for one of ours (``frame_rate_mpps: ndr_mpps``).
    report_metrics: dict[str, str] = field(default_factory=dict)
    gain: Gain | None = None
    plot: Plot | None = None
    reference: Reference | None = None
    note: str | None = None

    def run_names(self) -> list[str]:
        return list(dict.fromkeys(s.run for s in self.series))


@dataclass(frozen=True)
class Suite:
    name: str
    title: str
    description: str
    path: Path
    profiles: dict[str, Profile]
    runs: tuple[SuiteRun, ...]
    tables: tuple[SuiteTable, ...]
    report: str = ""
    #: Where the suite came from: ``built-in`` or the distribution that registered it.
    origin: str = "built-in"

    def run(self, name: str) -> SuiteRun:
        for run in self.runs:
            if run.name == name:
                return run
        raise KeyError(name)

    @property
    def ids(self) -> list[str]:
        return [t.id for t in self.tables]


def _reference(doc: Mapping[str, Any] | None) -> Reference | None:
    if doc is None:
        return None
    return Reference(printed=bool(doc.get("printed", bool(doc.get("rows")))), source=str(doc.get("source") or ""),
                     conditions=str(doc.get("conditions") or ""), note=str(doc.get("note") or ""),
                     rows=tuple(dict(r) for r in doc.get("rows") or ()),
                     unreadable=tuple(str(u) for u in doc.get("unreadable") or ()))


def _run(doc: Mapping[str, Any]) -> SuiteRun:
    profiles = {name: RunProfile(params=dict(p.get("params") or {}), repeat=p.get("repeat"), skip=p.get("skip"),
                                 note=p.get("note"))
                for name, p in (doc.get("profiles") or {}).items()}
    return SuiteRun(name=doc["name"], test=doc["test"], vswitch=doc.get("vswitch"), trafficgen=doc.get("trafficgen"),
                    vnf=doc.get("vnf"), params=dict(doc.get("params") or {}), profiles=profiles,
                    repeat=int(doc.get("repeat") or 1), requires=dict(doc.get("requires") or {}), note=doc.get("note"))


def _table(doc: Mapping[str, Any], references: Mapping[str, Any]) -> SuiteTable:
    series = tuple(Series(run=s["run"], label=str(s.get("label") or s["run"]), key=dict(s.get("key") or {}),
                          report_series=s.get("report_series"), frame_sizes=tuple(s.get("frame_sizes") or ()))
                   for s in doc["series"])
    plot = doc.get("plot")
    gain = doc.get("gain")
    return SuiteTable(
        id=doc["id"], title=doc["title"], series=series, columns=tuple(doc["columns"]),
        rows=tuple(doc.get("rows") or ("frame_size",)), keys=dict(doc.get("keys") or {}),
        goal=str(doc.get("goal") or "NDR"), report_metrics=dict(doc.get("report_metrics") or {}),
        gain=None if gain is None else Gain(metric=gain["metric"], over=gain.get("over"),
                                            baseline=dict(gain.get("baseline") or {})),
        plot=None if plot is None else Plot(x=plot["x"], y=plot["y"], kind=plot.get("kind", "line"),
                                            log_x=bool(plot.get("log_x")), error_bars=bool(plot.get("error_bars"))),
        reference=_reference(doc.get("reference") if "reference" in doc else references.get(doc["id"])),
        note=doc.get("note"),
    )


def from_document(doc: Mapping[str, Any], path: Path, references: Mapping[str, Any] | None = None,
                  origin: str = "built-in") -> Suite:
    """The suite of a schema-valid document; ``references`` maps ids to the report's printed
    figures (the suite's ``references`` file) for tables without their own."""
    profiles = {name: Profile(name=name, description=str(p["description"]).strip(), params=dict(p.get("params") or {}),
                              budget_minutes=p.get("budget_minutes"))
                for name, p in doc["profiles"].items()}
    return Suite(name=doc["name"], title=doc["title"], description=str(doc["description"]).strip(), path=path,
                 profiles=profiles, runs=tuple(_run(r) for r in doc["runs"]),
                 tables=tuple(_table(t, references or {}) for t in doc["tables"]),
                 report=str(doc.get("report") or ""), origin=origin)
