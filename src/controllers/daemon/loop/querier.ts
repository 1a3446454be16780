/**
 * The daemon as IGMP querier of its pod ports (RFC 3376 §6.1, RFC 2236 §3): general
 * queries of each configured version at startup (Robustness of them, a quarter of the
 * Query Interval apart, §8.6-8.7) and then every Query Interval; and, when a member
 * leaves without fast leave, group-specific queries to its port, Robustness of them, a
 * Last Member Query Interval apart (§6.4.2); when a host stops wanting some sources,
 * group-and-source-specific queries about those (§6.6.3.2). The pods' replies come back
 * as packet-ins.
 *
 * The same for MLD (RFC 3810 §7.1, RFC 2710 §5), dual-stack, out of the same ports on the
 * same timers: general queries of each configured MLD version to ff02::1, and a group's
 * queries in MLD when the group is IPv6. MLD queries come from the link-local address
 * (modified EUI-64) of the querier's MAC: listeners drop a query from any other source
 * (RFC 3810 §5.1.14), so never from `::`.
 */
import { encodeFloatCode } from '../../../packet/igmp/float-code.js';
import type { IgmpQuery, IgmpVersion } from '../../../packet/igmp/message.js';
import { encodeMaxRespCode, MAX_MAX_RESP_CODE_VALUE } from '../../../packet/mld/float-code.js';
import type { MldQuery, MldVersion } from '../../../packet/mld/message.js';
import { FALLBACK_SOURCE_MAC } from '../../../packet/ethernet.js';
import { encodeFrame, encodeMldFrame } from '../../../packet/query-frame.js';
import type { WorkQueueTimers } from '../../../domain/membership/work-queue.js';
import { IPV4_FAMILY } from '../../../domain/family/ipv4.js';
import { IPV6_FAMILY } from '../../../domain/family/ipv6.js';
import { familyOf } from '../../../domain/family/families.js';
import type { GroupAddress, SourceAddress } from '../../../wire/ip-address.js';
import { eui64LinkLocal } from '../../../wire/ipv6-address.js';
import { McastError } from '../../../errors.js';
import type { DaemonCounters } from '../../../transport/control/daemon-view.js';
import type { ControllerMetrics, SwitchPort } from './ports.js';
import type { QuerierElection, QueryProtocol } from '../../../domain/membership/querier-election.js';

/** What a reload may change in a running querier. */
export interface QuerierTiming {
  versions: readonly IgmpVersion[];
  queryIntervalMs: number;
  queryResponseIntervalMs: number;
  lastMemberQueryIntervalMs: number;
  robustness: number;
}

/** The MLD versions of the general queries (a reload may change them too); none: no MLD queries. */
export interface MldQuerierTiming {
  mldVersions?: readonly MldVersion[];
}

export interface QuerierOptions extends QuerierTiming, MldQuerierTiming {
  /**
   * The querier's IPv4 address and MAC now (the gateway's, or 0.0.0.0); MLD's source is the link-local address of the
   * MAC (or of FALLBACK_SOURCE_MAC).
   */
  source: () => { address: string; mac?: string };
  /** The ports that get general queries now. */
  ports: () => number[];
  /** Sends one frame out of each port; resolves with how many went. */
  send: (frame: Uint8Array, ports: readonly number[]) => Promise<number>;
  onError: (error: unknown) => void;
  timers: WorkQueueTimers;
  /** Which ports the general queries of each protocol go out of now (default: all). */
  election?: Pick<QuerierElection, 'queries'>;
}

/**
 * The querier's `send` on the switch: each frame out of each port, counted (queriesSent); rejects when OVS refused
 * some.
 */
export function queryFrameSender(options: {
  vswitch: Pick<SwitchPort, 'connected' | 'sendFrame'>;
  counters: DaemonCounters;
  metrics: ControllerMetrics;
}) {
  const { vswitch, counters, metrics } = options;
  return async (frame: Uint8Array, ports: readonly number[]): Promise<number> => {
    if (!vswitch.connected || ports.length === 0) return 0;
    const { sent, refused } = await vswitch.sendFrame(frame, ports);
    counters.queriesSent += sent;
    metrics.queriesSent(sent);
    if (refused.length > 0)
      throw new McastError(
        'refused',
        `OVS refused ${refused.length} of ${ports.length} queries: ${refused[0]!.message}`,
      );
    return sent;
  };
}

