/**
 * What the running daemon shows of itself: the contract between the controller (which
 * implements DaemonView) and everything that reads it from outside: the control socket
 * (`mcastctl status`, `groups`, `snoop --daemon`), the metrics endpoint and the state
 * directory. Plain JSON-able data only, so that the control socket sends it as it is.
 */
import type { FrameEventRecord } from '../../packet/frame-event-record.js';
import type { IgmpVersion } from '../../packet/igmp/message.js';
import type { RecordTypeName } from '../../packet/igmp/record-type.js';
import type { TunnelView } from './tunnel-view.js';

export type { PeerDropReason, PeerView, TunnelView } from './tunnel-view.js';

export interface PortView {
  ofport: number;
  /** The OVS interface name. */
  name: string;
  /** `namespace/name`, for a pod port. */
  pod?: string;
}

export interface MemberView {
  port: PortView;
  /** The reporting host's address. */
  host: string;
  /** The oldest IGMP version heard on the port for the group lately (RFC 3376 §7.3.2). */
  compatibility: IgmpVersion;
  mode: 'include' | 'exclude';
  sources: string[];
  /** ISO 8601. */
  lastReportAt: string;
  /** ISO 8601; while a leave waits for the Last Member Query Time. */
  leavingUntil?: string;
  /** ISO 8601: when the member expires unless it reports again. */
  expiresAt: string;
}

export interface GroupView {
  group: string;
  /** OVS ports the group is forwarded to (members, plus the gateway when there is one). */
  ports: PortView[];
  members: MemberView[];
  /** Whether the group is programmed in OVS as it should be (false while a sync waits or failed). */
  synced: boolean;
  /** The last sync failure, while there is one. */
  error?: string;
  /**
   * Tunnel mode: the peers with members of the group, each a copy into the tunnel (absent: not in tunnel mode, or older
   * daemons).
   */
  remoteMembers?: RemoteMemberView[];
  /** True for a group of the SSM range (ssmRange): joined for named sources only (absent: outside it, or older). */
  ssm?: boolean;
  /**
   * The sources whose receivers differ from the rest, by address, each with the ports it is forwarded to
   * (members whose IGMPv3 filter admits it, plus the gateway); absent while every member takes every source.
   */
  sources?: SourceReceiversView[];
  /** With `sources`: the ports every other source is forwarded to (the EXCLUDE-mode members, plus the gateway). */
  otherSources?: PortView[];
}

/** One source of a group and the ports that receive it. */
export interface SourceReceiversView {
  source: string;
  ports: PortView[];
}

/** A peer (another node) that is a member of a group, by its reports through the tunnel. */
export interface RemoteMemberView {
  /** The peer's configured underlay address. */
  peer: string;
  /** ISO 8601: its last report of the group; null for one restored from the saved state, not yet confirmed. */
  lastRefresh: string | null;
  /** Until the membership ends unless the peer reports it again. */
  expiresInMs: number;
}

export interface RouteView {
  source: string;
  group: string;
  /** Incoming interface name. */
  iif: string;
  oifs: string[];
  packets: number;
  bytes: number;
}

export interface DaemonStatus {
  version: string;
  pid: number;
  /** ISO 8601. */
  startedAt: string;
  uptimeSeconds: number;
  bridge: string;
  openflow: 'connected' | 'disconnected';
  ovsdb: 'connected' | 'disconnected';
  /** Whether this daemon holds MRT_INIT (kernel routing on); false without --multicast-interfaces or --gateway. */
  mrouteActive: boolean;
  gateway?: PortView;
  multicastInterfaces: string[];
  podPorts: number;
  groups: number;
  members: number;
  routes: number;
  /** Groups waiting for (or retrying) a sync. */
  pendingSyncs: number;
  /** Counters since start. */
  counters: DaemonCounters;
  /**
   * IGMP the daemon refused: joins past a membership limit or denied by the group policy, spoofed reports (absent from
   * older daemons).
   */
  igmpRefused?: IgmpRefusals;
  /** The pod ports' IGMP meters in OVS, and what they dropped (absent from older daemons). */
  igmpMeter?: IgmpMeterView;
  /** The group policy in force (absent from older daemons). */
  groupPolicy?: GroupPolicyView;
  /** The querier election on the pod ports (absent from older daemons). */
  querier?: QuerierView;
  /** Tunnel mode, when it is on (absent: off, or older daemons). */
  tunnel?: TunnelView;
  stateDir: string;
  /** ISO 8601 of when the state written last was taken; null: none yet (absent: no saves, or older daemons). */
  stateSavedAt?: string | null;
  /** The node's limit of groups with members (maxGroups; absent from older daemons). */
  maxGroups?: number;
  controlSocket: string;
  metricsAddress?: string;
}

