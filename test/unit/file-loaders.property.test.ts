/**
 * Every file loader, fed random and hostile YAML (deep nesting, anchors and aliases, huge
 * scalars, wrong types, binary bytes, random unicode): it returns, or throws a typed
 * usage error (exit 64) with a short message; each case within a time bound, and without
 * holding on to memory. Also: the line a message names is the line the `yaml` package
 * (which keeps every node's position) finds, in every layout js-yaml and `yaml` write.
 *
 * The runs are the same every time (a fixed seed); FAST_CHECK_SEED=N and FAST_CHECK_RUNS=N
 * change them. A failure prints the seed and the path of the smallest failing case.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/node-test.js';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import fc from 'fast-check';
import jsYaml from 'js-yaml';
import { isNode, LineCounter, parseDocument, stringify as yamlStringify } from 'yaml';
import { loadDaemonConfig } from '../../src/controllers/daemon/config/config.js';
import { ExitCode, UsageError } from '../../src/errors.js';
import { parseDeclaredState, readDeclaredState } from '../../src/domain/declared-state/declared-state.js';
import { loadYaml } from '../../src/runtime/safe-yaml.js';

const SEED = Number(process.env.FAST_CHECK_SEED ?? 20_261_201);
const RUNS = Number(process.env.FAST_CHECK_RUNS ?? 100);
/** The longest a loader may take on one case (the cases are at most a few hundred KB). */
const CASE_MS = 2_000;
/** Heap a case may leave behind once collected, and may use while it runs. */
const RETAINED_BYTES = 16 * 1024 * 1024;
const TRANSIENT_BYTES = 256 * 1024 * 1024;
/** Messages quote values cut short: even the daemon's, which lists its 24 keys, stays under this. */
const MAX_MESSAGE_CHARACTERS = 800;

// A collector to call between cases, so that heap growth is measured, not guessed.
setFlagsFromString('--expose-gc');
const collect = runInNewContext('gc') as () => void;

const directory = mkdtempSync(join(tmpdir(), 'mcastctl-file-loaders-'));
after(() => rmSync(directory, { recursive: true, force: true }));
let fileCount = 0;

/** Runs one loader on one case; throws (failing the property) on anything but success or a short UsageError. */
async function checkLoader(name: string, run: () => unknown): Promise<void> {
  collect();
  const before = process.memoryUsage().heapUsed;
  const started = performance.now();
  let thrown: unknown;
  try {
    await run();
  } catch (error) {
    thrown = error;
  }
  const elapsed = performance.now() - started;
  const transient = process.memoryUsage().heapUsed - before;
  collect();
  const retained = process.memoryUsage().heapUsed - before;
  if (thrown !== undefined) {
    if (!(thrown instanceof UsageError))
      throw new Error(`${name}: not a UsageError: ${thrown instanceof Error ? thrown.stack : String(thrown)}`);
    assert.equal(thrown.exitCode, ExitCode.Usage, name);
    const { length } = thrown.message;
    assert.ok(
      length > 0 && length <= MAX_MESSAGE_CHARACTERS,
      `${name}: message of ${length} characters: ${thrown.message.slice(0, 200)}`,
    );
    assert.ok(!/\n\s+at /.test(thrown.message), `${name}: a stack trace in the message`);
  }
  assert.ok(elapsed < CASE_MS, `${name}: ${elapsed.toFixed(0)} ms`);
  assert.ok(transient < TRANSIENT_BYTES, `${name}: ${(transient / 2 ** 20).toFixed(0)} MiB of heap while it ran`);
  assert.ok(retained < RETAINED_BYTES, `${name}: ${(retained / 2 ** 20).toFixed(0)} MiB of heap kept`);
}

