/**
 * What gives a burst's memory back: the full collection runs without --expose-gc and frees
 * what nothing holds; V8's collection for low memory also hands the emptied heap pages
 * back; the native trim hands freed C heap to the kernel (the addon is built).
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { collectGarbage, limitMallocArenas, reduceHeap, trimNativeHeap } from '../../src/runtime/memory-release.js';

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

describe('memory release', () => {
  it('collectGarbage frees the memory of dropped state at once, again and again', () => {
    for (let round = 0; round < 2; round++) {
      let state: Array<{ group: number; port: string }> | undefined = Array.from({ length: 500_000 }, (_, index) => ({
        group: index,
        port: `p${index}`,
      }));
      const held = process.memoryUsage().heapUsed;
      assert.equal(state.length, 500_000);
      state = undefined;
      collectGarbage();
      const after = process.memoryUsage().heapUsed;
      assert.ok(held - after > 20 * 2 ** 20, `round ${round}: ${mib(held)} held, ${mib(after)} after`);
    }
  });

  it('reduceHeap gives back the pages a plain collection keeps for a little that lives on in each', async () => {
    // One object in ten lives on: every page of the heap keeps some, none is left empty.
    const survivors: Array<{ group: number; port: string }> = [];
    let state: Array<{ group: number; port: string }> | undefined = [];
    for (let index = 0; index < 600_000; index++) {
      const entry = { group: index, port: `p${index}` };
      (index % 10 === 0 ? survivors : state).push(entry);
    }
    assert.equal(state.length, 540_000);
    state = undefined;
    collectGarbage();
    await new Promise((resolve) => setTimeout(resolve, 300));
    const kept = process.memoryUsage();
    assert.equal(reduceHeap(), true, 'the V8 function is found in this node');
    const after = process.memoryUsage();
    assert.equal(survivors.length, 60_000);
    // A second plain collection leaves some 30 MiB of pages committed here.
    assert.ok(
      after.heapTotal - after.heapUsed < 8 * 2 ** 20,
      `heap ${mib(kept.heapTotal)} (${mib(kept.heapUsed)} in use) after a plain collection, ` +
        `${mib(after.heapTotal)} (${mib(after.heapUsed)} in use) after reduceHeap`,
    );
  });

  it('limitMallocArenas is taken by glibc', () => {
    assert.equal(limitMallocArenas(2), true);
    assert.equal(limitMallocArenas(0), false, 'no arenas at all is no limit');
  });

  it('trimNativeHeap gives freed buffers back to the kernel', async () => {
    // Buffers of 16 KiB come from malloc (below its mmap threshold): freed, they stay in its arenas.
    let buffers: Buffer[] | undefined = Array.from({ length: 8192 }, () => Buffer.alloc(16 * 1024, 1));
    assert.equal(buffers.length, 8192);
    buffers = undefined;
    collectGarbage();
    // V8 frees the buffers' memory on a background thread after the collection.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const before = process.memoryUsage().rss;
    assert.equal(trimNativeHeap(), true, 'there was free memory to give back');
    const after = process.memoryUsage().rss;
    assert.ok(before - after > 16 * 2 ** 20, `RSS ${mib(before)} before the trim, ${mib(after)} after`);
  });
});
