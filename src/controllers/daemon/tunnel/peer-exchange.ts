/**
 * Tunnel mode's exchange of group membership with the peers (the other nodes), inside the tunnel: IGMPv3 for IPv4
 * groups, MLDv2 for IPv6 ones. What comes in from the tunnel port goes to the remote members, what this node's pods
 * want goes out to every peer.
 *
 * - In: a packet-in from the tunnel port is named by the tunnel's OUTER source (tun_src), which must be a configured
 *   peer; what the packet inside says of its sender is never believed (a pod or a host could write any node's address
 *   there). With cluster keys, its seal must then open for that peer (./peer-sealing.ts). It is then decoded as the
 *   pod path decodes IGMP and MLD. A v3 report (MLDv2 report) updates the remote members, within the node's limit
 *   of groups; a general query ("send me your full state", IGMPv3 or MLDv2) is answered to that peer only, with the
 *   state of both families, at most once per `queryAnswerIntervalMs` (./query-answers.ts).
 * - Out: local changes are batched and sent on the next tick, and once again at the announcer's retransmission time;
 *   every peer gets the full state every refresh interval (±10 %, drawn anew for each peer and period, so the peers'
 *   reports do not bunch up), which also serves as the heartbeat.
 * - Remote memberships expire at their deadlines; every change of a group's peers goes to `groupsChanged`, which the
 *   loop turns into a sync.
 *
 * Nothing here throws on what the network sends: every frame dropped is counted by reason, and by peer when a
 * configured peer sent it (./peer-counters.ts). The frames sent, and the sending, are ./peer-sender.ts's: this is when
 * and to whom.
 */
import { PeerAnnouncer } from '../../../domain/peers/announcer.js';
import { RemoteMembers, type RemoteMembersEffect } from '../../../domain/peers/remote-members.js';
import type { MembershipRecord } from '../../../domain/membership/membership-table.js';
import type { PeerDropReason } from '../../../transport/control/daemon-view.js';
import { WarningLimiter } from '../../../runtime/warning-limiter.js';
import type { GroupAddress, HostAddress } from '../../../wire/ip-address.js';
import { parseHostAddress } from '../../../wire/ip-address.js';
import { snoopFrame } from '../loop/igmp-snooper.js';
import {
  newCounters,
  PEER_DROP_REASONS,
  PeerDropCounts,
  type PeerExchangeCounters,
  type RemoteMembersWithDrops,
} from './peer-counters.js';
import { PeerSender, type PeerSendPort, recordsOf } from './peer-sender.js';
import { PeerSealing } from './peer-sealing.js';
import { QueryAnswers } from './query-answers.js';
import type { PeerKeyRing } from '../../../domain/peers/peer-keys.js';
import type { DaemonClock } from '../loop/ports.js';

/**
 * What the exchange needs of the loop: the switch's tunnel, the log and who follows the messages (as the sending
 * needs them), the sync and time.
 */
export interface PeerExchangePort extends PeerSendPort {
  /** The remote members of `groups` changed: sync them; `peer`, when one peer's message changed them (its lane). */
  groupsChanged(groups: readonly GroupAddress[], peer: HostAddress | undefined): void;
  clock: Pick<DaemonClock, 'after' | 'monotonicMs' | 'wallMs'>;
}

export interface PeerExchangeOptions {
  port: PeerExchangePort;
  /** This node's --node-address: the source of the IGMP it sends, and an outer source that is dropped as `self`. */
  nodeAddress: HostAddress;
  /** The source MAC of what it sends (the gateway's), when there is one. */
  sourceMac: () => string | undefined;
  /** The configured peers, normalised (src/domain/peers/peer-set.ts). */
  peers: readonly HostAddress[];
  /** The cluster keys that seal every message both ways (./peer-sealing.ts); absent: peers believed by address. */
  keys?: PeerKeyRing | undefined;
  /** MTU of the underlay path (1,500 when unknown): how many records a report holds. */
  pathMtu: number;
  /** How often each peer gets the full state (jittered ±10 %). */
  refreshIntervalMs: number;
  /** How long a remote membership lasts after the record that last asserted it. */
  peerTimeoutMs: number;
  maxGroupsPerPeer: number;
  /**
   * The node's limit of groups (--max-groups), read at each new group a peer asks for, as the loop reads it (a reload
   * may change it): the local groups and those only peers want count against it alike. Absent: no such limit.
   */
  maxGroups?: () => number;
  /** When a local change is sent again (RFC 3376 §5.1: 1 s). */
  retransmitIntervalMs?: number;
  /** The least time between two answers to one peer's queries (default 1 s). */
  queryAnswerIntervalMs?: number;
  /** A number in [0, 1) for the jitter (default Math.random). */
  random?: () => number;
}

