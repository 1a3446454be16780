import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatClock } from '../../src/cli/render/human-format.js';

describe('formatClock', () => {
  // Local time: compare against Date's own fields for the same instant.
  const clock = (seconds: number) => {
    const date = new Date(seconds * 1000);
    const pad = (value: number) => String(value).padStart(2, '0');
    return `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  };
  it('prints microseconds', () => assert.equal(formatClock(1_700_000_005.256282), `${clock(1_700_000_005)}.256282`));
  it('rounds .9999996 s up into the next second, not back to .000000 of this one', () => {
    // biome-ignore lint/correctness/noPrecisionLoss: the nearest double to this is what a capture's clock gives
    assert.equal(formatClock(1_700_000_005.9999996), `${clock(1_700_000_006)}.000000`);
  });
  it('keeps a whole second whole', () => assert.equal(formatClock(1_700_000_005), `${clock(1_700_000_005)}.000000`));
});
