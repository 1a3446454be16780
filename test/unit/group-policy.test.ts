/**
 * The daemon's group policy: its file, its globs, its first-match decisions and the drop prefixes derived from them.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/node-test.js';
import fc from 'fast-check';
import { UsageError } from '../../src/errors.js';
import { loadGroupPolicy } from '../../src/controllers/daemon/config/policy-loader.js';
import { GroupPolicy, type PolicyDirection } from '../../src/domain/policy/group-policy.js';
import {
  formatIpPrefix as formatPrefix,
  ipPrefixContains,
  ipPrefixMask as prefixMask,
  ipPrefixRange,
  parseIpPrefix as parsePrefix,
  type IpPrefix,
} from '../../src/domain/policy/ip-prefix.js';
import { MAX_POLICY_RULES, parseGroupPolicy } from '../../src/domain/policy/policy-file.js';
import { type PodGlob, parsePodGlob, podMatches } from '../../src/domain/policy/pod-glob.js';
import { type GroupAddress, groupAddress } from '../../src/wire/ip-address.js';
import { formatIPv4, parseIPv4 } from '../../src/wire/ipv4-address.js';

const policy = (lines: string[]) => parseGroupPolicy(lines.join('\n') + '\n', 'p.yaml');
const g = (text: string): GroupAddress => groupAddress(text);

/** The message of the UsageError that parsing `lines` throws. */
function refusal(lines: string[]): string {
  try {
    policy(lines);
  } catch (error) {
    assert.ok(error instanceof UsageError, String(error));
    return error.message;
  }
  assert.fail('parsed');
}

/** An IPv4 prefix's addresses as numbers (IPv4's points of the number line are its addresses). */
function prefixRange(prefix: IpPrefix): { start: number; end: number } {
  const { start, end } = ipPrefixRange(prefix);
  return { start: Number(start), end: Number(end) };
}

/** Whether the IPv4 address `value` (as a number) is in `prefix`. */
const prefixContains = (prefix: IpPrefix, value: number): boolean => ipPrefixContains(prefix, formatIPv4(value));

