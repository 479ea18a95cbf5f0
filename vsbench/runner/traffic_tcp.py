"""Traffic type ``tcp``: a TCP workload across the switch (report 5), instead of frame trials.

The generator (one that declares ``supports_tcp``: ``iperf3``) runs ``tcp.repetitions``
runs of ``traffic.trial_duration_s`` with the endpoint options of the ``tcp`` section
(streams, MTU, TSO/GSO/GRO), both ways at once when ``traffic.bidirectional``; each run is a
trial record (role ``tcp``) with the switch's cost sampled around it. Reported
(:class:`~vsbench.results.model.TcpPoint`, from the median run): goodput in Gbit/s,
retransmits, the endpoints' and the switch's CPU, cores per Gbit/s and the TCP round-trip
times under that load; marked oversubscribed when the plan's CPU plan is. Switch options
(``vswitch.ovs_dpdk.n_rxq``, ``pmd_cpu_mask``...) and endpoint options are swept like any
setting, with ``--test-params`` lists: each combination is a plan, and the run ends with
the feature-matrix table of their goodputs.

With ``tcp.clients`` N > 1 (deployment ``v2v``: a switch port per endpoint) N clients
send to one server at once; the point's goodput, retransmits and endpoint CPU are their
sums and ``client_gbps`` each client's share.

The frame size of a TCP plan is the endpoints' largest frame (MTU + 18), a label: it is
what the switch's largest-frame check compares.
"""

from __future__ import annotations

import logging
import statistics
from typing import Any, Mapping

from vsbench.interfaces.tcp import TcpSpec
from vsbench.results.model import FrameSizeResult, TcpPoint, TrialRecord
from vsbench.runner.traffic_job import FrameSizeJob, TrafficTypeError, account

log = logging.getLogger(__name__)

KIND = "tcp"
#: The endpoints' MTU when ``tcp.mtu_bytes`` is null (the frame size label: +18).
DEFAULT_MTU_BYTES = 1500
ETHERNET_OVERHEAD_BYTES = 18


def tcp_section(config: Mapping[str, Any]) -> Mapping[str, Any]:
    return config.get("tcp") or {}


def frame_size(config: Mapping[str, Any]) -> int:
    """The frame size label of a TCP plan: the endpoints' MTU + 18."""
    mtu = tcp_section(config).get("mtu_bytes") or DEFAULT_MTU_BYTES
    return int(mtu) + ETHERNET_OVERHEAD_BYTES


def spec_of(config: Mapping[str, Any]) -> TcpSpec:
    """The :class:`TcpSpec` of a plan's ``tcp`` and ``traffic`` sections."""
    tcp = config.get("tcp") or {}
    traffic = config.get("traffic") or {}

    def flag(value: Any) -> bool | None:
        return None if value is None else bool(value)

    return TcpSpec(duration_s=float(traffic.get("trial_duration_s") or 10.0), streams=int(tcp.get("streams") or 1),
                   bidirectional=bool(traffic.get("bidirectional", False)),
                   mtu_bytes=int(tcp["mtu_bytes"]) if tcp.get("mtu_bytes") else None,
                   tso=flag(tcp.get("tso")), gso=flag(tcp.get("gso")), gro=flag(tcp.get("gro")),
                   tx_checksum=flag(tcp.get("tx_checksum")),
                   omit_s=float(tcp.get("omit_s") or 0.0), clients=int(tcp.get("clients") or 1))


