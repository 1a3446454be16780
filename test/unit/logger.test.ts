/** The daemon's structured log: text (key=value) and JSON lines, levels, child fields, errors. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { Logger, type LoggerOptions, type LogLevel } from '../../src/runtime/logger.js';
import { UnavailableError } from '../../src/errors.js';

const NOW = new Date('2026-11-30T12:00:00.000Z');

function capture(options: Partial<LoggerOptions> = {}): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = new Logger({
    format: 'text',
    level: 'debug',
    clock: () => NOW,
    stream: { write: (text: string) => lines.push(text) },
    ...options,
  });
  return { logger, lines };
}

describe('logger: text', () => {
  const cases: Array<{
    name: string;
    level: LogLevel;
    message: string;
    fields?: Record<string, unknown>;
    line: string;
  }> = [
    { name: 'a bare message', level: 'info', message: 'started', line: '2026-11-30T12:00:00.000Z info  started' },
    {
      name: 'every level padded to one width',
      level: 'warn',
      message: 'slow',
      line: '2026-11-30T12:00:00.000Z warn  slow',
    },
    { name: 'error', level: 'error', message: 'failed', line: '2026-11-30T12:00:00.000Z error failed' },
    { name: 'debug', level: 'debug', message: 'tick', line: '2026-11-30T12:00:00.000Z debug tick' },
    {
      name: 'plain and quoted values',
      level: 'info',
      message: 'group joined',
      fields: { group: '239.1.2.3', port: 7, pod: 'default/pod a', fast: true, none: null },
      line: '2026-11-30T12:00:00.000Z info  group joined group=239.1.2.3 port=7 pod="default/pod a" fast=true none=null',
    },
    {
      name: 'empty strings, = and quotes are quoted',
      level: 'info',
      message: 'm',
      fields: { a: '', b: 'x=y', c: 'say "hi"' },
      line: '2026-11-30T12:00:00.000Z info  m a="" b="x=y" c="say \\"hi\\""',
    },
    {
      name: 'undefined fields are left out',
      level: 'info',
      message: 'm',
      fields: { a: undefined, b: 1 },
      line: '2026-11-30T12:00:00.000Z info  m b=1',
    },
    {
      name: 'objects and arrays as JSON',
      level: 'info',
      message: 'm',
      fields: { ports: [1, 2], o: { a: 1 } },
      line: '2026-11-30T12:00:00.000Z info  m ports=[1,2] o="{\\"a\\":1}"',
    },
    {
      name: 'a date as ISO 8601, a bigint as digits',
      level: 'info',
      message: 'm',
      fields: { at: NOW, n: 2n ** 64n },
      line: '2026-11-30T12:00:00.000Z info  m at=2026-11-30T12:00:00.000Z n=18446744073709551616',
    },
    {
      name: 'a message stays on one line',
      level: 'info',
      message: 'two\nlines',
      line: '2026-11-30T12:00:00.000Z info  two\\nlines',
    },
    {
      name: 'a key with spaces is made safe',
      level: 'info',
      message: 'm',
      fields: { 'a b': 1 },
      line: '2026-11-30T12:00:00.000Z info  m a_b=1',
    },
    {
      name: 'an McastError as its message and code',
      level: 'error',
      message: 'sync failed',
      fields: { group: '239.1.2.3', error: new UnavailableError('cannot reach OVSDB unix:/x/db.sock: ENOENT') },
      line: '2026-11-30T12:00:00.000Z error sync failed group=239.1.2.3 error="cannot reach OVSDB unix:/x/db.sock: ENOENT" error_code=unavailable',
    },
    {
      name: 'a plain Error as its message',
      level: 'warn',
      message: 'm',
      fields: { err: new Error('boom') },
      line: '2026-11-30T12:00:00.000Z warn  m err=boom',
    },
  ];
  for (const { name, level, message, fields, line } of cases) {
    it(name, () => {
      const { logger, lines } = capture();
      logger[level](message, fields);
      assert.deepEqual(lines, [`${line}\n`]);
    });
  }
});

describe('logger: json', () => {
  it('writes one object a line: time, level, msg, then the fields', () => {
    const { logger, lines } = capture({ format: 'json' });
    logger.info('group joined', { group: '239.1.2.3', port: 7, sources: ['10.0.0.5'] });
    assert.equal(lines.length, 1);
    assert.ok(lines[0]!.endsWith('}\n') && !lines[0]!.slice(0, -1).includes('\n'));
    assert.equal(
      lines[0],
      '{"time":"2026-11-30T12:00:00.000Z","level":"info","msg":"group joined","group":"239.1.2.3","port":7,"sources":["10.0.0.5"]}\n',
    );
  });
  it('errors as message and code; reserved keys are renamed; bigints and dates as strings', () => {
    const { logger, lines } = capture({ format: 'json' });
    logger.error('m\nx', { error: new UnavailableError('down'), level: 'x', n: 5n, at: NOW, gone: undefined });
    assert.deepEqual(JSON.parse(lines[0]!), {
      time: NOW.toISOString(),
      level: 'error',
      msg: 'm\nx',
      error: 'down',
      error_code: 'unavailable',
      field_level: 'x',
      n: '5',
      at: NOW.toISOString(),
    });
  });
  it('survives a cycle', () => {
    const { logger, lines } = capture({ format: 'json' });
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    logger.info('m', { cyclic });
    assert.deepEqual(JSON.parse(lines[0]!).cyclic, { a: 1, self: '[circular]' });
  });
});

describe('logger: fields that clash or carry codes', () => {
  it('in JSON, fields named time, level or msg are written as field_<name>, after the fixed keys', () => {
    const { logger, lines } = capture({ format: 'json' });
    logger.info('m', { time: 'then', level: 'loud', msg: 'other', field: 1 });
    assert.equal(
      lines[0],
      '{"time":"2026-11-30T12:00:00.000Z","level":"info","msg":"m","field_time":"then","field_level":"loud","field_msg":"other","field":1}\n',
    );
  });
  it('in text, such fields keep their names (the line has no keys of its own)', () => {
    const { logger, lines } = capture();
    logger.info('m', { time: 'then', level: 'loud' });
    assert.deepEqual(lines, ['2026-11-30T12:00:00.000Z info  m time=then level=loud\n']);
  });
  it("a system error's string code is written; a code that is not a string is not", () => {
    const { logger, lines } = capture({ format: 'json' });
    const system = Object.assign(new Error('connect ENOENT /x.sock'), { code: 'ENOENT' });
    const numeric = Object.assign(new Error('exit'), { code: 2 });
    logger.warn('m', { cause: system, other: numeric });
    assert.deepEqual(JSON.parse(lines[0]!), {
      time: NOW.toISOString(),
      level: 'warn',
      msg: 'm',
      cause: 'connect ENOENT /x.sock',
      cause_code: 'ENOENT',
      other: 'exit',
    });
  });
  it('bigints nested in objects and arrays are written as strings in JSON and text', () => {
    const json = capture({ format: 'json' });
    json.logger.info('m', { counters: { bytes: 2n ** 64n, list: [1n] } });
    assert.deepEqual(JSON.parse(json.lines[0]!).counters, { bytes: '18446744073709551616', list: ['1'] });
    const text = capture();
    text.logger.info('m', { list: [1n, 2n] });
    assert.deepEqual(text.lines, ['2026-11-30T12:00:00.000Z info  m list="[\\"1\\",\\"2\\"]"\n']);
  });
  it('an Error nested in an object is written as its message', () => {
    const { logger, lines } = capture({ format: 'json' });
    logger.info('m', { result: { error: new UnavailableError('down') } });
    assert.deepEqual(JSON.parse(lines[0]!).result, { error: 'down' });
  });
  it('a cycle in text is written, not thrown', () => {
    const { logger, lines } = capture();
    const cyclic: Record<string, unknown> = { a: 1 };
    cyclic.self = cyclic;
    logger.info('m', { cyclic });
    assert.deepEqual(lines, ['2026-11-30T12:00:00.000Z info  m cyclic="{\\"a\\":1,\\"self\\":\\"[circular]\\"}"\n']);
  });
});

describe('logger: levels and children', () => {
  const table: Array<{ level: LogLevel; written: LogLevel[] }> = [
    { level: 'debug', written: ['debug', 'info', 'warn', 'error'] },
    { level: 'info', written: ['info', 'warn', 'error'] },
    { level: 'warn', written: ['warn', 'error'] },
    { level: 'error', written: ['error'] },
  ];
  for (const { level, written } of table) {
    it(`at ${level}, writes ${written.join(', ')}`, () => {
      const { logger, lines } = capture({ level, format: 'json' });
      for (const each of ['debug', 'info', 'warn', 'error'] as const) logger[each](each);
      assert.deepEqual(
        lines.map((line) => (JSON.parse(line) as { level: string }).level),
        written,
      );
      assert.deepEqual(
        (['debug', 'info', 'warn', 'error'] as const).filter((each) => logger.enabled(each)),
        written,
      );
    });
  }
  it("a child adds its fields to every entry; the entry's own win", () => {
    const { logger, lines } = capture();
    const child = logger.child({ component: 'sync', group: '239.1.2.3' }).child({ worker: 2 });
    child.info('programmed', { group: '239.9.9.9', ports: 3 });
    logger.info('parent');
    assert.deepEqual(lines, [
      '2026-11-30T12:00:00.000Z info  programmed component=sync group=239.9.9.9 worker=2 ports=3\n',
      '2026-11-30T12:00:00.000Z info  parent\n',
    ]);
  });
  it('a stream that throws does not take the caller down', () => {
    const logger = new Logger({
      format: 'text',
      level: 'info',
      stream: {
        write: () => {
          throw new Error('EPIPE');
        },
      },
    });
    assert.doesNotThrow(() => logger.error('m'));
  });
  it('a stream that throws does not take the caller down in JSON either, and later lines are still tried', () => {
    let calls = 0;
    const logger = new Logger({
      format: 'json',
      level: 'info',
      stream: {
        write: () => {
          calls += 1;
          throw new Error('EPIPE');
        },
      },
    });
    assert.doesNotThrow(() => logger.child({ a: 1 }).error('m', { n: 1n }));
    assert.doesNotThrow(() => logger.warn('m'));
    assert.equal(calls, 2);
  });
  it('the level is shared by a logger and its children, whichever sets it', () => {
    const { logger, lines } = capture({ level: 'info' });
    const child = logger.child({ component: 'sync' });
    const grandchild = child.child({ worker: 1 });
    assert.equal(child.level, 'info');
    logger.level = 'warn';
    assert.equal(grandchild.level, 'warn');
    assert.equal(child.enabled('info'), false);
    grandchild.info('dropped');
    grandchild.level = 'debug';
    assert.equal(logger.level, 'debug');
    logger.debug('parent');
    child.debug('child');
    assert.deepEqual(lines, [
      '2026-11-30T12:00:00.000Z debug parent\n',
      '2026-11-30T12:00:00.000Z debug child component=sync\n',
    ]);
  });
  it('defaults to the real clock', () => {
    const lines: string[] = [];
    new Logger({ format: 'json', level: 'info', stream: { write: (text: string) => lines.push(text) } }).info('m');
    const time = Date.parse((JSON.parse(lines[0]!) as { time: string }).time);
    assert.ok(Math.abs(time - Date.now()) < 5_000);
  });
});
