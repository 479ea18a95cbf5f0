#!/usr/bin/env bash
# Quick start: install everything, then measure RFC 2544 throughput of a private OvS-DPDK
# instance on the embedded testbed (netns + veth, trafgen) with short trials.
# Extra arguments are passed to vsbench, e.g. tools/quickstart.sh --vswitch linux_bridge
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
# Short enough for about three minutes on a 2-core machine, still an NDR/PDR table for 64..1518 B:
# 1 s search trials (trial_duration: an asked trial duration is every search trial's length),
# 1 % precision instead of 0.5 %, at most 18 s of trials per frame size, a 1 s warm-up (one
# flow), latency at 0 and 50 % of PDR and at NDR in 1 s trials. The full-length figures:
# vsbench --test phy2phy_tput --vswitch ovs_dpdk.
exec .venv/bin/vsbench --test phy2phy_tput --vswitch ovs_dpdk \
  --test-params "trial_duration=1;search.relative_width=0.01;search.time_budget_s=18;warmup_s=1;latency.trial_duration_s=1;latency.load_fractions=[0.0,0.5]" "$@"
