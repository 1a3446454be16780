/**
 * What this machine's kernel can do that some tests need. Kernel multicast routing is a
 * build option (CONFIG_IP_MROUTE, CONFIG_IPV6_MROUTE), not a module: a kernel built
 * without it has no /proc/net/ip_mr_vif (ip6_mr_vif) in any namespace, and nothing the
 * tests could install brings it. The tests that need it say so by skipping with the
 * reason below (the summary counts them), and the rest run without it: the daemon then
 * snoops and forwards inside OVS and between nodes by tunnel, and routes nothing.
 */
import { existsSync } from 'node:fs';

/** Why tests of IPv4 kernel multicast routing cannot run here, or undefined when they can. */
export const NO_IPV4_ROUTING: string | undefined = existsSync('/proc/net/ip_mr_vif')
  ? undefined
  : 'this kernel has no IPv4 multicast routing (built without CONFIG_IP_MROUTE)';

/** Why tests of IPv6 kernel multicast routing cannot run here, or undefined when they can. */
export const NO_IPV6_ROUTING: string | undefined = existsSync('/proc/net/ip6_mr_vif')
  ? undefined
  : 'this kernel has no IPv6 multicast routing (built without CONFIG_IPV6_MROUTE)';
