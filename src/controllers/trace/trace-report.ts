/**
 * What `mcastctl trace` answers: for one group and one pod, the stages traffic and control
 * meet in order, each passed, failed (the first failure ends the list), skipped or not
 * applicable, with the facts it was decided on; and each sender followed to the pod, with
 * its own stages. The shape of `trace --json`.
 */
import type { PortView } from '../../transport/control/daemon-view.js';

export const TRACE_STAGES = ['pod-port', 'igmp', 'membership', 'ovs', 'outside', 'sender'] as const;
export type TraceStageName = (typeof TRACE_STAGES)[number];

/** Why a stage failed: stable, for scripts. */
export type TraceFailureCode =
  | 'no-such-pod'
  | 'not-a-pod-port'
  | 'no-igmp'
  | 'never-reported'
  | 'denied-by-policy'
  | 'limit-reached'
  | 'spoofed'
  | 'off-link'
  | 'rate-limited'
  | 'not-member'
  | 'source-not-admitted'
  | 'no-flow'
  | 'no-bucket'
  | 'send-denied'
  | 'trace-misses-pod'
  | 'no-router'
  | 'no-upstream-join'
  | 'route-wrong'
  | 'no-tunnel'
  | 'no-sender';

export interface TraceStage {
  /** 1 to 6, as TRACE_STAGES orders them. */
  stage: number;
  name: TraceStageName;
  /** not-applicable: the node does not carry this kind of sender by its configuration (the summary says why). */
  status: 'pass' | 'fail' | 'skipped' | 'not-applicable';
  /** One line: what was found. */
  summary: string;
  code?: TraceFailureCode;
  /** What to do about a failure. */
  hint?: string;
  facts: Record<string, unknown>;
}

/** Who sends: a pod on this node, or a host outside it, whose traffic enters through the gateway or the tunnel. */
export type TraceSender =
  | { kind: 'pod'; pod: string; port: PortView; address: string | null }
  | { kind: 'outside'; address: string | null; via: 'gateway' | 'tunnel' | null; port: PortView | null };

/** The kinds of sender a node can have: its pods, other nodes through the tunnel, hosts outside through the gateway. */
export type TraceSenderKind = 'pod' | 'tunnel' | 'outside';

/** One sender followed to the pod, after the stages every sender shares (1 to 3). */
export interface TracePath {
  from: TraceSenderKind;
  /** The sender followed; null when the node does not carry this kind (its one stage says why). */
  sender: TraceSender | null;
  /** delivered: its stages passed; blocked: one failed. */
  verdict: 'delivered' | 'blocked' | 'not-applicable';
  blockedAt: TraceStageName | null;
  /** Its own stages (4 to 6). */
  stages: TraceStage[];
}

export interface TraceReport {
  group: string;
  pod: string;
  /** The source traced: --source, else the deciding sender's address; null: any. */
  source: string | null;
  /** The deciding path's sender (see `stages`); null when no path was followed. */
  sender: TraceSender | null;
  /** true: --from, --from-address or --via named the sender; false: every sender the node carries was followed. */
  senderNamed: boolean;
  daemon: 'reachable' | 'unreachable' | 'not-asked';
  /**
   * delivered: every stage passed for some sender; blocked: a shared stage failed, or one
   * failed for every sender the node carries; incomplete: none failed but the daemon's were
   * skipped.
   */
  verdict: 'delivered' | 'blocked' | 'incomplete';
  blockedAt: TraceStageName | null;
  /** Stages 1 to 3, then the deciding path's: the first delivered, else the first blocked (in `paths` order). */
  stages: TraceStage[];
  /** Every sender followed: a pod's, the tunnel's, the outside's (none when a shared stage failed). */
  paths: TracePath[];
}