/** Every loader: the declared-state parser (text, and bytes through its file reader) and the daemon's. */
async function checkEveryLoader(content: string | Uint8Array): Promise<void> {
  const path = join(directory, `case-${++fileCount}.yaml`);
  writeFileSync(path, content);
  const text = typeof content === 'string' ? content : Buffer.from(content).toString('latin1');
  try {
    await checkLoader('parseDeclaredState', () => parseDeclaredState(text, 'case.yaml'));
    await checkLoader('readDeclaredState', () => readDeclaredState(path));
    await checkLoader('loadDaemonConfig', () => loadDaemonConfig({ config: path }, {}));
  } finally {
    rmSync(path, { force: true });
  }
}

/** fast-check's report (seed, path, counterexample), with each long string in it cut to its ends. */
function report<T>(details: fc.RunDetails<T>): void {
  if (!details.failed) return;
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  const message = `${fc.defaultReportMessage(details) ?? 'property failed'}\nGot error: ${error}`;
  throw new Error(
    message.replace(
      /"(?:[^"\\]|\\.){2000,}"/g,
      (text) => `${text.slice(0, 800)}" … (${text.length} characters) … "${text.slice(-400)}`,
    ),
  );
}

const settings = <T>(extra: fc.Parameters<T> = {}): fc.Parameters<T> => ({
  seed: SEED,
  numRuns: RUNS,
  reporter: report,
  ...extra,
});

// Pieces of YAML that mean something to a parser, and values of the right and wrong kinds.
const token = fc.constantFrom(
  ...[
    '-',
    '- ',
    ':',
    ': ',
    '? ',
    '[',
    ']',
    '{',
    '}',
    ',',
    '#',
    '&',
    '*',
    '!',
    '!!',
    '|',
    '>',
    "'",
    '"',
    '%',
    '@',
    '`',
    '\t',
    '\n',
    '\r\n',
    '\r',
    ' ',
    '---',
    '...',
    '<<',
  ],
  ...[
    '&a ',
    '*a',
    '*b',
    '!!binary',
    '!!timestamp',
    '!!set',
    '!!omap',
    '!local',
    '!<tag:x>',
    '%YAML 1.1\n---\n',
    '\uFEFF',
    '\u2028',
    '\u0000',
    '\u001b[31m',
  ],
);
const scalar = fc.oneof(
  fc.constantFrom(
    '239.1.2.3',
    '232.1.1.1',
    '224.0.0.251',
    '10.0.0.5',
    '0.0.0.0',
    '239.1.2',
    '239.1.1.300',
    'eth0',
    'gw0',
    'pod-a',
    '7',
    '0',
    '65280',
    '-1',
    '1.5',
  ),
  fc.constantFrom(
    'null',
    '~',
    'true',
    'no',
    '0x10',
    '0o17',
    '1e400',
    '.nan',
    '.inf',
    '2001-12-14',
    '125s',
    '2m',
    '500ms',
    'off',
    '127.0.0.1:9815',
    '239.1.1.1:1',
  ),
  fc.string({ unit: 'grapheme', maxLength: 12 }),
  fc.string({ unit: 'binary', maxLength: 6 }),
);
const key = fc.oneof(
  fc.constantFrom(
    'groups',
    'routes',
    'group',
    'ports',
    'source',
    'iif',
    'oifs',
    'queryInterval',
    'workers',
    'gateway',
    'metricsAddress',
    'multicastInterfaces',
  ),
  fc.constantFrom('__proto__', 'constructor', '<<'),
  fc.string({ maxLength: 8 }),
);

/** A JavaScript value shaped like the files, with wrong kinds and wrong values in it. */
const value: fc.Arbitrary<unknown> = fc.letrec<{ value: unknown }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    scalar,
    fc.integer({ min: -10, max: 70_000 }),
    fc.constantFrom(null, true, false, Number.POSITIVE_INFINITY, -0),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(key, tie('value'), { maxKeys: 5 }),
  ),
})).value;

