"""Latency from a trial the generator did not send as asked (issue 26 item 2).

A 128 B row carried ``latency_avg_ns=137190`` and p99 4 ms from a latency trial the run's own
notes said was not sent as asked; the report's latency chart plotted that bar and flattened
every real one. Such figures are left out of plots and flagged in tables.
"""

from vsbench.results import report_html, report_plots
from vsbench.results.report_data import latency_not_as_asked


def _fs(size, avg_ns, *, valid=True):
    latency = {"source": "probes", "samples": 1000, "min_ns": avg_ns / 2, "avg_ns": avg_ns, "max_ns": avg_ns * 3}
    point = {"name": "NDR", "throughput_fps": 3e5, "valid": True, "regular": True, "trial_index": 5,
             "latency": latency, "latency_trial_index": 7}
    lp = {"label": "NDR", "reference": "NDR", "fraction": 1.0, "load_fps": 3e5, "trial_index": 7,
          "latency": latency, "valid": valid,
          "invalid_reason": None if valid else "generator: trafgen needed 1.06 s to send what was asked for 1 s"}
    return {"frame_size_bytes": size, "status": "complete", "points": [point], "latency_points": [lp]}


TEST = {"plan_index": 0, "label": "phy2phy_tput", "frame_sizes": [_fs(64, 12_000.0), _fs(128, 5_600_000.0, valid=False),
                                                                   _fs(256, 14_000.0)]}


def test_the_helper_finds_only_the_latency_trial_not_sent_as_asked():
    ok, bad, _ = TEST["frame_sizes"]
    assert latency_not_as_asked(ok, ok["points"][0]) is None
    assert latency_not_as_asked(bad, bad["points"][0])["trial_index"] == 7
    assert latency_not_as_asked({"frame_size_bytes": 64}, {"latency_trial_index": 7}) is None  # an old results.json


def test_the_latency_plot_leaves_out_a_trial_not_sent_as_asked():
    series, left_out = report_plots.latency_series(TEST)
    [(_, name, rows)] = series
    assert name == "NDR" and left_out == 1
    assert [i for i, _ in rows] == [0, 2]  # 64 B and 256 B; the 5.6 ms bar at 128 B is out
    assert report_plots.latency_figure(TEST).startswith("data:image/svg+xml;base64,")


def test_the_tables_flag_latency_not_sent_as_asked():
    html = str(report_html._throughput_table(TEST, "NDR"))
    assert html.count("latency invalid: trial not sent as asked") == 1
    assert "5,600,000 ✗" in html and "12,000 ✗" not in html
