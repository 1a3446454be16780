/**
 * What the loop makes of the kernel router's reports: a refused kernel call is a counted
 * failure, a widened upstream source filter only a warning.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { McastError } from '../../src/errors.js';
import { UpstreamFilterWidened } from '../../src/adapters/upstream-memberships.js';
import { routerEventsOf } from '../../src/controllers/daemon/loop/router-events.js';
import { sourceAddress } from '../../src/wire/ip-address.js';

function eventsWithRecords() {
  const warnings: Array<{ message: string; fields: Record<string, unknown> | undefined }> = [];
  const failures: Array<{ kind: string; error: unknown }> = [];
  const logger = {
    debug: () => undefined,
    info: () => undefined,
    warn: (message: string, fields?: Record<string, unknown>) => void warnings.push({ message, fields }),
    error: () => undefined,
  };
  const events = routerEventsOf({
    hasLocalMembers: () => false,
    logger,
    publish: () => undefined,
    isoNow: () => '2026-12-01T00:00:00.000Z',
    fail: (kind, error) => void failures.push({ kind, error }),
    onFatal: () => undefined,
  });
  return { events, warnings, failures };
}

describe('router events', () => {
  it('a refused kernel call is an mroute failure', () => {
    const { events, warnings, failures } = eventsWithRecords();
    events.onError(new McastError('io', 'MRT_ADD_MFC refused'));
    assert.equal(failures.length, 1);
    assert.equal(failures[0]!.kind, 'mroute');
    assert.equal(warnings.length, 0);
  });

  it('a widened upstream filter is a warning naming the group, not a failure', () => {
    const { events, warnings, failures } = eventsWithRecords();
    const wanted = {
      mode: 'include' as const,
      sources: new Set([sourceAddress('10.0.0.1'), sourceAddress('10.0.0.2')]),
    };
    events.onError(new UpstreamFilterWidened('232.1.1.1', wanted, { mode: 'exclude', sources: new Set() }, 1));
    assert.equal(failures.length, 0);
    assert.equal(warnings.length, 1);
    assert.equal(warnings[0]!.message, 'upstream source filter widened');
    assert.equal(warnings[0]!.fields?.['group'], '232.1.1.1');
    assert.match(
      String(warnings[0]!.fields?.['error']),
      /^upstream-filter-widened: 232\.1\.1\.1 wants include of 2 sources/,
    );
  });
});
