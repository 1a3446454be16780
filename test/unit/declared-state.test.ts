/** The declared-state file: what it accepts, and that every refusal names the line. */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/node-test.js';
import { ExitCode, UsageError } from '../../src/errors.js';
import { FileRefusedError } from '../../src/runtime/regular-file.js';
import {
  DEFAULT_MAX_STATE_FILE_BYTES,
  parseDeclaredState,
  parseFileSize,
  readDeclaredState,
} from '../../src/domain/declared-state/declared-state.js';

describe('declared state file', () => {
  it('reads YAML with port names and numbers', () => {
    const text = [
      '# static groups',
      'groups:',
      '  - group: 239.1.2.3',
      '    ports: [pod-a, 7]',
      '  - {group: 232.1.1.1, ports: ["pod-b"]}',
      '',
    ].join('\n');
    const state = parseDeclaredState(text, 'groups.yaml');
    assert.deepEqual(
      state.groups.map((g) => [g.group, g.ports, g.where()]),
      [
        ['239.1.2.3', [{ name: 'pod-a' }, { ofport: 7 }], 'groups.yaml:3'],
        ['232.1.1.1', [{ name: 'pod-b' }], 'groups.yaml:5'],
      ],
    );
  });
  it('reads static kernel routes', () => {
    const state = parseDeclaredState(
      'routes:\n  - {group: 239.1.2.3, source: 10.0.0.5, iif: eth0, oifs: [gw0, eth1]}\n',
      'g.yaml',
    );
    assert.deepEqual(
      state.routes.map((r) => [r.group, r.source, r.iif, r.oifs, r.where()]),
      [['239.1.2.3', '10.0.0.5', 'eth0', ['gw0', 'eth1'], 'g.yaml:2']],
    );
    assert.deepEqual(state.groups, []);
  });
  it('reads JSON', () => {
    assert.deepEqual(
      parseDeclaredState('{"groups": [{"group": "239.1.2.3", "ports": ["p1", 2]}]}', 'g.json').groups[0]?.ports,
      [{ name: 'p1' }, { ofport: 2 }],
    );
  });
  it('an empty file or an empty list declares nothing', () => {
    assert.deepEqual(parseDeclaredState('', 'g.yaml').groups, []);
    assert.deepEqual(parseDeclaredState('groups: []\n', 'g.yaml').groups, []);
  });
  const refusals: [string, string, RegExp][] = [
    ['YAML syntax', 'groups:\n  - group: 239.1.2.3\n    ports: [a\n', /^g\.yaml:4: not valid YAML or JSON/],
    ['an unknown top-level key', 'groups: []\ngroop: []\n', /^g\.yaml:2: unknown key "groop"/],
    ['an unknown key in a group', 'groups:\n  - group: 239.1.2.3\n    portz: [a]\n', /^g\.yaml:3: unknown key "portz"/],
    [
      'a unicast group',
      'groups:\n  - group: 10.0.0.1\n    ports: [a]\n',
      /^g\.yaml:2: 10\.0\.0\.1 is not a multicast address/,
    ],
    [
      'a link-local group',
      'groups:\n  - group: 224.0.0.251\n    ports: [a]\n',
      /^g\.yaml:2: 224\.0\.0\.251 is link-local/,
    ],
    [
      'not an address',
      'groups:\n  - group: 239.1.2\n    ports: [a]\n',
      /^g\.yaml:2: "239\.1\.2" is not an IPv4 or IPv6 address/,
    ],
    ['no ports', 'groups:\n  - group: 239.1.2.3\n', /^g\.yaml:2: group 239\.1\.2\.3 needs "ports"/],
    [
      'an empty port list',
      'groups:\n  - group: 239.1.2.3\n    ports: []\n',
      /^g\.yaml:3: "ports" must be a non-empty list/,
    ],
    ['port 0', 'groups:\n  - group: 239.1.2.3\n    ports: [0]\n', /^g\.yaml:3: port 0 is not an OpenFlow port number/],
    [
      'a group twice',
      'groups:\n  - {group: 239.1.2.3, ports: [a]}\n  - {group: 239.1.2.3, ports: [b]}\n',
      /^g\.yaml:3: group 239\.1\.2\.3 is declared twice \(first at line 2\)/,
    ],
    ['not a mapping', '- 239.1.2.3\n', /^g\.yaml:1: the file must be a mapping/],
    [
      'several documents',
      'groups: []\n---\ngroups: []\n',
      /^g\.yaml: not valid YAML or JSON: expected a single document/,
    ],
    [
      'a route with a multicast source',
      'routes:\n  - {group: 239.1.2.3, source: 239.0.0.1, iif: a, oifs: [b]}\n',
      /^g\.yaml:2: "source" must be a unicast host address/,
    ],
    [
      'a route without oifs',
      'routes:\n  - group: 239.1.2.3\n    source: 10.0.0.5\n    iif: a\n',
      /^g\.yaml:2: a route needs "oifs"/,
    ],
    [
      'a route twice',
      'routes:\n  - {group: 239.1.2.3, source: 10.0.0.5, iif: a, oifs: [b]}\n  - {group: 239.1.2.3, source: 10.0.0.5, iif: c, oifs: [d]}\n',
      /^g\.yaml:3: route \(10\.0\.0\.5, 239\.1\.2\.3\) is declared twice \(first at line 2\)/,
    ],
  ];
  for (const [name, text, message] of refusals) {
    it(`refuses ${name}, naming the line`, () => {
      assert.throws(
        () => parseDeclaredState(text, 'g.yaml'),
        (error: unknown) => error instanceof UsageError && message.test(error.message),
      );
    });
  }
});

