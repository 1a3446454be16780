/** The snoop summary's filter arithmetic (RFC 3376 §6.4 from one host's point of view). */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import type { GroupRecord, IgmpMessage } from '../../src/packet/igmp/index.js';
import type { IgmpFrameEvent, MldFrameEvent } from '../../src/packet/frame-decoder.js';
import type { MldMessage } from '../../src/packet/mld/message.js';
import { MembershipSummary } from '../../src/domain/membership-summary.js';
import { ROUTER_ALERT } from '../../src/packet/ipv4/header.js';

let frame = 0;
function event(src: string, message: IgmpMessage): IgmpFrameEvent {
  frame++;
  const ip = {
    tos: 0,
    totalLength: 0,
    identification: 0,
    dontFragment: true,
    moreFragments: false,
    fragmentOffset: 0,
    ttl: 1,
    protocol: 2,
    src,
    dst: '224.0.0.22',
    options: [ROUTER_ALERT],
  };
  return { kind: 'igmp', frame, ts: 100 + frame, src, dst: ip.dst, ip, message };
}
function mldEvent(src: string, message: MldMessage): MldFrameEvent {
  frame++;
  const ip = { trafficClass: 0, flowLabel: 0, payloadLength: 0, nextHeader: 0, hopLimit: 1, src, dst: 'ff02::16' };
  return { kind: 'mld', frame, ts: 100 + frame, src, dst: ip.dst, ip, message };
}
const v3 = (...records: GroupRecord[]): IgmpMessage => ({ kind: 'report', version: 3, records });
const filters = (summary: MembershipSummary) =>
  summary
    .groupSummaries()
    .flatMap((g) => g.members.map((m) => `${g.group} ${m.host} ${m.mode} {${m.sources.join(',')}} v${m.version}`));