const DEFAULT_RETRANSMIT_INTERVAL_MS = 1_000;
const DEFAULT_QUERY_ANSWER_INTERVAL_MS = 1_000;
/** The refresh period is drawn from interval × [1 − JITTER, 1 + JITTER]. */
const REFRESH_JITTER = 0.1;
/** Each kind of dropped frame is logged at most once in this long. */
const DROP_LOG_INTERVAL_MS = 60_000;

export class PeerExchange {
  readonly counters: PeerExchangeCounters = newCounters();
  /**
   * The frames from the tunnel that changed nothing, by reason and peer (`refused`: a group past maxGroupsPerPeer or
   * the node's maxGroups, the rest of that report still counting; `rate`: a query left to the answer due next).
   */
  private readonly dropCounts = new PeerDropCounts(this.counters.drops);
  private readonly remote: RemoteMembers;
  private readonly announcer: PeerAnnouncer;
  private readonly warnings: WarningLimiter;
  private readonly sender: PeerSender;
  private readonly sealing: PeerSealing;
  private peers: HostAddress[];
  /** peer → cancel of its next refresh. */
  private readonly refreshTimers = new Map<HostAddress, () => void>();
  /** The pace of the answers to each peer's queries (./query-answers.ts). */
  private readonly answers: QueryAnswers;
  private cancelFlush: (() => void) | undefined;
  private retransmit: { at: number; cancel: () => void } | undefined;
  private expiry: { at: number; cancel: () => void } | undefined;
  private frames = 0;
  private started = false;
  private stopped = false;
  private readonly listened = (): boolean => this.options.port.watchers?.listened() ?? false;

  constructor(private readonly options: PeerExchangeOptions) {
    const { port } = options;
    this.peers = [...options.peers];
    this.warnings = new WarningLimiter({ now: () => port.clock.monotonicMs(), intervalMs: DROP_LOG_INTERVAL_MS });
    this.sealing = new PeerSealing(options.keys, () => port.clock.wallMs());
    this.answers = new QueryAnswers({
      intervalMs: options.queryAnswerIntervalMs ?? DEFAULT_QUERY_ANSWER_INTERVAL_MS,
      clock: port.clock,
      answer: (peer) => this.sendFullState([peer]),
    });
    this.sender = new PeerSender({
      port,
      nodeAddress: options.nodeAddress,
      sourceMac: options.sourceMac,
      refreshIntervalMs: options.refreshIntervalMs,
      counters: this.counters,
      warnings: this.warnings,
      sealing: this.sealing,
    });
    this.remote = new RemoteMembers({
      peers: this.peers,
      timeoutMs: options.peerTimeoutMs,
      maxGroupsPerPeer: options.maxGroupsPerPeer,
      maxGroups: options.maxGroups,
      onRefusal: ({ peer, group, limit, reason }) => {
        this.dropCounts.count('refused', peer);
        const message =
          reason === 'node-groups'
            ? 'a peer asked for a group past the limit of groups on the node (maxGroups); new ones refused'
            : 'a peer asked for more groups than it may have; new ones refused';
        this.warnings.warn(port.logger, `${reason}:${peer}`, message, { peer, group, limit });
      },
    });
    this.announcer = new PeerAnnouncer({
      pathMtu: options.pathMtu,
      retransmitIntervalMs: options.retransmitIntervalMs ?? DEFAULT_RETRANSMIT_INTERVAL_MS,
    });
  }

  /** Greets every peer with our full state and a query (its answer confirms what it has), and starts the timers. */
  start(): void {
    if (this.started || this.stopped) return;
    this.started = true;
    this.greet(this.peers);
    if (this.announcer.hasPending) this.scheduleFlush();
    this.armExpiry();
  }

  /**
   * A membership found on the switch at start (a tunnel bucket installed before a restart):
   * kept for one peer timeout unless the peer confirms it, so the first sync keeps the bucket.
   */
  seed(group: GroupAddress, peers: readonly HostAddress[]): void {
    const deadline = this.options.port.clock.monotonicMs() + this.options.peerTimeoutMs;
    for (const peer of peers) this.remote.seed(peer, group, deadline);
    this.armExpiry();
  }

