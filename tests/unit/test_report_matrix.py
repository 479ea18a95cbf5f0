"""report.html's feature-matrix section: the table the console ends a run with, kept in the
report -- every variant's figure and gain, what the switch said was in effect, and a
variant without a figure listed with its reason (not dropped)."""

from pathlib import Path

from vsbench.results import report_html, report_matrix
from vsbench.results.report_data import RunFiles


def _test(i, variant, fs, active=None):
    label = "pvp_virtio_features[" + ",".join(f"{k}={v}" for k, v in variant.items()) + "]"
    return {"plan_index": i, "label": label, "testcase": "pvp_virtio_features", "variant": variant,
            "status": "complete", "switching_operations": 2, "frame_sizes": [{"frame_size_bytes": 64, **fs}]}


def _point(ndr, packed, queues):
    return {"name": "NDR", "throughput_fps": ndr, "lower_bound_fps": ndr, "upper_bound_fps": ndr * 1.01,
            "valid": True, "regular": True, "cpu_oversubscribed": False,
            "datapath": {"kind": "userspace", "active": {"packed_ring": packed, "vhost_queues": queues}}}


def _files():
    keys = ("vnf.testpmd.packed_ring", "vnf.testpmd.queues", "vswitch.ovs_dpdk.userspace_tso")
    tests = [
        _test(0, dict(zip(keys, (False, 1, False))), {"status": "complete", "points": [_point(60000, "off", "1")]}),
        _test(1, dict(zip(keys, (True, 1, False))), {"status": "complete", "points": [_point(66000, "on", "1")]}),
        _test(2, dict(zip(keys, (False, 1, True))), {"status": "not-run", "points": [],
                                                     "notes": ["skipped: userspace_tso=true cannot take effect here"]}),
    ]
    return RunFiles(run_dir=Path("/r/20261128-000000-abc123"), results={"run_id": "abc123", "status": "complete",
                                                                      "tests": tests})


def test_the_section_lists_every_variant_with_its_gain_what_was_in_effect_and_why_one_has_no_figure():
    blocks = report_matrix.matrix_section(_files())
    assert blocks[0].text == "Feature matrix"
    assert blocks[1].text == "pvp_virtio_features: ndr_fps against packed_ring=False, queues=1, userspace_tso=False"
    table = blocks[2]
    rows = {r[0]: r for r in table.rows}
    assert rows["packed_ring=False, queues=1, userspace_tso=False"][2:4] == ["0.0600", "baseline"]
    packed = rows["packed_ring=True, queues=1, userspace_tso=False"]
    assert packed[2] == "0.0660" and packed[3] == "+10.0 %" and packed[5] == "on"
    assert rows["packed_ring=False, queues=1, userspace_tso=True"][2] == "skipped"
    notes = " ".join(str(b.__dict__) for b in blocks[3:])
    assert "userspace_tso=true cannot take effect here" in notes


def test_no_matrix_no_section():
    files = _files()
    files.results["tests"] = files.results["tests"][:1]
    assert report_matrix.matrix_section(files) == []


def test_the_report_carries_the_section():
    assert "pvp_virtio_features: ndr_fps against" in report_html.render(_files(), generated_at="x")


def test_more_vhost_queues_than_pmd_cores_is_said_under_the_table():
    from vsbench.results import feature_matrix, run_metrics

    files = _files()
    point = files.results["tests"][1]["frame_sizes"][0]["points"][0]
    point["datapath"]["active"] = {"packed_ring": "off", "vhost_queues": "2", "vhost_rxqs": "4 on 1 PMD"}
    files.results["tests"][0]["frame_sizes"][0]["points"][0]["datapath"]["active"]["vhost_rxqs"] = "2 on 1 PMD"
    [fm] = feature_matrix.matrices(files.results, run_metrics.extract(files.results))
    [note] = [n for n in fm.notes if "PMD core" in n]
    assert note.startswith("packed_ring=True, queues=1, userspace_tso=False: 4 vhost-user receive queues on 1 PMD")
    assert "contention, not multiqueue scaling" in note
