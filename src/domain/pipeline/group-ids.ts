/**
 * Which OVS group id each multicast group's chain uses. The range above the configured
 * base is split into blocks of GROUP_ID_BLOCK ids: a group owns one slot, the same in
 * every block, and link k of its chain is `base + k * GROUP_ID_BLOCK + slot`.
 *
 * A group takes its family's preferred slot (for IPv4, its low 28 bits: never taken by
 * another IPv4 group), or on a collision the next free one. Nothing about the choice is
 * kept on disk: the switch holds it, as the group action of the group's flow, and
 * `adopt` takes it back from there after a restart, so a group keeps its id for as long
 * as it is installed. Ownership (which ids reconcile and uninstall may delete) is the
 * whole range, as before.
 */
import type { GroupAddress } from '../../wire/ip-address.js';
import { familyOf } from '../family/families.js';
import { chainBlocks, GROUP_ID_BLOCK, type PipelineConfig } from './config.js';

export class GroupIdAllocation {
  private readonly slotOfGroup = new Map<GroupAddress, number>();
  private readonly groupOfSlot = new Map<number, GroupAddress>();

  constructor(private readonly config: PipelineConfig) {}

  /** The id of link `link` of `group`'s chain, taking a slot for the group if it has none. */
  idOf(group: GroupAddress, link = 0): number {
    return this.config.groupIdBase + link * GROUP_ID_BLOCK + this.slotOf(group);
  }

  /** Whether an OVS group id lies in our range (head or chain). */
  owns(groupId: number): boolean {
    const offset = groupId - this.config.groupIdBase;
    return offset >= 0 && offset < chainBlocks(this.config) * GROUP_ID_BLOCK;
  }

  /** The group whose chain head `groupId` is, or undefined for a chain link, a free slot or a foreign id. */
  groupOf(groupId: number): GroupAddress | undefined {
    const slot = groupId - this.config.groupIdBase;
    return slot >= 0 && slot < GROUP_ID_BLOCK ? this.groupOfSlot.get(slot) : undefined;
  }

  /**
   * Takes the id the switch says `group` has (the group action of its flow). Returns
   * false, and changes nothing, when that id is no head of our range or another group
   * holds its slot: the flow is then repaired like any other drift.
   */
  adopt(group: GroupAddress, headId: number): boolean {
    const slot = headId - this.config.groupIdBase;
    if (slot < 0 || slot >= GROUP_ID_BLOCK) return false;
    const holder = this.groupOfSlot.get(slot);
    if (holder !== undefined) return holder === group;
    this.release(group);
    this.slotOfGroup.set(group, slot);
    this.groupOfSlot.set(slot, group);
    return true;
  }

  /** Frees `group`'s slot once its entries are gone from the switch. */
  release(group: GroupAddress): void {
    const slot = this.slotOfGroup.get(group);
    if (slot === undefined) return;
    this.slotOfGroup.delete(group);
    this.groupOfSlot.delete(slot);
  }

  private slotOf(group: GroupAddress): number {
    const known = this.slotOfGroup.get(group);
    if (known !== undefined) return known;
    const preferred = familyOf(group).preferredSlot(group);
    for (let step = 0; step < GROUP_ID_BLOCK; step++) {
      const slot = (preferred + step) % GROUP_ID_BLOCK;
      if (this.groupOfSlot.has(slot)) continue;
      this.slotOfGroup.set(group, slot);
      this.groupOfSlot.set(slot, group);
      return slot;
    }
    throw new RangeError(`no OVS group id is free for ${group}: all ${GROUP_ID_BLOCK} slots are taken`);
  }
}