describe('group policy file', () => {
  it('an empty file, a comment, or empty lists are the allow-all policy', () => {
    for (const text of ['', '# nothing\n', 'rules: []\n', 'rules:\nsourceAddresses:\n', '{}\n']) {
      const parsed = parseGroupPolicy(text, 'p.yaml');
      assert.equal(parsed.ruleCount, 0);
      assert.equal(parsed.fingerprint, GroupPolicy.allowAll().fingerprint);
      assert.deepEqual(parsed.decide('a/b', g('239.1.2.3'), 'join'), { allowed: true });
    }
  });

  it('the contrib example parses and decides as its comments say', () => {
    const text = readFileSync(new URL('../../contrib/group-policy.yaml', import.meta.url), 'utf8');
    const example = parseGroupPolicy(text, 'contrib/group-policy.yaml');
    assert.equal(example.ruleCount, 6);
    assert.equal(example.decide('tenant-b/monitor-1', g('239.1.200.7'), 'join').allowed, true);
    assert.equal(example.decide('tenant-b/monitor-1', g('239.1.200.7'), 'send').allowed, false);
    assert.equal(example.decide('tenant-b/web', g('239.1.200.7'), 'join').allowed, false);
    assert.equal(example.decide('tenant-a/web', g('239.1.200.7'), 'join').allowed, true);
    assert.equal(example.decide('media/server-1', g('239.255.0.9'), 'send').allowed, true);
    assert.equal(example.decide('media/server-12', g('232.10.0.1'), 'send').allowed, true);
    assert.equal(example.decide('media/server-123', g('232.10.0.1'), 'send').allowed, false);
    assert.equal(example.decide('media/server-123', g('232.10.0.1'), 'join').allowed, true);
    assert.equal(example.decide('media/server-7', g('ff15::1:2'), 'send').allowed, true);
    assert.equal(example.decide('tenant-a/web', g('ff15::1:2'), 'send').allowed, false);
    assert.equal(example.decide('tenant-a/web', g('ff15::1:2'), 'join').allowed, true);
    assert.equal(example.decide('tenant-a/web', g('ff1e::1:2'), 'send').allowed, true);
    assert.equal(example.admitsExtraSource('kube-system/vrrp-a', '10.0.0.77'), true);
    assert.equal(example.admitsExtraSource('kube-system/vrrp-a', '10.1.2.4'), false);
  });

  it('reads JSON, scalars or lists alike', () => {
    const parsed = parseGroupPolicy(
      '{"rules": [{"action": "deny", "pods": ["a/*"], "groups": "239.0.0.0/8", "directions": "send"}]}',
      'p.json',
    );
    assert.deepEqual(parsed.decide('a/x', g('239.9.9.9'), 'send'), { allowed: false, line: 1 });
    assert.deepEqual(parsed.decide('a/x', g('239.9.9.9'), 'join'), { allowed: true });
  });

  const errors: [string, string[], RegExp][] = [
    ['a top level that is no mapping', ['- 1'], /^p\.yaml:1: the file must be a mapping/],
    [
      'an unknown top-level key, not shown (the file may be no policy)',
      ['rules: []', 'rule: []'],
      /^p\.yaml:2: an unknown key in the file \(known: rules, sourceAddresses\); it is not shown, in case the file is no group policy$/,
    ],
    [
      'another file given as the policy: its first line is not in the message',
      ['root:$y$j9T$abcdefgh:19000:0:99999:7:::'],
      /^p\.yaml:1: (?!.*root)(?!.*abcdefgh).*$/,
    ],
    ['rules that are no list', ['rules: deny'], /^p\.yaml:1: "rules" must be a list/],
    ['a rule that is no mapping', ['rules:', '  - deny'], /^p\.yaml:2: each rule must be a mapping/],
    [
      'an unknown key in a rule',
      ['rules:', '  - action: deny', '    group: 239.1.2.3'],
      /^p\.yaml:3: unknown key "group" in a rule/,
    ],
    ['a missing action', ['rules:', '  - action: deny', '  - pods: a/b'], /^p\.yaml:3: a rule needs "action"/],
    [
      'an unknown action',
      ['rules:', '  - pods: a/b', '    action: drop'],
      /^p\.yaml:3: "action" must be allow or deny, not "drop"/,
    ],
    [
      'host bits set, with the network named',
      ['rules:', '  - action: deny', '    groups:', '      - 239.1.0.0/16', '      - 239.2.3.4/16'],
      /^p\.yaml:5: "239\.2\.3\.4\/16": host bits are set: the block of 239\.2\.3\.4\/16 is 239\.2\.0\.0\/16/,
    ],
    [
      'a group outside 224.0.0.0/4',
      ['rules:', '  - action: deny', '    groups: [10.0.0.0/8]'],
      /^p\.yaml:3: "10\.0\.0\.0\/8" is not inside 224\.0\.0\.0\/4/,
    ],
    [
      'a block wider than 224.0.0.0/4',
      ['rules:', '  - action: deny', '    groups: 224.0.0.0/3'],
      /^p\.yaml:3: "224\.0\.0\.0\/3" is not inside/,
    ],
    ['a bad prefix length', ['rules:', '  - action: deny', '    groups: 239.0.0.0/33'], /^p\.yaml:3: .*prefix length/],
    [
      'no address at all',
      ['rules:', '  - action: deny', '    groups: groups'],
      /^p\.yaml:3: "groups": not an address or CIDR block/,
    ],
    [
      'a number where a string is wanted',
      ['rules:', '  - action: deny', '    groups: [239.1.2.3, 7]'],
      /^p\.yaml:3: an entry of "groups" must be a string/,
    ],
    [
      'a mapping where a list is wanted',
      ['rules:', '  - action: deny', '    pods: {a: b}'],
      /^p\.yaml:3: "pods" must be .* not a mapping/,
    ],
    ['an empty list', ['rules:', '  - action: deny', '', '    pods: []'], /^p\.yaml:4: "pods" is an empty list/],
    [
      'a key without a value',
      ['rules:', '  - action: deny', '    directions:'],
      /^p\.yaml:3: "directions" has no value/,
    ],
    [
      'an unknown direction',
      ['rules:', '  - action: deny', '    directions:', '      - join', '      - receive'],
      /^p\.yaml:5: a direction is join or send, not "receive"/,
    ],
    [
      'a glob without "/"',
      ['rules:', '  - action: deny', '    pods: [a/b, web-*]'],
      /^p\.yaml:3: pod glob "web-\*": .*exactly one "\/"/,
    ],
    [
      'a glob with two "/"',
      ['rules:', '  - action: deny', '    pods:', '      - a/b/c'],
      /^p\.yaml:4: pod glob "a\/b\/c"/,
    ],
    [
      'a glob with an empty side',
      ['rules:', '  - action: deny', '    pods: a/'],
      /^p\.yaml:3: pod glob "a\/": both sides/,
    ],
    [
      'a multicast source address',
      ['sourceAddresses:', '  - pods: a/b', '    addresses: [10.0.0.1, 239.1.2.3]'],
      /^p\.yaml:3: "239\.1\.2\.3" is not unicast/,
    ],
    [
      '0.0.0.0 as a source',
      ['sourceAddresses:', '  - addresses:', '      - 0.0.0.0/8'],
      /^p\.yaml:3: "0\.0\.0\.0\/8" is not unicast/,
    ],
    [
      'a source entry without addresses',
      ['sourceAddresses:', '  - pods: a/b'],
      /^p\.yaml:2: a sourceAddresses entry needs "addresses"/,
    ],
    [
      'an unknown key in a source entry',
      ['sourceAddresses:', '  - addresses: 10.0.0.1', '    groups: 239.1.2.3'],
      /^p\.yaml:3: unknown key "groups" in a sourceAddresses/,
    ],
    ['bad YAML', ['rules:', '  - action: deny', '   pods: [a/b'], /^p\.yaml:\d+: not valid YAML or JSON/],
    ['an anchor', ['rules:', '  - &r {action: deny}', '  - *r'], /^p\.yaml:2: an anchor/],
  ];
  for (const [name, lines, expected] of errors) {
    it(`refuses ${name}, naming its line`, () => assert.match(refusal(lines), expected));
  }

  it(`refuses more than ${MAX_POLICY_RULES} rules, naming the first one too many`, () => {
    const lines = ['rules:', ...Array.from({ length: MAX_POLICY_RULES + 1 }, () => '  - {action: deny}')];
    assert.match(
      refusal(lines),
      new RegExp(`^p\\.yaml:${MAX_POLICY_RULES + 2}: "rules" has more than ${MAX_POLICY_RULES} entries`),
    );
    assert.equal(policy(lines.slice(0, -1)).ruleCount, MAX_POLICY_RULES);
  });
});