export interface IgmpRefusals {
  /**
   * Since start, by reason: `port-groups`, `group-sources`, `node-groups` (the limits), `ssm` (any source of a group in
   * the SSM range), `policy` (the group policy), `spoofed`, `port-rate` (the budget).
   */
  total: Record<string, number>;
  /** Each pod port with refusals, by reason, since it appeared. */
  byPort: Array<{ port: PortView; counts: Record<string, number> }>;
}

export interface IgmpMeterView {
  /** Whether pod ports' IGMP goes through meters (igmpMeter). */
  enabled: boolean;
  ratePerSecond?: number;
  burst?: number;
  /** Pod ports metered now (a switch without meters, or past its meters, leaves a port unmetered). */
  meteredPorts: number;
  /**
   * IGMP messages the meters dropped, in all and per pod port: since each meter was added or last changed (a meter an
   * earlier run left as it is counts on).
   */
  dropped: number;
  byPort: Array<{ port: PortView; dropped: number }>;
}

/**
 * The querier election on the pod ports: the mode, and the other queriers that silence the daemon's general queries
 * now.
 */
export interface QuerierView {
  election: 'auto' | 'always' | 'never';
  otherQueriers: Array<{ port: PortView; protocol: 'igmp' | 'mld'; address: string; expiresInMs: number }>;
}

export interface GroupPolicyView {
  /** The policy file; absent: none (everything allowed). */
  file?: string;
  rules: number;
  /** ISO 8601: when the policy in force was read. */
  loadedAt: string;
  /** Pod ports with send-policy drops in OVS. */
  portsDeniedSending: number;
  /**
   * Of those, the ports whose denied ranges were more than maxSendDenyRanges: they may send to link-local groups only
   * (absent from older daemons).
   */
  portsSendCapped?: number;
}

export interface DaemonCounters {
  packetIns: number;
  /** IGMP messages by type: `v2_report`, `v3_report`, `v2_leave`, `v1_report`, `query`, `malformed`. */
  igmpMessages: Record<string, number>;
  /** IGMP packet-ins from ports that are not pod ports (ignored). */
  ignoredNonPod: number;
  syncs: number;
  syncErrors: number;
  /** ovs-vswitchd reconnects after which everything was replayed. */
  replays: number;
  queriesSent: number;
}

/**
 * One line of the live event stream (`snoop --daemon`, NDJSON on the control socket).
 * `igmp` carries what snoop --json prints for the message, plus the port it came in on.
 */
export type DaemonEvent =
  | {
      type: 'igmp';
      time: string;
      /** The daemon's monotonic clock when it read the packet-in, ms with a fraction (see `clockMs` of sync). */
      clockMs: number;
      port: PortView | null;
      record: FrameEventRecord;
    }
  | { type: 'join'; time: string; group: string; port: PortView; host: string }
  | {
      type: 'leave';
      time: string;
      group: string;
      port: PortView;
      host: string;
      reason: 'leave' | 'fast-leave' | 'expired' | 'port-removed' | 'no-answer' | 'denied';
    }
  | {
      type: 'sync';
      time: string;
      group: string;
      ports: number[];
      /**
       * The group's per-source entries, each source with the ports that get it (absent: none, every source takes
       * `ports`).
       */
      sources?: SyncSourceEntry[];
      /** From the group's first change the sync waited for to the switch's acknowledgement. */
      latencyMs: number;
      /** Of `latencyMs`, the part until its OpenFlow was written (absent: none was); the rest is the switch's. */
      sentMs?: number;
      /** The daemon's monotonic clock at the acknowledgement, ms with a fraction (time between events, to the µs). */
      clockMs: number;
      ok: boolean;
      error?: string;
    }
  | {
      type: 'route';
      time: string;
      action: 'add' | 'update' | 'remove';
      source: string;
      group: string;
      iif: string;
      oifs: string[];
    }
  | { type: 'replay'; time: string; what: 'openflow' | 'ovsdb'; groups: number }
  /**
   * A join the group policy denied (the other refusals are counted in the status, not streamed: a flood would be all of
   * them).
   */
  | { type: 'refused'; time: string; group: string; port: PortView; reason: 'policy'; rule?: number }
  | PeerMessageEvent;

/** One (S,G) entry of a sync: the OVS ports that source reaches (the gateway included while the group is wanted). */
interface SyncSourceEntry {
  source: string;
  ports: number[];
}

