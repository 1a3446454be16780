/**
 * The daemon's learned state as it is saved across restarts, and back: ports by name
 * and pod (their numbers may change while the daemon is down), report times on the
 * wall clock (the monotonic clock restarts with the process).
 */
import { setImmediate } from 'node:timers/promises';
import type { GroupAddress, SourceAddress } from '../../../wire/ip-address.js';
import { ANY_SOURCE, type SourceFilter } from '../../../domain/membership/source-filter.js';
import type { SourcePorts } from '../../../domain/pipeline/source-split.js';
import {
  UNKNOWN_HOST,
  type GroupSnapshot,
  type MembershipTable,
  type RestoredMember,
} from '../../../domain/membership/membership-table.js';
import type { PodPorts } from '../../../domain/pods/pod-ports.js';
import { type SavedMember, type SavedState, STATE_FORMAT } from './state-format.js';
import { VERSION } from '../../../version.js';
import { saveSlices } from './save-slices.js';
import { RefusalCounts } from './refusal-counts.js';
import type { DaemonConfig } from '../config/config.js';
import type { ControllerLogger, ControllerStateStore, DaemonClock } from '../loop/ports.js';

interface ClockPair {
  /** Monotonic milliseconds now, the table's clock. */
  monoNow: number;
  /** Wall-clock epoch milliseconds now. */
  wallNow: number;
}

export interface SavedStateInput {
  bridge: string;
  groups: readonly GroupSnapshot[];
  pods: PodPorts;
  clock: Pick<DaemonClock, 'monotonicMs' | 'wallMs'>;
}

/** What a save of the whole table reads. */
type SaveInput = Omit<SavedStateInput, 'groups'> & { table: MembershipTable };

/** The state of the whole table now. */
export function savedStateNow({ table, ...rest }: SaveInput): SavedState {
  return savedStateOf({ ...rest, groups: table.snapshot() });
}

/**
 * The state as savedStateOf has it for the whole table, snapshotted a slice of groups a
 * turn of the loop. A group that changes between two slices is saved as it is when its
 * slice is taken; the change schedules the next save anyway.
 */
export async function savedStateInTurns({ table, ...rest }: SaveInput): Promise<SavedState> {
  const groups: GroupSnapshot[] = [];
  let turns = 0;
  for (const slice of saveSlices(table.groupsInOrder(), table.memberCount)) {
    if (turns++ > 0) await setImmediate();
    groups.push(...table.snapshot(slice));
  }
  return savedStateOf({ ...rest, groups });
}

export function savedStateOf({ bridge, groups, pods, clock }: SavedStateInput): SavedState {
  const monoNow = clock.monotonicMs();
  const wallNow = clock.wallMs();
  // Monotonic milliseconds of the table's clock as epoch milliseconds.
  const wall = (mono: number): number => Math.round(wallNow - (monoNow - mono));
  return {
    version: STATE_FORMAT,
    writtenBy: VERSION,
    savedAt: wallNow,
    bridge,
    groups: groups.map((group) => ({
      group: group.group,
      members: group.members.flatMap((member): SavedMember[] => {
        const port = pods.view(member.port);
        // Placeholders are not saved: the next start finds them in OVS again.
        if (port === undefined || member.host === UNKNOWN_HOST) return [];
        return [
          {
            portName: port.name,
            ...(port.pod === undefined ? {} : { pod: port.pod }),
            host: member.host,
            mode: member.filter.mode,
            sources: member.filter.sources,
            compatibility: member.compatibility,
            lastReportAt: wall(member.lastReportAt),
            ...(member.sourceTimers === undefined
              ? {}
              : { sourceTimers: member.sourceTimers.map(({ source, until }) => ({ source, endsAt: wall(until) })) }),
            ...(member.groupTimerUntil === undefined ? {} : { groupTimerEndsAt: wall(member.groupTimerUntil) }),
          },
        ];
      }),
    })),
  };
}

/** A saved member whose pod still has its port, and that port's number now. */
interface Candidate {
  group: GroupAddress;
  member: SavedMember;
  port: number;
}

/**
 * The saved members whose pod still has their port (the others are `skipped`: the port is
 * gone, or another pod has it now), the most recently reported first, ties in the file's
 * order. That is the order the limits admit them in, so when a state is over them (written
 * under higher limits, or by hand) the members kept are those heard from last: the likeliest
 * still wanted, and the last that would have ended; what is left out would have ended first.
 */