describe('pod globs', () => {
  const matches = (glob: string, pod: string) => {
    const parsed = parsePodGlob(glob);
    assert.ok(parsed.ok, glob);
    return podMatches(parsed.glob, pod);
  };
  it('* matches any run but not "/", ? one character', () => {
    assert.equal(matches('tenant-b/*', 'tenant-b/web-1'), true);
    assert.equal(matches('tenant-b/*', 'tenant-b/'), true);
    assert.equal(matches('tenant-*/*', 'tenant-b/x'), true);
    assert.equal(matches('*/*', 'a/b'), true);
    assert.equal(matches('tenant-b/*', 'tenant-bb/web'), false);
    assert.equal(matches('t*/x', 'a/t/x'), false);
    assert.equal(matches('a/*', 'a/b/c'), false);
    assert.equal(matches('a/w?b', 'a/web'), true);
    assert.equal(matches('a/w?b', 'a/wb'), false);
    assert.equal(matches('a/w?b', 'a/weeb'), false);
    assert.equal(matches('a/*-*-x', 'a/b-c-d-x'), true);
    assert.equal(matches('a/*-*-x', 'a/b-c-d-y'), false);
    assert.equal(matches('a/*ab', 'a/aab'), true);
  });
  it('every other character is literal', () => {
    assert.equal(matches('a/web.1', 'a/web.1'), true);
    assert.equal(matches('a/web.1', 'a/webx1'), false);
    assert.equal(matches('a/(x|y)+', 'a/(x|y)+'), true);
    assert.equal(matches('a/(x|y)+', 'a/x'), false);
    assert.equal(matches('a/[ab]', 'a/a'), false);
    assert.equal(matches('a/^$\\', 'a/^$\\'), true);
  });
  it('a pod without a namespace has the empty one: only */NAME-style globs match it', () => {
    assert.equal(matches('*/web', 'web'), true);
    assert.equal(matches('*/*', 'web'), true);
    assert.equal(matches('default/web', 'web'), false);
    assert.equal(matches('?/web', 'web'), false);
  });
  it('many stars against a long name take no time', () => {
    const started = process.hrtime.bigint();
    assert.equal(matches(`a/${'*a'.repeat(60)}b`, `a/${'a'.repeat(250)}`), false);
    assert.ok(Number(process.hrtime.bigint() - started) < 200e6);
  });
});