/**
 * Tunnel mode: one membership message between this node and its peers. `in`: from `peer`;
 * `out`: one event per message this node sent, with every peer it went to.
 */
type PeerMessageEvent =
  | ({ type: 'peer-report'; time: string; records: PeerReportRecord[] } & PeerMessageParties)
  | ({ type: 'peer-query'; time: string } & PeerMessageParties);

type WithoutTime<Event> = Event extends unknown ? Omit<Event, 'time'> : never;
/** A message between nodes as the daemon's loop hands it on, less its time (the loop's wall clock stamps it). */
export type PeerMessageNotice = WithoutTime<PeerMessageEvent>;

/** Who a message between nodes is from (in) or went to (out). */
export type PeerMessageParties = { direction: 'in'; peer: string } | { direction: 'out'; peers: string[] };

/** A record of a report between nodes: its IGMPv3 record type (as snoop --json names it) and group. */
export interface PeerReportRecord {
  type: RecordTypeName;
  group: string;
}

export interface DaemonView {
  status(): DaemonStatus;
  groups(): GroupView[];
  /** Async: the counters are read from the kernel. */
  routes(): RouteView[] | Promise<RouteView[]>;
  /** Calls `listener` for every event from now on; returns the unsubscribe function. */
  subscribe(listener: (event: DaemonEvent) => void): () => void;
  /**
   * What one pod port said about a group, and what the daemon made of it (`mcastctl trace`); undefined: no such pod
   * port.
   */
  port(query: PortQuery): PortActivityView | undefined;
}

/** A pod port, by its pod (`namespace/name`) or its OVS interface name, and the group asked about. */
export interface PortQuery {
  pod?: string;
  name?: string;
  group?: string;
}

/** One pod port's IGMP or MLD as the daemon heard it, and the decisions on the group asked about. */
export interface PortActivityView {
  port: PortView;
  /** The pod's IPv4 addresses (external_ids ip-address); absent when its port does not say. */
  addresses?: string[];
  /** ISO 8601: since when the daemon has watched the port (its start, or when the port appeared). */
  since: string;
  /** IGMP and MLD messages heard from the port since then. */
  messages: number;
  /** ISO 8601; null: none yet. */
  lastMessageAt: string | null;
  /** The daemon's general query interval, ms: how often a port that wants groups is asked. */
  queryIntervalMs: number;
  /** The groups the port reported lately, other than the one asked about, the latest first. */
  reportedGroups: string[];
  /** With a group asked about: what the port said of it. */
  group?: {
    group: string;
    reports: number;
    lastReportAt: string | null;
    /** Its reports refused, by reason (IgmpRefusals' reasons). */
    refusals: Record<string, number>;
    lastRefusal?: { reason: string; at: string; rule?: number };
    /** What the group policy in force decides for this pod and group; `rule`: the deciding rule's line. */
    policy: { join: { allowed: boolean; rule?: number }; send: { allowed: boolean; rule?: number } };
  };
  /** The port's refusals of any group, by reason, since it appeared. */
  refusals: Record<string, number>;
  /** IGMP its meter in OVS dropped. */
  meterDropped: number;
}

// --- Per-pod traffic counters (`mcastctl groups --stats`, the mcastctl_pod_group_* metrics) ---

/**
 * Frames and their bytes as OVS counts them: whole Ethernet frames, without the FCS (a UDP datagram of 200 octets is
 * 242).
 */
export interface TrafficCountView {
  packets: number;
  bytes: number;
}

/** What one pod port received from and sent to one group, read from the switch's counters when asked. */
export interface PodTrafficView {
  group: string;
  port: PortView;
  /**
   * Copies the group's OVS groups sent out of the port: its buckets' counters in every entry of the group, (*,G) and
   * (S,G).
   */
  received: TrafficCountView;
  /**
   * What the port sent to the group: its sender counting flows (absent: it has none, trafficCounters off or no room for
   * them).
   */
  sent?: TrafficCountView;
}

export interface TrafficStatsView {
  /** Whether sender counting flows are written (trafficCounters); false: `sent` is absent everywhere. */
  counting: boolean;
  /** At most this many (pod, group) pairs are shown and counted (maxTrafficCounters). */
  limit: number;
  /** Member (pod, group) pairs left out past the limit: while above 0 the figures are partial. */
  uncounted: number;
  /** By group, then port number. */
  entries: PodTrafficView[];
}

export interface DaemonView {
  /** Async: the counters are read from the switch (flow and group statistics) on each call. */
  stats(): TrafficStatsView | Promise<TrafficStatsView>;
}
