/**
 * Stages 2 and 3 of a trace, decided on what the daemon answers: what the pod's port said of
 * the group (reports, refusals, silence), and what the daemon made of it (member or not, its
 * filter, whether that admits the source).
 */
import { familyOf } from '../../domain/family/families.js';
import type { GroupView, PortActivityView } from '../../transport/control/daemon-view.js';
import type { TraceRequest } from './trace-facts.js';
import { fail, pass, type StageOutcome } from './trace-stage-outcome.js';

const LIMIT_REASONS = ['port-groups', 'node-groups', 'group-sources', 'ssm'] as const;

export function igmpStage(
  request: TraceRequest,
  activity: PortActivityView | undefined,
  member: boolean,
): StageOutcome {
  if (activity === undefined) {
    return fail(
      'not-a-pod-port',
      `the daemon does not snoop ${request.pod}'s port`,
      "its Interface needs external_ids pod-name (and pod-namespace), and must not be the daemon's gateway",
      {},
    );
  }
  const said = activity.group;
  const facts = {
    messages: activity.messages,
    lastMessageAt: activity.lastMessageAt,
    reports: said?.reports ?? 0,
    lastReportAt: said?.lastReportAt ?? null,
    refusals: said?.refusals ?? {},
    reportedGroups: activity.reportedGroups,
    meterDropped: activity.meterDropped,
    since: activity.since,
    ...(said?.lastRefusal === undefined ? {} : { lastRefusal: said.lastRefusal }),
  };
  const policy = said?.policy.join;
  if (policy !== undefined && !policy.allowed) {
    const rule = policy.rule;
    return fail(
      'denied-by-policy',
      `the group policy denies ${request.pod} joining ${request.group}${rule === undefined ? '' : ` (rule at line ${rule})`}; ${facts.reports} report(s) refused`,
      'change the policy file (groupPolicy) and reload the daemon (SIGHUP), if the pod should get the group',
      { ...facts, rule: rule ?? null },
    );
  }
  if (member)
    return pass(
      `${facts.reports} report(s) of ${request.group}${facts.lastReportAt === null ? '' : `, the last at ${facts.lastReportAt}`}`,
      facts,
    );
  const mld = familyOf(request.group).protocol === 'mld';
  const protocol = mld ? 'MLD' : 'IGMP';
  if (facts.reports === 0) {
    const watched = `since ${activity.since} (the daemon queries every ${Math.round(activity.queryIntervalMs / 1000)} s)`;
    if (facts.messages === 0) {
      const meter = facts.meterDropped > 0 ? `; its meter in OVS dropped ${facts.meterDropped} message(s)` : '';
      return fail(
        'no-igmp',
        `no ${protocol} at all from the port ${watched}${meter}`,
        `nothing in the pod has joined a group, or its ${protocol} never leaves it: look for a firewall in the pod (nft list ruleset, iptables -S) dropping ${mld ? 'ICMPv6 types 131/143' : 'IP protocol 2 (igmp)'}`,
        facts,
      );
    }
    const others = facts.reportedGroups.slice(0, 4).join(', ');
    return fail(
      'never-reported',
      `the port reports ${others === '' ? 'other groups' : others} but has never reported ${request.group} ${watched}`,
      `no socket in the pod has joined ${request.group} (IP_ADD_MEMBERSHIP): check the application's group and interface`,
      facts,
    );
  }
  const refusal = said?.lastRefusal?.reason;
  const limit = LIMIT_REASONS.find((reason) => reason === refusal);
  if (limit !== undefined) {
    const hints: Record<(typeof LIMIT_REASONS)[number], string> = {
      'port-groups': 'the pod is in as many groups as maxGroupsPerPort allows: raise it, or have the pod leave a group',
      'node-groups': 'the node has as many groups as maxGroups allows: raise it',
      'group-sources': "the pod's filter of the group has as many sources as maxSourcesPerGroup allows: raise it",
      ssm: 'the group is in the SSM range: join it for named sources (IGMPv3 INCLUDE)',
    };
    return fail(
      'limit-reached',
      `the daemon refused ${request.pod}'s join of ${request.group}: ${limit}`,
      hints[limit],
      { ...facts, limit },
    );
  }
  const portRefusal = (['spoofed', 'off-link', 'port-rate'] as const).find(
    (reason) => (activity.refusals[reason] ?? 0) > 0,
  );
  if (portRefusal !== undefined) {
    const codes = { spoofed: 'spoofed', 'off-link': 'off-link', 'port-rate': 'rate-limited' } as const;
    const hints = {
      spoofed:
        "the pod's reports come from an address that is not its own (external_ids ip-address): fix the pod's address or the port's ip-address",
      'off-link': 'its reports have a TTL other than 1 or no Router Alert: they look routed, not sent on the link',
      'port-rate': 'the pod sends more IGMP than igmpRatePerPort allows: find what floods',
    };
    return fail(
      codes[portRefusal],
      `${facts.reports} report(s) of ${request.group}, but the port's ${protocol} was refused: ${portRefusal}`,
      hints[portRefusal],
      facts,
    );
  }
  return pass(`${facts.reports} report(s) of ${request.group}, the last at ${facts.lastReportAt}`, facts);
}

export function membershipStage(
  request: TraceRequest,
  member: GroupView['members'][number] | undefined,
  source: string | null,
): StageOutcome {
  if (member === undefined) {
    return fail(
      'not-member',
      `${request.pod} is not a member of ${request.group}`,
      'it left, or its membership expired without a report: is the application still joined?',
      {
        member: false,
        mode: null,
        sources: [],
        admitsSource: null,
        expiresInMs: null,
        compatibility: null,
      },
    );
  }
  const expiresInMs = Math.max(0, Date.parse(member.expiresAt) - Date.now());
  const admitsSource =
    source === null
      ? null
      : member.mode === 'include'
        ? member.sources.includes(source)
        : !member.sources.includes(source);
  const facts = {
    member: true,
    mode: member.mode,
    sources: member.sources,
    admitsSource,
    expiresInMs,
    compatibility: member.compatibility,
    host: member.host,
  };
  const filter =
    member.mode === 'exclude' && member.sources.length === 0
      ? 'any source'
      : `${member.mode.toUpperCase()} {${member.sources.join(', ')}}`;
  if (admitsSource === false) {
    return fail(
      'source-not-admitted',
      `member with ${filter}: ${source} is not admitted`,
      `the pod's filter leaves ${source} out: it must join (${source}, ${request.group})`,
      facts,
    );
  }
  return pass(
    `member (IGMPv${member.compatibility}, ${filter}), expires in ${Math.round(expiresInMs / 1000)} s`,
    facts,
  );
}