describe('group policy decisions', () => {
  const rules = policy([
    'rules:',
    '  - action: allow', // line 2
    '    pods: tenant-b/monitor',
    '    groups: 239.1.200.0/24',
    '  - action: deny', // line 5
    '    pods: [tenant-b/*, "*/legacy"]',
    '    groups: 239.1.0.0/16',
    '  - action: deny', // line 8
    '    groups: 232.0.0.0/8',
    '    directions: send',
  ]);
  it('the first rule that matches decides, an allow before a broader deny excepts', () => {
    assert.deepEqual(rules.decide('tenant-b/monitor', g('239.1.200.1'), 'join'), { allowed: true, line: 2 });
    assert.deepEqual(rules.decide('tenant-b/monitor', g('239.1.201.1'), 'join'), { allowed: false, line: 5 });
    assert.deepEqual(rules.decide('tenant-b/web', g('239.1.200.1'), 'send'), { allowed: false, line: 5 });
    assert.deepEqual(rules.decide('legacy', g('239.1.0.0'), 'join'), { allowed: false, line: 5 });
    assert.deepEqual(rules.decide('tenant-a/web', g('232.1.1.1'), 'send'), { allowed: false, line: 8 });
  });
  it('when no rule matches, allowed; a port that is no pod is never governed', () => {
    assert.deepEqual(rules.decide('tenant-a/web', g('239.1.200.1'), 'join'), { allowed: true });
    assert.deepEqual(rules.decide('tenant-a/web', g('232.1.1.1'), 'join'), { allowed: true });
    assert.deepEqual(rules.decide(undefined, g('239.1.0.1'), 'send'), { allowed: true });
    assert.deepEqual(rules.deniedSendPrefixes(undefined), []);
    assert.equal(rules.admitsExtraSource(undefined, '10.9.9.9'), true);
  });
  it('the denied send prefixes subtract the earlier rules', () => {
    assert.deepEqual(rules.deniedSendPrefixes('tenant-b/monitor').map(formatPrefix), [
      '232.0.0.0/8',
      '239.1.0.0/17',
      '239.1.128.0/18',
      '239.1.192.0/21',
      '239.1.201.0/24',
      '239.1.202.0/23',
      '239.1.204.0/22',
      '239.1.208.0/20',
      '239.1.224.0/19',
    ]);
    assert.deepEqual(rules.deniedSendPrefixes('tenant-a/web').map(formatPrefix), ['232.0.0.0/8']);
    assert.deepEqual(rules.deniedSendPrefixes('tenant-b/x').map(formatPrefix), ['232.0.0.0/8', '239.1.0.0/16']);
  });
  it('adjacent denied blocks merge into one prefix', () => {
    const merged = policy([
      'rules:',
      '  - {action: deny, groups: 239.0.0.0/9}',
      '  - {action: deny, groups: [239.128.0.0/9, 238.0.0.0/8]}',
    ]);
    assert.deepEqual(merged.deniedSendPrefixes('a/b').map(formatPrefix), ['238.0.0.0/7']);
    // All of 224.0.0.0/4 but the link-local groups, which no rule governs (and IPv6's, after them).
    const everything = policy(['rules:', '  - {action: deny}'])
      .deniedSendPrefixes('a/b')
      .filter((prefix) => prefix.family === 'ipv4')
      .map(formatPrefix);
    assert.deepEqual(everything.slice(0, 3), ['224.0.1.0/24', '224.0.2.0/23', '224.0.4.0/22']);
    assert.deepEqual(everything.slice(-4), ['225.0.0.0/8', '226.0.0.0/7', '228.0.0.0/6', '232.0.0.0/5']);
    assert.equal(everything.length, 20);
  });
  it('never governs the link-local groups (224.0.0.0/24), which the pipeline floods', () => {
    const denyAll = policy(['rules:', '  - {action: deny, groups: 224.0.0.0/16}']);
    for (const direction of ['join', 'send'] as const) {
      assert.equal(denyAll.decide('a/b', g('224.0.0.251'), direction).allowed, true);
      assert.equal(denyAll.decide('a/b', g('224.0.1.1'), direction).allowed, false);
    }
    assert.equal(
      denyAll.deniedSendPrefixes('a/b').some((prefix) => prefix.address.startsWith('224.0.0.')),
      false,
    );
  });
  it('remembers a bounded number of pods and decides alike after forgetting', () => {
    for (let index = 0; index < 5000; index++)
      assert.equal(rules.decide(`tenant-b/p${index}`, g('239.1.0.1'), 'join').allowed, false);
    assert.equal(rules.decide('tenant-b/p0', g('239.1.0.1'), 'join').allowed, false);
  });
});

