/**
 * The group policy with IPv6 groups and sources: parsing, canonical form, first-match decisions, drop prefixes, and the
 * families kept apart.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import fc from 'fast-check';
import { UsageError } from '../../src/errors.js';
import type { GroupPolicy } from '../../src/domain/policy/group-policy.js';
import {
  addressPoint,
  formatIpPrefix,
  type IpPrefix,
  ipPrefixMask,
  ipPrefixRange,
  ipRangesToPrefixes,
  normalizeIpRanges,
  parseIpPrefix,
} from '../../src/domain/policy/ip-prefix.js';
import { parseGroupPolicy } from '../../src/domain/policy/policy-file.js';
import { MulticastPipeline } from '../../src/domain/pipeline/multicast-pipeline.js';
import { DEFAULT_PIPELINE_CONFIG } from '../../src/domain/pipeline/config.js';
import { type GroupAddress, groupAddress } from '../../src/wire/ip-address.js';

const policy = (lines: string[]) => parseGroupPolicy(lines.join('\n') + '\n', 'p.yaml');
const g = (text: string): GroupAddress => groupAddress(text);

function refusal(lines: string[]): string {
  try {
    policy(lines);
  } catch (error) {
    assert.ok(error instanceof UsageError, String(error));
    return error.message;
  }
  assert.fail('parsed');
}

describe('IPv6 prefixes', () => {
  it('parse to canonical text, a bare address being a /128', () => {
    const parsed = parseIpPrefix('FF3E:0:0::/16');
    assert.ok(parsed.ok);
    assert.deepEqual(parsed.prefix, { family: 'ipv6', address: 'ff3e::', length: 16 });
    const single = parseIpPrefix('ff3e::8000:0001');
    assert.ok(single.ok);
    assert.deepEqual(single.prefix, { family: 'ipv6', address: 'ff3e::8000:1', length: 128 });
    const v4 = parseIpPrefix('239.1.0.0/16');
    assert.ok(v4.ok);
    assert.deepEqual(v4.prefix, { family: 'ipv4', address: '239.1.0.0', length: 16 });
  });
  it('refuse host bits, a bad length, and what is no address', () => {
    assert.deepEqual(parseIpPrefix('ff3e::1/16'), {
      ok: false,
      reason: 'host bits are set: the block of ff3e::1/16 is ff3e::/16',
    });
    assert.match((parseIpPrefix('ff3e::/129') as { reason: string }).reason, /0 to 128 for an IPv6 block/);
    assert.match((parseIpPrefix('239.0.0.0/33') as { reason: string }).reason, /0 to 32 for an IPv4 block/);
    assert.match((parseIpPrefix('ff3e:::1/16') as { reason: string }).reason, /not an address/);
    assert.match((parseIpPrefix('ff3e::/016') as { reason: string }).reason, /prefix length/);
  });
  it('masks are text of their family', () => {
    const prefix = (text: string) => (parseIpPrefix(text) as { prefix: IpPrefix }).prefix;
    assert.equal(ipPrefixMask(prefix('ff3e::/16')), 'ffff::');
    assert.equal(ipPrefixMask(prefix('ff3e:1000::/20')), 'ffff:f000::');
    assert.equal(ipPrefixMask(prefix('ff3e::1')), 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff');
    assert.equal(ipPrefixMask(prefix('239.1.0.0/16')), '255.255.0.0');
    // The IPv4 module's mask, which the daemon uses, gives IPv6 masks for IPv6 prefixes.
    assert.equal(ipPrefixMask(prefix('ff05::/16')), 'ffff::');
  });
  it('ranges back to the fewest prefixes, IPv4 first, never one block across the families', () => {
    const ranges = normalizeIpRanges(
      ['ff3e::/17', 'ff3e:8000::/17', '239.255.255.255', 'ff05::/16'].map((text) =>
        ipPrefixRange((parseIpPrefix(text) as { prefix: IpPrefix }).prefix),
      ),
    );
    assert.deepEqual(ipRangesToPrefixes(ranges).map(formatIpPrefix), ['239.255.255.255/32', 'ff05::/16', 'ff3e::/16']);
    // The last IPv4 point and the first IPv6 one are neighbours on the line, not one range.
    const edge = normalizeIpRanges([
      { start: addressPoint('255.255.255.255')!, end: addressPoint('255.255.255.255')! },
      { start: addressPoint('::')!, end: addressPoint('::')! },
    ]);
    assert.equal(edge.length, 2);
    assert.deepEqual(ipRangesToPrefixes(edge).map(formatIpPrefix), ['255.255.255.255/32', '::/128']);
  });
});

describe('IPv6 group policy file', () => {
  const errors: [string, string[], RegExp][] = [
    [
      'host bits',
      ['rules:', '  - action: deny', '    groups: [ff3e::/16, ff05::1/16]'],
      /^p\.yaml:3: "ff05::1\/16": host bits are set: the block of ff05::1\/16 is ff05::\/16/,
    ],
    [
      'a unicast group block',
      ['rules:', '  - action: deny', '    groups: 2001:db8::/32'],
      /^p\.yaml:3: "2001:db8::\/32" is not inside ff00::\/8, the IPv6 multicast groups/,
    ],
    [
      'a block wider than ff00::/8',
      ['rules:', '  - {action: deny, groups: fe00::/7}'],
      /^p\.yaml:2: "fe00::\/7" is not inside ff00::\/8/,
    ],
    [
      'a bad length',
      ['rules:', '  - action: deny', '    groups:', '      - ff3e::/200'],
      /^p\.yaml:4: "ff3e::\/200": the prefix length after "\/" must be 0 to 128/,
    ],
    [
      'a malformed address',
      ['rules:', '  - {action: deny, groups: "ff3e::g/16"}'],
      /^p\.yaml:2: "ff3e::g\/16": not an address or CIDR block/,
    ],
    [
      'a multicast source',
      ['sourceAddresses:', '  - pods: a/*', '    addresses: [2001:db8::/32, ff3e::1]'],
      /^p\.yaml:3: "ff3e::1" is not unicast: a source is neither :: nor in ff00::\/8/,
    ],
    [
      'the unspecified source',
      ['sourceAddresses:', '  - {pods: a/*, addresses: "::"}'],
      /^p\.yaml:2: "::" is not unicast/,
    ],
  ];
  for (const [name, lines, expected] of errors) {
    it(`refuses ${name}, naming its line`, () => assert.match(refusal(lines), expected));
  }

  it('takes IPv6 blocks beside IPv4 ones, in canonical form (the fingerprint does not see the spelling)', () => {
    const a = policy(['rules:', '  - {action: deny, groups: [239.1.0.0/16, FF3E:0::/16]}']);
    const b = policy(['rules:', '  - {action: deny, groups: [ff3e::/17, ff3e:8000::/17, 239.1.0.0/16]}']);
    assert.equal(a.fingerprint, b.fingerprint);
    assert.match(a.fingerprint, /"ff3e::\/16"/);
    assert.notEqual(a.fingerprint, policy(['rules:', '  - {action: deny, groups: [239.1.0.0/16]}']).fingerprint);
  });
});

describe('IPv6 group policy decisions', () => {
  const rules = policy([
    'rules:',
    '  - {action: allow, pods: tenant-b/monitor, groups: ff3e::8000:0/112}',
    '  - {action: deny, pods: tenant-b/*, groups: [ff3e::/16, 239.1.0.0/16]}',
    '  - {action: deny, pods: "*/*", groups: ff05::/16, directions: send}',
    '  - {action: deny, pods: tenant-c/*}',
  ]);
  it('the first matching rule decides, for IPv6 as for IPv4', () => {
    assert.deepEqual(rules.decide('tenant-b/monitor', g('ff3e::8000:1'), 'join'), { allowed: true, line: 2 });
    assert.deepEqual(rules.decide('tenant-b/monitor', g('ff3e::9000:1'), 'join'), { allowed: false, line: 3 });
    assert.deepEqual(rules.decide('tenant-b/web', g('ff3e::8000:1'), 'join'), { allowed: false, line: 3 });
    assert.deepEqual(rules.decide('tenant-a/web', g('ff05::1:3'), 'send'), { allowed: false, line: 4 });
    assert.deepEqual(rules.decide('tenant-a/web', g('ff05::1:3'), 'join'), { allowed: true });
  });
  it('a rule of one family never matches a group of the other', () => {
    // 239.1.0.0/16 and ff3e::/16 both deny tenant-b: a third family-mate is untouched.
    assert.equal(rules.decide('tenant-b/web', g('239.2.0.1'), 'join').allowed, true);
    assert.equal(rules.decide('tenant-b/web', g('ff0e::1'), 'join').allowed, true);
    const v4only = policy(['rules:', '  - {action: deny, groups: 224.0.0.0/4}']);
    assert.equal(v4only.decide('a/b', g('ff3e::1'), 'join').allowed, true);
    const v6only = policy(['rules:', '  - {action: deny, groups: ff00::/8}']);
    assert.equal(v6only.decide('a/b', g('239.1.2.3'), 'join').allowed, true);
    assert.equal(v6only.decide('a/b', g('ff3e::1'), 'join').allowed, false);
  });
  it('a rule without groups covers both families', () => {
    assert.equal(rules.decide('tenant-c/x', g('239.9.9.9'), 'join').allowed, false);
    assert.equal(rules.decide('tenant-c/x', g('ff3e::1'), 'join').allowed, false);
  });
  it('never governs link-scope IPv6 groups (scope 0, 1, 2 whatever the flags)', () => {
    const denyAll = policy(['rules:', '  - {action: deny}']);
    for (const group of ['ff02::1', 'ff02::1:ff00:1', 'ff01::1', 'ff12::8000:1', 'ff32::1', 'ff00::1']) {
      assert.equal(denyAll.decide('a/b', g(group), 'join').allowed, true, group);
      assert.equal(denyAll.decide('a/b', g(group), 'send').allowed, true, group);
    }
    assert.equal(denyAll.decide('a/b', g('ff03::1'), 'join').allowed, false);
    assert.equal(denyAll.decide('a/b', g('ff15::1'), 'join').allowed, false);
    const prefixes = denyAll.deniedSendPrefixes('a/b').filter((prefix) => prefix.family === 'ipv6');
    // Each block holds no link-scope group: its first and last groups are governed.
    for (const prefix of prefixes) {
      assert.equal(denyAll.decide('a/b', g(prefix.address), 'send').allowed, false, formatIpPrefix(prefix));
      assert.ok(prefix.length <= 16 && prefix.length >= 13, formatIpPrefix(prefix));
    }
    // 16 flag values, each with scopes 3..15: 3 as a /16, then /14 (4-7), /13 (8-15).
    assert.equal(prefixes.length, 16 * 3);
    assert.deepEqual(prefixes.slice(0, 3).map(formatIpPrefix), ['ff03::/16', 'ff04::/14', 'ff08::/13']);
  });
  it('the denied send prefixes are both families, IPv4 first, each as its fewest blocks', () => {
    assert.deepEqual(rules.deniedSendPrefixes('tenant-b/web').map(formatIpPrefix), [
      '239.1.0.0/16',
      'ff05::/16',
      'ff3e::/16',
    ]);
    // The allowed /112 is cut out of ff3e::/16: one block for each bit from 17 to 112.
    const monitor = rules.deniedSendPrefixes('tenant-b/monitor');
    assert.deepEqual(monitor.slice(0, 3).map(formatIpPrefix), ['239.1.0.0/16', 'ff05::/16', 'ff3e::/97']);
    assert.equal(monitor.length, 2 + 96);
    const allowed = addressPoint('ff3e::8000:1')!;
    assert.ok(monitor.map(ipPrefixRange).every((range) => allowed < range.start || allowed > range.end));
  });
  it('extra IPv6 source addresses, kept apart from IPv4 ones', () => {
    const sources = policy([
      'sourceAddresses:',
      '  - pods: kube-system/vrrp-*',
      '    addresses: [10.0.0.0/24, 2001:db8::/32, fe80::1]',
    ]);
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', '2001:db8:ffff::5'), true);
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', '2001:0DB8::5'), true);
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', 'fe80::1'), true);
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', 'fe80::2'), false);
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', '2001:db9::1'), false);
    // ::ffff:10.0.0.1 is an IPv6 address, not 10.0.0.1.
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', '::ffff:10.0.0.1'), false);
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', '10.0.0.1'), true);
    assert.equal(sources.admitsExtraSource('other/x', '2001:db8::5'), false);
  });
});

