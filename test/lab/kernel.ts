/**
 * What this machine's kernel can do that some tests need. Kernel multicast routing is a
 * build option (CONFIG_IP_MROUTE, CONFIG_IPV6_MROUTE), not a module: a kernel built
 * without it has no /proc/net/ip_mr_vif (ip6_mr_vif) in any namespace, and nothing the
 * tests could install brings it.
 *
 * The tests that need it live in test/routing/, and scripts/test.sh runs them where it is:
 * on this machine when its kernel has it, in the kernel lab (a virtual machine with
 * Debian's kernel, scripts/kernel-lab.sh) when not. They never skip: each file starts with
 * requireMulticastRouting(), which fails it, saying where to run it, on a kernel without.
 */
import { existsSync, readFileSync } from 'node:fs';

/** Whether this kernel routes multicast, per family. */
export const MULTICAST_ROUTING = {
  ipv4: existsSync('/proc/net/ip_mr_vif'),
  ipv6: existsSync('/proc/net/ip6_mr_vif'),
} as const;

/** Throws unless this kernel routes multicast for both families; every file of test/routing calls it first. */
export function requireMulticastRouting(): void {
  const missing = [
    ...(MULTICAST_ROUTING.ipv4 ? [] : ['IPv4 (CONFIG_IP_MROUTE)']),
    ...(MULTICAST_ROUTING.ipv6 ? [] : ['IPv6 (CONFIG_IPV6_MROUTE)']),
  ];
  if (missing.length === 0) return;
  throw new Error(
    `this test needs kernel multicast routing, and this kernel has none for ${missing.join(' and ')}: ` +
      'run it in the kernel lab (scripts/test.sh routing, or scripts/kernel-lab.sh -- node --import tsx --test FILE)',
  );
}

/**
 * The source filters of the sockets of this namespace on interface `ifindex`
 * (/proc/net/mcfilter), one `${group} ${source} include|exclude` row each, sorted. The
 * kernel prints at most 6 characters of the device name, so rows are matched by ifindex.
 */
export function mcfilterRows(ifindex: number): string[] {
  const dotted = (hex: string): string => {
    const value = Number.parseInt(hex, 16);
    return [24, 16, 8, 0].map((shift) => (value >>> shift) & 0xff).join('.');
  };
  return readFileSync('/proc/net/mcfilter', 'utf8')
    .split('\n')
    .map((line) => line.trim().split(/\s+/))
    .filter((fields) => fields[0] === String(ifindex))
    .map(([, , group, source, inc]) => `${dotted(group!)} ${dotted(source!)} ${inc === '1' ? 'include' : 'exclude'}`)
    .sort();
}
