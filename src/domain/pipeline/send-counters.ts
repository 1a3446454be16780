/**
 * The sender counting rows: OVS cannot split one flow's counter by the port a packet came in
 * on, so what each pod sent to an entry has a flow of its own, the entry's match plus the
 * pod's in_port and the entry's actions, just above the entry's flow, so that the traffic
 * goes exactly where it went without it.
 */
import { counterPriorities, type PipelineConfig } from './config.js';
import { decodeFlowCookie, FlowKind } from './flow-cookie.js';
import type { FlowEntry } from './pipeline-entries.js';
import { pipelineCookie } from './pipeline-cookie.js';

/**
 * The sender counting rows of an entry whose flow is `flow`: one per pod port, by port,
 * the flow's match and actions plus the port's in_port, one step above the flow (see
 * counterPriorities). None where the priorities leave no room.
 */
export function sendCounterRows(config: PipelineConfig, flow: FlowEntry, ports: readonly number[]): FlowEntry[] {
  const { sendCounter, sourceSendCounter } = counterPriorities(config.priorities);
  const priority = flow.match.ipSrc === undefined ? sendCounter : sourceSendCounter;
  if (priority === undefined) return [];
  const fields = decodeFlowCookie(flow.cookie, config.cookiePrefix);
  const cookie = pipelineCookie(config, FlowKind.SendCounter, fields?.value ?? 0, fields?.flags ?? 0);
  return [...new Set(ports)]
    .sort((a, b) => a - b)
    .map((inPort) => ({ ...flow, priority, cookie, match: { ...flow.match, inPort }, actions: [...flow.actions] }));
}
