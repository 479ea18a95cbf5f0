"""Settings every OvS plugin shares, as a JSON-schema fragment with defaults.

A plugin's ``settings_schema`` is built with :func:`ovs_schema` (common properties plus its
own); the defaults live in the schema (``default``) and are repeated in the plugin's
``conf/20_vswitch_<name>.yaml`` for users to read (a unit test keeps the two equal).
:func:`with_defaults` fills in what a partial settings mapping leaves out, so a plugin
constructed outside the config loader (tests, another program) behaves the same.
"""

from __future__ import annotations

import copy
from typing import Any, Mapping

COMMON_PROPERTIES: dict[str, Any] = {
    "ovsdb_server": {"type": "string", "default": "ovsdb-server",
                     "description": "ovsdb-server binary (name on PATH or absolute path)"},
    "ovsdb_tool": {"type": "string", "default": "ovsdb-tool"},
    "ovs_schema": {"type": "string", "default": "/usr/share/openvswitch/vswitch.ovsschema",
                   "description": "schema the private database is created from"},
    "max_idle_ms": {"type": "integer", "minimum": 500, "default": 30000,
                    "description": "datapath flow idle timeout; raised so flow setup is not measured (RFC 8204)"},
    "max_revalidator_ms": {"type": "integer", "minimum": 100, "default": 10000,
                           "description": "how often the revalidators dump every datapath flow (OvS "
                                          "default 500); raised because with 64K+ flows that dump "
                                          "takes the CPU the generator needs on a small machine"},
    "meter_burst_ms": {"type": "number", "minimum": 1, "default": 40,
                       "description": "bucket of the dut.meter_pps meter, in ms of traffic at its rate; "
                                      "OvS refills meters in whole milliseconds and never refills a "
                                      "bucket smaller than 1 ms of traffic (the meter would pass nothing)"},
    "start_timeout_s": {"type": "number", "exclusiveMinimum": 0, "default": 60},
    "rule_install_timeout_s": {"type": "number", "exclusiveMinimum": 0, "default": 900},
    "other_config": {"type": "object", "default": {},
                     "additionalProperties": {"type": ["string", "number", "boolean"]},
                     "description": "extra Open_vSwitch other_config keys, applied last"},
}


def ovs_schema(title: str, properties: Mapping[str, Any]) -> dict[str, Any]:
    """Schema of one OvS plugin's section: the common properties plus ``properties``."""
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "title": title,
        "type": "object",
        "additionalProperties": False,
        "properties": {**copy.deepcopy(COMMON_PROPERTIES), **copy.deepcopy(dict(properties))},
    }
