/**
 * The table of the daemon's settings against what is written elsewhere by hand:
 * contrib/daemon.yaml, mcastctl-daemon(1) (OPTIONS, CONFIGURATION FILE, SIGNALS), the
 * help, and the OVS options every OVS command shares.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';
import { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { addDaemonOptions } from '../../src/cli/options/daemon-options.js';
import { addOvsOptions } from '../../src/cli/options/ovs-options.js';
import { CONFIG_CHECKS } from '../../src/controllers/daemon/config/config-checks.js';
import { DAEMON_CONFIG_KEYS, DAEMON_SETTINGS, RUNTIME_SETTINGS } from '../../src/controllers/daemon/config/settings.js';
import { readDuration, readHex, showMs } from '../../src/runtime/values.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const man = readFileSync(join(ROOT, 'man', 'mcastctl-daemon.1'), 'utf8');
const example = readFileSync(join(ROOT, 'contrib', 'daemon.yaml'), 'utf8');

function section(name: string): string[] {
  const start = man.indexOf(`.SH ${name}\n`);
  assert.ok(start >= 0, `section ${name}`);
  const end = man.indexOf('\n.SH ', start + 1);
  return man.slice(start, end < 0 ? undefined : end).split('\n');
}

/** Roff as the text reads: `\-` is a dash, `\(dq` a double quote. */
function roffText(text: string): string {
  return text.replace(/\\-/g, '-').replace(/\\\(dq/g, '"');
}

/** The paragraph of one flag in OPTIONS: its .B/.BI line up to the next paragraph, as plain text on one line. */
function optionParagraph(lines: string[], flag: string): string | undefined {
  const escaped = flag.replace(/-/g, '\\-');
  const start = lines.findIndex((line) => line === `.B ${escaped}` || line.startsWith(`.BI ${escaped} `));
  if (start < 0) return undefined;
  const end = lines.findIndex((line, index) => index > start && /^\.(TP|PP|SS|SH)\b/.test(line));
  return roffText(
    lines
      .slice(start + 1, end < 0 ? undefined : end)
      .map((line) => line.replace(/^\.(B|BR|I|RB) /, ''))
      .join(' '),
  );
}

function escapeRegExp(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

describe('the table of settings', () => {
  it('has distinct keys and flags; each key is its flag in camelCase (commander names the value so)', () => {
    assert.equal(new Set(DAEMON_CONFIG_KEYS).size, DAEMON_SETTINGS.length);
    assert.equal(new Set(DAEMON_SETTINGS.map((setting) => setting.flag)).size, DAEMON_SETTINGS.length);
    for (const setting of DAEMON_SETTINGS) {
      assert.equal(
        setting.flag.slice(2).replace(/-([a-z])/g, (_, letter: string) => letter.toUpperCase()),
        setting.key,
      );
    }
  });
  it('every runtime setting fills a field of its own, so a reload can copy it', () => {
    for (const setting of DAEMON_SETTINGS.filter((row) => row.runtime))
      assert.ok(setting.field !== undefined, setting.key);
    assert.deepEqual(
      [...RUNTIME_SETTINGS],
      DAEMON_SETTINGS.filter((row) => row.runtime).map((row) => row.key),
    );
  });
  it('every default, as the file writes it, reads back to the default', () => {
    for (const setting of DAEMON_SETTINGS) {
      const value: unknown = parseYaml(setting.fileDefault);
      assert.deepEqual(value === '' ? setting.fallback : setting.parse(value), setting.fallback, setting.key);
    }
  });
  it('names its cross-key checks, each over known keys', () => {
    assert.equal(new Set(CONFIG_CHECKS.map((check) => check.name)).size, CONFIG_CHECKS.length);
    for (const check of CONFIG_CHECKS)
      for (const key of check.keys) assert.ok(DAEMON_CONFIG_KEYS.includes(key), `${check.name}: ${key}`);
  });
});

describe('contrib/daemon.yaml', () => {
  it('sets every key to its default, as the table writes it', () => {
    for (const setting of DAEMON_SETTINGS) {
      assert.match(example, new RegExp(`^${setting.key}: ${escapeRegExp(setting.fileDefault)}$`, 'm'), setting.key);
    }
  });
});

describe('mcastctl-daemon(1)', () => {
  it('CONFIGURATION FILE: every key, with its kind and default', () => {
    const lines = section('CONFIGURATION FILE').map(roffText);
    for (const setting of DAEMON_SETTINGS) {
      const line = lines.find((text) => text.startsWith(`.BR ${setting.key} " (`));
      assert.ok(line !== undefined, `${setting.key} in CONFIGURATION FILE`);
      assert.ok(line.startsWith(`.BR ${setting.key} " (${setting.kind}`), `${setting.key} is ${setting.kind}: ${line}`);
      assert.ok(
        line.includes(`default ${setting.fileDefault}`),
        `${setting.key} defaults to ${setting.fileDefault}: ${line}`,
      );
    }
  });
  it('OPTIONS: every flag (and --no- flag), with its default', () => {
    const lines = section('OPTIONS');
    for (const setting of DAEMON_SETTINGS) {
      const paragraph = optionParagraph(lines, setting.flag);
      assert.ok(paragraph !== undefined, `${setting.flag} in OPTIONS`);
      if (setting.negation !== undefined)
        assert.ok(optionParagraph(lines, setting.negation.flag) !== undefined, `${setting.negation.flag} in OPTIONS`);
      if (setting.flagDefault === undefined) {
        assert.match(paragraph, /\(the default\)/, `${setting.flag} says it is the default`);
        continue;
      }
      const shown = escapeRegExp(setting.flagDefault);
      assert.match(
        paragraph,
        new RegExp(`default:? ${shown}|${shown} \\(the default\\)`, 'i'),
        `${setting.flag} defaults to ${setting.flagDefault}: ${paragraph}`,
      );
    }
  });
  it('SIGNALS: SIGHUP lists exactly the runtime settings', () => {
    const lines = section('SIGNALS');
    const start = lines.indexOf('.B SIGHUP');
    const end = lines.findIndex((line, index) => index > start && line === '.TP');
    const named = lines.slice(start, end).flatMap((line) => /^\.BR? ([a-zA-Z]+)\b/.exec(line)?.[1] ?? []);
    assert.deepEqual(
      named.filter((name) => DAEMON_CONFIG_KEYS.includes(name as never)).sort(),
      [...RUNTIME_SETTINGS].sort(),
    );
  });
});

describe('the help', () => {
  it("ends each setting's help in the table's default", () => {
    const help = addDaemonOptions(new Command('daemon'));
    for (const setting of DAEMON_SETTINGS) {
      const option = help.options.find((candidate) => candidate.long === setting.flag);
      assert.ok(option !== undefined, setting.flag);
      if (setting.flagDefault === undefined) continue;
      const shown = setting.flagDefault === 'none' ? '(default: none)' : `(default ${setting.flagDefault})`;
      assert.ok(option.description.endsWith(shown), `${setting.flag}: ${option.description}`);
    }
  });
  it("the OVS options, shared by every OVS command, are the table's OVS settings with its defaults", () => {
    const ovs = addOvsOptions(new Command('x'));
    const flags = ovs.options.map((option) => option.long);
    assert.deepEqual(
      flags,
      DAEMON_SETTINGS.filter((setting) => setting.help === undefined).map((setting) => setting.flag),
    );
    for (const option of ovs.options) {
      const setting = DAEMON_SETTINGS.find((row) => row.flag === option.long)!;
      assert.ok(
        option.description.endsWith(`(default ${setting.flagDefault})`),
        `${option.long}: ${option.description}`,
      );
    }
  });
});

describe('shared value readers', () => {
  it('durations: units, bare numbers, bounds', () => {
    assert.deepEqual(readDuration('125s'), { ms: 125_000 });
    assert.deepEqual(readDuration(' 2m '), { ms: 120_000 });
    assert.deepEqual(readDuration('500', 'ms'), { ms: 500 });
    assert.deepEqual(readDuration(1.5), { ms: 1_500 });
    assert.deepEqual(readDuration('0.0001'), { ms: 1 });
    assert.deepEqual(readDuration('0'), { problem: 'malformed' });
    assert.deepEqual(readDuration('-1s'), { problem: 'malformed' });
    assert.deepEqual(readDuration('30d'), { problem: 'malformed' });
    assert.deepEqual(readDuration('597h'), { problem: 'too-long' });
    assert.equal(showMs(25_500), '25.5s');
    assert.equal(showMs(100), '100ms');
  });
  it('hexadecimal: with or without 0x, at most 8 digits', () => {
    assert.equal(readHex('4d43'), 0x4d43);
    assert.equal(readHex('0X10000000'), 0x10000000);
    assert.ok(Number.isNaN(readHex('123456789')));
    assert.ok(Number.isNaN(readHex('xyz')));
    assert.ok(Number.isNaN(readHex('')));
  });
});
