"""Issue 27's virtio/vhost knobs as one feature matrix on the real OvS-DPDK and testpmd
(``pvp_virtio_features``: a baseline, then the packed ring, two vhost-user queue pairs and
userspace TSO, one knob each), every variant checked by the switch's own account at every
trial (``datapath.active``), not by what was asked: the packed ring negotiated only where
offered, the queue pairs OvS followed and how many of its PMD cores poll them, and the
userspace-TSO variant listed with OvS's reason instead of a figure (af_packet ports offer
no TSO). Short fixed-rate trials (1 s at 10 kfps, 64 B): what is checked is the
configuration and the table, not a figure."""

from __future__ import annotations

import os
from io import StringIO

import pytest

from run_helpers import assert_nothing_left, build_plans, require, run

pytestmark = pytest.mark.integration

if os.geteuid() != 0:
    pytest.skip("needs root (network namespaces, hugepages)", allow_module_level=True)

SHORT = "frame_sizes=[64];type=continuous;rate_fps=10000;trial_duration=1;warmup_s=1;latency.enabled=false"


def test_packed_ring_queues_and_userspace_tso_in_one_table(tmp_path):
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"), ("vnf", "testpmd"))
    from rich.console import Console

    from vsbench.cli.compare_cmd import load_matrices, print_matrices

    plans = build_plans("pvp_virtio_features", "ovs_dpdk", SHORT, vnf="testpmd")
    outcome = run(tmp_path, plans)
    assert outcome.code == 0, outcome.console
    [fm] = load_matrices(outcome.run_dir, None)
    short = [v.short() for v in fm.variants]
    assert short == ["packed_ring=False, queues=1, userspace_tso=False", "packed_ring=True, queues=1, userspace_tso=False",
                     "packed_ring=False, queues=2, userspace_tso=False", "packed_ring=False, queues=1, userspace_tso=True"]
    assert fm.baseline_of(64) == 0
    cells = [fm.cells[(i, 64)] for i in range(4)]
    for cell, packed, queues in zip(cells[:3], ("off", "on", "off"), ("1", "1", "2")):
        assert cell.value.value == pytest.approx(10000, rel=0.01), cell
        assert cell.active["packed_ring"] == packed and cell.active["vhost_queues"] == queues, cell.active
        # two vhost-user ports x the queue pairs, all polled by the one PMD of this 2-CPU host
        assert cell.active["vhost_rxqs"] == f"{2 * int(queues)} on 1 PMD", cell.active
    # said under the table: two queue pairs on one PMD measure contention, not scaling
    assert any(n.startswith("packed_ring=False, queues=2, userspace_tso=False: 4 vhost-user receive queues on 1 PMD")
               for n in fm.notes), fm.notes
    tso = cells[3]
    assert tso.value is None and tso.gap == "skipped", tso
    [reason] = tso.reasons
    assert "userspace_tso=true cannot take effect here" in reason and "Tx TSO offload is not supported" in reason
    # the table the CLI ends its console with (vsbench.cli.main: print_matrices), the skipped
    # variant in it with its reason
    out = StringIO()
    print_matrices([fm], Console(file=out, width=400, color_system=None))
    table = out.getvalue()
    assert table.lstrip().startswith("Feature matrix pvp_virtio_features: continuous_fps against packed_ring=False")
    assert "queues=2" in table and "packed_ring=True" in table and "skipped" in table
    assert "userspace_tso=true cannot take effect here" in table
    for trial in outcome.trials():
        vhost = trial["switch"]["datapath"]["vhost"]
        packed = bool(fm.variants[trial["plan_index"]].settings["vnf.testpmd.packed_ring"])
        assert len(vhost) == 2 and all(v["connected"] and v["packed_ring"] is packed for v in vhost.values())
    assert_nothing_left(outcome.run_id)


def test_l3fwd_offers_the_packed_ring_and_ovs_negotiates_it_only_then(tmp_path):
    """vnf.l3fwd.packed_ring: l3fwd's virtio-user ports offer VIRTIO_F_RING_PACKED, and OvS's
    vhost-user ports report it negotiated in that variant only; both forward the rate."""
    require(("trafficgen", "trafgen"), ("vswitch", "ovs_dpdk"), ("vnf", "l3fwd"))
    from vsbench.cli.compare_cmd import load_matrices

    plans = build_plans("pvp_cont", "ovs_dpdk", f"{SHORT};vnf.l3fwd.packed_ring=[false,true]", vnf="l3fwd")
    outcome = run(tmp_path, plans)
    assert outcome.code == 0, outcome.console
    [fm] = load_matrices(outcome.run_dir, None)
    for i, variant in enumerate(fm.variants):
        cell = fm.cells[(i, 64)]
        assert cell.active["packed_ring"] == ("on" if variant.settings["vnf.l3fwd.packed_ring"] else "off"), cell.active
        assert cell.value is not None and cell.value.value > 5000  # of 10 kfps offered: it forwards
    assert_nothing_left(outcome.run_id)
