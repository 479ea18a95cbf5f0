"""OvS-DPDK's switchable implementations (dpcls lookup, DPIF, miniflow parser): the
listings OvS 3.1 prints, read into what is in effect; whether an asked one really is; the
one-line refusal naming what this build can use here; and the ``active`` labels a feature
matrix shows. Samples: tests/data/ovs/*-avx512.txt (an OvS 3.1.0 built with
tools/build_ovs_avx512.sh, one PMD on core 1, after a phy2phy trial) and Debian's build."""

from __future__ import annotations

from pathlib import Path

import pytest

from vsbench_plugins.vswitch.ovs import parse
from vsbench_plugins.vswitch.ovs.implementations import (
    active_labels,
    implementation_problem,
    summarize_implementations,
    usable_text,
)

DATA = Path(__file__).resolve().parents[1] / "data" / "ovs"


def listing(name: str) -> dict:
    return parse.parse_implementation_listing((DATA / name).read_text())


def test_listings_give_each_implementation_with_what_it_says():
    dpcls = listing("subtable-lookup-info-get-avx512.txt")
    assert dpcls == {"autovalidator": {"use_count": 0, "priority": 0}, "generic": {"use_count": 0, "priority": 1},
                     "avx512_gather": {"use_count": 2, "priority": 255}}
    assert listing("dpif-impl-get-avx512.txt") == {"dpif_scalar": {"pmds": []}, "dpif_avx512": {"pmds": [1]}}
    mfex = listing("miniflow-parser-get-avx512.txt")
    assert mfex["study"] == {"available": True, "pmds": [1]} and mfex["scalar"] == {"available": True, "pmds": []}
    assert len(mfex) == 21 and "avx512_vbmi_ipv4_udp" in mfex
    debian = listing("subtable-lookup-info-get.txt")
    assert list(debian) == ["autovalidator", "generic"]
    two = parse.parse_implementation_listing("Available DPIF implementations:\n  dpif_scalar (pmds: 1,3)\n")
    assert two == {"dpif_scalar": {"pmds": [1, 3]}}
    assert parse.parse_implementation_listing("") == {}


def test_an_asked_implementation_in_effect_passes_and_anything_else_says_why():
    dpcls, dpif, mfex = (listing(f) for f in ("subtable-lookup-info-get-avx512.txt", "dpif-impl-get-avx512.txt",
                                              "miniflow-parser-get-avx512.txt"))
    assert implementation_problem("dpcls_lookup", "avx512_gather", dpcls, require_pmds=True) is None
    assert implementation_problem("dpcls_lookup", "generic", dpcls, require_pmds=True) == (
        "priority 1 is below avx512_gather's 255")
    assert implementation_problem("dpif_impl", "dpif_avx512", dpif, require_pmds=True) is None
    assert implementation_problem("dpif_impl", "dpif_scalar", dpif, require_pmds=False) is None  # no PMD check yet
    assert implementation_problem("dpif_impl", "dpif_scalar", dpif, require_pmds=True) == (
        "the PMD threads run something else: dpif_avx512 on PMD core(s) 1")
    assert implementation_problem("mfex_impl", "study", mfex, require_pmds=True) is None
    # study hands the PMD to the parser it found best: that is study in effect
    studied = {**mfex, "study": {"available": True, "pmds": []},
               "avx512_vbmi_ipv4_udp": {"available": True, "pmds": [1]}}
    assert implementation_problem("mfex_impl", "study", studied, require_pmds=True) is None
    assert implementation_problem("mfex_impl", "scalar", studied, require_pmds=True).startswith(
        "the PMD threads run something else: avx512_vbmi_ipv4_udp")
    no_isa = {**mfex, "avx512_ipv4_udp": {"available": False, "pmds": []}}
    assert implementation_problem("mfex_impl", "avx512_ipv4_udp", no_isa, require_pmds=False) == (
        "this CPU lacks the instructions it needs")
    none_running = {k: {**v, "pmds": []} for k, v in dpif.items()}
    assert implementation_problem("dpif_impl", "dpif_avx512", none_running, require_pmds=True) == (
        "no PMD thread runs any implementation")
    assert implementation_problem("dpif_impl", "dpif_turbo", dpif, require_pmds=False) == "not in this OvS's listing"
    assert implementation_problem("dpif_impl", "dpif_avx512", {}, require_pmds=False) == (
        "OvS gave no listing to check it against")


