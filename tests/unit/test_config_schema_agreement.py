"""The configuration schema and the code agree: every key the code reads from the resolved
configuration is one the schema lets a user set, and every key the schema accepts is read
somewhere (a key that is accepted and never read silently does nothing -- ``testbed.kind``
once did; a key that is read and never accepted can never be set -- ``testbed.dut_ports``
once was). The code is scanned statically (tests/unit/config_reads.py says which idioms
it follows), so a key read on a rare path counts too."""

import functools
import json
from pathlib import Path

from config_reads import scan_code, schema_paths

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "vsbench" / "schemas" / "config.schema.json").read_text())

#: Plugin sections: ``<kind>.name`` is the core's; ``<kind>.<plugin>.*`` is each plugin's
#: own, checked against its settings_schema by the plugin-contract tests.
PLUGIN_SECTIONS = ("vswitch", "trafficgen", "vnf", "collector")

#: Keys the schema accepts that the code does not read through config, and why.
WRITTEN_NOT_READ = {
    "test.name": "written by the runner from the testcase (config.yaml says which testcase ran)",
    "suite.name": "written by a suite run (vsbench.suite.planning): config.yaml says which suite a plan is of",
    "suite.profile": "written by a suite run: the suite's profile the plan ran under",
    "suite.run": "written by a suite run: the suite's run the plan is (suite.json maps it to table rows)",
}


def _schema_keys() -> set[str]:
    keys = schema_paths(SCHEMA)
    for kind in PLUGIN_SECTIONS:
        ref = (SCHEMA["properties"].get(kind) or {}).get("$ref", "")
        if ref.startswith("#/$defs/"):
            keys |= schema_paths(SCHEMA["$defs"][ref.rsplit("/", 1)[1]], (kind,))
    return keys


@functools.cache
def _code_reads() -> dict[str, set[str]]:
    return scan_code([ROOT / "vsbench", ROOT / "plugins"], ROOT).reads


def _covered(key: str, reads: set[str]) -> bool:
    parts = key.split(".")
    return key in reads or any(".".join(parts[:i]) + ".*" in reads for i in range(1, len(parts)))


def test_every_key_the_code_reads_is_in_the_schema():
    schema_keys = _schema_keys()
    unknown = {}
    for key, where in _code_reads().items():
        parts = key.split(".")
        if parts[0] in PLUGIN_SECTIONS and len(parts) > 1 and parts[1] != "name":
            continue  # a plugin's own settings
        if key.endswith(".*"):
            key = key[:-2]
        if key not in schema_keys:
            unknown[key] = sorted(where)[:3]
    assert not unknown, f"read by the code but not accepted by config.schema.json: {unknown}"


def test_every_key_in_the_schema_is_read():
    reads = set(_code_reads())
    unread = sorted(k for k in _schema_keys()
                    if not _covered(k, reads) and k not in WRITTEN_NOT_READ
                    and k.split(".")[0] not in PLUGIN_SECTIONS[3:])
    assert not unread, (f"accepted by config.schema.json but read nowhere (make it do something or "
                        f"remove it): {unread}")


def test_exceptions_are_still_schema_keys():
    assert set(WRITTEN_NOT_READ) <= _schema_keys()