function candidatesOf(state: SavedState, pods: PodPorts): { candidates: Candidate[]; skipped: number } {
  // By name once: a lookup a member would walk every pod port for each of thousands of members.
  const byName = new Map(pods.pods.map((port) => [port.name, port]));
  const candidates: Candidate[] = [];
  let skipped = 0;
  for (const { group, members } of state.groups) {
    for (const member of members) {
      const port = byName.get(member.portName);
      if (port === undefined || (member.pod !== undefined && port.pod !== member.pod)) skipped++;
      else candidates.push({ group, member, port: port.ofport });
    }
  }
  // Stable: equal report times keep the file's order.
  candidates.sort((a, b) => b.member.lastReportAt - a.member.lastReportAt);
  return { candidates, skipped };
}

/** A saved member as the table takes it back: its times from the wall clock to the table's. */
function restoredMemberOf(
  { group, member, port }: Candidate,
  { monoNow, wallNow, savedAt }: ClockPair & { savedAt: number },
): RestoredMember {
  return {
    group,
    port,
    host: member.host,
    filter:
      member.mode === 'exclude' && member.sources.length === 0
        ? ANY_SOURCE
        : { mode: member.mode, sources: new Set(member.sources) },
    lastReportAt: monoNow - Math.max(0, wallNow - member.lastReportAt),
    compatibility: member.compatibility,
    // A timer keeps what was left of it when saved minus the time down (a wall clock set back gives none back).
    ...(member.sourceTimers === undefined
      ? {}
      : {
          sourceTimers: member.sourceTimers.map(({ source, endsAt }) => ({
            source,
            until: monoNow + endsAt - Math.max(wallNow, savedAt),
          })),
        }),
    ...(member.groupTimerEndsAt === undefined
      ? {}
      : { groupTimerUntil: monoNow + member.groupTimerEndsAt - Math.max(wallNow, savedAt) }),
  };
}

interface PlaceholderInput {
  /** `ports`: of the (*,G) entry; `sources`: the ports of each (S,G) entry. */
  learned: ReadonlyArray<{ group: GroupAddress; ports: readonly number[]; sources?: readonly SourcePorts[] }>;
  /** The ports the table already has members on, by group. */
  knownPorts: (group: GroupAddress) => readonly number[];
  pods: PodPorts;
  /** Monotonic milliseconds now. */
  now: number;
  groupMembershipIntervalMs: number;
  /** How long a placeholder lives: until the startup queries have been answered. */
  graceMs: number;
}

/**
 * Member ports of groups the daemon installed before it restarted that the saved state
 * does not know (it was lost, or the last second of joins was never written). They keep
 * forwarding, as placeholder members, until the startup queries have been answered, each
 * with the filter its entries express (placeholderFilter).
 */
function placeholderMembers({
  learned,
  knownPorts,
  pods,
  now,
  groupMembershipIntervalMs: gmi,
  graceMs,
}: PlaceholderInput): RestoredMember[] {
  const gateway = pods.gateway?.ofport;
  const members: RestoredMember[] = [];
  for (const { group, ports, sources = [] } of learned) {
    const known = new Set(knownPorts(group));
    const everySource = new Set(ports);
    for (const port of new Set([...ports, ...sources.flatMap((entry) => entry.ports)])) {
      if (port === gateway || known.has(port) || pods.pod(port) === undefined) continue;
      const filter = placeholderFilter(port, everySource.has(port), sources);
      members.push({ group, port, host: UNKNOWN_HOST, filter, lastReportAt: now - gmi + graceMs, compatibility: 3 });
    }
  }
  return members;
}

/**
 * The filter the entries of a group give `port`: in the (*,G) entry (`everySource`), it
 * excludes the sources whose (S,G) entry leaves it out; otherwise it includes those whose
 * (S,G) entry has it.
 */
function placeholderFilter(port: number, everySource: boolean, sources: readonly SourcePorts[]): SourceFilter {
  const named = (reaches: boolean) =>
    new Set<SourceAddress>(
      sources.filter((entry) => entry.ports.includes(port) === reaches).map((entry) => entry.source),
    );
  if (!everySource) return { mode: 'include', sources: named(true) };
  const blocked = named(false);
  return blocked.size === 0 ? ANY_SOURCE : { mode: 'exclude', sources: blocked };
}

export interface RestoreInput {
  store: ControllerStateStore | undefined;
  bridge: string;
  table: MembershipTable;
  pods: PodPorts;
  clock: DaemonClock;
  logger: ControllerLogger;
  /**
   * Whether the group policy in force denies `port` the group: such a member is left out
   * before the limits count it, as a live join the policy denies never reaches the table.
   */
  deniesMember?: (group: GroupAddress, port: number) => boolean;
}

