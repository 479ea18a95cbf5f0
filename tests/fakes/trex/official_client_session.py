"""A session of the *official* TRex Python client against a server; prints JSON.

Run in a process of its own (``python official_client_session.py SYNC ASYNC``): the
official client puts its bundled libraries (scapy 2.4.3, PyYAML 3.11, ...) at the front of
``sys.path``, which must not leak into the test process. It does what a TRex user does --
connect, reset, add a bulk stream with a field engine and a latency stream, start for a
duration, wait for the end through the event channel, read port and pg_id stats -- so the
fake TRex is checked against the client TRex itself ships, not against our own plugin.
"""

from __future__ import annotations

import json
import sys
import time


def main(sync_port: int, async_port: int) -> dict:
    import lbr_trex_client  # noqa: F401 - puts the official 'trex' package on sys.path
    # trex first: it loads its own scapy, which must not meet the venv's
    from trex.stl.api import (IP, UDP, Ether, STLClient, STLFlowLatencyStats, STLPktBuilder,
                              STLScVmRaw, STLStream, STLTXCont, STLVmFixIpv4, STLVmFlowVar,
                              STLVmWrFlowVar)

    out: dict = {}
    client = STLClient(server="127.0.0.1", sync_port=sync_port, async_port=async_port,
                       verbose_level="error")
    client.connect()
    out["server_version"] = client.get_server_version()["version"]
    client.reset(ports=[0, 1])
    pkt = Ether() / IP(src="10.0.0.1", dst="10.1.0.1") / UDP(sport=1024, dport=1024) / (b"x" * 18)
    vm = STLScVmRaw([STLVmFlowVar(name="ip", min_value="10.0.0.1", max_value="10.0.0.10", size=4, op="inc"),
                     STLVmWrFlowVar(fv_name="ip", pkt_offset="IP.src"), STLVmFixIpv4(offset="IP")])
    client.add_streams([STLStream(packet=STLPktBuilder(pkt=pkt, vm=vm), mode=STLTXCont(pps=200_000)),
                        STLStream(packet=STLPktBuilder(pkt=pkt), mode=STLTXCont(pps=1000),
                                  flow_stats=STLFlowLatencyStats(pg_id=7))], ports=[0])
    client.clear_stats()
    t0 = time.monotonic()
    client.start(ports=[0], duration=0.5)
    client.wait_on_traffic(ports=[0])
    out["wait_s"] = time.monotonic() - t0
    time.sleep(0.1)
    stats = client.get_stats()
    out["opackets0"] = stats[0]["opackets"]
    out["ipackets1"] = stats[1]["ipackets"]
    pg = client.get_pgid_stats([7])
    lat = pg["latency"][7]["latency"]
    out["latency_us"] = {"average": lat["average"], "total_min": lat["total_min"],
                         "total_max": lat["total_max"]}
    out["histogram_us"] = {str(k): v for k, v in lat["histogram"].items()}
    out["pg7_tx"] = pg["flow_stats"][7]["tx_pkts"]["total"]
    out["pg7_rx"] = pg["flow_stats"][7]["rx_pkts"]["total"]
    try:
        client.start(ports=[0], mult="200%", duration=0.1)
        out["over_line_rate"] = "accepted"
    except Exception as exc:  # noqa: BLE001 - the TRexError text is the result
        out["over_line_rate"] = str(exc).strip().splitlines()[-1]
    client.release(ports=[0, 1])
    client.disconnect()
    return out


if __name__ == "__main__":
    print(json.dumps(main(int(sys.argv[1]), int(sys.argv[2]))))
