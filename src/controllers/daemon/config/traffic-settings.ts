/**
 * The rows of the per-pod traffic counters in the table of settings (settings.ts): whether
 * the daemon writes a sender counting row for each pod port and group it forwards
 * (multicast-pipeline.ts, kind SendCounter), and how many (pod, group) pairs may have them.
 * What a pod received needs no row (its bucket's counters); what it sent does, one flow
 * per pair and per (S,G) entry of the group, so the pairs are bounded. A reload applies both.
 */
import * as values from './setting-values.js';
import { fills } from './setting-definition.js';

export const TRAFFIC_SETTINGS = [
  fills('trafficCounters', {
    key: 'trafficCounters',
    flag: '--traffic-counters',
    kind: 'true or false',
    parse: values.parseBoolean,
    fallback: false,
    flagDefault: 'off',
    runtime: true,
    help: 'count what each pod sends to each group it is a member of: one OVS flow per pod port and group entry (groups --stats, the mcastctl_pod_group_* metrics) (default off)',
    negation: {
      flag: '--no-traffic-counters',
      help: 'no sender counting flows: groups --stats shows what pods received only',
    },
  }),
  fills('maxTrafficCounters', {
    key: 'maxTrafficCounters',
    flag: '--max-traffic-counters',
    argument: '<n>',
    kind: `integer 1 to ${values.MAX_MEMBERSHIP_LIMIT}`,
    parse: values.parseMembershipLimit,
    fallback: 4096,
    runtime: true,
    help: '(pod, group) pairs with sender counting flows, and with series in the metrics; past it a new pair is not counted (logged, and groups --stats says partial)',
  }),
] as const;