export class Querier {
  private cancelPeriodic: (() => void) | undefined;
  private readonly pendingGroupQueries = new Set<() => void>();
  private identification = Math.floor(Math.random() * 0x10000);
  private stopped = false;
  private startupLeft = 0;

  constructor(private options: QuerierOptions) {}

  /**
   * New intervals, versions and robustness (a reload): queries sent from now on carry
   * them, and the next general query comes one new Query Interval from now.
   */
  reconfigure(timing: QuerierTiming & MldQuerierTiming): void {
    const intervalChanged = timing.queryIntervalMs !== this.options.queryIntervalMs;
    this.options = { ...this.options, ...timing };
    if (intervalChanged && this.cancelPeriodic !== undefined && !this.stopped && this.startupLeft <= 0) {
      this.cancelPeriodic();
      this.cancelPeriodic = this.options.timers.after(this.options.queryIntervalMs, this.tick);
    }
  }

  /** Starts the startup queries, then the periodic ones. */
  start(): void {
    this.startupLeft = this.options.robustness;
    this.tick();
  }

  /** One general query round, then the timer of the next: a quarter interval while starting up (RFC 3376 §8.7). */
  private readonly tick = (): void => {
    if (this.stopped) return;
    void this.generalQueries();
    this.startupLeft--;
    const { queryIntervalMs } = this.options;
    this.cancelPeriodic = this.options.timers.after(
      this.startupLeft > 0 ? Math.max(1, Math.floor(queryIntervalMs / 4)) : queryIntervalMs,
      this.tick,
    );
  };

  /** General queries of every configured version, out of every pod port where the daemon is the querier, now. */
  async generalQueries(ports: readonly number[] = this.options.ports()): Promise<void> {
    const election = this.options.election;
    const igmpPorts = election === undefined ? ports : ports.filter((port) => election.queries(port, 'igmp'));
    const mldPorts = election === undefined ? ports : ports.filter((port) => election.queries(port, 'mld'));
    if (igmpPorts.length > 0) {
      for (const version of this.options.versions)
        await this.send(this.generalQuery(version), IPV4_FAMILY.allSystemsGroup, igmpPorts);
    }
    if (mldPorts.length > 0) {
      for (const version of this.options.mldVersions ?? [])
        await this.sendMld(this.mldGeneralQuery(version), IPV6_FAMILY.allSystemsGroup, mldPorts);
    }
  }

  /** The source our queries of `protocol` carry now: the election compares with it. */
  sourceAddress(protocol: QueryProtocol): string {
    const source = this.options.source();
    return protocol === 'igmp' ? source.address : eui64LinkLocal(source.mac ?? FALLBACK_SOURCE_MAC);
  }

  /**
   * Asks `port` Robustness times whether anyone still wants `group`, in `version` (v1 has no
   * group query); with `sources`, whether anyone still wants those sources of it (v2 has no
   * source list and asks about the whole group). An IPv6 group is asked in MLD, the version
   * being the IGMP one of the port's host compatibility: 2 (an MLDv1 host) asks in MLDv1, 3 in MLDv2.
   * `responseMs` shortens the answer time asked for below the last member query interval.
   */
  groupQueries(
    group: GroupAddress,
    port: number,
    version: Exclude<IgmpVersion, 1>,
    scope: { sources?: readonly SourceAddress[]; responseMs?: number } = {},
  ): void {
    let remaining = this.options.robustness;
    const mld = familyOf(group).protocol === 'mld';
    const perQuery = mld ? MLD_SOURCES_PER_QUERY : SOURCES_PER_QUERY;
    const lists =
      version === 3 && scope.sources !== undefined && scope.sources.length > 0
        ? sourceLists(scope.sources, perQuery)
        : [[]];
    const once = (): void => {
      this.pendingGroupQueries.delete(cancel);
      if (this.stopped) return;
      const responseMs = Math.min(this.options.lastMemberQueryIntervalMs, scope.responseMs ?? Infinity);
      for (const sources of lists) {
        if (mld)
          void this.sendMld(this.mldGroupQuery(group, version === 2 ? 1 : 2, sources, responseMs), group, [port]);
        else void this.send(this.groupQuery(group, version, sources, responseMs), group, [port]);
      }
      if (--remaining > 0) {
        cancel = this.options.timers.after(this.options.lastMemberQueryIntervalMs, once);
        this.pendingGroupQueries.add(cancel);
      }
    };
    let cancel = (): void => undefined;
    once();
  }

