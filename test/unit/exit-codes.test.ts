/**
 * Exit codes of the built CLI (`npm run build` first) for bad addresses and overlong
 * arguments; the one exit path's bounds; and the metrics server's listen failures. The
 * cases of a missing privilege need root to drop to nobody: they are in
 * test/e2e/exit-codes-users.test.ts.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { describe, it } from '../helpers/node-test.js';
import { MAX_FAILURE_LINE_CHARACTERS, printFailure } from '../../src/cli/exit.js';
import { DaemonMetrics } from '../../src/controllers/daemon/observe/metrics.js';
import { MetricsServer } from '../../src/controllers/daemon/observe/metrics-server.js';
import { ExitCode, McastError } from '../../src/errors.js';
import { FakeDaemonView } from '../helpers/fake-daemon-view.js';
import { closeServer } from '../helpers/close-server.js';
import { cliMissing, mcastctl } from '../lab/cli.js';

const built = cliMissing();

if (built !== undefined) throw new Error(`these tests run the built CLI: ${built} (run scripts/build.sh)`);

describe('exit codes of the built CLI', () => {
  it('a malformed --db or --openflow address is a usage error (64), with no lookup or connect', async () => {
    for (const [flag, address] of [
      ['--db', 'tcp:999.1.1.1:6640'],
      ['--db', 'tcp:1.2.3:6640'],
      ['--db', 'tcp:bad_host!:6640'],
      ['--db', `unix:/${'a'.repeat(200)}`],
      ['--openflow', 'tcp:999.1.1.1:6653'],
      ['--openflow', 'tcp:0x7f.1:6653'],
      ['--openflow', 'tcp:[1::2::3]:6653'],
      ['--openflow', 'tcp:192.0.2.1:65536'],
    ] as const) {
      const result = await mcastctl(['show', flag, address], { timeoutMs: 20_000 });
      assert.equal(result.code, ExitCode.Usage, `${flag} ${address}: ${result.stderr}`);
      assert.match(result.stderr, /bad (OVSDB|OpenFlow) \(--(db|openflow)\) address/, `${flag} ${address}`);
    }
  });

  it('a 10,000-character value is quoted in part: exit 64 and at most ~1,000 characters on stderr', async () => {
    const long = 'a'.repeat(10_000);
    const digits = '9'.repeat(10_000);
    const cases: string[][] = [
      ['query', '--iface', 'lo', '--version', long],
      ['query', '--iface', 'lo', '--max-resp', digits],
      ['show', '--bridge', long],
      ['show', '--table', long],
      ['show', '--cookie-prefix', long],
      ['show', '--group-id-base', long],
      ['show', '--db', `tcp:${long}:6640`],
      ['show', '--openflow', `unix:/${long}`],
      ['install', '--db', long, '239.1.2.3', '--ports', 'a'],
      ['install', '239.1.2.3', '--ports', long],
      ['groups', long],
      ['snoop', '--count', long],
      ['snoop', '--read', long],
      ['uninstall', long],
    ];
    for (const args of cases) {
      const result = await mcastctl(args, { timeoutMs: 20_000 });
      const shown = args.map((arg) => (arg.length > 20 ? `<${arg.length} characters>` : arg)).join(' ');
      assert.equal(result.code, ExitCode.Usage, `${shown}: ${result.stderr.slice(0, 300)}`);
      // The backstop allows one line of 1,000 characters, its note and a hint.
      assert.ok(result.stderr.length < 1200, `${shown}: ${result.stderr.length} characters on stderr`);
    }
  });
});

describe('the one exit path bounds what it prints', () => {
  it('cuts a long line, saying how much was left out, and keeps short ones whole', () => {
    let written = '';
    const stderr = { write: (text: string) => (written += text) };
    printFailure(
      { exitCode: ExitCode.Usage, message: `first ${'x'.repeat(20_000)}\nsecond`, hint: 'h'.repeat(5000) },
      stderr,
    );
    const lines = written.split('\n').filter((line) => line !== '');
    assert.equal(lines.length, 3);
    for (const line of lines) assert.ok(line.length < MAX_FAILURE_LINE_CHARACTERS + 100, `${line.length}`);
    assert.match(lines[0]!, /^mcastctl: first x+… \(19006 more characters left out\)$/);
    assert.equal(lines[1], 'second');
    assert.match(lines[2]!, /^mcastctl: hint: h+… \(4000 more characters left out\)$/);
  });
  it('prints at most 100 lines of one message', () => {
    let written = '';
    const message = Array.from({ length: 500 }, (_, i) => `problem ${i}`).join('\n');
    printFailure({ exitCode: ExitCode.Failure, message }, { write: (text: string) => (written += text) });
    const lines = written.trimEnd().split('\n');
    assert.equal(lines.length, 101);
    assert.equal(lines[100], '… (400 more lines left out)');
  });
});

describe('the metrics server: why it cannot listen, by exit code', () => {
  const listenFails = async (address: string): Promise<McastError> => {
    try {
      const server = await MetricsServer.listen({
        address,
        registry: new DaemonMetrics(new FakeDaemonView()).registry,
      });
      await server.close();
    } catch (error) {
      assert.ok(error instanceof McastError, String(error));
      return error;
    }
    assert.fail(`listening on ${address} should fail`);
  };

  it('an address not on this host is a usage error (64)', async () => {
    const error = await listenFails('192.0.2.1:9100');
    assert.equal(error.exitCode, ExitCode.Usage);
    assert.match(error.message, /EADDRNOTAVAIL \(no such address on this host\)/);
  });

  it('an address in use is busy (1)', async () => {
    const holder = net.createServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    try {
      const error = await listenFails(`127.0.0.1:${(holder.address() as net.AddressInfo).port}`);
      assert.equal(error.code, 'busy');
      assert.equal(error.exitCode, ExitCode.Failure);
    } finally {
      await closeServer(holder);
    }
  });
});
