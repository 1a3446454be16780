/** The contract every invocation keeps: help, version, and usage errors, by exit code. */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from '../helpers/node-test.js';
import { mcastctl } from '../lab/cli.js';

describe('mcastctl: help, version and usage errors', () => {
  const cases: [args: string[], code: number, stream: 'stdout' | 'stderr', text: RegExp][] = [
    [['--help'], 0, 'stdout', /Commands:\n\s+snoop/],
    [['help', 'snoop'], 0, 'stdout', /Usage: mcastctl snoop/],
    [['snoop', '--help'], 0, 'stdout', /--iface <name>/],
    [
      ['--version'],
      0,
      'stdout',
      new RegExp(
        `^${(JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string }).version.replace(/\./g, '\\.')}\n$`,
      ),
    ],
    [[], 64, 'stderr', /Usage: mcastctl/],
    [['frobnicate'], 64, 'stderr', /unknown command 'frobnicate'/],
    [['--frobnicate'], 64, 'stderr', /unknown option '--frobnicate'/],
  ];
  for (const [args, code, stream, text] of cases) {
    it(`mcastctl ${args.join(' ') || '(nothing)'} → exit ${code}`, async () => {
      const result = await mcastctl(args);
      assert.equal(result.code, code, result.stderr);
      assert.match(result[stream], text);
    });
  }
  it('--help documents the exit codes of mcastctl(1)', async () => {
    const help = (await mcastctl(['--help'])).stdout;
    const page = readFileSync(new URL('../../man/mcastctl.1', import.meta.url), 'utf8');
    for (const code of ['0', '1', '2', '64', '69', '77']) {
      assert.match(help, new RegExp(`\\b${code}\\s{2,}\\S`), `exit ${code} in --help`);
      assert.match(page, new RegExp(`^\\.B ${code}$`, 'm'), `exit ${code} in mcastctl(1)`);
    }
  });
});
