/**
 * One group's forwarding as the daemon keeps it, source by source: the (*,G) entry for
 * every source nobody names, and an (S,G) entry for each source whose receivers differ
 * (see source-split.ts). The daemon's mirror of what is installed (./pipeline-sync.ts)
 * holds both kinds, keyed by forwarding key, and one sync of a group is planned here: in
 * one batch, the changes of its (S,G) entries first (their flows are the more specific),
 * then its (*,G) entry's, then the removal of the (S,G) entries it no longer needs.
 */
import { McastError } from '../../errors.js';
import { compareAddresses, type GroupAddress, type HostAddress, type SourceAddress } from '../../wire/ip-address.js';
import { forwardingKey, type ForwardingKey, type ForwardingTarget } from '../../domain/pipeline/forwarding-key.js';
import type {
  FlowEntry,
  GroupForwarding,
  GroupMembership,
  InstalledGroup,
  MulticastPipeline,
  TunnelMembers,
} from '../../domain/pipeline/multicast-pipeline.js';
import { planInstall, planUninstall, type GroupOutcome, type PipelineChange } from '../../domain/pipeline/plan.js';
import type { SourcePorts } from '../../domain/pipeline/source-split.js';

/** What one group should be forwarded to (the SwitchPort's WantedForwarding). */
export interface ForwardingWanted {
  group: GroupAddress;
  /** The receivers of every source not in `bySource`, the gateway included. */
  ports: readonly number[];
  /**
   * The sources with receivers of their own, each with its ports (the gateway included); empty: the (*,G) entry alone.
   */
  bySource: ReadonlyArray<{ source: SourceAddress; ports: readonly number[] }>;
  tunnel?: TunnelMembers;
  /** Pod ports whose traffic to each entry of the group gets a sender counting row (absent: none). */
  counterPorts?: readonly number[];
}

/**
 * The learned forwarding of a group as read back: its (*,G) ports (and peers), and the ports of each of its (S,G)
 * entries.
 */
export interface LearnedForwarding {
  group: GroupAddress;
  ports: number[];
  peers?: HostAddress[];
  sources?: SourcePorts[];
}

/** The mirror of what of ours forwards on the switch: every (*,G) and (S,G) entry, by key and by group. */
export class InstalledForwarding {
  private readonly byKey = new Map<ForwardingKey, InstalledGroup>();
  private readonly keysOfGroup = new Map<GroupAddress, Set<ForwardingKey>>();

  constructor(entries: readonly InstalledGroup[] = []) {
    for (const entry of entries) this.set(entry);
  }

  set(entry: InstalledGroup): void {
    const key = forwardingKey(entry);
    this.byKey.set(key, entry);
    const keys = this.keysOfGroup.get(entry.group) ?? new Set<ForwardingKey>();
    keys.add(key);
    this.keysOfGroup.set(entry.group, keys);
  }

  delete(target: ForwardingTarget): void {
    const key = forwardingKey(target);
    this.byKey.delete(key);
    const keys = this.keysOfGroup.get(target.group);
    keys?.delete(key);
    if (keys?.size === 0) this.keysOfGroup.delete(target.group);
  }

  /** The entries of `group`, (*,G) and (S,G) alike. */
  of(group: GroupAddress): InstalledGroup[] {
    return [...(this.keysOfGroup.get(group) ?? [])].flatMap((key) => this.byKey.get(key) ?? []);
  }

  /** The groups with at least one entry on the switch. */
  get groups(): GroupAddress[] {
    return [...this.keysOfGroup.keys()];
  }

  /**
   * The groups whose entries the daemon itself installed, with their (*,G) ports and peers and their (S,G) entries'
   * ports.
   */
  get learned(): LearnedForwarding[] {
    return this.groups.flatMap((group): LearnedForwarding[] => {
      const entries = this.of(group).filter((entry) => entry.learned);
      if (entries.length === 0) return [];
      const star = entries.find((entry) => entry.source === undefined);
      const sources = entries
        .flatMap((entry) => (entry.source === undefined ? [] : [{ source: entry.source, ports: [...entry.ports] }]))
        .sort((a, b) => compareAddresses(a.source, b.source));
      return [
        {
          group,
          ports: [...(star?.ports ?? [])],
          ...(star?.peers === undefined ? {} : { peers: [...star.peers] }),
          ...(sources.length === 0 ? {} : { sources }),
        },
      ];
    });
  }
}

export interface ForwardingPlanInput {
  pipeline: MulticastPipeline;
  wanted: ForwardingWanted;
  /** The entries of the group on the switch now. */
  current: readonly InstalledGroup[];
  /** Every OVS group id of our range on the switch, whatever reaches it. */
  groupIds: ReadonlySet<number>;
  foreignFlows: readonly FlowEntry[];
  /** Tunnel mode: the gateway, in link 0 of every entry. */
  gatewayOfport: number | undefined;
}

