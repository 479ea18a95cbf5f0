"""``vsbench report RUN_DIR --format vsperf`` (issue 26): VSPERF's result CSV files, so
dashboards fed by VSPERF keep working -- its column names, one file per test, one row per
frame size in numeric order, the same figures results.csv gives."""

import csv

from tests.unit.runs_kit import make_run, vsbench
from vsbench.results import vsperf_csv


def _rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_vsperf_files_carry_the_runs_figures_under_vsperfs_names(tmp_path, testkit, capsys):
    run_dir = make_run(tmp_path, testkit, testkit["results"], capacity_fps=2e5,
                       params="frame_sizes=[512,64];trial_duration=1")
    out_dir = tmp_path / "vsperf"
    out_dir.mkdir()
    code, out, err = vsbench("report", str(run_dir), "--format", "vsperf", "-o", str(out_dir), capsys=capsys)
    assert code == 0, err
    [path] = list(out_dir.iterdir())
    assert path.name == "result_0_phy2phy_tput_p2p.csv" and str(path) in out
    rows = _rows(path)
    assert list(rows[0]) == list(vsperf_csv.COLUMNS)
    ours = _rows(run_dir / "results.csv")
    assert [r["packet_size"] for r in rows] == ["64", "512"]  # numeric order
    for theirs, mine in zip(rows, sorted(ours, key=lambda r: int(r["frame_size_bytes"]))):
        assert theirs["type"] == "rfc2544_throughput" and theirs["id"] == "phy2phy_tput"
        assert float(theirs["throughput_rx_fps"]) == round(float(mine["throughput_fps"]), 3)
        assert float(theirs["throughput_rx_percent"]) == round(float(mine["line_rate_percent"]), 3)
        assert float(theirs["frame_loss_percent"]) == round(100 * float(mine["loss_ratio"] or 0), 3)
        assert theirs["min_latency_ns"] != vsperf_csv.UNKNOWN
        assert 0 < float(theirs["throughput_rx_fps"]) <= 2e5 * 1.01


def test_vsperf_format_refuses_a_missing_directory_and_a_non_run(tmp_path, testkit, capsys):
    code, _, err = vsbench("report", str(tmp_path), "--format", "vsperf", capsys=capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "not a run directory" in err
    run_dir = make_run(tmp_path, testkit, testkit["results"])
    code, _, err = vsbench("report", str(run_dir), "--format", "vsperf", "-o", str(tmp_path / "nope"), capsys=capsys)
    assert code == 2 and "not a directory" in err
