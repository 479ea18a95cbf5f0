"""The search: section of the configuration, mapped onto SearchConfig."""

import jsonschema
import pytest

from vsbench.measurement.search.settings import SEARCH_SECTION_SCHEMA, search_config_from_section

CONF_DEFAULT = {
    "mode": "binary", "goals": [{"name": "NDR", "loss_ratio": 0.0}], "relative_width": 0.005,
    "min_load_fps": 1000, "max_load_fps": None, "time_budget_s": None,
}


def test_the_shipped_default_section_is_valid_and_keeps_60s_binary_trials():
    jsonschema.validate(CONF_DEFAULT, SEARCH_SECTION_SCHEMA)
    cfg = search_config_from_section(CONF_DEFAULT, max_load_fps=1e6, full_trial_duration_s=60)
    assert cfg.mode == "binary" and cfg.trial_duration_s == 60 and cfg.full_trial_duration_s == 60
    assert [g.name for g in cfg.goals] == ["NDR"] and cfg.max_load_fps == 1e6


def test_multi_mode_uses_short_trials_and_all_options():
    section = {
        "mode": "multi",
        "goals": [{"name": "NDR", "loss_ratio": 0.0}, {"name": "PDR", "loss_ratio": 0.005, "exceed_ratio": 0.5},
                  {"name": "LAT", "loss_ratio": 0.0, "max_latency_p99_ns": 50_000}],
        "confirm": True, "repetitions": 3, "alpha": 0.05, "max_trials_per_load": 13, "time_budget_s": 600,
    }
    jsonschema.validate(section, SEARCH_SECTION_SCHEMA)
    cfg = search_config_from_section(section, max_load_fps=2e6, full_trial_duration_s=60)
    assert cfg.trial_duration_s == cfg.final_trial_duration_s == 1.0 and cfg.full_trial_duration_s == 60
    assert cfg.confirm and cfg.repetitions == 3 and cfg.time_budget_s == 600
    assert cfg.goals[2].max_latency_p99_ns == 50_000


@pytest.mark.parametrize("section, message", [
    ({"mode": "fast"}, "search.mode must be one of"),
    ({"typo_key": 1}, "unknown key(s) typo_key"),
    ({"goals": [{"name": "NDR", "loss": 0}]}, "unknown key(s) loss"),
    ({"goals": [{"loss_ratio": 0}]}, "each goal needs a name"),
    ({"min_load_fps": 5e6}, "min_load_fps < max_load_fps"),
])
def test_bad_sections_are_one_line_errors(section, message):
    with pytest.raises(ValueError) as info:
        search_config_from_section(section, max_load_fps=1e6, full_trial_duration_s=60)
    assert message in str(info.value) and "\n" not in str(info.value)
