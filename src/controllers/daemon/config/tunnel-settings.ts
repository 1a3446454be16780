/**
 * The rows of tunnel mode in the table of settings (settings.ts): the flow-based tunnel
 * port, the peers, this node's underlay address and the timing of the exchange with the
 * peers. They fill DaemonConfig.tunnel together (tunnel-config.ts), so a reload does not
 * apply a change of them: the peers file's contents are read again on SIGHUP and when
 * the file changes (peers-loader.ts), which is how peers come and go at run time.
 */
import * as values from './setting-values.js';
import { durationFrom, MAX_QUERY_INTERVAL_MS, MIN_QUERY_INTERVAL_MS } from './setting-values.js';
import { assembled } from './setting-definition.js';

/** How often every peer gets this node's full state. */
const DEFAULT_PEER_REFRESH_INTERVAL_MS = 30_000;
/**
 * Added to robustness × the refresh interval for the default peer timeout, as the Query Response Interval is to a GMI.
 */
export const PEER_TIMEOUT_MARGIN_MS = 10_000;

export const TUNNEL_SETTINGS = [
  assembled({
    key: 'tunnelPort',
    flag: '--tunnel-port',
    argument: '<name>',
    kind: 'port name',
    parse: values.parseOptionalInterfaceName,
    fallback: undefined,
    help: 'tunnel mode: the flow-based tunnel port on the bridge (geneve or vxlan, options:remote_ip=flow) that carries groups to the peers',
    fileDefault: '""',
    flagDefault: 'none',
    read: (config) => config.tunnel?.port,
  }),
  assembled({
    key: 'peers',
    flag: '--peers',
    argument: '<list>',
    kind: 'list of IPv4 addresses',
    parse: values.parsePeerAddresses,
    fallback: undefined,
    help: "tunnel mode: the other nodes' underlay addresses, comma-separated (this node's own and repeats are left out)",
    fileDefault: '""',
    flagDefault: 'none',
    // The list as given; one read from the file is the file's (peersFile), re-read at run time.
    read: (config) => (config.tunnel?.peersFile === undefined ? config.tunnel?.peers : undefined),
  }),
  assembled({
    key: 'peersFile',
    flag: '--peers-file',
    argument: '<file>',
    kind: 'path',
    parse: values.parseOptionalPath,
    fallback: undefined,
    help: 'tunnel mode: a file of the peers (one address a line, or a YAML list), read again on SIGHUP and when it changes',
    fileDefault: '""',
    flagDefault: 'none',
    read: (config) => config.tunnel?.peersFile,
  }),
  assembled({
    key: 'peerKeyFile',
    flag: '--peer-key-file',
    argument: '<file>',
    kind: 'path',
    parse: values.parseOptionalPath,
    fallback: undefined,
    help: "tunnel mode: the cluster's keys (one or two, hex, mode 0600): messages to and from the peers are sealed with them, read again on SIGHUP",
    fileDefault: '""',
    flagDefault: 'none: peers are believed by address alone',
    read: (config) => config.tunnel?.peerKeys?.file,
  }),
  assembled({
    key: 'nodeAddress',
    flag: '--node-address',
    argument: '<addr>',
    kind: 'IPv4 address',
    parse: values.parseNodeAddress,
    fallback: undefined,
    help: "tunnel mode: this node's underlay address, the source of its reports to the peers",
    fileDefault: '""',
    flagDefault: 'the source address of the route to the first peer',
    read: (config) => config.tunnel?.nodeAddress,
  }),
  assembled({
    key: 'clusterCidrs',
    flag: '--cluster-cidrs',
    argument: '<list>',
    kind: 'list of CIDR blocks',
    parse: values.parseClusterCidrs,
    fallback: [],
    help: "tunnel mode: the pods' address ranges of the whole cluster; with --multicast-interfaces, their multicast is not routed in from the uplinks (it came through the tunnel)",
    fileDefault: '""',
    flagDefault: 'none',
    read: (config) => config.tunnel?.clusterCidrs,
  }),
  assembled({
    key: 'peerRefreshInterval',
    flag: '--peer-refresh-interval',
    argument: '<time>',
    kind: 'duration',
    parse: durationFrom(
      MIN_QUERY_INTERVAL_MS,
      MAX_QUERY_INTERVAL_MS,
      ' (what the QQIC of a query to a peer can carry)',
    ),
    fallback: DEFAULT_PEER_REFRESH_INTERVAL_MS,
    help: "tunnel mode: time between two sendings of this node's full membership to every peer",
    fileDefault: '30s',
    flagDefault: '30s',
    read: (config) => config.tunnel?.refreshIntervalMs,
  }),
  assembled({
    key: 'peerTimeout',
    flag: '--peer-timeout',
    argument: '<time>',
    kind: 'duration',
    parse: values.optional(values.parseDuration),
    fallback: undefined,
    help: "tunnel mode: a peer's membership of a group ends this long after its last report of it (a dead node stops costing copies)",
    fileDefault: '""',
    flagDefault: 'robustness * peerRefreshInterval + 10s',
    read: (config) => config.tunnel?.peerTimeoutMs,
  }),
  assembled({
    key: 'maxGroupsPerPeer',
    flag: '--max-groups-per-peer',
    argument: '<n>',
    kind: `integer 1 to ${values.MAX_MEMBERSHIP_LIMIT}`,
    parse: values.optional(values.parseMembershipLimit),
    fallback: undefined,
    help: 'tunnel mode: groups one peer may be a member of on this node; a new group past it is refused',
    fileDefault: '""',
    flagDefault: 'maxGroups',
    read: (config) => config.tunnel?.maxGroupsPerPeer,
  }),
] as const;
