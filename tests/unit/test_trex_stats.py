"""TRex statistics parsing (µs -> ns), event sequence checks and the plugin's settings."""

from pathlib import Path

import jsonschema
import pytest
import yaml

from tests.fakes.trex.dut import LatencyState, DutModel, trex_bucket_us
from vsbench_plugins.trafficgen.trex import events, stats
from vsbench_plugins.trafficgen.trex.settings import DEFAULTS, SETTINGS_SCHEMA, TrexSettings

ROOT = Path(__file__).resolve().parents[2]


def test_latency_record_converts_microseconds_to_nanoseconds():
    section = {"lat": {"average": 12.5, "total_max": 40, "total_min": 7, "last_max": 30,
                       "jit": 2.25, "histogram": {"0": 3, "10": 90, "30": 7}},
               "er": {"ooo": 2, "dup": 1}}
    rec = stats.latency_record(section)
    assert rec.histogram == {0: 3, 10_000: 90, 30_000: 7}
    assert (rec.min_ns, rec.max_ns, rec.mean_ns, rec.jitter_ns) == (7000.0, 40000.0, 12500.0, 2250.0)
    assert rec.samples == 100
    assert rec.errors_json() == {"dropped": 0, "out_of_order": 2, "duplicates": 1,
                                 "seq_too_high": 0, "seq_too_low": 0}


def test_latency_record_without_samples_has_no_figures():
    rec = stats.latency_record({"lat": {"average": 0, "total_max": 0, "total_min": 0, "histogram": {}}})
    assert rec.samples == 0 and rec.min_ns is None and rec.mean_ns is None
    assert stats.latency_record({}) is None
    assert stats.merge_histograms([rec]) is None


def test_merge_sums_buckets_and_weights_the_mean_by_samples():
    a = stats.latency_record({"lat": {"average": 10.0, "total_max": 20, "total_min": 5,
                                      "histogram": {"10": 3, "0": 1}}})
    b = stats.latency_record({"lat": {"average": 30.0, "total_max": 50, "total_min": 20,
                                      "histogram": {"20": 4, "10": 8}}})
    h = stats.merge_histograms([a, b])
    assert list(h.bucket_lower_ns) == [0, 10_000, 20_000]
    assert list(h.counts) == [1, 11, 4]
    assert (h.min_ns, h.max_ns) == (5000.0, 50000.0)
    assert h.mean_ns == pytest.approx((10_000 * 4 + 30_000 * 12) / 16)


def test_port_counters_difference_and_pgid_per_port_maps_keyed_by_strings():
    before = stats.PortCounters.from_json({"opackets": 10, "ipackets": 5})
    after = stats.PortCounters.from_json({"opackets": 110, "ipackets": 95, "obytes": 6000})
    assert (after - before).opackets == 100 and (after - before).ipackets == 90
    pg = stats.PgIdCounters.from_json({"tp": {"0": 7, "1": 0, "total": 7}, "rp": {"1": 6}})
    assert (pg.tx(0), pg.rx(1), pg.rx(0)) == (7, 6, 0)


@pytest.mark.parametrize("sample_us,bucket", [(3.2, 0), (9.99, 0), (10.0, 10), (19.9, 10), (25, 20),
                                              (99, 90), (100, 100), (250, 200), (1999, 1000),
                                              (54321, 50000)])
def test_fake_histogram_buckets_follow_trex(sample_us, bucket):
    assert trex_bucket_us(sample_us) == bucket


def test_fake_latency_json_is_in_microseconds_and_plugin_reads_it_in_ns():
    state = LatencyState(seed=1)
    state.add(DutModel(latency_us=50.0, latency_spread_us=0.0), 10, overloaded=False)
    rec = stats.latency_record({"lat": state.to_json()})
    assert rec.histogram == {50_000: 10}
    assert rec.min_ns == rec.max_ns == 50_000.0 and rec.mean_ns == pytest.approx(50_000.0)


def test_event_sequence_must_be_contiguous():
    ev = lambda s: events.ServerEvent(14, {"port_id": 0}, s)  # noqa: E731
    assert events.check_sequence(None, [ev(5), ev(6), ev(7)]) == 7
    assert events.check_sequence(7, []) == 7
    with pytest.raises(events.EventSequenceError, match="from 7 to 9"):
        events.check_sequence(7, [ev(9)])


def test_parse_events_keeps_trex_events_only():
    result = {"data": [{"name": "trex-event", "type": 14, "data": {"port_id": 1, "profile_id": "_"}, "seq": 3},
                       {"name": "trex-global", "type": 0, "data": {}}]}
    parsed = events.parse_events(result)
    assert len(parsed) == 1 and parsed[0].port_id == 1 and parsed[0].seq == 3


def test_conf_file_defaults_match_the_module_and_the_schema():
    conf = yaml.safe_load((ROOT / "conf" / "30_trafficgen_trex.yaml").read_text())
    section = conf["trafficgen"]["trex"]
    assert section == DEFAULTS
    jsonschema.Draft202012Validator(SETTINGS_SCHEMA).validate(section)


def test_schema_rejects_typos_and_bad_values():
    validator = jsonschema.Draft202012Validator(SETTINGS_SCHEMA)
    assert not validator.is_valid({"hots": "x"})
    assert not validator.is_valid({"sync_port": 0})
    assert not validator.is_valid({"bulk_counters": "flows"})
    with pytest.raises(ValueError, match="unknown trafficgen.trex setting"):
        TrexSettings.from_mapping({"hots": "x"})
    assert TrexSettings.from_mapping({"ports": [2, 3]}).ports == (2, 3)


def test_seq_zero_restarts_the_count():
    ev = lambda s: events.ServerEvent(14, {"port_id": 0}, s)  # noqa: E731
    assert events.check_sequence(41, [ev(0), ev(1)]) == 1