/** Asserts that `run` throws a UsageError (exit 64) whose message matches. */
function throwsUsage(run: () => unknown, message: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof UsageError, String(error));
    assert.equal(error.exitCode, ExitCode.Usage);
    assert.match(error.message, message);
    return true;
  });
}

/** `count` valid groups in block style, two lines each from line 2, then `tail`. */
function manyGroups(count: number, tail = ''): string {
  const lines = ['groups:'];
  for (let index = 0; index < count; index++) {
    lines.push(
      `  - group: 239.${(index >> 16) & 255}.${(index >> 8) & 255}.${index & 255}`,
      `    ports: [pod-a, ${(index % 100) + 1}]`,
    );
  }
  return `${lines.join('\n')}\n${tail}`;
}

describe('declared state file: lines, in every layout', () => {
  const cases: [name: string, text: string, message: RegExp][] = [
    [
      'a bad port deep in a flow list',
      'groups:\n  - group: 239.1.2.3\n    ports:\n      - a\n      - # comment\n        0\n',
      /^g\.yaml:6: port 0 is not/,
    ],
    [
      'a bad group in multi-line JSON',
      '{\n  "groups": [\n    {"group": "239.1.2.3", "ports": ["a"]},\n    {\n      "group": "10.0.0.1",\n      "ports": ["b"]\n    }\n  ]\n}\n',
      /^g\.yaml:5: 10\.0\.0\.1 is not a multicast/,
    ],
    [
      'a bad port in a JSON list split over lines',
      '{"groups": [{"group": "239.1.2.3",\n "ports": ["a",\n 0]}]}',
      /^g\.yaml:3: port 0/,
    ],
    [
      'a flow list on the line after its key',
      'groups:\n  [\n    {group: 239.1.2.3, ports: [a]},\n    {group: 239.1.2.4,\n     portz: [b]}\n  ]\n',
      /^g\.yaml:5: unknown key "portz"/,
    ],
    [
      'CRLF line ends and a byte order mark',
      '\uFEFFgroups:\r\n  - group: 239.1.2.3\r\n    ports: [a]\r\n  - group: 239.1.2.4\r\n    ports:\r\n      - 0\r\n',
      /^g\.yaml:6: port 0/,
    ],
    ['document markers', '---\ngroups:\n  - group: 239.1.2.3\n    ports: [0]\n...\n', /^g\.yaml:4: port 0/],
    [
      'sequences not indented under their key',
      'groups:\n- group: 239.1.2.3\n  ports:\n  - a\n  - 70000\n',
      /^g\.yaml:5: port 70000/,
    ],
    [
      'a key with no value',
      'groups:\n  - group: 239.1.2.3\n    ports:\n  - group: 239.1.2.4\n    ports: [a]\n',
      /^g\.yaml:3: "ports" must be a non-empty list/,
    ],
    [
      'a route deep in a block entry',
      'routes:\n  - group: 239.1.2.3\n    source: 10.0.0.5\n    iif: eth0\n    oifs:\n      - gw0\n      - ""\n',
      /^g\.yaml:6: "oifs" must be a non-empty list/,
    ],
  ];
  for (const [name, text, message] of cases) {
    it(`names the line: ${name}`, () => throwsUsage(() => parseDeclaredState(text, 'g.yaml'), message));
  }
  it('each entry knows its line, in a file of 100,000 groups', () => {
    const state = parseDeclaredState(manyGroups(100_000), 'big.yaml');
    assert.equal(state.groups.length, 100_000);
    assert.equal(state.groups[0]!.where(), 'big.yaml:2');
    assert.equal(state.groups[99_999]!.where(), `big.yaml:${2 + 2 * 99_999}`);
  });
  it('finds the line of a bad last entry without parsing the file again (as fast as a good file)', () => {
    const count = 20_000;
    const good = manyGroups(count);
    const bad = manyGroups(count, '  - group: 239.255.1.1\n    ports: [a, 0]\n');
    const time = (run: () => unknown) => {
      const started = performance.now();
      try {
        run();
      } catch {
        // timed either way
      }
      return performance.now() - started;
    };
    time(() => parseDeclaredState(good, 'warm.yaml'));
    const goodMs = Math.min(
      time(() => parseDeclaredState(good, 'g.yaml')),
      time(() => parseDeclaredState(good, 'g.yaml')),
    );
    const badMs = time(() => parseDeclaredState(bad, 'g.yaml'));
    throwsUsage(() => parseDeclaredState(bad, 'g.yaml'), new RegExp(`^g\\.yaml:${2 + 2 * count + 1}: port 0 is not`));
    // A second, position-keeping parse of the whole file (the `yaml` package) took ten times one parse.
    assert.ok(badMs < goodMs * 3 + 300, `bad file ${badMs.toFixed(0)} ms, good file ${goodMs.toFixed(0)} ms`);
  });
});

