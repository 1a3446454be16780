#!/usr/bin/env bash
# The whole test suite: the README's test command, and CI's. See usage().
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  cat <<'EOF'
Usage: scripts/test.sh [RUN...]

Runs the test suite in up to three runs, then prints one summary of them all:
  unit     test/unit: pure logic on fakes; as the unprivileged user nobody when started
           as root, which proves they need no privilege
  host     test/e2e: real OVS, network namespaces, kernel hosts, on this machine
  routing  test/routing: what needs the kernel's multicast routing; on this machine when
           its kernel has it (CONFIG_IP_MROUTE, CONFIG_IPV6_MROUTE), else inside the
           kernel lab (scripts/kernel-lab.sh: a virtual machine with Debian's kernel)
With no RUN, all three, in that order. Installs what it needs first (scripts/setup.sh).
Needs root for host and routing.

The summary, last, lists every test that did not pass and every test that did not run,
each with its reason, and gives the counts of all runs together. A skip is allowed only
when test/runner/skips-allowed.json names it (file, test and reason).

Exit status: 0 when every test passed and every skip is allowed; 1 otherwise; 64 for an
unknown RUN.

Environment:
  MCASTCTL_KERNEL_LAB_TIMEOUT   seconds the kernel lab may take (default 3600)
  MCASTCTL_KERNEL_LAB_SCALE     how many times the tests' deadlines stretch in the lab
                                (default 5: software emulation runs node several times slower)
EOF
}

runs=()
for argument in "$@"; do
  case "$argument" in
    unit | host | routing) runs+=("$argument") ;;
    -h | --help) usage; exit 0 ;;
    *) printf 'test: unknown run %q (unit, host or routing)\n\n' "$argument" >&2; usage >&2; exit 64 ;;
  esac
done
[ ${#runs[@]} -gt 0 ] || runs=(unit host routing)

scripts/setup.sh

records=$(mktemp -d /tmp/mcl-test-runs.XXXXXX)
trap 'rm -rf "$records"' EXIT
# The unit run writes its records as nobody.
chmod 1777 "$records"

node_test=(node --import tsx --test --test-concurrency=1 --test-reporter=./test/runner/reporter.mjs)
order=0

# run NAME LABEL COMMAND...: one run of the suite, its records and how it ended kept for the summary.
run() {
  local name=$1 label=$2
  shift 2
  order=$((order + 1))
  printf '\n# run %s: %s\n' "$name" "$label"
  local started=$SECONDS status=0
  label=${label//\\/\\\\}
  label=${label//\"/\\\"}
  MCASTCTL_TEST_RUN=$name MCASTCTL_TEST_RECORD="$records/$name.ndjson" "$@" || status=$?
  printf '{"order":%d,"run":"%s","label":"%s","status":%d,"seconds":%d}\n' \
    "$order" "$name" "$label" "$status" $((SECONDS - started)) >"$records/$name.json"
}

has_routing() { [ -e /proc/net/ip_mr_vif ] && [ -e /proc/net/ip6_mr_vif ]; }

for name in "${runs[@]}"; do
  case "$name" in
    unit)
      if [ "$(id -u)" -eq 0 ]; then
        run unit 'unit tests, on this machine as nobody' \
          setpriv --reuid=65534 --regid=65534 --clear-groups env HOME=/nonexistent "${node_test[@]}" test/unit/*.test.ts
      else
        run unit "unit tests, on this machine as $(id -un)" "${node_test[@]}" test/unit/*.test.ts
      fi
      ;;
    host)
      run host 'end-to-end tests, on this machine' "${node_test[@]}" test/e2e/*.test.ts
      ;;
    routing)
      if has_routing; then
        run routing "tests of kernel multicast routing, on this machine's kernel ($(uname -r))" "${node_test[@]}" test/routing/*.test.ts
      else
        scripts/kernel-lab.sh --prepare
        lab=$(scripts/kernel-lab.sh --status)
        run routing "tests of kernel multicast routing, in the kernel lab: $lab" \
          scripts/kernel-lab.sh --timeout "${MCASTCTL_KERNEL_LAB_TIMEOUT:-3600}" --writable "$records" -- \
          env MCASTCTL_TEST_TIME_SCALE="${MCASTCTL_KERNEL_LAB_SCALE:-5}" "${node_test[@]}" test/routing/*.test.ts
      fi
      ;;
  esac
done

printf '\n# the whole suite\n'
node --import tsx test/runner/summary.ts "$records"
