"""The ``search:`` section of the resolved configuration, turned into a :class:`SearchConfig`.

The runner owns configuration files; this module only says which keys the search
understands (:data:`SEARCH_SECTION_SCHEMA`, a JSON schema fragment for the config schema)
and maps a validated section onto :class:`SearchConfig`, so the two never drift apart.
Every problem is a one-line :class:`ValueError`.

Trial durations: ``full_trial_duration_s`` is the RFC 2544 trial length (the runner passes
``traffic.trial_duration_s``, 60 s by default) and is used by ``rfc2544``, ``tst009``, the
optional confirmation and -- unless ``search.trial_duration_s`` says otherwise -- the plain
``binary`` mode. The ``multi`` mode searches with short trials, ``search.trial_duration_s``
(default 1 s) and ``search.final_trial_duration_s`` (default: the same). A trial duration
the user asks for (``--test-params "trial_duration=2"``) reaches this module as
``search.trial_duration_s``: the runner writes it into the plan
(:func:`vsbench.runner.testcases._search_follows_trial_duration`).
"""

from __future__ import annotations

from typing import Any, Mapping

from .api import LATEST_REVISION, SEARCH_REVISION, Goal, SearchConfig

_GOAL_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["name"],
    "properties": {
        "name": {"type": "string", "minLength": 1},
        "loss_ratio": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
        "exceed_ratio": {"type": "number", "minimum": 0, "exclusiveMaximum": 1},
        "max_latency_p99_ns": {"type": ["number", "null"], "exclusiveMinimum": 0},
    },
}

SEARCH_SECTION_SCHEMA: dict = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "mode": {"enum": ["binary", "rfc2544", "tst009", "multi"]},
        "goals": {"type": "array", "minItems": 1, "items": _GOAL_SCHEMA},
        "relative_width": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
        "min_load_fps": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "max_load_fps": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "time_budget_s": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "trial_duration_s": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "final_trial_duration_s": {"type": ["number", "null"], "exclusiveMinimum": 0},
        "alpha": {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 0.5},
        "max_trials_per_load": {"type": "integer", "minimum": 1},
        "tst009_verifications": {"type": "integer", "minimum": 0},
        "confirm": {"type": "boolean"},
        "confirm_retries": {"type": "integer", "minimum": 0},
        "invalid_retries": {"type": "integer", "minimum": 0},
        "disturbed_retries": {"type": "integer", "minimum": 0},
        "repetitions": {"type": "integer", "minimum": 1},
        "unstable_cv": {"type": "number", "exclusiveMinimum": 0},
        "revision": {"type": ["integer", "null"], "minimum": 1, "maximum": LATEST_REVISION},
    },
}

_SIMPLE_KEYS = ("alpha", "max_trials_per_load", "tst009_verifications", "confirm", "confirm_retries",
                "invalid_retries", "disturbed_retries", "repetitions", "unstable_cv", "relative_width")


def goals_from_section(section: Mapping[str, Any]) -> tuple[Goal, ...]:
    configured = section.get("goals") or [{"name": "NDR", "loss_ratio": 0.0}]
    goals = []
    for entry in configured:
        if not isinstance(entry, Mapping) or not entry.get("name"):
            raise ValueError(f"search.goals: each goal needs a name, got {entry!r}")
        unknown = set(entry) - set(_GOAL_SCHEMA["properties"])
        if unknown:
            raise ValueError(f"search.goals[{entry['name']}]: unknown key(s) {', '.join(sorted(unknown))}")
        goals.append(Goal(**{k: v for k, v in entry.items() if v is not None}))
    return tuple(goals)


def search_config_from_section(section: Mapping[str, Any], *, max_load_fps: float,
                               full_trial_duration_s: float,
                               max_load_is_estimate: bool = False,
                               revision: int | None = None) -> SearchConfig:
    """Map the ``search:`` section onto a :class:`SearchConfig`.

    ``max_load_fps`` is the load limit the runner settled on (``search.max_load_fps`` or the
    generator's capability capped by line rate, or its calibrated ceiling:
    ``max_load_is_estimate``); ``full_trial_duration_s`` is ``traffic.trial_duration_s``;
    ``revision`` the search's rules: an older run's recorded one, to replay it; None for a
    new search, which runs under ``search.revision`` when set (a lab opting in to newer
    rules, docs/search.rst), else :data:`SEARCH_REVISION`.
    """
    unknown = set(section) - set(SEARCH_SECTION_SCHEMA["properties"])
    if unknown:
        raise ValueError(f"search: unknown key(s) {', '.join(sorted(unknown))}")
    mode = section.get("mode") or "binary"
    if mode not in SEARCH_SECTION_SCHEMA["properties"]["mode"]["enum"]:
        raise ValueError(f"search.mode must be one of binary, rfc2544, tst009, multi; got {mode!r}")
    short = section.get("trial_duration_s")
    if short is None:
        short = 1.0 if mode == "multi" else full_trial_duration_s
    final = section.get("final_trial_duration_s") or short
    kwargs: dict[str, Any] = dict(
        mode=mode,
        goals=goals_from_section(section),
        min_load_fps=float(section.get("min_load_fps") or 1000.0),
        max_load_fps=float(max_load_fps),
        max_load_is_estimate=bool(max_load_is_estimate),
        revision=int(revision if revision is not None else section.get("revision") or SEARCH_REVISION),
        trial_duration_s=float(short),
        final_trial_duration_s=float(final),
        full_trial_duration_s=float(full_trial_duration_s),
        time_budget_s=section.get("time_budget_s"),
    )
    for key in _SIMPLE_KEYS:
        if section.get(key) is not None:
            kwargs[key] = section[key]
    config = SearchConfig(**kwargs)
    from . import _check

    _check(config)
    return config
