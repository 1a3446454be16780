/**
 * Where each rule decides: given the rules that apply (in order) and the addresses each
 * covers, the map from every address to the first rule that covers it, as sorted disjoint
 * ranges of the number line of ip-prefix.ts (both families). Built by one sweep over the
 * rules' range boundaries with a min-heap of the rules open at that point (the first open
 * one decides), in O(n log n) for n ranges, however the rules overlap. A look-up is then
 * a binary search.
 */
import type { IpRange } from './ip-prefix.js';

/** A rule's order (its index in the policy) and its addresses, normalized. */
export interface RuleRanges {
  readonly order: number;
  readonly ranges: readonly IpRange[];
}

/** Sorted disjoint ranges, each with the order of the rule that decides it; addresses in none: no rule. */
export interface FirstMatchMap {
  readonly starts: readonly bigint[];
  readonly ends: readonly bigint[];
  readonly orders: readonly number[];
}

export function buildFirstMatchMap(rules: readonly RuleRanges[]): FirstMatchMap {
  // An event per boundary: [position, order, +1 opening at position | -1 closing (the range ended before it)].
  const events: [bigint, number, number][] = [];
  let highestOrder = -1;
  for (const { order, ranges } of rules) {
    highestOrder = Math.max(highestOrder, order);
    for (const range of ranges) {
      events.push([range.start, order, 1]);
      events.push([range.end + 1n, order, -1]);
    }
  }
  events.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[2] - b[2]));
  const open = new Uint8Array(highestOrder + 1);
  const heap = new MinHeap();
  const starts: bigint[] = [];
  const ends: bigint[] = [];
  const orders: number[] = [];
  let index = 0;
  while (index < events.length) {
    const position = events[index]![0];
    for (; index < events.length && events[index]![0] === position; index++) {
      const [, order, change] = events[index]!;
      if (change > 0) {
        open[order] = 1;
        heap.push(order);
      } else open[order] = 0;
    }
    // Rules closed since they were pushed are dropped lazily, when they reach the top.
    while (heap.size > 0 && open[heap.peek()] === 0) heap.pop();
    if (heap.size === 0 || index === events.length) continue;
    const order = heap.peek();
    const end = events[index]![0] - 1n;
    const last = orders.length - 1;
    if (last >= 0 && orders[last] === order && ends[last] === position - 1n) ends[last] = end;
    else {
      starts.push(position);
      ends.push(end);
      orders.push(order);
    }
  }
  return { starts, ends, orders };
}

/** The order of the rule that decides `value`, or -1 when none covers it. */
export function firstMatchAt(map: FirstMatchMap, value: bigint): number {
  const { starts, ends, orders } = map;
  let low = 0;
  let high = starts.length - 1;
  while (low <= high) {
    const middle = (low + high) >>> 1;
    if (value < starts[middle]!) high = middle - 1;
    else if (value > ends[middle]!) low = middle + 1;
    else return orders[middle]!;
  }
  return -1;
}

/** A binary min-heap of small non-negative integers. */
class MinHeap {
  private readonly items: number[] = [];

  get size(): number {
    return this.items.length;
  }

  peek(): number {
    return this.items[0]!;
  }

  push(value: number): void {
    const items = this.items;
    let at = items.push(value) - 1;
    while (at > 0) {
      const parent = (at - 1) >>> 1;
      if (items[parent]! <= value) break;
      items[at] = items[parent]!;
      at = parent;
    }
    items[at] = value;
  }

  pop(): void {
    const items = this.items;
    const last = items.pop()!;
    if (items.length === 0) return;
    let at = 0;
    for (;;) {
      const left = at * 2 + 1;
      if (left >= items.length) break;
      const right = left + 1;
      const child = right < items.length && items[right]! < items[left]! ? right : left;
      if (items[child]! >= last) break;
      items[at] = items[child]!;
      at = child;
    }
    items[at] = last;
  }
}
