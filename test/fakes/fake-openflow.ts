/**
 * The OpenFlow side of a switch as OvsProgrammer uses it (ProgrammerConnection): flow and
 * group mods taken in memory, every batch recorded, dumps answered from what the test put.
 */
import type { ProgrammerConnection } from '../../src/adapters/ovs/ovs-programmer.js';
import type { FlowStats } from '../../src/protocol/openflow/flow-stats.js';
import type { GroupDesc } from '../../src/protocol/openflow/group-desc.js';
import type { OpenFlowMessage } from '../../src/protocol/openflow/message.js';
import type { MeterFeatures } from '../../src/protocol/openflow/meter-features.js';
import type { MeterConfig, MeterStats } from '../../src/protocol/openflow/meter-stats.js';

export class FakeOpenFlow implements ProgrammerConnection {
  readonly batches: OpenFlowMessage[][] = [];
  flows: FlowStats[] = [];
  groups: GroupDesc[] = [];
  meters: MeterConfig[] = [];
  meterCounters: MeterStats[] = [];
  /** OVS's user-space datapath holds 262,144 meters. */
  features: MeterFeatures = { maxMeter: 262_144, bandTypes: 1 << 1, capabilities: 0xf, maxBands: 1, maxColor: 0 };

  /** @param refuse which messages the switch answers with an error */
  constructor(private readonly refuse: (message: OpenFlowMessage) => boolean = () => false) {}

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
}
