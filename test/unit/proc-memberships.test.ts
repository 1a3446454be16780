/** /proc/net/igmp and /proc/net/igmp6: the groups each interface has joined (trace's upstream joins). */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { DecodeError } from '../../src/errors.js';
import { parseIgmpMemberships, parseMldMemberships } from '../../src/protocol/mroute/proc.js';

const IGMP = [
  'Idx\tDevice    : Count Querier\tGroup    Users Timer\tReporter',
  '1\tlo        :     1      V3',
  '\t\t\t\t010000E0     1 0:00000000\t\t0',
  '4\teth0      :     2      V3',
  '\t\t\t\t030201EF     1 0:00000000\t\t0',
  '\t\t\t\t010000E0     1 0:00000000\t\t0',
  '',
].join('\n');

const isBadProcFile = (error: unknown) => error instanceof DecodeError && error.code === 'bad-proc-file';

describe('parseIgmpMemberships', () => {
  it('reads each group under its device, little-endian (010000E0 is 224.0.0.1)', () => {
    assert.deepEqual(parseIgmpMemberships(IGMP, true), [
      { name: 'lo', group: '224.0.0.1' },
      { name: 'eth0', group: '239.1.2.3' },
      { name: 'eth0', group: '224.0.0.1' },
    ]);
  });

  it('big-endian: the octets as printed', () => {
    const text = [
      'Idx\tDevice    : Count Querier\tGroup    Users Timer\tReporter',
      '2\teth0      :     1      V3',
      '\t\t\t\tEF010203     1 0:00000000\t\t0',
    ].join('\n');
    assert.deepEqual(parseIgmpMemberships(text, false), [{ name: 'eth0', group: '239.1.2.3' }]);
  });

  it('a device with no group line contributes nothing; only the header: none', () => {
    const text = [
      'Idx\tDevice    : Count Querier\tGroup    Users Timer\tReporter',
      '3\teth1      :     0      V3',
      '4\teth0      :     1      V2',
      '\t\t\t\t030201EF     1 0:00000000\t\t0',
    ].join('\n');
    assert.deepEqual(parseIgmpMemberships(text, true), [{ name: 'eth0', group: '239.1.2.3' }]);
    assert.deepEqual(parseIgmpMemberships(IGMP.split('\n')[0]!, true), []);
  });

  it('a damaged group line throws DecodeError bad-proc-file', () => {
    assert.throws(() => parseIgmpMemberships(IGMP.replace('030201EF', '0302XYEF'), true), isBadProcFile);
    assert.throws(() => parseIgmpMemberships(IGMP.replace('030201EF', '0302'), true), isBadProcFile);
    assert.throws(() => parseIgmpMemberships(`${IGMP}garbage here\n`, true), isBadProcFile);
  });

  it('a group line before any device line throws', () => {
    const text = [
      'Idx\tDevice    : Count Querier\tGroup    Users Timer\tReporter',
      '\t\t\t\t010000E0     1 0:00000000\t\t0',
    ].join('\n');
    assert.throws(() => parseIgmpMemberships(text, true), isBadProcFile);
  });
});

const IGMP6 = [
  '1    lo              ff020000000000000000000000000001     1 0000000C 0',
  '2    eth0            ff020000000000000000000000000001     1 0000000C 0',
  '2    eth0            ff3e0000000000000000000080001234     1 00000004 0',
  '',
].join('\n');

describe('parseMldMemberships', () => {
  it('reads device and group, in canonical text', () => {
    assert.deepEqual(parseMldMemberships(IGMP6), [
      { name: 'lo', group: 'ff02::1' },
      { name: 'eth0', group: 'ff02::1' },
      { name: 'eth0', group: 'ff3e::8000:1234' },
    ]);
  });

  it('an empty file has no rows', () => {
    assert.deepEqual(parseMldMemberships(''), []);
    assert.deepEqual(parseMldMemberships('\n\n'), []);
  });

  it('a damaged line throws DecodeError bad-proc-file', () => {
    assert.throws(() => parseMldMemberships('2    eth0            ff02::1     1 0000000C 0'), isBadProcFile);
    assert.throws(
      () => parseMldMemberships('2    eth0            ff02000000000000000000000000000     1 0000000C 0'),
      isBadProcFile,
    );
    assert.throws(
      () => parseMldMemberships('2    eth0            ff02000000000000000000000000000g     1 0000000C 0'),
      isBadProcFile,
    );
    assert.throws(() => parseMldMemberships('2    eth0'), isBadProcFile);
    assert.throws(() => parseMldMemberships(`${IGMP6}oops\n`), isBadProcFile);
  });
});