describe('MembershipSummary', () => {
  it('a v1/v2 report is "any source"; a v2 leave removes the host', () => {
    const summary = new MembershipSummary();
    summary.observe(event('10.0.0.2', { kind: 'report', version: 2, group: '239.1.1.1' }));
    summary.observe(event('10.0.0.3', { kind: 'report', version: 1, group: '239.1.1.1' }));
    assert.deepEqual(filters(summary), ['239.1.1.1 10.0.0.2 exclude {} v2', '239.1.1.1 10.0.0.3 exclude {} v1']);
    summary.observe(event('10.0.0.2', { kind: 'leave', version: 2, group: '239.1.1.1' }));
    assert.deepEqual(filters(summary), ['239.1.1.1 10.0.0.3 exclude {} v1']);
  });
  it('INCLUDE: ALLOW adds sources, BLOCK removes them, and an empty INCLUDE is a leave', () => {
    const summary = new MembershipSummary();
    summary.observe(event('10.0.0.4', v3({ type: 'ALLOW_NEW_SOURCES', group: '232.1.1.1', sources: ['10.9.0.1'] })));
    summary.observe(event('10.0.0.4', v3({ type: 'ALLOW_NEW_SOURCES', group: '232.1.1.1', sources: ['10.9.0.2'] })));
    assert.deepEqual(filters(summary), ['232.1.1.1 10.0.0.4 include {10.9.0.1,10.9.0.2} v3']);
    summary.observe(event('10.0.0.4', v3({ type: 'BLOCK_OLD_SOURCES', group: '232.1.1.1', sources: ['10.9.0.1'] })));
    assert.deepEqual(filters(summary), ['232.1.1.1 10.0.0.4 include {10.9.0.2} v3']);
    summary.observe(event('10.0.0.4', v3({ type: 'BLOCK_OLD_SOURCES', group: '232.1.1.1', sources: ['10.9.0.2'] })));
    assert.deepEqual(filters(summary), []);
  });
  it('EXCLUDE: BLOCK adds excluded sources, ALLOW removes them; TO_IN {} leaves', () => {
    const summary = new MembershipSummary();
    summary.observe(event('10.0.0.5', v3({ type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.3.3.3', sources: [] })));
    summary.observe(event('10.0.0.5', v3({ type: 'BLOCK_OLD_SOURCES', group: '239.3.3.3', sources: ['10.9.0.7'] })));
    assert.deepEqual(filters(summary), ['239.3.3.3 10.0.0.5 exclude {10.9.0.7} v3']);
    summary.observe(event('10.0.0.5', v3({ type: 'ALLOW_NEW_SOURCES', group: '239.3.3.3', sources: ['10.9.0.7'] })));
    assert.deepEqual(filters(summary), ['239.3.3.3 10.0.0.5 exclude {} v3']);
    summary.observe(event('10.0.0.5', v3({ type: 'CHANGE_TO_INCLUDE_MODE', group: '239.3.3.3', sources: [] })));
    assert.deepEqual(filters(summary), []);
  });
  it('MODE_IS_* replaces the filter; a BLOCK for a group the host is not in changes nothing', () => {
    const summary = new MembershipSummary();
    summary.observe(event('10.0.0.6', v3({ type: 'BLOCK_OLD_SOURCES', group: '239.4.4.4', sources: ['10.9.0.1'] })));
    assert.deepEqual(filters(summary), []);
    summary.observe(event('10.0.0.6', v3({ type: 'MODE_IS_INCLUDE', group: '239.4.4.4', sources: ['10.9.0.3'] })));
    summary.observe(event('10.0.0.6', v3({ type: 'MODE_IS_EXCLUDE', group: '239.4.4.4', sources: ['10.9.0.4'] })));
    assert.deepEqual(filters(summary), ['239.4.4.4 10.0.0.6 exclude {10.9.0.4} v3']);
  });
  it('counts messages and queriers; groups and hosts sort numerically', () => {
    const summary = new MembershipSummary();
    summary.observe(event('10.0.0.10', { kind: 'report', version: 2, group: '239.1.1.10' }));
    summary.observe(event('10.0.0.9', { kind: 'report', version: 2, group: '239.1.1.9' }));
    summary.observe(event('10.0.0.9', { kind: 'report', version: 2, group: '239.1.1.10' }));
    summary.observe(event('10.0.0.1', { kind: 'query', version: 2, group: '0.0.0.0', maxRespTimeDs: 100 }));
    summary.observe(
      event('10.0.0.1', {
        kind: 'query',
        version: 3,
        group: '0.0.0.0',
        maxRespCode: 100,
        sFlag: false,
        qrv: 2,
        qqic: 125,
        sources: [],
      }),
    );
    summary.observe({
      kind: 'malformed',
      frame: 99,
      ts: 0,
      protocol: 'igmp',
      src: null,
      dst: null,
      code: 'truncated',
      message: 'x',
    });
    assert.deepEqual(
      summary.groupSummaries().map((g) => [g.group, g.members.map((m) => m.host)]),
      [
        ['239.1.1.9', ['10.0.0.9']],
        ['239.1.1.10', ['10.0.0.9', '10.0.0.10']],
      ],
    );
    assert.deepEqual(
      summary.querierSummaries().map((q) => [q.address, q.version, q.queries]),
      [['10.0.0.1', 3, 2]],
    );
    assert.deepEqual(summary.counts, { queries: 2, reports: 3, leaves: 0, other: 0, malformed: 1, mld: 0 });
  });
  it('MLD: v1 as IGMPv2, v2 records as IGMPv3, Done as leave; each member says its protocol', () => {
    const summary = new MembershipSummary();
    summary.observe(mldEvent('fe80::2', { kind: 'report', version: 1, group: 'ff0e::1234' }));
    summary.observe(
      mldEvent('fe80::3', {
        kind: 'report',
        version: 2,
        records: [{ type: 'ALLOW_NEW_SOURCES', group: 'ff3e::8000:1', sources: ['2001:db8::1'] }],
      }),
    );
    summary.observe(
      mldEvent('fe80::3', {
        kind: 'report',
        version: 2,
        records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: 'ff0e::1234', sources: [] }],
      }),
    );
    assert.deepEqual(filters(summary), [
      'ff0e::1234 fe80::2 exclude {} v1',
      'ff0e::1234 fe80::3 exclude {} v2',
      'ff3e::8000:1 fe80::3 include {2001:db8::1} v2',
    ]);
    assert.deepEqual(
      summary.groupSummaries().flatMap((g) => g.members.map((m) => m.protocol)),
      ['mld', 'mld', 'mld'],
    );
    summary.observe(mldEvent('fe80::2', { kind: 'leave', version: 1, group: 'ff0e::1234' }));
    assert.deepEqual(filters(summary), [
      'ff0e::1234 fe80::3 exclude {} v2',
      'ff3e::8000:1 fe80::3 include {2001:db8::1} v2',
    ]);
  });
  it('IGMP and MLD in one summary: IPv4 groups first, IPv6 ones by their bits; counts tell how many were MLD', () => {
    const summary = new MembershipSummary();
    summary.observe(mldEvent('fe80::10', { kind: 'report', version: 1, group: 'ff0e::1:0' }));
    summary.observe(mldEvent('fe80::9', { kind: 'report', version: 1, group: 'ff0e::ff' }));
    summary.observe(mldEvent('fe80::9', { kind: 'report', version: 1, group: 'ff05::2' }));
    summary.observe(mldEvent('fe80::10', { kind: 'report', version: 1, group: 'ff0e::ff' }));
    summary.observe(event('10.0.0.2', { kind: 'report', version: 2, group: '239.1.1.1' }));
    summary.observe(
      mldEvent('fe80::1', {
        kind: 'query',
        version: 2,
        group: '::',
        maxRespCode: 10000,
        sFlag: false,
        qrv: 2,
        qqic: 125,
        sources: [],
      }),
    );
    summary.observe({
      kind: 'malformed',
      frame: 99,
      ts: 0,
      protocol: 'mld',
      src: 'fe80::5',
      dst: 'ff02::16',
      code: 'no-router-alert',
      message: 'x',
    });
    assert.deepEqual(
      summary.groupSummaries().map((g) => [g.group, g.members.map((m) => m.host)]),
      [
        ['239.1.1.1', ['10.0.0.2']],
        ['ff05::2', ['fe80::9']],
        ['ff0e::ff', ['fe80::9', 'fe80::10']],
        ['ff0e::1:0', ['fe80::10']],
      ],
    );
    assert.deepEqual(
      summary.querierSummaries().map((q) => [q.address, q.protocol, q.version, q.queries]),
      [['fe80::1', 'mld', 2, 1]],
    );
    assert.deepEqual(summary.counts, { queries: 1, reports: 5, leaves: 0, other: 0, malformed: 1, mld: 6 });
  });
});