describe('denied send prefixes against decide (property)', () => {
  const pods = ['a/x', 'a/y', 'b/x', 'x'];
  const globs = ['a/*', '*/x', 'a/x', 'b/?', '*/*'];
  // Prefixes clustered in a small corner of 239/8, so that rules overlap often.
  const smallPrefix = fc
    .record({ offset: fc.integer({ min: 0, max: 1023 }), length: fc.integer({ min: 22, max: 32 }) })
    .map(({ offset, length }) => {
      const value = (0xef000000 + offset) & ((0xffffffff << (32 - length)) >>> 0);
      return `${formatIPv4(value >>> 0)}/${length}`;
    });
  const prefixArbitrary = fc.oneof(
    { arbitrary: smallPrefix, weight: 8 },
    { arbitrary: fc.constantFrom('239.0.0.0/8', '224.0.0.0/4', '238.0.0.0/7'), weight: 1 },
  );
  const ruleArbitrary = fc.record({
    action: fc.constantFrom('allow', 'deny'),
    pods: fc.option(fc.subarray(globs, { minLength: 1 }), { nil: undefined }),
    groups: fc.option(fc.array(prefixArbitrary, { minLength: 1, maxLength: 3 }), { nil: undefined }),
    directions: fc.option(fc.subarray(['join', 'send'], { minLength: 1 }), { nil: undefined }),
  });
  const addressArbitrary = fc.oneof(
    fc.integer({ min: 0xef000000, max: 0xef000000 + 1100 }),
    fc.integer({ min: 0xe0000000, max: 0xefffffff }),
    fc.constantFrom(0xe0000000, 0xe00000ff, 0xe0000100, 0xefffffff, 0xeeffffff),
  );

  it('an address is in the prefixes iff decide says send is denied; the prefixes are disjoint, sorted and minimal', () => {
    fc.assert(
      fc.property(
        fc.array(ruleArbitrary, { maxLength: 8 }),
        fc.array(addressArbitrary, { minLength: 1, maxLength: 30 }),
        (ruleList, addresses) => {
          const parsed = parseGroupPolicy(JSON.stringify({ rules: ruleList }), 'p.json');
          for (const pod of pods) {
            // A rule without groups covers IPv6 too: those prefixes are group-policy-ipv6.test.ts's.
            const prefixes = parsed.deniedSendPrefixes(pod).filter((prefix) => prefix.family === 'ipv4');
            checkMinimal(prefixes);
            for (const value of addresses) {
              for (const direction of ['join', 'send'] as const) {
                const expected = firstMatch(ruleList, pod, value, direction);
                assert.deepEqual(
                  parsed.decide(pod, g(formatIPv4(value)), direction).allowed,
                  expected,
                  `${pod} ${formatIPv4(value)} ${direction}`,
                );
              }
              const inPrefixes = prefixes.some((prefix) => prefixContains(prefix, value));
              assert.equal(
                inPrefixes,
                !parsed.decide(pod, g(formatIPv4(value)), 'send').allowed,
                `${pod} ${formatIPv4(value)}`,
              );
            }
            // The edges of every prefix, and the addresses just outside it.
            for (const prefix of prefixes) {
              const { start, end } = prefixRange(prefix);
              for (const value of [start - 1, start, end, end + 1]) {
                if (value < 0xe0000000 || value > 0xefffffff) continue;
                const inPrefixes = prefixes.some((other) => prefixContains(other, value));
                assert.equal(inPrefixes, !parsed.decide(pod, g(formatIPv4(value)), 'send').allowed);
              }
            }
          }
        },
      ),
      { numRuns: 300 },
    );
  });
});

