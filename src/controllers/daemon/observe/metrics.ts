/**
 * The daemon's Prometheus metrics (its own registry, never prom-client's global one); the
 * HTTP endpoint that serves them is ./metrics-server.ts.
 */
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { DaemonView } from '../../../transport/control/daemon-view.js';
import { IGMP_REFUSAL_REASONS } from '../loop/igmp-guard.js';
import { registerTrafficMetrics } from './traffic-metrics.js';
import { registerClusterMetrics } from './cluster-metrics.js';

/** Sync latency buckets (seconds): a sync is a flow mod and a group mod, usually a few ms. */
export const SYNC_DURATION_BUCKETS = [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5];

export class DaemonMetrics {
  readonly registry = new Registry();
  private readonly igmpMessages: Counter<'type' | 'version' | 'protocol'>;
  private readonly packetIns: Counter;
  private readonly ignored: Counter<'reason'>;
  private readonly errors: Counter<'kind'>;
  private readonly syncDuration: Histogram<'result'>;
  private readonly queries: Counter;
  private readonly peerMessages: Counter<'peer' | 'direction' | 'type'>;
  /** The peers with message series: those no longer in the status's peer list lose them at the next scrape. */
  private readonly messagePeers = new Set<string>();

  constructor(view: DaemonView) {
    const registers = [this.registry];
    // Read from the view when scraped, so they are never stale.
    const fromStatus = (name: string, help: string, field: 'groups' | 'members' | 'routes') =>
      new Gauge({
        name,
        help,
        registers,
        collect() {
          this.set(view.status()[field]);
        },
      });
    fromStatus('mcastctl_groups', 'Multicast groups with at least one member on this node.', 'groups');
    fromStatus('mcastctl_members', 'Group memberships (group and port) on this node.', 'members');
    fromStatus('mcastctl_routes', 'Kernel (S,G) multicast routes installed by the daemon.', 'routes');
    new Gauge({
      name: 'mcastctl_max_groups',
      help: "The node's limit of groups with members (maxGroups): a join of one more is refused (node-groups).",
      registers,
      collect() {
        this.set(view.status().maxGroups ?? 0);
      },
    });
    new Gauge({
      name: 'mcastctl_state_saved_timestamp_seconds',
      help: 'When the state the daemon wrote last to its state directory was taken, in seconds since the epoch (0: none yet).',
      registers,
      collect() {
        const savedAt = view.status().stateSavedAt;
        this.set(savedAt === undefined || savedAt === null ? 0 : Date.parse(savedAt) / 1000);
      },
    });
    // Per-source forwarding: rebuilt from the groups view at each scrape, one series per group that names sources
    // (bounded by maxGroups).
    new Gauge({
      name: 'mcastctl_source_entries',
      help: 'Per-source (S,G) forwarding entries wanted in OVS: the sources of a group whose receivers differ from its other sources.',
      registers,
      collect() {
        this.set(view.groups().reduce((sum, group) => sum + (group.sources?.length ?? 0), 0));
      },
    });
    new Gauge({
      name: 'mcastctl_group_sources',
      help: "Sources named by the members' IGMPv3 filters (included or excluded), by group; only groups that name some.",
      labelNames: ['group'],
      registers,
      collect() {
        this.reset();
        for (const group of view.groups()) {
          const named = new Set(group.members.flatMap((member) => member.sources));
          if (named.size > 0) this.set({ group: group.group }, named.size);
        }
      },
    });
    this.igmpMessages = new Counter({
      name: 'mcastctl_igmp_messages_total',
      help: 'IGMP and MLD messages received from pod ports, by type and version; MLD ones also by protocol="mld" (IGMP ones carry no protocol label).',
      labelNames: ['type', 'version', 'protocol'],
      registers,
    });
    new Counter({
      name: 'mcastctl_igmp_refused_total',
      help: 'IGMP and MLD refused, by reason: a join past a membership limit (port-groups, group-sources, node-groups), a join of any source to a group in the SSM range (ssm), a join the group policy denies (policy), a TTL or hop limit other than 1, an IGMPv3 report without Router Alert or MLD from a source that is not link-local (off-link), a spoofed source (spoofed), or a message past its port budget, dropped unread (port-rate).',
      labelNames: ['reason'],
      registers,
      // The daemon's own counts, read when scraped (they only grow).
      collect() {
        const total = view.status().igmpRefused?.total ?? {};
        this.reset();
        for (const reason of IGMP_REFUSAL_REASONS) this.inc({ reason }, total[reason] ?? 0);
      },
    });
    new Counter({
      name: 'mcastctl_igmp_meter_drops_total',
      help: "IGMP messages a pod port's OpenFlow meter dropped in OVS (past igmpRatePerPort and igmpBurstPerPort), by port and pod.",
      labelNames: ['port', 'pod'],
      registers,
      // One series per metered pod port: bounded by the node's pods.
      collect() {
        this.reset();
        for (const { port, dropped } of view.status().igmpMeter?.byPort ?? [])
          this.inc({ port: port.name, pod: port.pod ?? '' }, dropped);
      },
    });
    new Gauge({
      name: 'mcastctl_other_queriers',
      help: 'Pod ports where another querier with a lower address is present (querierElection auto), by protocol (igmp, mld): the daemon sends no general queries of that protocol there.',
      labelNames: ['protocol'],
      registers,
      collect() {
        const others = view.status().querier?.otherQueriers ?? [];
        for (const protocol of ['igmp', 'mld'] as const)
          this.set({ protocol }, others.filter((other) => other.protocol === protocol).length);
      },
    });
    // Tunnel mode: one series per configured peer (at most MAX_PEERS), read from the status when scraped.
    new Gauge({
      name: 'mcastctl_peer_members',
      help: 'Tunnel mode: groups each peer (another node) is a member of on this node.',
      labelNames: ['peer'],
      registers,
      collect() {
        this.reset();
        for (const peer of view.status().tunnel?.peers ?? []) this.set({ peer: peer.address }, peer.members);
      },
    });
    new Counter({
      name: 'mcastctl_peer_drops_total',
      help: 'Tunnel mode: messages from the tunnel dropped, by the configured peer that sent them (no peer label: a sender that is no configured peer) and reason: an outer (tunnel) source not in the peer list (unknown-peer), this node (self), past the answer rate (rate), IGMP v1 or v2 or MLDv1 (unsupported), undecodable (malformed), a group past maxGroupsPerPeer or the node limit maxGroups (refused).',
      labelNames: ['peer', 'reason'],
      registers,
      // Series by peer only for configured peers (bounded, and gone with the peer); never by a sender's address.
      collect() {
        const tunnel = view.status().tunnel;
        this.reset();
        if (tunnel === undefined) return;
        for (const peer of tunnel.peers)
          for (const [reason, count] of Object.entries(peer.drops ?? {}))
            this.inc({ peer: peer.address, reason }, count);
        // A view without the split by peer has the node's totals only.
        for (const [reason, count] of Object.entries(tunnel.unattributedDrops ?? tunnel.drops))
          this.inc({ reason }, count);
      },
    });
    this.peerMessages = new Counter({
      name: 'mcastctl_peer_messages_total',
      help: 'Tunnel mode: IGMP messages exchanged with each peer, by direction (in, out) and type (report, query).',
      labelNames: ['peer', 'direction', 'type'],
      registers,
      // Counted as the messages go; a peer taken off the list (a reload) is noticed here, before its series are shown.
      collect: () => this.forgetRemovedPeers(view),
    });
    registerTrafficMetrics(view, registers);
    registerClusterMetrics(view, registers);
    this.packetIns = new Counter({
      name: 'mcastctl_packet_ins_total',
      help: 'OpenFlow packet-ins received.',
      registers,
    });
    this.ignored = new Counter({
      name: 'mcastctl_ignored_igmp_total',
      help: 'IGMP messages ignored, by reason.',
      labelNames: ['reason'],
      registers,
    });
    this.errors = new Counter({
      name: 'mcastctl_errors_total',
      help: 'Errors, by kind.',
      labelNames: ['kind'],
      registers,
    });
    this.syncDuration = new Histogram({
      name: 'mcastctl_sync_duration_seconds',
      help: 'Time to program one group in OVS, by result (ok or error).',
      labelNames: ['result'],
      buckets: SYNC_DURATION_BUCKETS,
      registers,
    });
    this.queries = new Counter({
      name: 'mcastctl_queries_sent_total',
      help: 'IGMP queries sent out of pod ports.',
      registers,
    });
    // Zero series from the start, so that rate() has a first sample.
    this.ignored.inc({ reason: 'not-pod-port' }, 0);
    this.syncDuration.zero({ result: 'ok' });
    this.syncDuration.zero({ result: 'error' });
    // prom-client samples the event loop's delay with a 10 ms timer by default: a
    // hundred wake-ups a second in an idle daemon. One a second is plenty for a gauge.
    collectDefaultMetrics({ register: this.registry, eventLoopMonitoringPrecision: 1000 });
  }