describe('IPv6 send-policy drops on the switch', () => {
  const pipeline = new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 4 });
  it('an IPv6 range is an IPv6 match with an IPv6 text mask; a /128 is exact', () => {
    const drop = pipeline.sendPolicyDrop(7, { address: 'ff3e::', mask: 'ffff::' });
    assert.deepEqual(drop.match, { inPort: 7, ethType: 0x86dd, ipDst: 'ff3e::', ipDstMask: 'ffff::' });
    const exact = pipeline.sendPolicyDrop(7, { address: 'ff3e::1', mask: 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff' });
    assert.deepEqual(exact.match, { inPort: 7, ethType: 0x86dd, ipDst: 'ff3e::1' });
    const v4 = pipeline.sendPolicyDrop(7, { address: '239.1.0.0', mask: '255.255.0.0' });
    assert.deepEqual(v4.match, { inPort: 7, ethType: 0x0800, ipDst: '239.1.0.0', ipDstMask: '255.255.0.0' });
  });
  it('the policy gives the ranges the drops are made of', () => {
    const denied = policy(['rules:', '  - {action: deny, groups: [ff05::/16, 239.0.0.0/8]}']).deniedSendPrefixes('a/b');
    const matches = denied.map(
      (prefix) => pipeline.sendPolicyDrop(3, { address: prefix.address, mask: ipPrefixMask(prefix) }).match,
    );
    assert.deepEqual(matches, [
      { inPort: 3, ethType: 0x0800, ipDst: '239.0.0.0', ipDstMask: '255.0.0.0' },
      { inPort: 3, ethType: 0x86dd, ipDst: 'ff05::', ipDstMask: 'ffff::' },
    ]);
  });
});

