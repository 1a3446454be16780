#!/usr/bin/env bash
# The demo: `mcastctl daemon` on a lab of two real OVS nodes with pods, an underlay and
# an external host, showing multicast delivered to members only. `scripts/demo.sh snoop`
# runs the older demo instead: kernel hosts joining and leaving, watched by
# `mcastctl snoop`; `scripts/demo.sh tunnel` runs the daemon in tunnel mode on three
# nodes whose underlay carries no multicast; `scripts/demo.sh fleet` runs it on ten nodes
# of five pods each, showing each node's convergence and delivery to members only.
# Everything lives in network namespaces and is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
if [ "${1:-}" = snoop ]; then
  shift
  exec node --import tsx scripts/demo-snoop.ts "$@"
fi
if [ "${1:-}" = tunnel ]; then
  shift
  exec node --import tsx scripts/demo-tunnel.ts "$@"
fi
if [ "${1:-}" = fleet ]; then
  shift
  exec node --import tsx scripts/demo-fleet.ts "$@"
fi
# The two-node demo routes between the nodes through the kernel: a kernel built without
# multicast routing gets the tunnel-mode demo, which needs none.
if [ ! -e /proc/net/ip_mr_vif ]; then
  echo "demo: this kernel has no IPv4 multicast routing (built without CONFIG_IP_MROUTE): showing the tunnel-mode demo (scripts/demo.sh tunnel) instead" >&2
  exec node --import tsx scripts/demo-tunnel.ts "$@"
fi
exec node --import tsx scripts/demo.ts "$@"