  packetIn(): void {
    this.packetIns.inc();
  }

  /** One message of a pod's; `protocol` is given for MLD only, so that IGMP's series are as they were. */
  igmpMessage(type: string, version: number, protocol?: 'igmp' | 'mld'): void {
    if (protocol === 'mld') this.igmpMessages.inc({ type, version: String(version), protocol });
    else this.igmpMessages.inc({ type, version: String(version) });
  }

  ignoredNonPod(): void {
    this.ignored.inc({ reason: 'not-pod-port' });
  }

  syncDone(seconds: number, ok: boolean): void {
    this.syncDuration.observe({ result: ok ? 'ok' : 'error' }, seconds);
  }

  error(kind: string): void {
    this.errors.inc({ kind });
  }

  queriesSent(n: number): void {
    if (n > 0) this.queries.inc(n);
  }

  /** Tunnel mode: `count` messages of `type` received from or sent to `peer`. */
  peerMessage(peer: string, direction: 'in' | 'out', type: 'report' | 'query', count = 1): void {
    if (count <= 0) return;
    this.peerMessages.inc({ peer, direction, type }, count);
    this.messagePeers.add(peer);
  }

  /**
   * Tunnel mode: a peer left the list; its series go with it, so that the series stay bounded by the peers configured.
   */
  peerRemoved(peer: string): void {
    for (const direction of ['in', 'out'] as const)
      for (const type of ['report', 'query'] as const) this.peerMessages.remove({ peer, direction, type });
    this.messagePeers.delete(peer);
  }

  /**
   * Removes the message series of the peers no longer configured. The members and drops
   * series are rebuilt from the status at each scrape; the messages are counted as they go,
   * and a send to a peer may complete after a reload removed it, so the status's peer list
   * is checked here rather than only at the reload.
   */
  private forgetRemovedPeers(view: DaemonView): void {
    if (this.messagePeers.size === 0) return;
    const configured = new Set((view.status().tunnel?.peers ?? []).map((peer) => peer.address));
    for (const peer of [...this.messagePeers]) if (!configured.has(peer)) this.peerRemoved(peer);
  }
}
