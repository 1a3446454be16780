#!/usr/bin/env bash
# The demo: a small lab of kernel hosts joining and leaving groups, watched by
# `mcastctl snoop`. Everything lives in network namespaces and is removed at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
exec node --import tsx scripts/demo.ts "$@"
