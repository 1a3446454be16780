/**
 * The rows of the membership limits and the IGMP budget in the table of settings
 * (settings.ts): what one pod port and the node may hold (domain/membership/membership-limits.ts),
 * how much IGMP a port may send (packet-budget.ts, the meters), and the SSM range, whose
 * groups take only joins that name their sources. A reload applies every one of them.
 */
import { formatIpPrefix, type IpPrefix } from '../../../domain/policy/ip-prefix.js';
import * as values from './setting-values.js';
import { fills } from './setting-definition.js';

/** 232.0.0.0/8, the SSM range of IPv4 (RFC 4607 §1). */
const SSM_DEFAULT_RANGE: IpPrefix = Object.freeze({ family: 'ipv4', address: '232.0.0.0', length: 8 });

export const MEMBERSHIP_SETTINGS = [
  fills('maxGroupsPerPort', {
    key: 'maxGroupsPerPort',
    flag: '--max-groups-per-port',
    argument: '<n>',
    kind: `integer 1 to ${values.MAX_MEMBERSHIP_LIMIT}`,
    parse: values.parseMembershipLimit,
    fallback: 1024,
    runtime: true,
    help: 'groups one pod port may join; a new group past it is refused (a flood stops here; real pods use tens, rarely hundreds)',
  }),
  fills('maxSourcesPerGroup', {
    key: 'maxSourcesPerGroup',
    flag: '--max-sources-per-group',
    argument: '<n>',
    kind: `integer 1 to ${values.MAX_MEMBERSHIP_LIMIT}`,
    parse: values.parseMembershipLimit,
    fallback: 256,
    runtime: true,
    help: "sources in one port's filter of a group; a new source past it is refused (SSM receivers name a few)",
  }),
  fills('maxGroups', {
    key: 'maxGroups',
    flag: '--max-groups',
    argument: '<n>',
    kind: `integer 1 to ${values.MAX_MEMBERSHIP_LIMIT}`,
    parse: values.parseMembershipLimit,
    fallback: 8192,
    runtime: true,
    help: "groups on the node, each one OVS group; a new group past it is refused (room for 8 pods' worth of the per-port limit)",
  }),
  fills('igmpMeter', {
    key: 'igmpMeter',
    flag: '--igmp-meter',
    kind: 'true or false',
    parse: values.parseBoolean,
    fallback: true,
    runtime: true,
    help: "each pod port's IGMP goes through an OpenFlow meter at igmpRatePerPort and igmpBurstPerPort: OVS drops a flood (default)",
    negation: {
      flag: '--no-igmp-meter',
      help: 'no meters: every IGMP message reaches the daemon, whose own budget is the only one',
    },
  }),
  fills('igmpRatePerPort', {
    key: 'igmpRatePerPort',
    flag: '--igmp-rate-per-port',
    argument: '<n>',
    kind: `integer 1 to ${values.MAX_MEMBERSHIP_LIMIT}`,
    parse: values.parseMembershipLimit,
    fallback: 200,
    runtime: true,
    help: "IGMP messages a second one pod port may send, on average: the port's meter drops the excess in OVS, the daemon what still comes (port-rate)",
  }),
  fills('igmpBurstPerPort', {
    key: 'igmpBurstPerPort',
    flag: '--igmp-burst-per-port',
    argument: '<n>',
    kind: `integer 1 to ${values.MAX_MEMBERSHIP_LIMIT}`,
    parse: values.parseMembershipLimit,
    fallback: 1000,
    runtime: true,
    help: 'IGMP messages one pod port may send at once (an IGMPv2 pod answering a query for hundreds of groups sends one each)',
  }),
  fills('ssmRange', {
    key: 'ssmRange',
    flag: '--ssm-range',
    argument: '<list>',
    kind: 'list of CIDR blocks',
    parse: values.parseSsmRange,
    fallback: [SSM_DEFAULT_RANGE],
    runtime: true,
    help: 'the source-specific multicast range of IPv4, comma-separated blocks of groups (IPv6\'s is ff3x::/96): a join of any source to a group in it is refused (ssm); "" turns SSM off for both families',
    fileDefault: `"${formatIpPrefix(SSM_DEFAULT_RANGE)}"`,
    flagDefault: formatIpPrefix(SSM_DEFAULT_RANGE),
    show: (range) => range.map(formatIpPrefix).join(','),
  }),
] as const;