/** A declared-state document, mostly right, sometimes not. */
const declaredDocument = fc.record(
  {
    groups: fc.array(
      fc.record(
        {
          group: fc.oneof(scalar, value),
          ports: fc.oneof(fc.array(fc.oneof(scalar, fc.integer({ min: 0, max: 70_000 })), { maxLength: 4 }), value),
        },
        { requiredKeys: [] },
      ),
      { maxLength: 8 },
    ),
    routes: fc.array(
      fc.record(
        { group: scalar, source: scalar, iif: scalar, oifs: fc.array(scalar, { maxLength: 3 }) },
        { requiredKeys: [] },
      ),
      {
        maxLength: 3,
      },
    ),
    extra: value,
  },
  { requiredKeys: [] },
);

/** A value written out as YAML or JSON, in one of the layouts people and tools write. */
function render(document: unknown, style: number, indent: number): string {
  try {
    switch (style) {
      case 0:
        return JSON.stringify(document, null, indent - 1) ?? 'null';
      case 1:
        return yamlStringify(document, { indent: Math.max(indent, 2) });
      default:
        return jsYaml.dump(document, {
          flowLevel: style - 3,
          indent,
          noArrayIndent: indent % 2 === 0,
          lineWidth: indent * 20,
          skipInvalid: true,
        });
    }
  } catch {
    return String(document);
  }
}
const rendered = (document: fc.Arbitrary<unknown>) =>
  fc
    .tuple(document, fc.integer({ min: 0, max: 6 }), fc.integer({ min: 1, max: 4 }))
    .map(([doc, style, indent]) => render(doc, style, indent));

/** `text` with `insert` put in at a fraction of its length. */
const spliced = (text: string, at: number, insert: string) => {
  const offset = Math.floor(at * text.length);
  return text.slice(0, offset) + insert + text.slice(offset);
};
/** Texts with a few of `inserts` put in at random places. */
const edited = (texts: fc.Arbitrary<string>, inserts: fc.Arbitrary<string>) =>
  fc
    .tuple(texts, fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), inserts), { maxLength: 6 }))
    .map(([text, edits]) => edits.reduce((out, [at, insert]) => spliced(out, at, insert), text));
const hugePrefixes = ['groups: x', 'groups: "x', 'x', '? x', 'a: !x', 'a: &x', 'a: *x', 'metricsAddress: 1.2.3.4:9'];
const flowGroups = (count: number) =>
  Array.from(
    { length: count },
    (_, index) => `{group: 239.0.${index >> 8}.${index & 255}, ports: [${index % 5}]}`,
  ).join(', ');

const hostile = fc.oneof(
  // Deep nesting, flow and block, closed or not, at a random place.
  fc
    .tuple(fc.integer({ min: 60, max: 3_000 }), fc.constantFrom('[', '{a: ', '- ', '-\n', '[{x: '))
    .map(([depth, open]) => `groups: ${open.repeat(depth)}\n`),
  fc
    .integer({ min: 60, max: 2_000 })
    .map(
      (depth) => `groups:\n${Array.from({ length: depth }, (_, level) => `${' '.repeat(level + 2)}-`).join('\n')}\n`,
    ),
  // A billion laughs, and plain anchors and aliases.
  fc.tuple(fc.integer({ min: 2, max: 12 }), fc.integer({ min: 2, max: 12 })).map(([levels, fanOut]) => {
    const lines = [`l0: &l0 [${Array(fanOut).fill('"lol"').join(', ')}]`];
    for (let level = 1; level < levels; level++)
      lines.push(
        `l${level}: &l${level} [${Array(fanOut)
          .fill(`*l${level - 1}`)
          .join(', ')}]`,
      );
    return `${lines.join('\n')}\ngroups: *l${levels - 1}\n`;
  }),
  fc
    .integer({ min: 1, max: 300 })
    .map((count) => `gateway: &g gw0\nmulticastInterfaces: [${Array(count).fill('*g').join(', ')}]\n`),
  // Huge scalars: plain, quoted, a key, a tag, an anchor name.
  fc
    .tuple(fc.integer({ min: 1_000, max: 200_000 }), fc.constantFrom(...hugePrefixes))
    .map(([length, prefix]) => `${prefix}${'x'.repeat(length)}\n`),
  // Many entries, many keys.
  fc
    .integer({ min: 1_000, max: 30_000 })
    .map((count) => Array.from({ length: count }, (_, index) => `k${index}: ${index}`).join('\n')),
  fc.integer({ min: 1_000, max: 20_000 }).map((count) => `groups: [${flowGroups(count)}]\n`),
  // Mostly right documents, and what they become with YAML's own characters put in.
  rendered(declaredDocument),
  edited(rendered(declaredDocument), fc.oneof(token, scalar)),
  edited(rendered(value), token),
  // Noise.
  fc.array(fc.oneof(token, scalar), { maxLength: 60 }).map((parts) => parts.join('')),
  fc.string({ unit: 'grapheme', maxLength: 300 }),
);

