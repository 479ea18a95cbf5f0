"""Each built-in suite runs on the embedded testbed, as CI's short profile of it: one or two
of its ids (``--only``), the quick profile with the frame sizes and counts cut further, and
every id of the report still accounted for in suite.json. The whole quick profiles (up to 30
minutes each) are measured by hand and reported in the closing notes; this checks that each
suite's runs still build, forward and render.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from run_helpers import assert_nothing_left
from vsbench.results import schema

pytestmark = [pytest.mark.integration, pytest.mark.long,
              pytest.mark.skipif(os.geteuid() != 0, reason="needs root to create network namespaces")]

ROOT = Path(__file__).resolve().parents[2]
SEED_TABLES = Path("/work/shared/reference/seed-tables.md")

#: suite -> (the ids CI measures, --test-params that shorten them further)
SHORT = {
    "onp21_ovs_dpdk": (["000/T7-5"], "frame_sizes=[64]"),
    "ovs_optimized_deployment": (["001/T7"], "frame_sizes=[112];topology.lanes=1;search.time_budget_s=10"),
    "vrouter_prox": (["002/F12"], "frame_sizes=[64];dut.routes=[1024]"),
    "ovs_tc_vs_ovs_dpdk": (["003/G6.1.1"], "dut.rules=[64,8000]"),
    "tcp_workloads": (["004/TC3"], "trial_duration=3"),
}


@pytest.mark.parametrize("suite", sorted(SHORT))
def test_a_builtin_suite_measures_its_short_profile_and_accounts_for_every_id(suite, tmp_path):
    ids, params = SHORT[suite]
    done = subprocess.run([sys.executable, "-m", "vsbench.cli.main", "--suite", suite, "--only", ",".join(ids),
                           "--test-params", params, "--results-dir", str(tmp_path)],
                          cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-3000:] + done.stdout[-3000:]
    [run_dir] = [p for p in tmp_path.iterdir() if p.is_dir()]
    doc = json.loads((run_dir / "suite.json").read_text())
    schema.validate(doc, "suite_result.schema.json")
    statuses = {e["id"]: e["status"] for e in doc["ids"]}
    for id_ in ids:
        assert statuses[id_] == "measured", (id_, next(e for e in doc["ids"] if e["id"] == id_)["reason"])
    if SEED_TABLES.is_file():  # every id the report has is in suite.json
        prefix = ids[0].split("/")[0] + "/"
        listed = [line.split("|")[1].strip() for line in SEED_TABLES.read_text().splitlines()
                  if line.startswith(f"| {prefix}")]
        assert sorted(statuses) == sorted(listed)
    assert_nothing_left(run_dir.name.rsplit("-", 1)[1])