describe('IPv6 denied send prefixes against decide (property)', () => {
  // Prefixes clustered in a small corner of ff3e::/16, so that rules overlap often.
  const base = addressPoint('ff3e::')! - addressPoint('::')!;
  const hex = (value: bigint) => {
    const groups: string[] = [];
    for (let shift = 112n; shift >= 0n; shift -= 16n) groups.push(((value >> shift) & 0xffffn).toString(16));
    return groups.join(':');
  };
  const smallPrefix = fc
    .record({ offset: fc.integer({ min: 0, max: 1023 }), length: fc.integer({ min: 118, max: 128 }) })
    .map(({ offset, length }) => {
      const mask = ((1n << 128n) - 1n) ^ ((1n << BigInt(128 - length)) - 1n);
      return `${hex((base + BigInt(offset)) & mask)}/${length}`;
    });
  const prefixArbitrary = fc.oneof(
    { arbitrary: smallPrefix, weight: 8 },
    { arbitrary: fc.constantFrom('ff3e::/16', 'ff00::/8', 'ff30::/12', '239.0.0.0/8'), weight: 1 },
  );
  const ruleArbitrary = fc.record({
    action: fc.constantFrom('allow', 'deny'),
    groups: fc.option(fc.array(prefixArbitrary, { minLength: 1, maxLength: 3 }), { nil: undefined }),
    directions: fc.option(fc.subarray(['join', 'send'], { minLength: 1 }), { nil: undefined }),
  });
  const addressArbitrary = fc.oneof(
    fc.integer({ min: 0, max: 1100 }).map((offset) => hex(base + BigInt(offset))),
    fc.constantFrom(
      'ff3e::',
      'ff3e:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
      'ff3d:ffff:ffff:ffff:ffff:ffff:ffff:ffff',
      'ff02::1',
      'ff05::1',
      '239.0.0.1',
    ),
  );

  it('an address is in the prefixes iff decide says send is denied', () => {
    fc.assert(
      fc.property(
        fc.array(ruleArbitrary, { maxLength: 6 }),
        fc.array(addressArbitrary, { minLength: 1, maxLength: 20 }),
        (ruleList, addresses) => {
          const parsed: GroupPolicy = parseGroupPolicy(JSON.stringify({ rules: ruleList }), 'p.json');
          const prefixes = parsed.deniedSendPrefixes('a/b');
          const ranges = prefixes.map(ipPrefixRange);
          for (let index = 1; index < ranges.length; index++)
            assert.ok(ranges[index - 1]!.end < ranges[index]!.start, 'sorted and disjoint');
          for (const text of addresses) {
            const point = addressPoint(text)!;
            const inPrefixes = ranges.some((range) => point >= range.start && point <= range.end);
            assert.equal(inPrefixes, !parsed.decide('a/b', g(text), 'send').allowed, text);
          }
        },
      ),
      { numRuns: 200 },
    );
  });
});