def endpoints_for(config: Mapping[str, Any], traffic_type: str, vswitch: Any) -> tuple[Mapping[str, Any], str | None, str | None]:
    """``(config, skip, note)`` for a TCP plan across a switch that does not carry a kernel
    endpoint's offloaded frames (:meth:`VSwitch.carries_offloaded_frames`): the endpoints'
    tx checksumming goes off unless the plan sets it (a note says so), and a plan with
    TSO on is skipped (its segments would be cut). Any other plan: unchanged."""
    carries = getattr(vswitch, "carries_offloaded_frames", None)
    if traffic_type != KIND or carries is None or carries():
        return config, None, None
    tcp = dict(config.get("tcp") or {})
    note = getattr(vswitch, "offloaded_frames_note", None)
    why = (note() if note is not None else "") or f"{vswitch.name} reads frames as bytes from packet sockets"
    if tcp.get("tso") is True:
        return config, (f"skipped: tcp.tso=true cannot cross {vswitch.name} as built here ({why}: a TSO segment "
                        "is cut at the port's largest frame or dropped)"), None
    if tcp.get("tx_checksum") is not None:
        return config, None, None
    tcp.update(tx_checksum=False, tso=False)
    return ({**config, "tcp": tcp}, None,
            f"endpoints checksum and segment in software (tcp.tx_checksum=false): {why}, so a checksum "
            "left to the NIC would arrive unfinished or not at all")


def check_deployment(config: Mapping[str, Any], deployment_cls: type) -> None:
    """``tcp.clients`` > 1 needs a deployment with a switch port per client
    (``endpoint_ports_per_client``: ``v2v``); a deployment that serves TCP endpoints only
    (``traffic_types``) refuses other traffic."""
    kind = (config.get("traffic") or {}).get("type", "rfc2544_throughput")
    name = getattr(deployment_cls, "name", deployment_cls.__name__)
    only = tuple(getattr(deployment_cls, "traffic_types", ()) or ())
    if only and kind not in only:
        raise TrafficTypeError(f"deployment {name} attaches TCP endpoints where guests would be; it runs "
                               f"traffic.type {' or '.join(only)}, not {kind}")
    clients = int(tcp_section(config).get("clients") or 1)
    if kind == KIND and clients > 1 and not getattr(deployment_cls, "endpoint_ports_per_client", False):
        raise TrafficTypeError(f"tcp.clients {clients} needs a switch port per client (deployment v2v); "
                               f"deployment {name} has one client port")


def check_generator(traffic: Mapping[str, Any], generator_cls: type) -> None:
    """``tcp`` needs a generator declaring ``supports_tcp``; a TCP-only generator runs
    nothing else."""
    name = getattr(generator_cls, "name", None) or generator_cls.__name__
    kind = traffic.get("type", "rfc2544_throughput")
    if kind == KIND and getattr(generator_cls, "supports_tcp", False) is not True:
        raise TrafficTypeError(f"traffic type tcp runs TCP connections; trafficgen {name} cannot "
                               "(use --trafficgen iperf3)")
    if kind != KIND and getattr(generator_cls, "tcp_only", False) is True:
        raise TrafficTypeError(f"trafficgen {name} runs TCP workloads only (traffic.type: tcp), not {kind}")


