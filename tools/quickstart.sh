#!/usr/bin/env bash
# Quick start: install everything, then measure RFC 2544 throughput of a private OvS-DPDK
# instance on the embedded testbed (netns + veth, trafgen) with short trials.
# Extra arguments are passed to vsbench, e.g. tools/quickstart.sh --vswitch linux_bridge
set -euo pipefail
cd "$(dirname "$0")/.."
tools/setup.sh
exec .venv/bin/vsbench --test phy2phy_tput --vswitch ovs_dpdk \
  --test-params "trial_duration=2;latency.trial_duration_s=2" "$@"
