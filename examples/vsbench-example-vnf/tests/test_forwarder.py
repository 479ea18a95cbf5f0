"""The forwarder's own contract, without vsbench: a port that does not exist is one line
on stderr and exit 2, before anything is forwarded."""

import subprocess
import sys


def test_a_missing_port_is_one_line_and_exit_2(tmp_path):
    done = subprocess.run([sys.executable, "-m", "vsbench_example_vnf.forwarder", "--pair", "nosuch0", "nosuch1",
                           "--stats", str(tmp_path / "s.json")], capture_output=True, text=True, timeout=30)
    assert done.returncode == 2
    assert done.stderr.strip().startswith("pyfwd: cannot open port nosuch0")
    assert len(done.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "s.json").exists()