def point_of(records: list[TrialRecord], oversubscribed: bool | None) -> TcpPoint:
    """The reported figures: the median run by goodput, with every run's goodput."""
    runs = [(r, r.result.generator_stats.get("tcp") or {}) for r in records]
    runs = [(r, doc) for r, doc in runs if r.valid and doc.get("gbps") is not None]
    if not runs:
        raise TrafficTypeError("no TCP run completed")
    ordered = sorted(runs, key=lambda item: item[1]["gbps"])
    record, doc = ordered[(len(ordered) - 1) // 2]  # the lower median: a run that happened
    elapsed = float(record.switch.get("elapsed_s") or 0.0)
    switch_cores = float(record.switch["cpu_s"]) / elapsed if record.switch.get("cpu_s") is not None and elapsed else None
    endpoint = [doc.get("sender_cpu_percent"), doc.get("receiver_cpu_percent")]
    cores = None
    if None not in endpoint:
        cores = sum(float(x) for x in endpoint) / 100.0 + (switch_cores or 0.0)
    gbps = float(doc["gbps"])
    spec = doc.get("spec") or {}
    clients = [c for c in doc.get("clients") or [] if isinstance(c, Mapping)]
    return TcpPoint(
        trial_index=record.trial_index, gbps=gbps, retransmits=doc.get("retransmits"),
        sender_cpu_percent=doc.get("sender_cpu_percent"), receiver_cpu_percent=doc.get("receiver_cpu_percent"),
        switch_cores=switch_cores, cores=cores, cores_per_gbps=cores / gbps if cores is not None and gbps > 0 else None,
        rtt_min_us=doc.get("rtt_min_us"), rtt_mean_us=doc.get("rtt_mean_us"), rtt_max_us=doc.get("rtt_max_us"),
        options={k: spec.get(k) for k in ("streams", "bidirectional", "mtu_bytes", "tso", "gso", "gro", "tx_checksum",
                                          "clients")},
        trial_indices=[r.trial_index for r, _ in runs], gbps_runs=[float(d["gbps"]) for _, d in runs],
        cpu_oversubscribed=oversubscribed,
        client_gbps=[float(c.get("gbps") or 0.0) for c in clients],
        client_retransmits=[c.get("retransmits") for c in clients],
        interface_drops=(doc.get("stats") or {}).get("interface_drops"))


def tcp_workload(job: FrameSizeJob) -> FrameSizeResult:
    repetitions = int(tcp_section(job.config).get("repetitions") or 1)
    spec = spec_of(job.config)
    start = len(job.trials.records)
    job.on_start(None)
    for i in range(repetitions):
        record = job.trials.run_tcp(spec)
        doc = record.result.generator_stats.get("tcp") or {}
        log.info("tcp run %d/%d: %.3f Gbit/s, %s retransmits", i + 1, repetitions, doc.get("gbps") or 0.0,
                 doc.get("retransmits"))
    fs = job.result
    fs.tcp = point_of(job.trials.records[start:], None)  # the runner marks oversubscription
    if len(fs.tcp.gbps_runs) > 1:
        spread = statistics.pstdev(fs.tcp.gbps_runs) / statistics.fmean(fs.tcp.gbps_runs) if fs.tcp.gbps else 0.0
        job.notes.append(f"tcp: median of {len(fs.tcp.gbps_runs)} runs (coefficient of variation {spread:.1%})")
    account(fs, job.trials.records[start:], job.notes)
    fs.status = "complete"
    return fs


def tcp_line(fs: FrameSizeResult) -> str | None:
    """``9.41 Gbit/s, 12 retransmits, 2.10 cores (sender 95%, receiver 61%, switch 0.54) =
    0.223 cores per Gbit/s, RTT mean 48 us``: the console's line of a TCP frame size
    (``9.41 Gbit/s (3 clients: 3.100 + 3.200 + 3.110)`` with several clients)."""
    t = fs.tcp
    if t is None:
        return None

    def pct(value: float | None) -> str:
        return "-" if value is None else f"{value:.0f}%"

    parts = [f"{t.gbps:.3f} Gbit/s", f"{'-' if t.retransmits is None else t.retransmits} retransmits"]
    if t.interface_drops:
        parts[1] += f" ({t.interface_drops} packets dropped by the endpoints' ports)"
    if len(t.client_gbps) > 1:
        parts[0] += f" ({len(t.client_gbps)} clients: {' + '.join(f'{g:.3f}' for g in t.client_gbps)})"
    if t.cores is not None:
        switch = "-" if t.switch_cores is None else f"{t.switch_cores:.2f}"
        parts.append(f"{t.cores:.2f} cores (sender {pct(t.sender_cpu_percent)}, receiver {pct(t.receiver_cpu_percent)}, "
                     f"switch {switch})" + (f" = {t.cores_per_gbps:.3f} cores per Gbit/s" if t.cores_per_gbps else ""))
    if t.rtt_mean_us is not None:
        parts.append(f"RTT mean {t.rtt_mean_us:.0f} us" + ("" if t.rtt_max_us is None else f" (max {t.rtt_max_us:.0f})"))
    if t.cpu_oversubscribed:
        parts.append("CPU oversubscribed")
    return ", ".join(parts)
