/**
 * What a trace is decided on: the request (a group, a pod, a sender) and TraceSources, the
 * one door through which every fact from outside comes (OVSDB, the switch, the daemon, the
 * kernel), so that the stages can be tested on plain facts. Also how a stage shows a port.
 */
import type { InterfaceMembershipRow } from '../../protocol/mroute/proc.js';
import type {
  DaemonStatus,
  GroupView,
  PortActivityView,
  PortQuery,
  PortView,
} from '../../transport/control/daemon-view.js';
import type { AddressFamily, GroupAddress } from '../../wire/ip-address.js';
import type { TraceReport } from './trace-report.js';

/** A port of the bridge, as OVSDB has it. */
export interface TracePort {
  ofport: number;
  name: string;
  pod?: string;
  /** Its addresses (external_ids ip-address), where its CNI plugin wrote them. */
  addresses?: readonly string[];
  /** Its pod's MAC (external_ids attached-mac): the source MAC of a packet traced from it. */
  mac?: string;
}

/** One entry of ours on the switch: a group's (*,G) flow, or one source's (S,G) flow, with its OVS group's buckets. */
export interface InstalledEntry {
  group: string;
  source?: string;
  /** The head of its OVS group chain. */
  groupId: number | undefined;
  /** The ports its buckets output to. */
  ports: readonly number[];
  problem?: string;
}

/** The kernel's multicast routing of one family in this namespace. */
export interface KernelFacts {
  routerActive: boolean;
  /** Names of its routing interfaces (VIFs or MIFs). */
  interfaces: string[];
  routes: Array<{ source: string; group: string; iif: string; oifs: string[]; packets: number; bytes: number }>;
  memberships: InterfaceMembershipRow[];
}

/** What the daemon answers, when it answers. */
export interface DaemonFacts {
  status: DaemonStatus;
  groups: GroupView[];
  port(query: PortQuery): Promise<PortActivityView | undefined>;
}

export interface TraceSources {
  bridge: string;
  cookiePrefix: number;
  ports: readonly TracePort[];
  installed(): Promise<readonly InstalledEntry[]>;
  /** OVS's trace of `flow` (ofproto/trace's text) and the datapath's port numbers (datapath → OpenFlow). */
  ovsTrace(flow: string): Promise<{ text: string; datapathPorts: ReadonlyMap<number, number> }>;
  /** Undefined: not asked (--no-daemon) or not reachable (`daemonState`). */
  daemon: DaemonFacts | undefined;
  daemonState: TraceReport['daemon'];
  /** Where the daemon's socket is, for the message when it did not answer. */
  controlSocket: string;
  kernel(family: AddressFamily): Promise<KernelFacts>;
  /** The gateway port's name (the daemon's, or --gateway). */
  gateway: string | undefined;
  /** The interfaces to the network outside (the daemon's, or --multicast-interfaces). */
  multicastInterfaces: readonly string[];
  /** Tunnel mode's port name, when the daemon runs it. */
  tunnel: string | undefined;
  /** The flow text of a UDP datagram from `inPort` (traceFlowText). */
  flowText(packet: { inPort: number; group: GroupAddress; source: string; sourceMac?: string }): string;
}

export interface TraceRequest {
  group: GroupAddress;
  /** `namespace/name`. */
  pod: string;
  source?: string;
  from?: { pod: string } | { address: string };
  /** The way a sender outside comes in (default: the gateway, else the tunnel). */
  via?: 'gateway' | 'tunnel';
}

export function portView(port: TracePort): PortView {
  return { ofport: port.ofport, name: port.name, ...(port.pod === undefined ? {} : { pod: port.pod }) };
}

export function describePort(port: TracePort | PortView): string {
  return `${port.name} (ofport ${port.ofport})`;
}
