"""vsbench as an Xtesting testcase, for real: ``pip install 'vsbench[xtesting]'`` into a
venv of its own (PyPI's xtesting 1.3.0), a testcases.yaml naming vsbench's entry point,
and Xtesting's own ``run_tests -t CASE -r`` running a short phy2phy_cont on the embedded
testbed. Xtesting's verdict must follow vsbench's gates (PASS, then FAIL for a gate no
switch here can hold), the run directory must be the case's artifact under Xtesting's
result directory, and the record Xtesting pushes to its test database (a stand-in
TestAPI on localhost, recording each POST) must carry the figures from results.json.
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import sys
import threading
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest
import yaml

from run_helpers import assert_nothing_left, require

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces)", allow_module_level=True)

REPO = Path(__file__).resolve().parents[2]
XTESTING_RESULTS = Path("/var/lib/xtesting/results")  # fixed in xtesting.utils.constants


@pytest.fixture(scope="module")
def xtesting_venv(tmp_path_factory) -> Path:
    """A venv with ``vsbench[xtesting]`` installed from this checkout, as a lab would."""
    venv = tmp_path_factory.mktemp("xtesting") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    installer = ([sys.executable, "-m", "uv", "pip", "install", "-q", "--python", str(venv / "bin" / "python")]
                 if shutil.which("uv", path=str(Path(sys.executable).parent)) else
                 [str(venv / "bin" / "python"), "-m", "pip", "install", "-q"])
    proc = subprocess.run([*installer, "-e", f"{REPO}[xtesting]"], capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"pip install 'vsbench[xtesting]' failed: {proc.stderr[-2000:]}")
    return venv


class _TestApi(BaseHTTPRequestHandler):
    """OPNFV's TestAPI as far as Xtesting's push_to_db needs it: keep the JSON, answer
    with the record's href."""

    records: list[dict] = []

    def do_POST(self):  # noqa: N802 -- http.server's naming
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        type(self).records.append(json.loads(body))
        reply = json.dumps({"href": f"http://localhost/api/v1/results/{len(self.records)}"}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *args):
        pass


@pytest.fixture
def test_db():
    _TestApi.records = []
    server = HTTPServer(("127.0.0.1", 0), _TestApi)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/api/v1/results", _TestApi.records
    server.shutdown()
    server.server_close()


def _case(name: str, gate: str) -> dict:
    return {"case_name": name, "project_name": "vsbench", "criteria": 100, "blocking": False,
            "description": "vsbench phy2phy_cont through Xtesting",
            "run": {"name": "vsbench", "args": {
                "test": "phy2phy_cont", "vswitch": "linux_bridge",
                "test_params": "frame_sizes=[64];trial_duration=1;warmup_s=0;rate_percent=1",
                "fail_below": [gate], "tag": ["via=xtesting"]}}}


def test_run_tests_runs_vsbench_and_its_gate_decides_pass_or_fail(xtesting_venv, test_db, tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "linux_bridge"))
    url, records = test_db
    token = secrets.token_hex(3)
    passing, failing = f"vsbench_xt_pass_{token}", f"vsbench_xt_gate_{token}"
    home = tmp_path / "home"
    (home / ".xtesting").mkdir(parents=True)
    (home / ".xtesting" / "testcases.yaml").write_text(yaml.safe_dump({"tiers": [{
        "name": f"vsbench_{token}", "description": "", "testcases": [
            _case(passing, "continuous_fps@64=1"),          # any forwarding holds it
            _case(failing, "continuous_fps@64=1G"),         # no veth testbed forwards 1 Gfps
        ]}]}))
    env = {**os.environ, "HOME": str(home), "TEST_DB_URL": url, "NODE_NAME": "vsbench-ci",
           "BUILD_TAG": f"daily-vsbench-{token}", "INSTALLER_TYPE": "none", "DEPLOY_SCENARIO": "embedded"}
    try:
        outcomes = {}
        for case in (passing, failing):
            proc = subprocess.run([str(xtesting_venv / "bin" / "run_tests"), "-t", case, "-r"], env=env,
                                  capture_output=True, text=True, timeout=900, cwd=tmp_path)
            outcomes[case] = proc
        assert outcomes[passing].returncode == 0, outcomes[passing].stdout[-3000:] + outcomes[passing].stderr[-3000:]
        assert outcomes[failing].returncode != 0, outcomes[failing].stdout[-3000:]

        by_case = {r["case_name"]: r for r in records}
        assert by_case[passing]["criteria"] == "PASS" and by_case[failing]["criteria"] == "FAIL"
        details = by_case[passing]["details"]
        assert details["status"] == "complete" and details["exit_code"] == 0
        (test,) = details["tests"].values()
        fs = test["frame_sizes"]["64"]
        assert fs["continuous_fps"] > 1 and isinstance(fs["continuous_valid"], bool)
        assert by_case[failing]["details"]["exit_code"] == 3  # vsbench: a gate failed

        # the run directory is the case's artifact, under Xtesting's result directory
        run_dir = Path(details["run_dir"])
        assert run_dir.parent == XTESTING_RESULTS / passing and (run_dir / "results.json").is_file()
        doc = json.loads((run_dir / "results.json").read_text())
        assert doc["tags"] == {"via": "xtesting"}
        for case in (passing, failing):
            assert_nothing_left(by_case[case]["details"]["run_id"])
    finally:
        for case in (passing, failing):
            shutil.rmtree(XTESTING_RESULTS / case, ignore_errors=True)
