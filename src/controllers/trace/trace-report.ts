/**
 * What `mcastctl trace` answers: for one group and one pod, the stages traffic and control
 * meet in order, each passed, failed (the first failure ends the list) or skipped, with
 * the facts it was decided on. The shape of `trace --json`.
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
  | 'no-tunnel';

export interface TraceStage {
  /** 1 to 6, as TRACE_STAGES orders them. */
  stage: number;
  name: TraceStageName;
  status: 'pass' | 'fail' | 'skipped';
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

export interface TraceReport {
  group: string;
  pod: string;
  /** The source traced: --source, else the sender's address; null: any. */
  source: string | null;
  sender: TraceSender;
  daemon: 'reachable' | 'unreachable' | 'not-asked';
  /** delivered: every stage passed; blocked: one failed; incomplete: none failed but the daemon's were skipped. */
  verdict: 'delivered' | 'blocked' | 'incomplete';
  blockedAt: TraceStageName | null;
  stages: TraceStage[];
}