interface GeneratedRule {
  action: string;
  pods?: string[] | undefined;
  groups?: string[] | undefined;
  directions?: string[] | undefined;
}

/** The rules read one by one, as the file's comment says: the first that matches decides; none, allowed. */
function firstMatch(rules: readonly GeneratedRule[], pod: string, value: number, direction: PolicyDirection): boolean {
  if (value <= 0xe00000ff) return true; // link-local: never governed
  for (const rule of rules) {
    const podMatched =
      rule.pods === undefined ||
      rule.pods.some((glob) => podMatches((parsePodGlob(glob) as { glob: PodGlob }).glob, pod));
    const groupMatched =
      rule.groups === undefined ||
      rule.groups.some((text) => prefixContains((parsePrefix(text) as { prefix: IpPrefix }).prefix, value));
    const directionMatched = rule.directions === undefined || rule.directions.includes(direction);
    if (podMatched && groupMatched && directionMatched) return rule.action === 'allow';
  }
  return true;
}

/** Sorted, disjoint, and no two adjacent blocks that are the halves of one larger block. */
function checkMinimal(prefixes: readonly IpPrefix[]): void {
  for (let index = 1; index < prefixes.length; index++) {
    const previous = prefixRange(prefixes[index - 1]!);
    const current = prefixRange(prefixes[index]!);
    assert.ok(previous.end < current.start, 'sorted and disjoint');
    const [a, b] = [prefixes[index - 1]!, prefixes[index]!];
    if (previous.end + 1 === current.start && a.length === b.length && a.length > 0) {
      const size = 2 ** (32 - a.length);
      assert.ok(previous.start % (size * 2) !== 0, `${formatPrefix(a)} and ${formatPrefix(b)} could merge`);
    }
  }
}

describe('source addresses', () => {
  const sources = policy([
    'sourceAddresses:',
    '  - pods: kube-system/vrrp-*',
    '    addresses: [10.0.0.0/24, 10.1.2.3]',
    '  - pods: "*/relay"',
    '    addresses: 192.168.1.1',
  ]);
  it('admits the listed addresses for the listed pods only', () => {
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', '10.0.0.255'), true);
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', '10.1.2.3'), true);
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', '10.0.1.0'), false);
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', '192.168.1.1'), false);
    assert.equal(sources.admitsExtraSource('relay', '192.168.1.1'), true);
    assert.equal(sources.admitsExtraSource('other/x', '10.0.0.1'), false);
    assert.equal(sources.admitsExtraSource('kube-system/vrrp-a', 'not an address'), false);
    assert.equal(GroupPolicy.allowAll().admitsExtraSource('a/b', '10.0.0.1'), false);
    assert.equal(sources.ruleCount, 0);
    assert.deepEqual(sources.decide('a/b', g('239.1.2.3'), 'join'), { allowed: true });
  });
});

