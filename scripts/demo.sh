#!/usr/bin/env bash
# The demo: `mcastctl daemon` on a lab of two real OVS nodes with pods, an underlay and
# an external host, showing multicast delivered to members only. `scripts/demo.sh snoop`
# runs the older demo instead: kernel hosts joining and leaving, watched by
# `mcastctl snoop`; `scripts/demo.sh tunnel` runs the daemon in tunnel mode on three
# nodes whose underlay carries no multicast. Everything lives in network namespaces and
# is removed at the end.
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
exec node --import tsx scripts/demo.ts "$@"
