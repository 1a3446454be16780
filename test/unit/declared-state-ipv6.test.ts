/**
 * IPv6 in the declared state: the address checks of install/uninstall/reconcile, the file, the refusal of IPv6 kernel
 * routes, and reconcile's plan.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { UsageError } from '../../src/errors.js';
import { checkRoute } from '../../src/controllers/static/static-routes.js';
import { parseDeclaredState } from '../../src/domain/declared-state/declared-state.js';
import {
  checkGroupAddress,
  checkSourceAddress,
  checkSourceGroupFamily,
} from '../../src/domain/declared-state/group-address.js';
import { DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import { type GroupMembership, MulticastPipeline } from '../../src/domain/pipeline/multicast-pipeline.js';
import { planGroupReconcile } from '../../src/domain/reconcile-plan.js';
import { groupAddress, sourceAddress } from '../../src/wire/ip-address.js';

function refused(run: () => unknown, pattern: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof UsageError, String(error));
    assert.equal(error.exitCode, 64);
    assert.match(error.message, pattern);
    return true;
  });
}

describe('checkGroupAddress with IPv6', () => {
  it('takes groups beyond link scope, in canonical text', () => {
    assert.equal(checkGroupAddress('ff3e::8000:1', 'GROUP'), 'ff3e::8000:1');
    assert.equal(checkGroupAddress('FF3E:0000::8000:0001', 'GROUP'), 'ff3e::8000:1');
    assert.equal(checkGroupAddress('ff05::1:3', 'GROUP'), 'ff05::1:3');
    assert.equal(checkGroupAddress('ff03::1', 'GROUP'), 'ff03::1');
    assert.equal(checkGroupAddress('ff0e::1', 'GROUP'), 'ff0e::1');
    assert.equal(checkGroupAddress('239.1.2.3', 'GROUP'), '239.1.2.3');
  });
  it('refuses link and interface scope, saying which, as 224.0.0.0/24 is refused', () => {
    refused(
      () => checkGroupAddress('ff02::1', 'GROUP'),
      /^GROUP: ff02::1 is of link-local scope \(ff02::\/16; .*ff05::\/16.*\): it is flooded to every port/,
    );
    refused(() => checkGroupAddress('FF02::1:FF00:1', 'GROUP'), /^GROUP: ff02::1:ff00:1 is of link-local scope/);
    refused(
      () => checkGroupAddress('ff12::8000:1', 'GROUP'),
      /^GROUP: ff12::8000:1 is of link-local scope \(ff12::\/16/,
    );
    refused(() => checkGroupAddress('ff01::1', 'GROUP'), /is of interface-local scope \(ff01::\/16/);
    refused(() => checkGroupAddress('ff00::1', 'GROUP'), /is of reserved scope/);
    refused(
      () => checkGroupAddress('224.0.0.251', 'GROUP'),
      /^GROUP: 224\.0\.0\.251 is link-local \(224\.0\.0\.0\/24\)/,
    );
  });
  it('refuses unicast and malformed text', () => {
    refused(
      () => checkGroupAddress('2001:db8::1', '--x'),
      /^--x: 2001:db8::1 is not a multicast address \(ff00::\/8\)/,
    );
    refused(() => checkGroupAddress('ff3e::g', '--x'), /^--x: "ff3e::g" is not an IPv4 or IPv6 address/);
    refused(() => checkGroupAddress('ff3e::1%eth0', '--x'), /is not an IPv4 or IPv6 address/);
    refused(() => checkGroupAddress('10.0.0.1', '--x'), /is not a multicast address \(224\.0\.0\.0\/4\)/);
  });
});

describe('checkSourceAddress with IPv6', () => {
  it('takes unicast sources of either family, canonical', () => {
    assert.equal(checkSourceAddress('2001:DB8:0:0::5', '--source'), '2001:db8::5');
    assert.equal(checkSourceAddress('fe80::1', '--source'), 'fe80::1');
    assert.equal(checkSourceAddress('10.0.0.5', '--source'), '10.0.0.5');
  });
  it('refuses ::, multicast and malformed text', () => {
    refused(() => checkSourceAddress('::', '--source'), /^--source: :: is not a unicast host address/);
    refused(() => checkSourceAddress('ff3e::1', '--source'), /is not a unicast host address/);
    refused(() => checkSourceAddress('2001:db8::/32', '--source'), /is not an IPv4 or IPv6 address/);
  });
  it('an (S,G) entry is of one family', () => {
    refused(
      () => checkSourceGroupFamily(sourceAddress('10.0.0.5'), groupAddress('ff3e::1'), '--source'),
      /^--source: source 10\.0\.0\.5 and group ff3e::1 are of different families/,
    );
    checkSourceGroupFamily(sourceAddress('2001:db8::5'), groupAddress('ff3e::1'), '--source');
  });
});

describe('the declared-state file with IPv6', () => {
  it('reads IPv6 groups and (S,G) entries beside IPv4 ones, canonical', () => {
    const state = parseDeclaredState(
      [
        'groups:',
        '  - {group: 239.1.2.3, ports: [a, 7]}',
        '  - group: FF3E::8000:1',
        '    ports: [a, b]',
        '  - {group: "ff3e::8000:1", source: "2001:DB8::5", ports: [7]}',
      ].join('\n'),
      'g.yaml',
    );
    assert.deepEqual(
      state.groups.map(({ group, source, ports }) => ({ group, source, ports })),
      [
        { group: '239.1.2.3', source: undefined, ports: [{ name: 'a' }, { ofport: 7 }] },
        { group: 'ff3e::8000:1', source: undefined, ports: [{ name: 'a' }, { name: 'b' }] },
        { group: 'ff3e::8000:1', source: '2001:db8::5', ports: [{ ofport: 7 }] },
      ],
    );
  });
  it('the same group spelled two ways is declared twice', () => {
    refused(
      () =>
        parseDeclaredState(
          'groups:\n  - {group: ff3e::1, ports: [a]}\n  - {group: "FF3E:0::1", ports: [b]}\n',
          'g.yaml',
        ),
      /^g\.yaml:3: group ff3e::1 is declared twice \(first at line 2\)/,
    );
  });
  it('refuses link-scope IPv6 groups and mixed families, with file:line', () => {
    refused(
      () => parseDeclaredState('groups:\n  - group: ff02::fb\n    ports: [a]\n', 'g.yaml'),
      /^g\.yaml:2: ff02::fb is of link-local scope/,
    );
    refused(
      () => parseDeclaredState('groups:\n  - group: ff3e::1\n    source: 10.0.0.5\n    ports: [a]\n', 'g.yaml'),
      /^g\.yaml:3: source 10\.0\.0\.5 and group ff3e::1 are of different families/,
    );
  });
});

describe('static IPv6 kernel routes', () => {
  it('are checked as IPv4 ones: an unknown interface and mixed families are refused before anything changes', () => {
    refused(
      () => checkRoute({ group: 'ff3e::1', source: '2001:db8::5', iif: 'no-such-if0', oifs: ['lo'] }),
      /no interface no-such-if0/,
    );
    refused(() => checkRoute({ group: 'ff02::1', source: '2001:db8::5', iif: 'lo', oifs: ['lo'] }), /link-local scope/);
    refused(() => checkRoute({ group: 'ff3e::1', source: '10.0.0.5', iif: 'a', oifs: ['b'] }), /different families/);
  });
});

describe('reconcile with IPv6 groups', () => {
  const pipeline = new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });
  const switchWith = (memberships: GroupMembership[]) => {
    const entries = memberships.map((membership) => pipeline.forwarding(membership));
    return pipeline.readInstalled(
      entries.map((entry) => entry.flow),
      entries.flatMap((entry) => entry.groups),
    );
  };
  const v6 = groupAddress('ff3e::8000:1');
  const v4 = groupAddress('239.1.2.3');
  const s6 = sourceAddress('2001:db8::5');

  it('in sync with IPv4 and IPv6 groups and an IPv6 (S,G) entry', () => {
    const declared: GroupMembership[] = [
      { group: v6, ports: [1, 2] },
      { group: v6, source: s6, ports: [3] },
      { group: v4, ports: [1, 4] },
    ];
    const installed = switchWith(declared);
    assert.deepEqual(
      installed.groups.map((group) => [group.group, group.source, group.ports]),
      [
        [v4, undefined, [1, 4]],
        [v6, undefined, [1, 2]],
        [v6, s6, [3]],
      ],
      'read back IPv4 first, each (S,G) after its group',
    );
    const plan = planGroupReconcile({ pipeline, installed, foreignFlows: [], declared });
    assert.deepEqual(plan.drift, []);
    assert.equal(plan.inSync, 3);
  });

  it('drift of IPv6 entries is found and planned, sorted IPv4 first', () => {
    const installed = switchWith([
      { group: v6, ports: [1] },
      { group: groupAddress('ff05::1:3'), ports: [5] },
    ]);
    const declared: GroupMembership[] = [
      { group: v6, ports: [1, 2] },
      { group: v6, source: s6, ports: [3] },
      { group: v4, ports: [1] },
    ];
    const plan = planGroupReconcile({ pipeline, installed, foreignFlows: [], declared });
    assert.deepEqual(
      plan.drift.map((entry) =>
        entry.object === 'group' ? [entry.group, entry.source, entry.action, entry.detail] : entry.object,
      ),
      [
        [v4, undefined, 'add', 'declared, not installed'],
        ['ff05::1:3', undefined, 'remove', 'installed, not declared'],
        [v6, undefined, 'change', 'ports 2 missing'],
        [v6, s6, 'add', 'declared, not installed'],
      ],
    );
    const flows = plan.drift.flatMap((entry) =>
      entry.changes.flatMap((change) => (change.op === 'add-flow' ? [change.entry.match] : [])),
    );
    assert.deepEqual(flows, [
      { ethType: 0x0800, ipDst: v4 },
      { ethType: 0x86dd, ipSrc: s6, ipDst: v6 },
    ]);
  });
});
