/**
 * Exit codes of the built CLI (`npm run build` first) for bad addresses, sockets that
 * refuse this user, and overlong arguments; and the metrics server's listen failures.
 * The permission cases run the CLI as nobody (setpriv) against root-owned sockets of
 * mode 0600 in a temp directory: root itself passes any socket's mode.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { MAX_FAILURE_LINE_CHARACTERS, printFailure } from '../../src/cli/exit.js';
import { DaemonMetrics, MetricsServer } from '../../src/controllers/daemon/metrics.js';
import { ExitCode, McastError } from '../../src/errors.js';
import { JsonStreamSplitter } from '../../src/protocol/ovsdb/json-stream.js';
import { FakeDaemonView } from '../helpers/fake-daemon-view.js';
import { cliMissing, mcastctl, REPO_ROOT } from '../lab/cli.js';

const NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];
const built = cliMissing();
const asNobody = process.getuid?.() !== 0 ? 'runs as root, to drop to nobody' : hasSetpriv() ? undefined : 'needs setpriv (util-linux)';

function hasSetpriv(): boolean {
  try {
    execFileSync('setpriv', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** A unix socket server at `path`, owned by root, of `mode`. */
async function listenUnix(path: string, mode: number, onConnection: (socket: net.Socket) => void = (socket) => socket.destroy()): Promise<net.Server> {
  const server = net.createServer(onConnection);
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, resolve));
  chmodSync(path, mode);
  return server;
}

/** Answers `transact` with one bridge without ports, as far as BridgeSession.open reads; anything else with an empty result. */
function fakeOvsdb(socket: net.Socket): void {
  const splitter = new JsonStreamSplitter();
  socket.on('error', () => undefined);
  socket.on('data', (chunk: Buffer) => {
    for (const value of splitter.push(chunk)) {
      const request = value as { id?: unknown; method?: string; params?: unknown[] };
      if (request.id === undefined || request.id === null) continue;
      const result =
        request.method === 'transact'
          ? [{ rows: [{ _uuid: ['uuid', '6f1c1e4a-7e4d-4e1b-9b1a-3c2d1e0f9a8b'], ports: ['set', []] }] }, { rows: [] }, { rows: [] }]
          : request.method === 'echo'
            ? (request.params ?? [])
            : {};
      socket.write(JSON.stringify({ id: request.id, result, error: null }));
    }
  });
}

const closeServer = (server: net.Server | undefined) => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));

describe('exit codes of the built CLI', { skip: built }, () => {
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

  describe('a socket that refuses this user is exit 77, for OVSDB and OpenFlow alike', { skip: asNobody }, () => {
    let dir: string;
    const servers: net.Server[] = [];
    const showArgs = (db: string) => ['show', '--bridge', 'br0', '--db', `unix:${dir}/${db}`, '--openflow', `unix:${dir}/br0.mgmt`];
    before(async () => {
      dir = mkdtempSync(join(tmpdir(), 'mcastctl-exit-'));
      chmodSync(dir, 0o755);
      servers.push(await listenUnix(join(dir, 'locked-db.sock'), 0o600, fakeOvsdb));
      servers.push(await listenUnix(join(dir, 'db.sock'), 0o666, fakeOvsdb));
      servers.push(await listenUnix(join(dir, 'br0.mgmt'), 0o600));
    });
    after(async () => {
      await Promise.all(servers.map(closeServer));
      rmSync(dir, { recursive: true, force: true });
    });

    it('OVSDB: EACCES on db.sock', async () => {
      const result = await mcastctl(showArgs('locked-db.sock'), { wrapper: NOBODY, timeoutMs: 20_000 });
      assert.equal(result.code, ExitCode.NoPermission, result.stderr);
      assert.match(result.stderr, /cannot connect to OVSDB unix:.*locked-db\.sock: EACCES\n.*hint: run as root, or as a user the socket lets in/);
    });

    it('OpenFlow: EACCES on <bridge>.mgmt once OVSDB has answered', async () => {
      const result = await mcastctl(showArgs('db.sock'), { wrapper: NOBODY, timeoutMs: 20_000 });
      assert.equal(result.code, ExitCode.NoPermission, result.stderr);
      assert.match(result.stderr, /cannot connect to OpenFlow unix:.*br0\.mgmt: EACCES\n.*hint: run as root, or as a user the socket lets in/);
    });
  });
});

describe('the one exit path bounds what it prints', () => {
  it('cuts a long line, saying how much was left out, and keeps short ones whole', () => {
    let written = '';
    const stderr = { write: (text: string) => (written += text) };
    printFailure({ exitCode: ExitCode.Usage, message: `first ${'x'.repeat(20_000)}\nsecond`, hint: 'h'.repeat(5000) }, stderr);
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
      const server = await MetricsServer.listen(address, new DaemonMetrics(new FakeDaemonView()).registry);
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

  const withTsx = existsSync(join(REPO_ROOT, 'node_modules/tsx')) ? undefined : 'needs tsx';
  it('a privileged port as nobody is a missing privilege (77)', { skip: asNobody ?? withTsx }, () => {
    const script = `
      const { DaemonMetrics, MetricsServer } = await import(${JSON.stringify(new URL('../../src/controllers/daemon/metrics.ts', import.meta.url).href)});
      const { FakeDaemonView } = await import(${JSON.stringify(new URL('../helpers/fake-daemon-view.ts', import.meta.url).href)});
      const registry = new DaemonMetrics(new FakeDaemonView()).registry;
      try { const server = await MetricsServer.listen('127.0.0.1:1', registry); await server.close(); console.log('{}'); }
      catch (error) { console.log(JSON.stringify({ exitCode: error.exitCode, message: error.message })); }
      process.exit(0);`;
    const argv = [...NOBODY.slice(1), process.execPath, '--import', 'tsx', '--input-type=module', '-e', script];
    const output = execFileSync(NOBODY[0]!, argv, { cwd: REPO_ROOT, encoding: 'utf8' });
    const failure = JSON.parse(output) as { exitCode?: number; message?: string };
    assert.equal(failure.exitCode, ExitCode.NoPermission, output);
    assert.match(failure.message ?? '', /EACCES \(ports below 1024 need root or CAP_NET_BIND_SERVICE\)/);
  });
});