  stop(): void {
    this.stopped = true;
    this.cancelPeriodic?.();
    for (const cancel of this.pendingGroupQueries) cancel();
    this.pendingGroupQueries.clear();
  }

  private generalQuery(version: IgmpVersion): IgmpQuery {
    const tenths = Math.round(this.options.queryResponseIntervalMs / 100);
    switch (version) {
      case 1:
        return { kind: 'query', version: 1, group: '0.0.0.0' };
      case 2:
        return { kind: 'query', version: 2, group: '0.0.0.0', maxRespTimeDs: Math.min(255, tenths) };
      case 3:
        return this.v3Query('0.0.0.0', tenths);
    }
  }

  private groupQuery(group: string, version: 2 | 3, sources: readonly string[], responseMs: number): IgmpQuery {
    const tenths = Math.max(1, Math.round(responseMs / 100));
    return version === 2
      ? { kind: 'query', version: 2, group, maxRespTimeDs: Math.min(255, tenths) }
      : this.v3Query(group, tenths, sources);
  }

  private v3Query(group: string, maxRespTenths: number, sources: readonly string[] = []): IgmpQuery {
    return {
      kind: 'query',
      version: 3,
      group,
      maxRespCode: encodeFloatCode(maxRespTenths),
      sFlag: false,
      qrv: this.options.robustness <= 7 ? this.options.robustness : 0,
      qqic: encodeFloatCode(Math.round(this.options.queryIntervalMs / 1000)),
      sources: [...sources],
    };
  }

  private mldGeneralQuery(version: MldVersion): MldQuery {
    return this.mldQuery('::', version, this.options.queryResponseIntervalMs);
  }

  private mldGroupQuery(group: string, version: MldVersion, sources: readonly string[], responseMs: number): MldQuery {
    return this.mldQuery(group, version, Math.max(1, responseMs), sources);
  }

  /**
   * MLDv1 carries the delay in milliseconds in 16 bits; MLDv2 as a code, in its own floating-point form from 32768 on
   * (RFC 3810 §5.1.3).
   */
  private mldQuery(group: string, version: MldVersion, responseMs: number, sources: readonly string[] = []): MldQuery {
    const ms = Math.round(responseMs);
    if (version === 1) return { kind: 'query', version: 1, group, maxRespDelayMs: Math.min(0xffff, ms) };
    return {
      kind: 'query',
      version: 2,
      group,
      maxRespCode: encodeMaxRespCode(Math.min(MAX_MAX_RESP_CODE_VALUE, ms)),
      sFlag: false,
      qrv: this.options.robustness <= 7 ? this.options.robustness : 0,
      qqic: encodeFloatCode(Math.round(this.options.queryIntervalMs / 1000)),
      sources: [...sources],
    };
  }

  private async sendMld(message: MldQuery, dst: string, ports: readonly number[]): Promise<void> {
    const mac = this.options.source().mac ?? FALLBACK_SOURCE_MAC;
    try {
      const frame = encodeMldFrame({ message, src: eui64LinkLocal(mac), dst }, mac);
      await this.options.send(frame, ports);
    } catch (error) {
      this.options.onError(error);
    }
  }

  private async send(message: IgmpQuery, dst: string, ports: readonly number[]): Promise<void> {
    const source = this.options.source();
    this.identification = (this.identification + 1) & 0xffff;
    const frame = encodeFrame({ message, src: source.address, dst, identification: this.identification }, source.mac);
    try {
      await this.options.send(frame, ports);
    } catch (error) {
      this.options.onError(error);
    }
  }
}

/**
 * Sources per query that fit one 1500-octet frame: 1500 - 24 (IPv4 header with Router
 * Alert) - 12 (the v3 query header), 4 octets each.
 */
const SOURCES_PER_QUERY = 366;

/**
 * The same for MLDv2: 1500 - 40 (IPv6 header) - 8 (the hop-by-hop header with Router
 * Alert) - 28 (the v2 query header), 16 octets each.
 */
const MLD_SOURCES_PER_QUERY = 89;

/** `sources` in lists that each fit one query. */
function sourceLists(sources: readonly SourceAddress[], perQuery: number): SourceAddress[][] {
  const lists: SourceAddress[][] = [];
  for (let at = 0; at < sources.length; at += perQuery) lists.push(sources.slice(at, at + perQuery));
  return lists;
}
