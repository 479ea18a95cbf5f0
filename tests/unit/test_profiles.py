"""Traffic profiles and line rates from the traffic section of the resolved config."""

from pathlib import Path

import pytest
import yaml

from vsbench.interfaces.traffic import FlowFields
from vsbench.measurement import profiles

ROOT = Path(__file__).resolve().parents[2]


def _default_traffic():
    return yaml.safe_load((ROOT / "conf" / "10_traffic.yaml").read_text())["traffic"]


def test_default_config_builds_one_profile_per_frame_size():
    traffic = _default_traffic()
    sizes = profiles.frame_sizes(traffic)
    assert sizes[0] == 64
    prof = profiles.build_profile(traffic, 64)
    assert prof.frame_size_bytes == 64 and prof.flows == 1 and prof.bidirectional
    assert prof.directions == 2
    assert prof.fields.vary == ("src_ip", "dst_ip")
    assert prof.fields.src_ip == "10.0.0.1"
    assert prof.fields.vlan_id is None


def test_fields_override_defaults_and_vary_becomes_a_tuple():
    fields = profiles.flow_fields({"dst_port": 4789, "vary": ["src_port"]})
    assert fields.dst_port == 4789 and fields.vary == ("src_port",)
    assert fields.src_mac == FlowFields().src_mac


def test_unidirectional_profile_has_one_direction():
    prof = profiles.build_profile({"bidirectional": False, "flows": 1000}, 1518)
    assert prof.directions == 1 and prof.flows == 1000


@pytest.mark.parametrize(
    "traffic, size, match",
    [
        ({}, 63, "outside"),
        ({"flows": 0}, 64, "flows"),
        ({"fields": {"srcip": "1.2.3.4"}}, 64, "unknown traffic.fields"),
        ({"fields": {"vary": ["ttl"]}}, 64, "cannot vary ttl"),
    ],
)
def test_bad_traffic_sections_are_one_line_errors(traffic, size, match):
    with pytest.raises(profiles.ProfileError, match=match) as exc:
        profiles.build_profile(traffic, size)
    assert "\n" not in str(exc.value)


def test_nominal_line_rate_is_aggregate_over_directions():
    config = {"testbed": {"link_gbps": 10}}
    bidir = profiles.build_profile({"bidirectional": True}, 64)
    unidir = profiles.build_profile({"bidirectional": False}, 64)
    # 10G, 64 B + 20 B overhead: 14 880 952 fps per link.
    assert profiles.nominal_line_rate_fps(config, unidir) == pytest.approx(14_880_952.38, rel=1e-9)
    assert profiles.nominal_line_rate_fps(config, bidir) == pytest.approx(2 * 14_880_952.38, rel=1e-9)


def test_missing_link_speed_is_an_error():
    with pytest.raises(profiles.ProfileError, match="link_gbps"):
        profiles.link_bps({"testbed": {}})