  /**
   * One packet-in from the tunnel port; `tunnelSource`: its outer source (tun_src), when
   * the switch gave one. Only a configured peer's outer source is heard: a frame without
   * one, or from any other address, is dropped before it is decoded.
   */
  take(frame: Uint8Array, tunnelSource: string | undefined): void {
    if (this.stopped) return;
    const peer = tunnelSource === undefined ? undefined : parseHostAddress(tunnelSource);
    if (peer === undefined || peer === this.options.nodeAddress || !this.remote.isPeer(peer)) {
      this.drop(peer !== undefined && peer === this.options.nodeAddress ? 'self' : 'unknown-peer', undefined, {
        outerSource: tunnelSource ?? null,
      });
      return;
    }
    // With keys, the seal is checked before anything the frame holds is read.
    const opened = this.sealing.open(frame, peer);
    if ('refused' in opened) {
      this.drop(opened.refused, peer, opened.fields);
      return;
    }
    const snooped = snoopFrame(opened.frame, { frame: ++this.frames, ts: 0 });
    // Only IGMP and MLD are sent up from the tunnel: anything else is as broken as a bad checksum.
    if (snooped === undefined || snooped.event.kind === 'malformed') {
      this.drop('malformed', peer, {
        peer,
        error: snooped?.event.kind === 'malformed' ? snooped.event.message : 'neither IGMP nor MLD',
      });
      return;
    }
    const now = this.options.port.clock.monotonicMs();
    const { event } = snooped;
    const { message } = event;
    // IGMPv3's and MLDv2's reports and queries are the ones with records and sources.
    if (message.kind === 'report' && 'records' in message) {
      this.counters.received.reports++;
      this.options.port.onMessage?.(peer, 'in', 'report');
      if (this.listened())
        this.options.port.watchers?.publish({
          type: 'peer-report',
          direction: 'in',
          peer,
          records: recordsOf(message),
        });
      const records: MembershipRecord[] = [];
      for (const call of snooped.calls) if (call.op === 'record') records.push(call.record);
      this.changed(this.remote.apply(peer, records, now), peer);
      return;
    }
    if (message.kind === 'query' && 'sources' in message && (message.group === '0.0.0.0' || message.group === '::')) {
      this.counters.received.queries++;
      this.options.port.onMessage?.(peer, 'in', 'query');
      if (this.listened()) this.options.port.watchers?.publish({ type: 'peer-query', direction: 'in', peer });
      // Any message is contact, a query too.
      this.remote.apply(peer, [], now);
      if (!this.answers.ask(peer, now)) this.drop('rate', peer, { peer });
      return;
    }
    // IGMPv1/v2, MLDv1, group-specific queries and the rest: peers speak v3 reports and general queries only.
    this.drop('unsupported', peer, {
      peer,
      protocol: event.kind === 'mld' ? 'mld' : 'igmp',
      kind: message.kind,
      version: 'version' in message ? message.version : null,
    });
  }

  /** A local group gained its first or lost its last pod member: told to every peer on the next tick. */
  localGroupChanged(group: GroupAddress, hasMembers: boolean): void {
    this.announcer.setLocalMembers(group, hasMembers);
    this.remote.setLocal(group, hasMembers);
    if (this.started && this.announcer.hasPending) this.scheduleFlush();
  }

  /** Sends the changes told so far now, instead of on the next tick (the caller's batch is complete). */
  flushChanges(): void {
    if (!this.started || this.stopped || !this.announcer.hasPending) return;
    this.cancelFlush?.();
    this.cancelFlush = undefined;
    this.flush();
  }

  /**
   * A new peer list (a reload): peers that left lose their groups at once, new ones are
   * greeted as at start, those that stay keep what they have.
   */
  setPeers(peers: readonly HostAddress[]): void {
    const before = new Set(this.peers);
    const after = new Set(peers);
    this.peers = [...peers];
    this.changed(this.remote.setPeers(peers), undefined);
    for (const peer of before) {
      if (after.has(peer)) continue;
      this.refreshTimers.get(peer)?.();
      this.refreshTimers.delete(peer);
      this.answers.forget(peer);
      this.dropCounts.forget(peer);
      this.sealing.forget(peer);
      for (const kind of ['peer-groups', 'node-groups', ...PEER_DROP_REASONS]) this.warnings.forget(`${kind}:${peer}`);
    }
    if (!this.started || this.stopped) return;
    this.greet(this.peers.filter((peer) => !before.has(peer)));
  }

  /** The cluster keys of a reload; the counters taken from the peers stay. */
  setKeys(keys: PeerKeyRing | undefined): void {
    this.sealing.setKeys(keys);
  }

  /** The groups some peer wants now. */
  groupsWithRemoteMembers(): GroupAddress[] {
    return this.remote.groupsWithMembers();
  }

