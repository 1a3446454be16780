#!/usr/bin/env bash
# The whole test suite: unit tests, then end-to-end tests on real kernel labs (network
# namespaces, veth, Linux bridges, tcpdump, tshark). Needs root.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
# setup.sh has built it: the tests run on that build.
exec npm run --silent test:run
