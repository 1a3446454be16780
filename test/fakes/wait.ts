/**
 * Waiting for the loop's promises under a fake clock: its syncs, saves and sends run on
 * microtasks and I/O-free promises, so a few turns of the event loop settle them.
 */
import { setImmediate as nextTurn } from 'node:timers/promises';

/** Lets every pending promise chain run to its end (or to a fake timer). */
export async function settle(turns = 20): Promise<void> {
  for (let turn = 0; turn < turns; turn++) await nextTurn();
}

/** Waits until `condition` holds, for at most `turns` turns of the event loop. */
export async function waitFor(condition: () => boolean, what: string, turns = 500): Promise<void> {
  for (let turn = 0; turn < turns; turn++) {
    if (condition()) return;
    await nextTurn();
  }
  throw new Error(`timed out waiting for ${what}`);
}