  /** The peers that want `group` now, sorted (its tunnel buckets). */
  peersOf(group: GroupAddress): HostAddress[] {
    return this.remote.peersOf(group);
  }

  /** The node's groups as maxGroups counts them (local ones and those only peers want), and those only peers want. */
  get groupCounts(): { node: number; peerOnly: number } {
    return { node: this.remote.nodeGroupCount, peerOnly: this.remote.peerOnlyGroupCount };
  }

  /** The peers (with their drops) and the remote members, for `status` and `groups`. */
  view(): RemoteMembersWithDrops {
    return this.dropCounts.annotate(this.remote.view(this.options.port.clock.monotonicMs()));
  }

  stop(): void {
    this.stopped = true;
    for (const cancel of this.refreshTimers.values()) cancel();
    this.refreshTimers.clear();
    this.answers.stop();
    this.cancelFlush?.();
    this.cancelFlush = undefined;
    this.retransmit?.cancel();
    this.retransmit = undefined;
    this.expiry?.cancel();
    this.expiry = undefined;
  }

  /**
   * Full state and a general query to peers heard of for the first time (the same frames to all), then their refreshes.
   */
  private greet(peers: readonly HostAddress[]): void {
    if (peers.length === 0) return;
    this.sendFullState(peers);
    this.sender.send({ kind: 'query' }, peers);
    for (const peer of peers) this.armRefresh(peer);
  }

  private armRefresh(peer: HostAddress): void {
    const random = this.options.random ?? Math.random;
    const factor = 1 - REFRESH_JITTER + 2 * REFRESH_JITTER * random();
    const cancel = this.options.port.clock.after(Math.round(this.options.refreshIntervalMs * factor), () => {
      if (this.stopped || this.refreshTimers.get(peer) !== cancel) return;
      this.sendFullState([peer]);
      this.armRefresh(peer);
    });
    this.refreshTimers.set(peer, cancel);
  }

  private scheduleFlush(): void {
    if (this.cancelFlush !== undefined || this.stopped) return;
    this.cancelFlush = this.options.port.clock.after(0, () => {
      this.cancelFlush = undefined;
      this.flush();
    });
  }

  /** The batched changes and the retransmissions due now, to every peer; then the next retransmission's timer. */
  private flush(): void {
    if (this.stopped) return;
    const { clock } = this.options.port;
    for (const report of this.announcer.flush(clock.monotonicMs()))
      this.sender.send({ kind: 'report', report }, this.peers);
    const next = this.announcer.nextDeadline();
    if (next === undefined || (this.retransmit !== undefined && this.retransmit.at <= next)) return;
    this.retransmit?.cancel();
    const cancel = clock.after(Math.max(0, next - clock.monotonicMs()), () => {
      this.retransmit = undefined;
      this.flush();
    });
    this.retransmit = { at: next, cancel };
  }

  /** Arms the expiry timer at the remote members' next deadline, if that is sooner than the armed one. */
  private armExpiry(): void {
    if (!this.started || this.stopped) return;
    const next = this.remote.nextDeadline();
    if (next === undefined || (this.expiry !== undefined && this.expiry.at <= next)) return;
    this.expiry?.cancel();
    const { clock } = this.options.port;
    const cancel = clock.after(Math.max(0, next - clock.monotonicMs()), () => {
      this.expiry = undefined;
      if (this.stopped) return;
      this.changed(this.remote.expire(clock.monotonicMs()), undefined);
    });
    this.expiry = { at: next, cancel };
  }

  /** Hands the groups whose peers changed to the loop, and keeps the expiry timer on the earliest deadline. */
  private changed(effects: readonly RemoteMembersEffect[], peer: HostAddress | undefined): void {
    if (effects.length > 0)
      this.options.port.groupsChanged(
        effects.map((effect) => effect.group),
        peer,
      );
    this.armExpiry();
  }

  private sendFullState(peers: readonly HostAddress[]): void {
    for (const report of this.announcer.fullState()) this.sender.send({ kind: 'report', report }, peers);
  }

  /** A frame dropped, here or before it came (the tunnel's budget); `peer`: the configured peer that sent it. */
  drop(reason: PeerDropReason, peer: HostAddress | undefined, fields: Record<string, unknown>): void {
    this.dropCounts.count(reason, peer);
    const key = peer === undefined ? reason : `${reason}:${peer}`;
    // A peer's query past the rate is routine (two nodes restarting at once): not worth a warning.
    if (reason === 'rate') this.options.port.logger.debug('peer query left to the answer due next', fields);
    else this.warnings.warn(this.options.port.logger, key, `dropped a frame from the tunnel: ${reason}`, fields);
  }
}
