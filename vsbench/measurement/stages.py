"""Where frames were lost: the generator's counters cross-checked with the VNFs' (pure).

A frame of a PVP-family topology crosses alternately the switch and a VNF: generator port
``tx`` -> switch pass 0 -> VNF hop 0 -> switch pass 1 -> ... -> generator port ``rx``. The
generator counts what it sent and received per direction; each VNF counts, per port, what
it took from its receive ring and what it handed to its transmit ring. Between two of those
counts is one stage, so each stage's loss is a difference of two measured counters:

* switch pass ``k``: frames entering it (sent by the generator, or transmitted by VNF hop
  ``k-1``) minus frames leaving it (received by VNF hop ``k``, or by the generator);
* VNF hop ``k``: frames it received on its ingress port minus frames it transmitted on its
  egress port (its own ``rx_missed`` -- frames its ring had no room for -- is shown beside).

The stage that lost most frames is named (``lost_at``). A negative loss (a stage sent more
than it was given: stray frames, or counters read in different windows) is kept as
measured and marks the direction ``consistent: false`` rather than being hidden.

The VNF's ports forward in pairs (0<->1), so a port's RX counter holds one direction's
frames and its TX counter the other's: a bidirectional trial is still attributed exactly.

A latency trial's probe stream crosses the same stages but is not in the generator's bulk
counters; a direction given ``probe_frames`` (sent, received) counts them in its own, so
the stages add up (the generators here send their probes with the first direction).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping, Sequence


@dataclass(frozen=True)
class VnfHop:
    """Frames of a direction enter VNF ``vnf`` on its port ``in_port`` and leave on ``out_port``."""

    vnf: int
    in_port: int
    out_port: int


@dataclass(frozen=True)
class TrafficPath:
    """The stages between generator ports ``tx_port`` and ``rx_port``: switch passes
    around each VNF hop, ``len(hops) + 1`` passes in all."""

    tx_port: int
    rx_port: int
    hops: tuple[VnfHop, ...] = ()

    @property
    def switch_passes(self) -> int:
        return len(self.hops) + 1

    def to_dict(self) -> dict[str, Any]:
        return {"tx_port": self.tx_port, "rx_port": self.rx_port,
                "hops": [{"vnf": h.vnf, "in_port": h.in_port, "out_port": h.out_port} for h in self.hops]}


def chain_paths(lanes: Sequence[tuple[int, int]], vnfs_per_lane: int | Sequence[int],
                shared: bool = False) -> list[TrafficPath]:
    """Both directions of each lane ``(a, b)`` of generator ports through ``vnfs_per_lane``
    VNFs in series (one count for every lane, or one per lane), numbered lane by lane;
    each VNF forwards its port 0 <-> port 1 (port 0 faces ``a``). ``shared``: every lane
    crosses the same VNFs, lane ``k`` on their ports ``2k`` <-> ``2k+1``."""
    counts = [vnfs_per_lane] * len(lanes) if isinstance(vnfs_per_lane, int) else list(vnfs_per_lane)
    if len(counts) != len(lanes):
        raise ValueError(f"{len(counts)} VNF counts for {len(lanes)} lanes")
    paths = []
    next_vnf = 0
    for lane, ((a, b), count) in enumerate(zip(lanes, counts)):
        first, p = (0, 2 * lane) if shared else (next_vnf, 0)
        forward = tuple(VnfHop(first + i, p, p + 1) for i in range(count))
        backward = tuple(VnfHop(first + i, p + 1, p) for i in reversed(range(count)))
        paths += [TrafficPath(a, b, forward), TrafficPath(b, a, backward)]
        next_vnf += count
    return paths


def _port(vnf_ports: Sequence[Mapping[int, Mapping[str, int]]], hop: VnfHop, port: int) -> Mapping[str, int] | None:
    if hop.vnf >= len(vnf_ports):
        return None
    return vnf_ports[hop.vnf].get(port)


def attribute(
    directions: Sequence[Mapping[str, int]],
    vnf_ports: Sequence[Mapping[int, Mapping[str, int]]],
    paths: Sequence[TrafficPath],
) -> list[dict[str, Any]]:
    """Per generator direction (``{"tx_port", "rx_port", "tx_frames", "rx_frames"}``, and
    ``probe_frames`` when latency probes went with it) its
    stages with the frames in, out and lost, given each VNF's per-port counter deltas
    (``vnf_ports[i][port] = {"rx_frames", "tx_frames", "rx_missed", ...}``). A direction
    without a path, or a hop whose VNF reported no counters, gets ``stages: []`` and
    ``attributed: false`` (its loss is only the end-to-end one)."""
    by_ports = {(p.tx_port, p.rx_port): p for p in paths}
    out = []
    for d in directions:
        probes_sent, probes_received = d.get("probe_frames") or (0, 0)
        tx, rx = int(d["tx_frames"]) + int(probes_sent), int(d["rx_frames"]) + int(probes_received)
        entry: dict[str, Any] = {"tx_port": int(d["tx_port"]), "rx_port": int(d["rx_port"]),
                                 "tx_frames": tx, "rx_frames": rx, "lost_frames": tx - rx}
        if probes_sent:
            entry["probe_frames"] = int(probes_sent)
        path = by_ports.get((int(d["tx_port"]), int(d["rx_port"])))
        counters = [(_port(vnf_ports, h, h.in_port), _port(vnf_ports, h, h.out_port)) for h in (path.hops if path else ())]
        if path is None or not path.hops or any(i is None or o is None for i, o in counters):
            entry.update(stages=[], attributed=False, lost_at=None, consistent=tx >= rx)
            out.append(entry)
            continue
        stages: list[dict[str, Any]] = []
        entering = tx
        for k, (hop, (ingress, egress)) in enumerate(zip(path.hops, counters)):
            received, sent = int(ingress["rx_frames"]), int(egress["tx_frames"])  # type: ignore[index]
            stages.append({"stage": "switch", "pass": k, "in_frames": entering, "out_frames": received,
                           "lost_frames": entering - received})
            stages.append({"stage": "vnf", "vnf": hop.vnf, "in_port": hop.in_port, "out_port": hop.out_port,
                           "in_frames": received, "out_frames": sent, "lost_frames": received - sent,
                           "rx_missed": int(ingress.get("rx_missed", 0)),  # type: ignore[union-attr]
                           "tx_errors": int(egress.get("tx_errors", 0))})  # type: ignore[union-attr]
            entering = sent
        stages.append({"stage": "switch", "pass": len(path.hops), "in_frames": entering, "out_frames": rx,
                       "lost_frames": entering - rx})
        worst = max(stages, key=lambda s: s["lost_frames"])
        entry.update(stages=stages, attributed=True,
                     lost_at=stage_name(worst) if worst["lost_frames"] > 0 else None,
                     consistent=all(s["lost_frames"] >= 0 for s in stages))
        out.append(entry)
    return out


def stage_name(stage: Mapping[str, Any]) -> str:
    """``switch pass 1`` or ``vnf 0``."""
    if stage["stage"] == "switch":
        return f"switch pass {stage['pass']}"
    return f"vnf {stage['vnf']}"