def test_the_refusal_names_what_this_build_can_use_here():
    assert usable_text("dpcls_lookup", listing("subtable-lookup-info-get.txt")) == (
        "usable here: autovalidator, generic; this OvS build has no AVX-512 ones (tools/build_ovs_avx512.sh)")
    mfex = listing("miniflow-parser-get-avx512.txt")
    mfex["avx512_vbmi_ipv4_udp"]["available"] = False
    text = usable_text("mfex_impl", mfex)
    assert text.startswith("usable here: autovalidator, scalar, study, avx512_ipv4_udp,")
    assert text.endswith("; built but not for this CPU: avx512_vbmi_ipv4_udp")
    assert usable_text("dpif_impl", {}) == "OvS listed no implementations"


def test_summary_and_labels_say_what_ran():
    summary = summarize_implementations({
        "dpcls_lookup": listing("subtable-lookup-info-get-avx512.txt"),
        "dpif_impl": listing("dpif-impl-get-avx512.txt"),
        "mfex_impl": listing("miniflow-parser-get-avx512.txt")})
    assert summary["dpcls_lookup"] == "avx512_gather" and summary["dpcls_subtables"] == {"avx512_gather": 2}
    assert summary["dpif_impl"] == "dpif_avx512" and summary["mfex_impl"] == "study"
    assert summary["available"]["dpif_impl"] == ["dpif_scalar", "dpif_avx512"]
    assert active_labels(summary) == {"dpcls": "avx512_gather", "dpif": "dpif_avx512", "mfex": "study"}
    debian = summarize_implementations({"dpcls_lookup": listing("subtable-lookup-info-get.txt")})
    assert debian["dpcls_lookup"] == "generic" and debian["dpcls_subtables"] == {}
    assert active_labels(debian) == {"dpcls": "generic (0 subtables)"}
    # a subtable whose shape avx512_gather does not take falls back to generic: both show
    mixed = {**summary, "dpcls_subtables": {"generic": 1, "avx512_gather": 3}}
    assert active_labels(mixed)["dpcls"] == "generic:1+avx512_gather:3"
    assert active_labels({"dpif_impl": None}) == {"dpif": "none"}
    # the scalar DPIF parses with its own code: the parser set is not in effect there
    assert active_labels({**summary, "dpif_impl": "dpif_scalar"})["mfex"] == "scalar (DPIF)"
    assert summarize_implementations({}) == {}


@pytest.mark.parametrize("sample, features, packed", [
    ("vhost-status-split.txt", "0x0000000950008000", False),   # testpmd's net_virtio_user, default
    ("vhost-status-packed.txt", "0x0000000d50008000", True),   # ... with packed_vq=1: bit 34
])
def test_vhost_status_reads_the_negotiated_features(sample, features, packed):
    status = parse.parse_ovsdb_map((DATA / sample).read_text())
    assert status["socket"].startswith("/run/vsbench/") and status["status"] == "connected"
    assert parse.vhost_status(status) == {"connected": True, "features": features, "packed_ring": packed,
                                          "virtio_1": True, "multiqueue": False, "queue_pairs": 1}
    mq = parse.vhost_status({**status, "features": hex(int(features, 16) | 1 << 22), "num_of_vrings": "4"})
    assert mq["multiqueue"] and mq["queue_pairs"] == 2
    assert parse.vhost_status(parse.parse_ovsdb_map("{mode=server, status=disconnected}")) == {"connected": False}


def test_vhost_labels_over_the_ports():
    from vsbench_plugins.vswitch.ovs_dpdk import vhost_labels

    on = {"connected": True, "packed_ring": True, "queue_pairs": 1}
    off = {"connected": True, "packed_ring": False, "queue_pairs": 2}
    assert vhost_labels({"a": on, "b": on}) == {"packed_ring": "on", "vhost_queues": "1"}
    assert vhost_labels({"a": on, "b": off}) == {"packed_ring": "mixed", "vhost_queues": "1,2"}
    assert vhost_labels({"a": {"connected": False}}) == {}
    assert vhost_labels({}) == {}