describe('fingerprint', () => {
  const base = [
    'rules:',
    '  - action: deny',
    '    pods: tenant-b/*',
    '    groups: 239.1.0.0/16',
    '    directions: send',
  ];
  it('is the same for the same policy written differently', () => {
    const same = [
      base,
      [
        '# a comment moves the lines',
        'rules:',
        '  - action: deny',
        '    pods: [tenant-b/*, tenant-b/*]',
        '    groups: [239.1.0.0/17, 239.1.128.0/17]',
        '    directions: [send]',
      ],
      [
        '{"rules": [{"directions": ["send", "send"], "groups": ["239.1.0.0/16"], "pods": "tenant-b/*", "action": "deny"}]}',
      ],
    ];
    const prints = same.map((lines) => policy(lines).fingerprint);
    assert.equal(new Set(prints).size, 1);
    assert.equal(
      policy(['rules:', '  - {action: allow, pods: [a/b, "*/*"]}']).fingerprint,
      policy(['rules:', '  - {action: allow}']).fingerprint,
    );
    assert.equal(
      policy(['sourceAddresses:', '  - {pods: a/b, addresses: 10.0.0.1}', '  - {pods: c/d, addresses: 10.0.0.2}'])
        .fingerprint,
      policy(['sourceAddresses:', '  - {pods: c/d, addresses: 10.0.0.2}', '  - {pods: a/b, addresses: 10.0.0.1}'])
        .fingerprint,
    );
  });
  it('differs when a decision differs', () => {
    const print = policy(base).fingerprint;
    const changed = [
      base.map((line) => line.replace('deny', 'allow')),
      base.map((line) => line.replace('tenant-b/*', 'tenant-c/*')),
      base.map((line) => line.replace('/16', '/17')),
      base.map((line) => line.replace('send', 'join')),
      [...base, 'sourceAddresses:', '  - addresses: 10.0.0.1'],
      [...base, '  - action: deny'],
    ];
    for (const lines of changed) assert.notEqual(policy(lines).fingerprint, print, lines.join('\n'));
  });
});

describe('prefixes', () => {
  it('formats, masks and parses', () => {
    const parsed = parsePrefix('239.1.0.0/16');
    assert.ok(parsed.ok);
    assert.equal(formatPrefix(parsed.prefix), '239.1.0.0/16');
    assert.equal(prefixMask(parsed.prefix), '255.255.0.0');
    assert.equal(prefixMask({ address: '0.0.0.0', length: 0 }), '0.0.0.0');
    assert.equal(prefixMask({ address: '10.0.0.1', length: 32 }), '255.255.255.255');
    assert.deepEqual(parsePrefix('239.1.2.3'), {
      ok: true,
      prefix: { family: 'ipv4', address: '239.1.2.3', length: 32 },
    });
    assert.equal(parsePrefix('239.1.2.3/08').ok, false);
    assert.equal(prefixContains(parsed.prefix, parseIPv4('239.1.255.255')!), true);
    assert.equal(prefixContains(parsed.prefix, parseIPv4('239.2.0.0')!), false);
  });
});

