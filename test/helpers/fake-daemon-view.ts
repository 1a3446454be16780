/** An in-memory DaemonView for the control socket, metrics and CLI tests: set its fields, emit events. */
import type {
  DaemonEvent,
  DaemonStatus,
  DaemonView,
  GroupView,
  PortActivityView,
  PortQuery,
  RouteView,
} from '../../src/transport/control/daemon-view.js';
import type { TrafficStatsView } from '../../src/transport/control/daemon-view.js';

export function sampleStatus(overrides: Partial<DaemonStatus> = {}): DaemonStatus {
  return {
    version: '0.1.0',
    pid: 4242,
    startedAt: '2026-01-01T00:00:00.000Z',
    uptimeSeconds: 3725,
    bridge: 'br-int',
    openflow: 'connected',
    ovsdb: 'connected',
    mrouteActive: true,
    gateway: { ofport: 1, name: 'gw0' },
    multicastInterfaces: ['eth0'],
    podPorts: 3,
    groups: 2,
    members: 3,
    routes: 1,
    pendingSyncs: 0,
    counters: {
      packetIns: 10,
      igmpMessages: { v3_report: 7, v2_leave: 1 },
      ignoredNonPod: 2,
      syncs: 5,
      syncErrors: 1,
      replays: 0,
      queriesSent: 4,
    },
    igmpRefused: {
      total: { 'port-groups': 0, policy: 2, spoofed: 1 },
      byPort: [{ port: { ofport: 5, name: 'veth-a', pod: 'default/pod-a' }, counts: { policy: 2, spoofed: 1 } }],
    },
    igmpMeter: {
      enabled: true,
      ratePerSecond: 200,
      burst: 1000,
      meteredPorts: 3,
      dropped: 4200,
      byPort: [
        { port: { ofport: 5, name: 'veth-a', pod: 'default/pod-a' }, dropped: 4200 },
        { port: { ofport: 6, name: 'veth-b', pod: 'default/pod-b' }, dropped: 0 },
      ],
    },
    groupPolicy: {
      file: '/etc/mcastctl/policy.yaml',
      rules: 4,
      loadedAt: '2026-12-01T15:00:00.000Z',
      portsDeniedSending: 1,
    },
    stateDir: '/var/lib/mcastctl',
    controlSocket: '/run/mcastctl/mcastctl.sock',
    metricsAddress: '127.0.0.1:9100',
    ...overrides,
  };
}

export function sampleGroups(now = Date.now()): GroupView[] {
  const iso = (offsetMs: number) => new Date(now + offsetMs).toISOString();
  const podA = { ofport: 5, name: 'veth-a', pod: 'default/pod-a' };
  const podB = { ofport: 6, name: 'veth-b', pod: 'default/pod-b' };
  return [
    {
      group: '239.1.2.3',
      ports: [podA, podB],
      synced: true,
      members: [
        {
          port: podA,
          host: '10.0.0.5',
          compatibility: 3,
          mode: 'exclude',
          sources: [],
          lastReportAt: iso(-12_000),
          expiresAt: iso(248_000),
        },
        {
          port: podB,
          host: '10.0.0.6',
          compatibility: 2,
          mode: 'exclude',
          sources: [],
          lastReportAt: iso(-3000),
          expiresAt: iso(257_000),
          leavingUntil: iso(1500),
        },
      ],
    },
    {
      group: '232.1.1.1',
      ports: [podA],
      synced: false,
      error: 'OFPET_GROUP_MOD_FAILED',
      members: [
        {
          port: podA,
          host: '10.0.0.5',
          compatibility: 3,
          mode: 'include',
          sources: ['10.9.9.9'],
          lastReportAt: iso(-1000),
          expiresAt: iso(259_000),
        },
      ],
    },
  ];
}

export class FakeDaemonView implements DaemonView {
  statusValue: DaemonStatus = sampleStatus();
  groupsValue: GroupView[] = sampleGroups();
  routesValue: RouteView[] = [
    { source: '10.0.0.5', group: '239.1.2.3', iif: 'gw0', oifs: ['eth0'], packets: 12, bytes: 1200 },
  ];
  /** Answers of `port`, by pod (or interface name); the query's group is kept in `portQueries`. */
  readonly portValues = new Map<string, PortActivityView>();
  readonly portQueries: PortQuery[] = [];
  readonly listeners = new Set<(event: DaemonEvent) => void>();
  statusCalls = 0;
  /** The answer of `stats`: one pod's traffic of one group, with a second group past the limit. */
  statsValue: TrafficStatsView = {
    counting: true,
    limit: 1,
    uncounted: 1,
    entries: [
      {
        group: '239.1.2.3',
        port: { ofport: 5, name: 'veth-a', pod: 'default/pod-a' },
        received: { packets: 100, bytes: 24_200 },
        sent: { packets: 50, bytes: 12_100 },
      },
    ],
  };

  status(): DaemonStatus {
    this.statusCalls++;
    return this.statusValue;
  }
  groups(): GroupView[] {
    return this.groupsValue;
  }
  routes(): RouteView[] {
    return this.routesValue;
  }
  subscribe(listener: (event: DaemonEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
  port(query: PortQuery): PortActivityView | undefined {
    this.portQueries.push(query);
    return this.portValues.get(query.pod ?? query.name ?? '');
  }
  stats(): TrafficStatsView {
    return this.statsValue;
  }
  emit(event: DaemonEvent): void {
    for (const listener of [...this.listeners]) listener(event);
  }
}

/** A tunnel's drops for the seal's reasons, none of them (a tunnel without keys, or one nobody forged to). */
export const NO_SEAL_DROPS = { unsealed: 0, 'unknown-key': 0, 'bad-seal': 0, replay: 0, stale: 0 } as const;
