/**
 * Which OVS group id each forwarding entry's chain uses: a group's (*,G) entry or one of
 * its (S,G) entries (forwarding-key.ts). The range above the configured base is split
 * into blocks of GROUP_ID_BLOCK ids: an entry owns one slot, the same in every block, and
 * link k of its chain is `base + k * GROUP_ID_BLOCK + slot`.
 *
 * A group takes its family's preferred slot (for IPv4, its low 28 bits), an (S,G) entry
 * the FNV-1a hash of its key, and either, on a collision, the next free one. IPv4 groups
 * so collide only with (S,G) chains: an (S,G) entry may hold the preferred slot of a group
 * installed later, which then probes on. Nothing about the choice is kept on disk: the
 * switch holds it, as the group action of the entry's flow, and `adopt` takes it back
 * from there after a restart, so an entry keeps its id for as long as it is installed.
 * Ownership (which ids reconcile and uninstall may delete) is the whole range, as before.
 */
import type { GroupAddress, SourceAddress } from '../../wire/ip-address.js';
import { familyOf } from '../family/families.js';
import { chainBlocks, GROUP_ID_BLOCK, type PipelineConfig } from './config.js';
import { type ForwardingKey, type ForwardingTarget, forwardingKey } from './forwarding-key.js';

export class GroupIdAllocation {
  private readonly slotOfKey = new Map<ForwardingKey, number>();
  private readonly targetOfSlot = new Map<number, ForwardingTarget>();

  constructor(private readonly config: PipelineConfig) {}

  /** The id of link `link` of `group`'s (*,G) chain, taking a slot for it if it has none. */
  idOf(group: GroupAddress, link = 0): number {
    return this.idOfTarget({ group }, link);
  }

  /** The id of link `link` of the (S,G) chain of `source` and `group`, taking a slot for it if it has none. */
  idOfSource(source: SourceAddress, group: GroupAddress, link = 0): number {
    return this.idOfTarget({ group, source }, link);
  }

  /** The id of link `link` of `target`'s chain, taking a slot for it if it has none. */
  idOfTarget(target: ForwardingTarget, link = 0): number {
    return this.config.groupIdBase + link * GROUP_ID_BLOCK + this.slotOf(target);
  }

  /** Whether an OVS group id lies in our range (head or chain). */
  owns(groupId: number): boolean {
    const offset = groupId - this.config.groupIdBase;
    return offset >= 0 && offset < chainBlocks(this.config) * GROUP_ID_BLOCK;
  }

  /**
   * The group whose (*,G) chain head `groupId` is, or undefined for a chain link, an (S,G) head, a free slot or a
   * foreign id.
   */
  groupOf(groupId: number): GroupAddress | undefined {
    const target = this.targetOf(groupId);
    return target?.source === undefined ? target?.group : undefined;
  }

  /**
   * The entry whose chain head `groupId` is, (*,G) or (S,G), or undefined for a chain link, a free slot or a foreign
   * id.
   */
  targetOf(groupId: number): ForwardingTarget | undefined {
    const slot = groupId - this.config.groupIdBase;
    return slot >= 0 && slot < GROUP_ID_BLOCK ? this.targetOfSlot.get(slot) : undefined;
  }

  /**
   * Takes the id the switch says `group` has (the group action of its flow). Returns
   * false, and changes nothing, when that id is no head of our range or another entry
   * holds its slot: the flow is then repaired like any other drift.
   */
  adopt(group: GroupAddress, headId: number): boolean {
    return this.adoptTarget({ group }, headId);
  }

  /** adopt for the (S,G) entry of `source` and `group`. */
  adoptSource(source: SourceAddress, group: GroupAddress, headId: number): boolean {
    return this.adoptTarget({ group, source }, headId);
  }

  /** adopt for `target`, (*,G) or (S,G). */
  adoptTarget(target: ForwardingTarget, headId: number): boolean {
    const slot = headId - this.config.groupIdBase;
    if (slot < 0 || slot >= GROUP_ID_BLOCK) return false;
    const key = forwardingKey(target);
    const holder = this.targetOfSlot.get(slot);
    if (holder !== undefined) return forwardingKey(holder) === key;
    this.releaseTarget(target);
    this.take(key, target, slot);
    return true;
  }

  /** Frees `group`'s (*,G) slot once its entries are gone from the switch. */
  release(group: GroupAddress): void {
    this.releaseTarget({ group });
  }

  /** Frees the slot of the (S,G) entry of `source` and `group` once its entries are gone from the switch. */
  releaseSource(source: SourceAddress, group: GroupAddress): void {
    this.releaseTarget({ group, source });
  }

  /** Frees `target`'s slot once its entries are gone from the switch. */
  releaseTarget(target: ForwardingTarget): void {
    const key = forwardingKey(target);
    const slot = this.slotOfKey.get(key);
    if (slot === undefined) return;
    this.slotOfKey.delete(key);
    this.targetOfSlot.delete(slot);
  }

  private slotOf(target: ForwardingTarget): number {
    const key = forwardingKey(target);
    const known = this.slotOfKey.get(key);
    if (known !== undefined) return known;
    const preferred =
      target.source === undefined ? familyOf(target.group).preferredSlot(target.group) : fnv1a32(key) % GROUP_ID_BLOCK;
    for (let step = 0; step < GROUP_ID_BLOCK; step++) {
      const slot = (preferred + step) % GROUP_ID_BLOCK;
      if (this.targetOfSlot.has(slot)) continue;
      this.take(key, target, slot);
      return slot;
    }
    const name = target.source === undefined ? target.group : `(${target.source}, ${target.group})`;
    throw new RangeError(`no OVS group id is free for ${name}: all ${GROUP_ID_BLOCK} slots are taken`);
  }

  private take(key: ForwardingKey, target: ForwardingTarget, slot: number): void {
    this.slotOfKey.set(key, slot);
    this.targetOfSlot.set(
      slot,
      target.source === undefined ? { group: target.group } : { group: target.group, source: target.source },
    );
  }
}

/** FNV-1a, 32 bits, of a key's characters (ASCII: addresses and '>'). */
function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let index = 0; index < text.length; index++) {
    hash ^= text.charCodeAt(index);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