describe('policy loader', () => {
  const directory = mkdtempSync(join(tmpdir(), 'mcastctl-policy-'));
  after(() => rmSync(directory, { recursive: true, force: true }));
  const refusedWith = async (path: string, pattern: RegExp) => {
    await assert.rejects(loadGroupPolicy(path), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.match(error.message, pattern);
      return true;
    });
  };

  it('loads a file', async () => {
    const path = join(directory, 'ok.yaml');
    writeFileSync(path, 'rules:\n  - action: deny\n    groups: 239.0.0.0/8\n');
    const loaded = await loadGroupPolicy(path);
    assert.deepEqual(loaded.decide('a/b', g('239.1.1.1'), 'join'), { allowed: false, line: 2 });
  });
  it('refuses a missing file, naming it', async () => {
    const path = join(directory, 'missing.yaml');
    await refusedWith(path, new RegExp(`${path}.*ENOENT`));
  });
  it('refuses a file over 1 MiB', async () => {
    const path = join(directory, 'large.yaml');
    writeFileSync(path, `# ${'x'.repeat(1024 * 1024)}\n`);
    await refusedWith(path, new RegExp(`${path}.*over the limit of 1 MiB`));
  });
  it('refuses bad YAML and bad content with PATH:LINE', async () => {
    const bad = join(directory, 'bad.yaml');
    writeFileSync(bad, 'rules:\n  - action: deny\n   pods: [a\n');
    await refusedWith(bad, new RegExp(`^${bad}:\\d+: not valid YAML`));
    const wrong = join(directory, 'wrong.yaml');
    writeFileSync(wrong, 'rules:\n  - action: deny\n    groups: 239.1.2.3/8\n');
    await refusedWith(wrong, new RegExp(`^${wrong}:3: .*239\\.0\\.0\\.0/8`));
  });
  it('refuses a directory', async () => {
    await refusedWith(directory, new RegExp(`${directory}: .*directory`));
  });
});

describe('policy loader, of a file that is no policy', () => {
  const directory = mkdtempSync(join(tmpdir(), 'mcastctl-policy-other-'));
  after(() => rmSync(directory, { recursive: true, force: true }));
  let counter = 0;
  /** The UsageError that loading a file of `text` throws. */
  const refusal = async (text: string): Promise<UsageError> => {
    const path = join(directory, `p${++counter}.yaml`);
    writeFileSync(path, text);
    const error = await loadGroupPolicy(path).then(
      () => assert.fail('loaded'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof UsageError, String(error));
    assert.equal(error.code, 'bad-file');
    assert.ok(error.message.startsWith(`${path}:`), error.message);
    return error;
  };

  it('says where, never what the file holds, until its top level is a policy', async () => {
    const texts = [
      'root:x:0:0:secret-line:/root:/bin/bash\nsecond line\n',
      'secret-line: 1\n',
      '- secret-line\n',
      '!secret-line x\n',
      '%TAG !s! tag:secret-line,2000:\n---\n!s!x a\n',
      'rules: !secret-line []\n',
      'rules: &secret-line []\n',
      'rules: *secret-line\n',
      '{"secret-line": [1,}\n',
      'rules: []\nsecret-line: 1\n',
      'secret-line: 1\nsecret-line: 2\n',
    ];
    for (const text of texts) {
      const error = await refusal(text);
      assert.ok(!error.message.includes('secret'), error.message);
      assert.ok(!(error.hint ?? '').includes('secret'), error.hint);
    }
  });

  it('a YAML error is placed by line and column', async () => {
    assert.match(
      await refusal('rules:\n  - {action: deny\n').then((error) => error.message),
      /:\d+: not valid YAML or JSON at column \d+: /,
    );
  });

  it('a policy with a bad entry still names it, in a bounded excerpt free of control characters', async () => {
    assert.match(
      (await refusal('rules:\n  - action: permit\n')).message,
      /:2: "action" must be allow or deny, not "permit"/,
    );
    const long = (await refusal(`rules:\n  - action: deny\n    pods: ${'a'.repeat(500)}\n`)).message;
    assert.ok(long.length < 400, long);
    const bidi = (await refusal('rules:\n  - action: deny\n    pods: "x\\u202e\\u0085\\u2028\\u0007y"\n')).message;
    assert.match(bidi, /:3: pod glob "x\\u202e\\u0085\\u2028\\u0007y"/);
    assert.doesNotMatch(bidi, /[\p{Cc}\p{Cf}\p{Zl}]/u);
  });
});
