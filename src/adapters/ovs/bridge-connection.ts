/**
 * What the bridge client uses of an OpenFlow connection, and the one way changes of the
 * pipeline go over it: every change of a plan in one pipelined batch closed by a barrier,
 * the switch's refusals by index.
 */
import type { OpenFlowMessage } from '../../protocol/openflow/message.js';
import type { GroupStats } from '../../protocol/openflow/group-stats.js';
import type { MeterFeatures } from '../../protocol/openflow/meter-features.js';
import type { MeterStats } from '../../protocol/openflow/meter-stats.js';
import type { EventEmitter } from 'node:events';
import type { OpenFlowConnection, OpenFlowConnectionEvents } from '../../transport/openflow/connection.js';
import type { MeterSelector } from '../../transport/openflow/meters.js';
import type { BatchOptions } from '../../transport/openflow/requests.js';
import { changeMessage } from '../../domain/pipeline/openflow-entries.js';
import type { PipelineChange } from '../../domain/pipeline/plan.js';
import type { PipelineReader } from './read-back.js';

/** OpenFlowConnection has it; so has the unit tests' switch in memory. */
export interface BridgeConnection
  extends PipelineReader,
    Pick<OpenFlowConnection, 'connected' | 'enablePacketIn' | 'close'>,
    Pick<EventEmitter<OpenFlowConnectionEvents>, 'on'> {
  /** `expedite`: ahead of the batches waiting for the switch (OpenFlowConnection.batch). */
  batch(messages: readonly OpenFlowMessage[], options?: BatchOptions): Promise<{ errors: ReadonlyMap<number, Error> }>;
  meterStats(meterId: MeterSelector): Promise<MeterStats[]>;
  meterFeatures(): Promise<MeterFeatures>;
  /** One group's counters and its buckets' (GROUP statistics), or (no id) every group's. */
  groupStats(groupId?: number): Promise<GroupStats[]>;
}

/**
 * Sends `changes` in one batch (none at all for no change: not even a barrier). Returns
 * the changes the switch refused, by index into `changes`; the others were applied.
 */
export async function applyChanges(
  connection: Pick<BridgeConnection, 'batch'>,
  changes: readonly PipelineChange[],
  options: BatchOptions = {},
): Promise<ReadonlyMap<number, Error>> {
  if (changes.length === 0) return new Map();
  const { errors } = await connection.batch(changes.map(changeMessage), options);
  return errors;
}