describe('file loaders, property: only usage errors, in bounded time and memory', () => {
  it(`hostile and random YAML (seed ${SEED})`, async () => {
    await fc.assert(fc.asyncProperty(hostile, checkEveryLoader), settings());
  });
  it(`binary bytes (seed ${SEED})`, async () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 2_000 }),
      fc
        .tuple(rendered(declaredDocument), fc.uint8Array({ minLength: 1, maxLength: 16 }))
        .map(([text, noise]) => Buffer.concat([Buffer.from(text), noise])),
    );
    await fc.assert(fc.asyncProperty(bytes, checkEveryLoader), settings({ numRuns: Math.ceil(RUNS / 3) }));
  });
});

/** Every path into a document: keys and list indexes, to some depth. */
function pathsOf(document: unknown): (string | number)[][] {
  const paths: (string | number)[][] = [[]];
  const walk = (node: unknown, path: (string | number)[]) => {
    if (path.length >= 5 || typeof node !== 'object' || node === null) return;
    const entries: [string | number, unknown][] = Array.isArray(node)
      ? node.map((item, index) => [index, item])
      : Object.entries(node);
    for (const [step, child] of entries) {
      paths.push([...path, step]);
      walk(child, [...path, step]);
    }
  };
  walk(document, []);
  return paths;
}

/** The line of `path` as the `yaml` package places it: its node's, or its nearest ancestor's. */
function referenceLine(text: string, path: (string | number)[]): number {
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter });
  for (let length = path.length; length >= 0; length--) {
    const node: unknown = document.getIn(path.slice(0, length), true);
    if (isNode(node) && node.range) return lineCounter.linePos(node.range[0]).line;
  }
  return 1;
}

describe('file loaders, property: the line of every node, from one parse', () => {
  it(`is the line the yaml package finds, in every layout (seed ${SEED})`, () => {
    // Documents of keys that both parsers read alike (no merge keys, no YAML 1.1 values).
    const plain = fc.oneof(
      fc.constantFrom('239.1.2.3', 'pod-a', 'eth0', 'a b', 'x: y', '- z', '#c', ''),
      fc.integer({ min: 0, max: 99 }),
      fc.constant(null),
    );
    const tree: fc.Arbitrary<unknown> = fc.letrec<{ node: unknown }>((tie) => ({
      node: fc.oneof(
        { depthSize: 'small' },
        plain,
        fc.array(tie('node'), { maxLength: 4 }),
        fc.dictionary(fc.constantFrom('groups', 'group', 'ports', 'routes', 'k', 'a b'), tie('node'), { maxKeys: 4 }),
      ),
    })).node;
    const document = fc.record({
      groups: fc.array(fc.record({ group: plain, ports: fc.array(plain, { maxLength: 4 }) }), { maxLength: 4 }),
      routes: tree,
    });
    fc.assert(
      fc.property(rendered(document), (text) => {
        const loaded = loadYaml(text);
        for (const path of pathsOf(loaded.document)) {
          assert.equal(loaded.lineOf(path), referenceLine(text, path), `line of ${JSON.stringify(path)} in:\n${text}`);
        }
      }),
      settings(),
    );
  });
});
