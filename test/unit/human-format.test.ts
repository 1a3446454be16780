import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { Chalk } from 'chalk';
import { describeCounts, formatClock, formatEvent, groupTable } from '../../src/cli/render/human-format.js';
import type { MldMessage } from '../../src/packet/mld/message.js';
import type { MemberState } from '../../src/domain/membership-summary.js';

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

describe('formatEvent and the summary tables, for MLD', () => {
  const plain = new Chalk({ level: 0 });
  const ip = {
    trafficClass: 0,
    flowLabel: 0,
    payloadLength: 0,
    nextHeader: 0,
    hopLimit: 1,
    src: 'fe80::1',
    dst: 'ff02::16',
  };
  const mld = (message: MldMessage, dst = 'ff02::16') =>
    formatEvent({ kind: 'mld', frame: 3, ts: 1_700_000_005, src: 'fe80::1', dst, ip: { ...ip, dst }, message }, plain);
  const head = (dst: string) => `    3 ${formatClock(1_700_000_005)} fe80::1 > ${dst}  `;

  it('names the protocol in the label, as "MLDv2 report", and Done as done', () => {
    assert.equal(
      mld({ kind: 'report', version: 1, group: 'ff0e::1234' }, 'ff0e::1234'),
      `${head('ff0e::1234')}MLDv1 report ff0e::1234`,
    );
    assert.equal(
      mld({ kind: 'leave', version: 1, group: 'ff0e::1234' }, 'ff02::2'),
      `${head('ff02::2')}MLDv1 done ff0e::1234`,
    );
    assert.equal(
      mld({
        kind: 'report',
        version: 2,
        records: [{ type: 'ALLOW_NEW_SOURCES', group: 'ff3e::8000:1', sources: ['2001:db8::1'] }],
      }),
      `${head('ff02::16')}MLDv2 report ff3e::8000:1 ALLOW {2001:db8::1}`,
    );
    assert.equal(
      mld({ kind: 'query', version: 1, group: '::', maxRespDelayMs: 10_000 }, 'ff02::1'),
      `${head('ff02::1')}MLDv1 query general, max resp 10s`,
    );
    assert.equal(
      mld(
        {
          kind: 'query',
          version: 2,
          group: 'ff3e::8000:1',
          maxRespCode: 1000,
          sFlag: true,
          qrv: 2,
          qqic: 125,
          sources: ['2001:db8::1'],
        },
        'ff3e::8000:1',
      ),
      `${head('ff3e::8000:1')}MLDv2 query ff3e::8000:1 sources {2001:db8::1}, max resp 1s, qrv 2, qqic 125s, S`,
    );
  });

  it('the counts line names what was seen', () => {
    const counts = { queries: 1, reports: 2, leaves: 0, other: 0, malformed: 0 };
    assert.equal(describeCounts({ ...counts, mld: 0 }), '3 IGMP messages: 1 query, 2 reports, 0 leaves');
    assert.equal(describeCounts({ ...counts, mld: 3 }), '3 MLD messages: 1 query, 2 reports, 0 leaves');
    assert.equal(describeCounts({ ...counts, mld: 1 }), '3 IGMP and MLD messages: 1 query, 2 reports, 0 leaves');
  });

  it('the version column says MLDv2 for MLD and keeps v3 for IGMP', () => {
    const igmpMember: MemberState = {
      host: '10.0.0.2',
      mode: 'exclude',
      sources: [],
      protocol: 'igmp',
      version: 3,
      lastSeen: 0,
    };
    const mldMember: MemberState = {
      host: 'fe80::2',
      mode: 'exclude',
      sources: [],
      protocol: 'mld',
      version: 2,
      lastSeen: 0,
    };
    const table = groupTable([
      { group: '239.1.1.1', members: [igmpMember], lastSeen: 0 },
      { group: 'ff0e::1234', members: [mldMember], lastSeen: 0 },
    ]);
    assert.deepEqual(
      table.rows.map((row) => row[3]),
      ['v3', 'MLDv2'],
    );
  });
});