export interface ForwardingPlan {
  /** In wire order, for one batch. */
  changes: PipelineChange[];
  outcome: GroupOutcome;
  /** The entries of the group once the changes are through. */
  installed: InstalledGroup[];
  /** The entries the changes remove: their group id slots are free once they are through. */
  removed: ForwardingTarget[];
}

/**
 * The changes that take the group from `current` to `wanted`. Throws McastError
 * 'conflict' (nothing to send) when a flow would take the place of another controller's.
 */
export function planForwarding({
  pipeline,
  wanted,
  current,
  groupIds,
  foreignFlows,
  gatewayOfport,
}: ForwardingPlanInput): ForwardingPlan {
  const { group, tunnel } = wanted;
  const entryPart = {
    ...(tunnel === undefined ? {} : { tunnel, ...(gatewayOfport === undefined ? {} : { gateway: gatewayOfport }) }),
    ...(wanted.counterPorts === undefined || wanted.counterPorts.length === 0
      ? {}
      : { counterPorts: wanted.counterPorts }),
  };
  const everySource = wanted.ports.length > 0 || (tunnel?.peers.length ?? 0) > 0;
  const desired: GroupMembership[] = [
    ...wanted.bySource.map(
      ({ source, ports }): GroupMembership => ({ group, source, ports, learned: true, ...entryPart }),
    ),
    ...(everySource ? [{ group, ports: wanted.ports, learned: true, ...entryPart }] : []),
  ];
  const forwardings = desired.map((membership) => pipeline.forwarding(membership));
  // Ids of the wanted chains that are on the switch though no entry of the group reaches
  // them (left by a failed sync): they must be modified, not added.
  const reached = new Set(current.flatMap((entry) => entry.groups.map(({ groupId }) => groupId)));
  const strayGroups = forwardings
    .flatMap((forwarding) => forwarding.groups)
    .filter((entry) => groupIds.has(entry.groupId) && !reached.has(entry.groupId))
    .map(({ groupId }) => ({ groupId, buckets: [] }));
  const installedView = { groups: [...current], otherFlows: [], strayGroups };
  const plans = desired.length === 0 ? [] : planInstall(pipeline, desired, installedView, foreignFlows);
  const conflict = plans.find((plan) => plan.outcome === 'conflict');
  if (conflict !== undefined)
    throw new McastError('conflict', `group ${group} not programmed: ${conflict.problem}`, {
      hint: 'give the daemon a table of its own (--table)',
    });
  const wantedKeys = new Set(desired.map(forwardingKey));
  // The (S,G) entries go before the (*,G) one: its flow is the less specific.
  const stale = current
    .filter((entry) => !wantedKeys.has(forwardingKey(entry)))
    .sort((a, b) => (a.source === undefined ? 1 : 0) - (b.source === undefined ? 1 : 0));
  const removed = stale.map(
    ({ group: staleGroup, source }): ForwardingTarget => ({
      group: staleGroup,
      ...(source === undefined ? {} : { source }),
    }),
  );
  const removals = planUninstall(removed, { groups: stale, otherFlows: [], strayGroups: [] }).flatMap(
    (plan) => plan.changes,
  );
  const changes = [...plans.flatMap((plan) => plan.changes), ...removals];
  return {
    changes,
    outcome: outcomeOf({ changes: changes.length, before: current.length, after: desired.length }),
    installed: forwardings.map((forwarding, index) => installedOf(forwarding, desired[index]!.source)),
    removed,
  };
}

function outcomeOf({ changes, before, after }: { changes: number; before: number; after: number }): GroupOutcome {
  if (changes === 0) return before === 0 && after === 0 ? 'absent' : 'unchanged';
  if (after === 0) return 'removed';
  return before === 0 ? 'added' : 'updated';
}

/**
 * What the read-back would make of `forwarding` once it is on the switch (readInstalled
 * in multicast-pipeline.ts): the chain head first, the ports of its output buckets (the
 * gateway's too), the peers of its tunnel buckets and the ingress flows, so that the next
 * sync of the same members plans nothing.
 */
function installedOf(forwarding: GroupForwarding, source = forwarding.source): InstalledGroup {
  const groups = [...forwarding.groups].reverse();
  const ports: number[] = [];
  const peers: HostAddress[] = [];
  for (const bucket of groups.flatMap((entry) => entry.buckets)) {
    if (bucket.type !== 'output') continue;
    if (bucket.tunnelDestination === undefined) ports.push(bucket.port);
    else peers.push(bucket.tunnelDestination);
  }
  const ingress = forwarding.ingress ?? [];
  const counters = forwarding.counters ?? [];
  return {
    group: forwarding.group,
    ...(source === undefined ? {} : { source }),
    ports: ports.sort((a, b) => a - b),
    flow: forwarding.flow,
    groups,
    learned: true,
    ...(peers.length === 0 ? {} : { peers: peers.sort(compareAddresses) }),
    ...(ingress.length === 0
      ? {}
      : { ingress: [...ingress].sort((a, b) => (a.match.inPort ?? -1) - (b.match.inPort ?? -1)) }),
    ...(counters.length === 0 ? {} : { counters: [...counters] }),
  };
}
