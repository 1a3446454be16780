#!/usr/bin/env bash
# Installs what mcastctl, its tests and its demo need on a Debian machine, then builds.
# Idempotent: installs only what is missing. Needs root for apt-get.
set -euo pipefail
cd "$(dirname "$0")/.."

say() { printf 'setup: %s\n' "$*" >&2; }

# Debian packages, by the command each provides.
declare -A package_of=(
  [ip]=iproute2 [tcpdump]=tcpdump [tshark]=tshark [ethtool]=ethtool [python3]=python3
  [make]=make [g++]=g++ [setpriv]=util-linux [bridge]=iproute2 [nft]=nftables [curl]=curl
  [man]=man-db [strip]=binutils [tmux]=tmux [script]=bsdutils
  [ovs-vswitchd]=openvswitch-switch [ovsdb-server]=openvswitch-switch [ovs-vsctl]=openvswitch-switch
  [ovs-ofctl]=openvswitch-common [ovsdb-tool]=openvswitch-common
)
missing=()
for command in "${!package_of[@]}"; do
  command -v "$command" >/dev/null 2>&1 || missing+=("${package_of[$command]}")
done
# GNU time (the tests read a command's CPU time and peak RSS from it): `command -v time`
# finds the shell's keyword, so the file itself is looked for.
[ -x /usr/bin/time ] || missing+=(time)
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  missing+=(nodejs npm)
fi
if [ ${#missing[@]} -gt 0 ]; then
  packages=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
  say "installing Debian packages: $packages"
  if [ "$(id -u)" -ne 0 ]; then
    say "need root to install them (run with sudo)"; exit 77
  fi
  apt-get update -qq
  # tshark asks whether non-root users may capture; the default (no) is what we want.
  # openvswitch-switch brings the daemons the lab runs privately (never the system's own
  # service: the tests and the demo start their own ovsdb-server and ovs-vswitchd).
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $packages >/dev/null
fi

# Prometheus and promtool for the monitoring tests, from Debian's prometheus package,
# unpacked into a cache of their own rather than installed: installing it would start a
# Prometheus service on port 9090 and add a system user, where the tests start their own
# server in a lab namespace (test/lab/prometheus.ts finds it here).
prometheus_root=${MCASTCTL_PROMETHEUS_DIR:-/var/cache/mcastctl-prometheus}
if [ ! -x "$prometheus_root/usr/bin/prometheus" ] || [ ! -x "$prometheus_root/usr/bin/promtool" ]; then
  if [ "$(id -u)" -ne 0 ]; then
    say "need root to fetch Prometheus into $prometheus_root (run with sudo)"; exit 77
  fi
  say "fetching Debian's prometheus package into $prometheus_root"
  work=$(mktemp -d)
  download() { (cd "$work" && apt-get download -qq -o APT::Sandbox::User=root prometheus); }
  download || { apt-get update -qq && download; }
  rm -rf "$prometheus_root.new"
  mkdir -p "$prometheus_root.new"
  dpkg-deb -x "$work"/prometheus_*.deb "$prometheus_root.new"
  rm -rf "$prometheus_root" "$work"
  mv "$prometheus_root.new" "$prometheus_root"
fi

node_major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$node_major" -lt 20 ]; then
  say "Node.js $(node --version) is too old: mcastctl needs Node.js 20 or newer"; exit 1
fi

# npm ci builds the native addon (node-gyp) through the package's install script, unless a
# prebuilt copy of an earlier build fits.
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  say "installing npm packages"
  npm ci --no-audit --no-fund --loglevel=error
fi
# Built only when something it is built from changed since the last build (the CI runs
# this script, then the test command runs it again).
scripts/build.sh