/**
 * Saved members made and handed to the table this many at a time: what a refused member
 * costs (its set of sources) is garbage before the next batch, however long the file.
 */
const RESTORE_BATCH = 1_024;

/**
 * Puts back saved members whose ports still exist, held to the membership limits (and the
 * group policy, when given) as live joins are; returns every group the last run had.
 */
export async function restoreSavedState({
  store,
  bridge,
  table,
  pods,
  clock,
  logger,
  deniesMember,
}: RestoreInput): Promise<GroupAddress[]> {
  if (store === undefined) return [];
  const { state, warning } = await store.load();
  if (warning !== undefined) logger.warn(warning);
  if (state === undefined) return [];
  if (state.bridge !== bridge) {
    logger.warn('saved state is of another bridge; not restored', { saved: state.bridge, bridge });
    return [];
  }
  const { candidates, skipped } = candidatesOf(state, pods);
  const clocks = { monoNow: clock.monotonicMs(), wallNow: clock.wallMs(), savedAt: state.savedAt };
  const refused = new RefusalCounts();
  const before = table.memberCount;
  for (let first = 0; first < candidates.length; first += RESTORE_BATCH) {
    const batch = candidates.slice(first, first + RESTORE_BATCH).flatMap((candidate) => {
      if (deniesMember?.(candidate.group, candidate.port) !== true) return [restoredMemberOf(candidate, clocks)];
      refused.add('policy');
      return [];
    });
    table.restore(batch, (reason) => refused.add(reason));
  }
  const saved = state.groups.reduce((count, group) => count + group.members.length, 0);
  if (refused.total > 0) {
    const restored = table.memberCount - before;
    logger.warn(refused.line(saved, restored), { saved, restored, dropped: refused.total, ...refused.byReason() });
  }
  const savedAt = new Date(state.savedAt).toISOString();
  logger.info('state restored', {
    groups: table.groupCount,
    members: table.memberCount,
    skippedMembersOfGonePods: skipped,
    savedAt,
  });
  return state.groups.map((group) => group.group);
}

export interface SeedInput {
  learned: PlaceholderInput['learned'];
  config: Pick<DaemonConfig, 'robustness' | 'queryIntervalMs' | 'queryResponseIntervalMs'>;
  table: MembershipTable;
  pods: PodPorts;
  clock: DaemonClock;
  logger: ControllerLogger;
}

/**
 * Ports of groups installed before the restart that the saved state does not know keep
 * forwarding, as placeholders, until the startup queries have been answered: a member
 * there replaces its placeholder by reporting; a port nobody answers for is removed then.
 * Forwarding never shrinks because the state was short.
 */
export function seedPlaceholders({ learned, config, table, pods, clock, logger }: SeedInput): void {
  const { groupMembershipIntervalMs } = table.timings;
  const { robustness, queryIntervalMs, queryResponseIntervalMs } = config;
  const graceMs = Math.min(
    groupMembershipIntervalMs,
    (robustness - 1) * Math.floor(queryIntervalMs / 4) + queryResponseIntervalMs + 2_000,
  );
  const knownPorts = (group: GroupAddress) => table.portsOf(group);
  const members = placeholderMembers({
    learned,
    knownPorts,
    pods,
    now: clock.monotonicMs(),
    groupMembershipIntervalMs,
    graceMs,
  });
  if (members.length === 0) return;
  // Held to the limits too: a limit lowered since the entries were installed leaves some out.
  const refused = new RefusalCounts();
  table.restore(members, (reason) => refused.add(reason));
  logger.info('ports found in OVS without saved members kept until the startup queries are answered', {
    members: members.length - refused.total,
    seconds: Math.round(graceMs / 1000),
    ...(refused.total === 0 ? {} : { droppedPastTheLimits: refused.total, ...refused.byReason() }),
  });
}

/**
 * The groups a start syncs: every group this daemon installed (to its members now, or
 * removed), every group with members, and the saved ones still on the switch. Groups it
 * did not learn (installed by `mcastctl install`) are not ours to judge.
 */
export function groupsToSync(options: {
  installed: readonly GroupAddress[];
  learned: readonly GroupAddress[];
  table: MembershipTable;
  saved: readonly GroupAddress[];
}): Set<GroupAddress> {
  const installed = new Set(options.installed);
  const known = options.table.snapshot().map((entry) => entry.group);
  return new Set([...known, ...options.learned, ...options.saved.filter((group) => installed.has(group))]);
}
