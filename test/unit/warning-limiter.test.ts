/** The one rate-limited warning mechanism: once per key per interval, with what was held back. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { WarningLimiter } from '../../src/runtime/warning-limiter.js';

function setup(intervalMs = 10_000) {
  let now = 0;
  const lines: Array<{ message: string; fields: Record<string, unknown> | undefined }> = [];
  const logger = { warn: (message: string, fields?: Record<string, unknown>) => lines.push({ message, fields }) };
  const limiter = new WarningLimiter({ now: () => now, intervalMs });
  return { limiter, logger, lines, advance: (ms: number) => (now += ms) };
}

describe('WarningLimiter', () => {
  it('logs the first warning of a key with its fields as given', () => {
    const { limiter, logger, lines } = setup();
    assert.equal(limiter.warn(logger, 'a', 'first', { port: 3 }), true);
    assert.deepEqual(lines, [{ message: 'first', fields: { port: 3 } }]);
  });

  it('holds back the same key within the interval and counts it on the next line', () => {
    const { limiter, logger, lines, advance } = setup();
    limiter.warn(logger, 'a', 'one');
    advance(1_000);
    assert.equal(limiter.warn(logger, 'a', 'two'), false);
    advance(8_999);
    assert.equal(limiter.warn(logger, 'a', 'three'), false);
    assert.equal(lines.length, 1);
    advance(1);
    assert.equal(limiter.warn(logger, 'a', 'four', { port: 1 }), true);
    assert.deepEqual(lines[1], { message: 'four', fields: { port: 1, suppressed: 2 } });
    // The count starts again from the line that reported it.
    advance(10_000);
    limiter.warn(logger, 'a', 'five');
    assert.deepEqual(lines[2], { message: 'five', fields: {} });
  });

  it('limits each key apart', () => {
    const { limiter, logger, lines } = setup();
    limiter.warn(logger, 'a', 'a1');
    limiter.warn(logger, 'b', 'b1');
    limiter.warn(logger, 'a', 'a2');
    assert.deepEqual(
      lines.map((line) => line.message),
      ['a1', 'b1'],
    );
  });

  it('without a logger logs and counts nothing', () => {
    const { limiter, logger, lines } = setup();
    assert.equal(limiter.warn(undefined, 'a', 'lost'), false);
    assert.equal(limiter.warn(logger, 'a', 'seen'), true);
    assert.deepEqual(lines, [{ message: 'seen', fields: {} }]);
  });

  it('builds fields given as a function only for a line it writes', () => {
    const { limiter, logger, lines } = setup();
    let built = 0;
    const fields = () => {
      built++;
      return { port: 7 };
    };
    for (let i = 0; i < 5; i++) limiter.warn(logger, 'a', 'flood', fields);
    assert.equal(built, 1);
    assert.deepEqual(lines, [{ message: 'flood', fields: { port: 7 } }]);
  });
});
