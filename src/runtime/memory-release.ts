/**
 * Gives the memory of dropped state back to the system. V8 collects garbage only as the
 * program allocates, so a daemon that goes quiet after a flood (thousands of groups
 * learned, then expired) keeps the memory they took for as long as it stays quiet; and
 * what V8 and the socket buffers free, glibc's malloc keeps in its arenas. A collection
 * (V8's for low memory where the addon reaches it, see releaseMemory), then malloc_trim
 * (native/memory_trim.c) with the arenas limited to two from the start, returns both.
 * Measured with a plain full collection 8 s after a flood's groups expired (start: 67 MiB
 * resident, 12 MiB of V8 heap): 105 MiB with none of it, 105 with the collection and the
 * trim on glibc's eight arenas a core (the heap back to 12 MiB), 74 with all three.
 *
 * V8 hands its collector to a program only with --expose-gc; setting the flag at run time
 * and fetching `gc` from a fresh context is the one way without a command-line flag (the
 * daemon's unit file starts it without flags).
 */
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

import { nativePart } from './native-addon.js';

let collect: (() => void) | undefined;
interface MemoryTrimAddon {
  trim(): boolean;
  limitArenas(count: number): boolean;
  reduceHeap(): boolean;
}

let addon: MemoryTrimAddon | null | undefined;

/**
 * The addon's part (native/memory_trim.c), or null in a tree built without it: then memory stays as it is, which is no
 * failure.
 */
function memoryTrim(): MemoryTrimAddon | null {
  if (addon === undefined) {
    try {
      addon = nativePart<MemoryTrimAddon>('memoryTrim');
    } catch {
      addon = null;
    }
  }
  return addon;
}

/** A full garbage collection (a pause of some milliseconds for a heap of tens of MiB). */
export function collectGarbage(): void {
  if (collect === undefined) {
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
}

/** Hands the C heap's free pages to the kernel; false when there were none, or without the addon. */
export function trimNativeHeap(): boolean {
  return memoryTrim()?.trim() ?? false;
}

/**
 * At most `count` malloc arenas from now on, for a long-running process: fewer arenas
 * keep less freed memory each to themselves. Called once, at the daemon's start.
 */
export function limitMallocArenas(count: number): boolean {
  return memoryTrim()?.limitArenas(count) ?? false;
}

/**
 * Holds V8's young generation down from now on, for a long-running process: V8 doubles it
 * under a high allocation rate, up to two semi-spaces of 16 MiB, and never gives that back
 * while the process stays quiet. A growth factor of 1 (instead of 2) is the one limit V8
 * reads after its heap is set up (the maximum size is fixed at the start, and the daemon
 * takes no command-line flags). Measured in a flood of IGMP: the young generation grew to
 * 8 MiB and went back to 1 MiB after, where it grew to 32 MiB and stayed.
 */
export function holdYoungGeneration(): void {
  setFlagsFromString('--semi-space-growth-factor=1');
}

/**
 * V8's collection for low memory (native/memory_trim.c): compacts the heap and hands its
 * emptied pages back at once; false when it could not be reached (no addon, or a node
 * without the V8 functions it calls).
 */
export function reduceHeap(): boolean {
  return memoryTrim()?.reduceHeap() ?? false;
}

/**
 * What the daemon runs once a burst of changes is over: V8's collection for low memory,
 * then the trim. A plain full collection frees the burst's garbage but keeps its pages,
 * each with a little that lives on, committed; V8's memory reducer compacts them, but
 * only some 8 s after a collection, and a daemon that went quiet may have had none.
 * Measured 7 s after 5,000 memberships were learned in a second: 88 to 97 MiB resident
 * with one or two plain collections, 72 when the reducer happened to have run. Without
 * the addon, two plain collections (the second compacts what the first found sparse).
 */
function releaseMemory(): void {
  if (!reduceHeap()) {
    collectGarbage();
    collectGarbage();
  }
  trimNativeHeap();
}

/** The daemon's own memory, as its loop sees it (MemoryPort). */
export const processMemory = {
  residentBytes: (): number => process.memoryUsage.rss(),
  release: releaseMemory,
};