describe('declared state file: hostile YAML is a usage error naming the line', () => {
  it("refuses nesting deeper than 64 levels, before the parser's stack overflows", () => {
    throwsUsage(
      () => parseDeclaredState(`groups: ${'['.repeat(1000)}${']'.repeat(1000)}\n`, 'g.yaml'),
      /^g\.yaml:1: nested deeper than 64 levels/,
    );
    const block = Array.from({ length: 1000 }, (_, depth) => `${' '.repeat(depth * 2)}-`).join('\n');
    throwsUsage(
      () => parseDeclaredState(`groups:\n${block}\n`, 'g.yaml'),
      /^g\.yaml:6\d: nested deeper than 64 levels/,
    );
  });
  it('refuses an anchor, naming its line, even where an alias would be harmless', () => {
    const text =
      'groups:\n  - group: 239.1.2.3\n    ports: &members [a, b]\n  - group: 239.1.2.4\n    ports: *members\n';
    throwsUsage(
      () => parseDeclaredState(text, 'g.yaml'),
      /^g\.yaml:3: an anchor \(&members\): anchors and aliases \(&name, \*name\) are not allowed/,
    );
  });
  it('refuses a billion laughs at its first anchor', () => {
    const levels = ['a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]'];
    for (let level = 1; level < 9; level++) {
      const name = String.fromCharCode(97 + level);
      const previous = String.fromCharCode(96 + level);
      levels.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(', ')}]`);
    }
    throwsUsage(() => parseDeclaredState(`${levels.join('\n')}\n`, 'g.yaml'), /^g\.yaml:1: an anchor \(&a\)/);
  });
  it('refuses an alias without an anchor, saying why', () => {
    throwsUsage(
      () => parseDeclaredState('groups:\n  - *entry\n', 'g.yaml'),
      /^g\.yaml:2: not valid YAML or JSON: unidentified alias "entry": anchors and aliases .* are not allowed/,
    );
  });
  it('quotes a long unknown key cut short', () => {
    throwsUsage(
      () => parseDeclaredState(`${'k'.repeat(10_000)}: 1\n`, 'g.yaml'),
      /^g\.yaml:1: unknown key "k{64}"… \(10000 characters\) \(known: groups, routes\)$/,
    );
  });
});

describe('declared state file: reading it', () => {
  const directory = mkdtempSync(join(tmpdir(), 'mcastctl-declared-state-'));
  after(() => rmSync(directory, { recursive: true, force: true }));
  const refused = async (promise: Promise<unknown>, reason: string, message: RegExp) => {
    await assert.rejects(promise, (error: unknown) => {
      assert.ok(error instanceof FileRefusedError, String(error));
      assert.equal(error.exitCode, ExitCode.Usage);
      assert.equal(error.reason, reason);
      assert.match(error.message, message);
      return true;
    });
  };
  it('reads a regular file', async () => {
    const path = join(directory, 'good.yaml');
    writeFileSync(path, 'groups:\n  - {group: 239.1.2.3, ports: [a]}\n');
    assert.equal((await readDeclaredState(path)).groups[0]?.where(), `${path}:2`);
  });
  it('refuses a FIFO at once instead of waiting for a writer', { timeout: 5_000 }, async () => {
    const path = join(directory, 'fifo.yaml');
    execFileSync('mkfifo', [path]);
    const started = Date.now();
    await refused(readDeclaredState(path), 'not-regular', /cannot read declared state .*fifo\.yaml: a FIFO/);
    assert.ok(Date.now() - started < 2_000);
  });
  it('refuses /dev/zero and a directory', async () => {
    await refused(
      readDeclaredState('/dev/zero'),
      'not-regular',
      /^cannot read declared state \/dev\/zero: a character device/,
    );
    await refused(readDeclaredState(directory), 'not-regular', /a directory/);
  });
  it('refuses a file over the limit before reading it, pointing at --max-file-size', async () => {
    const path = join(directory, 'large.yaml');
    writeFileSync(path, manyGroups(1_000));
    await refused(
      readDeclaredState(path, 16 * 1024),
      'too-large',
      /^cannot read declared state .*large\.yaml: \d+ bytes, over the limit of 16 KiB$/,
    );
    await assert.rejects(
      readDeclaredState(path, 16 * 1024),
      (error: unknown) => error instanceof UsageError && /--max-file-size/.test(error.hint ?? ''),
    );
    assert.equal((await readDeclaredState(path, 1024 * 1024)).groups.length, 1_000);
  });
  it('the default limit holds 100,000 groups with room to spare', () => {
    assert.ok(DEFAULT_MAX_STATE_FILE_BYTES >= 4 * Buffer.byteLength(manyGroups(100_000)));
  });
});

describe('--max-file-size', () => {
  const sizes: [string, number][] = [
    ['65536', 65_536],
    ['512K', 512 * 1024],
    ['64M', 64 * 1024 ** 2],
    ['64MiB', 64 * 1024 ** 2],
    ['64mb', 64 * 1024 ** 2],
    ['1G', 1024 ** 3],
    [' 2 M ', 2 * 1024 ** 2],
  ];
  for (const [text, bytes] of sizes)
    it(`${JSON.stringify(text)} is ${bytes} octets`, () => assert.equal(parseFileSize('--max-file-size', text), bytes));
  for (const text of ['', 'lots', '64Q', '-1', '1.5M', '0', '1000', '2G', 'constructor', '9'.repeat(10_000)]) {
    it(`refuses ${JSON.stringify(text.slice(0, 20))}`, () =>
      throwsUsage(
        () => parseFileSize('--max-file-size', text),
        /^--max-file-size (takes a size|of ".*" is not from 1K to 1G)/,
      ));
  }
});
