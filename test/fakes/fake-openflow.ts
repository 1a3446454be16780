/**
 * The OpenFlow side of a switch as the bridge client uses it (BridgeConnection): flow and
 * group mods taken in memory, every batch recorded (PACKET_OUTs too), dumps answered from
 * what the test put, and the connection's events emitted as the test says.
 */
import { EventEmitter } from 'node:events';
import type { BridgeConnection } from '../../src/adapters/ovs/bridge-connection.js';
import type { FlowStats } from '../../src/protocol/openflow/flow-stats.js';
import type { FlowMod } from '../../src/protocol/openflow/flow-mod.js';
import type { GroupMod } from '../../src/protocol/openflow/group-mod.js';
import { FlowModCommand, GroupModCommand } from '../../src/protocol/openflow/mod-command.js';
import type { GroupDesc } from '../../src/protocol/openflow/group-desc.js';
import type { GroupStats } from '../../src/protocol/openflow/group-stats.js';
import type { OpenFlowMessage } from '../../src/protocol/openflow/message.js';
import type { MeterFeatures } from '../../src/protocol/openflow/meter-features.js';
import type { MeterConfig, MeterStats } from '../../src/protocol/openflow/meter-stats.js';
import type { OpenFlowConnectionEvents } from '../../src/transport/openflow/connection.js';

export class FakeOpenFlow extends EventEmitter<OpenFlowConnectionEvents> implements BridgeConnection {
  readonly batches: OpenFlowMessage[][] = [];
  flows: FlowStats[] = [];
  groups: GroupDesc[] = [];
  meters: MeterConfig[] = [];
  meterCounters: MeterStats[] = [];
  groupCounters: GroupStats[] = [];
  /** OVS's user-space datapath holds 262,144 meters. */
  features: MeterFeatures = { maxMeter: 262_144, bandTypes: 1 << 1, capabilities: 0xf, maxBands: 1, maxColor: 0 };
  connected = true;
  packetInEnabled = false;
  closed = false;

  /** @param refuse which messages the switch answers with an error */
  constructor(private readonly refuse: (message: OpenFlowMessage) => boolean = () => false) {
    super();
  }

  async batch(messages: readonly OpenFlowMessage[]): Promise<{ errors: Map<number, Error> }> {
    this.batches.push([...messages]);
    const errors = new Map<number, Error>();
    messages.forEach((message, index) => {
      if (this.refuse(message)) errors.set(index, new Error('OFPGMFC_GROUP_EXISTS'));
    });
    return { errors };
  }

  async dumpFlows(): Promise<FlowStats[]> {
    return this.flows;
  }

  async dumpGroups(): Promise<GroupDesc[]> {
    return this.groups;
  }

  async meterConfigs(): Promise<MeterConfig[]> {
    return this.meters;
  }

  async meterStats(): Promise<MeterStats[]> {
    return this.meterCounters;
  }

  async meterFeatures(): Promise<MeterFeatures> {
    return this.features;
  }

  async groupStats(): Promise<GroupStats[]> {
    return this.groupCounters;
  }

  async enablePacketIn(): Promise<void> {
    this.packetInEnabled = true;
  }

  async close(): Promise<void> {
    this.connected = false;
    this.closed = true;
  }
}

/** A switch in memory: flow and group mods change its flows and groups, which the dumps return. */
export class ApplyingOpenFlow extends FakeOpenFlow {
  override async batch(messages: readonly OpenFlowMessage[]): Promise<{ errors: Map<number, Error> }> {
    const result = await super.batch(messages);
    for (const message of messages) {
      if (message.type === 'FLOW_MOD') this.applyFlow(message);
      else if (message.type === 'GROUP_MOD') this.applyGroup(message);
    }
    return result;
  }

  private applyFlow(mod: FlowMod): void {
    const slot = (flow: FlowStats) =>
      flow.tableId === mod.tableId && flow.priority === mod.priority && sameJson(flow.match, mod.match);
    if (mod.command === FlowModCommand.DELETE_STRICT) this.flows = this.flows.filter((flow) => !slot(flow));
    else if (mod.command === FlowModCommand.MODIFY_STRICT)
      this.flows = this.flows.map((flow) => (slot(flow) ? { ...flow, instructions: mod.instructions } : flow));
    else if (mod.command === FlowModCommand.ADD)
      this.flows = [...this.flows.filter((flow) => !slot(flow)), dumped(mod)];
    else throw new Error(`flow mod command ${mod.command} not simulated`);
  }

  private applyGroup(mod: GroupMod): void {
    const others = this.groups.filter((group) => group.groupId !== mod.groupId);
    this.groups =
      mod.command === GroupModCommand.DELETE
        ? others
        : [...others, { groupType: mod.groupType, groupId: mod.groupId, buckets: mod.buckets }];
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  const text = (value: unknown) =>
    JSON.stringify(value, (_key, item: unknown) => (typeof item === 'bigint' ? item.toString() : item));
  return text(a) === text(b);
}

/** A FLOW_MOD as the switch would dump the flow it adds. */
function dumped(mod: FlowMod): FlowStats {
  return {
    ...{
      tableId: mod.tableId,
      priority: mod.priority,
      cookie: mod.cookie,
      match: mod.match,
      instructions: mod.instructions,
    },
    ...{ durationSec: 0, durationNsec: 0, idleTimeout: 0, hardTimeout: 0, flags: 0, packetCount: 0n, byteCount: 0n },
  };
}
