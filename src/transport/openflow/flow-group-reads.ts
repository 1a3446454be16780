/**
 * Flow and group read-back over the multipart requests (FLOW, GROUP_DESC, GROUP), as
 * meters.ts does it for meters: each read is one request, its reply's parts joined and
 * picked by the body kind the request asked for. Kept out of the connection, which only
 * carries the request.
 */
import { flowStatsRequest, type FlowStats } from '../../protocol/openflow/flow-stats.js';
import type { GroupDesc } from '../../protocol/openflow/group-desc.js';
import type { GroupStats } from '../../protocol/openflow/group-stats.js';
import type { MultipartReply, MultipartRequestBody } from '../../protocol/openflow/multipart.js';
import type { FlowDumpFilter } from './connection-types.js';

/** Sends a multipart request; resolves with every part of its reply (OpenFlowConnection.multipart). */
type MultipartTransact = (body: MultipartRequestBody) => Promise<MultipartReply[]>;

/** Every flow (or those `filter` selects); a cookie without a mask must match in full. */
export async function readFlows(transact: MultipartTransact, filter: FlowDumpFilter): Promise<FlowStats[]> {
  const { cookie, cookieMask, ...rest } = filter;
  const request = flowStatsRequest({
    ...rest,
    ...(cookie === undefined ? {} : { cookie, cookieMask: cookieMask ?? 0xffffffffffffffffn }),
    ...(cookie === undefined && cookieMask !== undefined ? { cookieMask } : {}),
  });
  const parts = await transact(request);
  return parts.flatMap((part) => (part.body.kind === 'FLOW' ? part.body.flows : []));
}

/** Every group, with its buckets (GROUP_DESC). */
export async function readGroupDescs(transact: MultipartTransact): Promise<GroupDesc[]> {
  const parts = await transact({ kind: 'GROUP_DESC' });
  return parts.flatMap((part) => (part.body.kind === 'GROUP_DESC' ? part.body.groups : []));
}

/** The counters of one group or every group (GROUP), and of each of its buckets. */
export async function readGroupStats(transact: MultipartTransact, groupId: number): Promise<GroupStats[]> {
  const parts = await transact({ kind: 'GROUP', groupId });
  return parts.flatMap((part) => (part.body.kind === 'GROUP' ? part.body.groups : []));
}
