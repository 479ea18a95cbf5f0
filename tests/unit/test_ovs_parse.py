"""OvS tool output parsers, on output captured from OvS 3.1 / DPDK 22.11 on this testbed
(tests/data/ovs/: 1 M frames of 64 B through a 100 kpps meter between two af_packet ports)."""

from pathlib import Path

import pytest

from vsbench_plugins.vswitch.ovs import parse

DATA = Path(__file__).resolve().parents[1] / "data" / "ovs"


def read(name: str) -> str:
    return (DATA / name).read_text()


def test_pmd_stats_show_threads_and_totals():
    stats = parse.parse_pmd_stats(read("pmd-stats-show.txt"))
    pmd, main = stats["threads"]
    assert (pmd["thread"], pmd["numa_id"], pmd["core_id"]) == ("pmd", 0, 1)
    assert main["thread"] == "main"
    # every frame trafgen sent reached the PMD; all but the first few hit the cache
    assert pmd["packets_received"] == 1_000_000
    assert pmd["simple_match_hits"] + pmd["emc_hits"] + pmd["smc_hits"] + pmd["megaflow_hits"] \
        + pmd["miss_with_success_upcall"] == pmd["packets_received"]
    assert pmd["idle_cycles_pct"] + pmd["processing_cycles_pct"] == pytest.approx(100.0, abs=0.02)
    assert isinstance(pmd["avg_cycles_per_packet"], float)
    totals = stats["totals"]
    assert totals["pmd_threads"] == 1
    assert totals["packets_received"] == 1_000_000
    assert totals["upcalls"] == pmd["miss_with_success_upcall"] + pmd["miss_with_failed_upcall"]
    expected = (pmd["idle_cycles"] + pmd["processing_cycles"]) / pmd["packets_received"]
    assert totals["avg_cycles_per_packet"] == pytest.approx(expected)
    assert totals["avg_cycles_per_packet"] == pytest.approx(pmd["avg_cycles_per_packet"], rel=1e-3)


def test_pmd_stats_of_idle_switch_has_no_averages():
    text = "pmd thread numa_id 0 core_id 1:\n  packets received: 0\n  emc hits: 0\nmain thread:\n  packets received: 0\n"
    totals = parse.parse_pmd_stats(text)["totals"]
    assert totals["avg_cycles_per_packet"] is None and totals["emc_hit_ratio"] is None


def test_pmd_stats_sums_several_pmds_and_skips_unknown_lines():
    text = (
        "pmd thread numa_id 0 core_id 2:\n  packets received: 10\n  emc hits: 7\n  new thing: abc\n"
        "  idle cycles: 100 (50.00%)\n  processing cycles: 100 (50.00%)\n"
        "pmd thread numa_id 1 core_id 3:\n  packets received: 30\n  emc hits: 29\n"
        "  idle cycles: 0 (0.00%)\n  processing cycles: 600 (100.00%)\n"
    )
    totals = parse.parse_pmd_stats(text)["totals"]
    assert totals["pmd_threads"] == 2
    assert totals["packets_received"] == 40 and totals["emc_hits"] == 36
    assert totals["avg_cycles_per_packet"] == pytest.approx(800 / 40)


def test_dump_ports_counters_and_unknowns():
    ports = parse.parse_dump_ports(read("dump-ports.txt"))
    assert set(ports) == {"LOCAL", "1", "2"}
    assert ports["1"]["rx_packets"] == 1_000_000
    # what the meter let through left on port 2
    assert 0 < ports["2"]["tx_packets"] < ports["1"]["rx_packets"]
    assert ports["1"]["rx_crc_errors"] is None  # "?" in the output: not kept by af_packet
    assert ports["LOCAL"]["rx_crc_errors"] == 0
    assert ports["2"]["duration_s"] > 0


def test_meter_stats_band_counts_drops():
    meters = parse.parse_meter_stats(read("meter-stats.txt"))
    meter = meters["1"]
    assert meter["flow_count"] == 2
    assert meter["packet_in_count"] == 1_000_000
    dropped = meter["bands"][0]["packet_count"]
    ports = parse.parse_dump_ports(read("dump-ports.txt"))
    assert dropped + ports["2"]["tx_packets"] == meter["packet_in_count"]


def test_versions():
    assert parse.parse_version(read("version-dpdk.txt")) == {"ovs": "3.1.0", "dpdk": "22.11.11"}
    assert parse.parse_version(read("version-kernel.txt")) == {"ovs": "3.1.0"}


def test_cause_of_a_failed_port_is_the_first_error_of_the_last_run():
    from vsbench_plugins.vswitch.ovs.instance import first_of_last_error_run

    log = [
        "2026-11-21T06:20:44.100Z|00080|dpdk|ERR|an old unrelated error",
        "2026-11-21T06:20:44.912Z|00084|netdev_dpdk|WARN|Rx checksum offload is not supported on port 0",
        "2026-11-21T06:20:44.916Z|00085|dpdk|ERR|Frame size (9216) > device max frame size (1518) for port_id 0",
        "2026-11-21T06:20:44.916Z|00086|netdev_dpdk|ERR|Interface p0 MTU (9198) setup error: Invalid argument",
        "2026-11-21T06:20:44.916Z|00089|dpif|WARN|netdev@ovs-netdev: failed to add p0 as port: Invalid argument",
    ]
    assert first_of_last_error_run(log) == "Frame size (9216) > device max frame size (1518) for port_id 0"
    assert first_of_last_error_run(log[1:2]) == ""


def test_implementation_listings_give_their_names():
    assert parse.parse_implementations(read("subtable-lookup-info-get.txt")) == ["autovalidator", "generic"]
    # dpif-impl-get and miniflow-parser-get of OvS 3.1 (one netdev bridge, no PMD yet)
    assert parse.parse_implementations("Available DPIF implementations:\n  dpif_scalar (pmds: none)\n") == ["dpif_scalar"]
    mfex = ("Available MFEX implementations:\n  autovalidator (available: True pmds: none)\n"
            "  scalar (available: True pmds: none)\n  study (available: True pmds: none)\n")
    assert parse.parse_implementations(mfex) == ["autovalidator", "scalar", "study"]
    assert parse.parse_implementations("") == []


def test_a_refused_appctl_command_reads_as_the_switchs_reply():
    """ovs-appctl prints ovs-vswitchd's answer, then its own generic last line: the answer
    is the reason (here: the priority OvS 3.1 accepts)."""
    from vsbench.interfaces import commands
    from vsbench_plugins.vswitch.ovs.ctl import _reason

    argv = ["ovs-appctl", "-t", "x.ctl", "dpif-netdev/subtable-lookup-prio-set", "generic", "1000"]
    exc = commands.CommandError(argv, 2, read("subtable-lookup-prio-set-1000.stderr"))
    assert _reason(exc) == "error converting priority, use integer in range 0-255"
    tool_only = commands.CommandError(argv, 1, "ovs-appctl: cannot connect to \"x.ctl\" (No such file or directory)\n")
    assert _reason(tool_only).startswith("ovs-appctl: cannot connect")
