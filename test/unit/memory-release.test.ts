/**
 * What gives a flood's memory back: the full collection runs without --expose-gc and frees
 * what nothing holds; the native trim hands freed C heap to the kernel (the addon is built).
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { collectGarbage, limitMallocArenas, trimNativeHeap } from '../../src/runtime/memory-release.js';

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
