/**
 * Exit 77, a missing privilege, as a user without it gets it: the built CLI (`npm run
 * build` first) against root-owned sockets of mode 0600 in a temp directory, and the
 * metrics server on a port below 1024.
 *
 * Needs root, and setpriv of util-linux: root passes any socket's mode and may bind any
 * port, so each case runs as nobody (uid 65534), which only root can become. The other
 * exit codes are tested as any user in test/unit/exit-codes.test.ts.
 *
 * Run: node --import tsx --test test/e2e/exit-codes-users.test.ts
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { ExitCode } from '../../src/errors.js';
import { JsonStreamSplitter } from '../../src/protocol/ovsdb/json-stream.js';
import { closeServer } from '../helpers/close-server.js';
import { cliMissing, mcastctl, REPO_ROOT } from '../lab/cli.js';

const NOBODY = ['setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'];

before(() => {
  assert.equal(process.geteuid?.(), 0, 'these tests drop to nobody, which only root can');
  const missing = cliMissing();
  assert.ok(missing === undefined, `these tests run the built CLI: ${missing}`);
  execFileSync('setpriv', ['--version'], { stdio: 'ignore' }); // ENOENT without util-linux's setpriv
});

/** A unix socket server at `path`, owned by root, of `mode`. */
async function listenUnix(
  path: string,
  mode: number,
  onConnection: (socket: net.Socket) => void = (socket) => socket.destroy(),
): Promise<net.Server> {
  const server = net.createServer(onConnection);
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(path, resolve));
  chmodSync(path, mode);
  return server;
}

/**
 * Answers `transact` with one bridge without ports, as far as BridgeClient.open reads; anything else with an empty
 * result.
 */
function fakeOvsdb(socket: net.Socket): void {
  const splitter = new JsonStreamSplitter();
  socket.on('error', () => undefined);
  socket.on('data', (chunk: Buffer) => {
    for (const value of splitter.push(chunk)) {
      const request = value as { id?: unknown; method?: string; params?: unknown[] };
      if (request.id === undefined || request.id === null) continue;
      const result =
        request.method === 'transact'
          ? [
              { rows: [{ _uuid: ['uuid', '6f1c1e4a-7e4d-4e1b-9b1a-3c2d1e0f9a8b'], ports: ['set', []] }] },
              { rows: [] },
              { rows: [] },
            ]
          : request.method === 'echo'
            ? (request.params ?? [])
            : {};
      socket.write(JSON.stringify({ id: request.id, result, error: null }));
    }
  });
}

describe('exit codes of the built CLI', () => {
  describe('a socket that refuses this user is exit 77, for OVSDB and OpenFlow alike', () => {
    let dir: string;
    const servers: net.Server[] = [];
    const showArgs = (db: string) => [
      'show',
      '--bridge',
      'br0',
      '--db',
      `unix:${dir}/${db}`,
      '--openflow',
      `unix:${dir}/br0.mgmt`,
    ];
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
      assert.match(
        result.stderr,
        /cannot connect to OVSDB unix:.*locked-db\.sock: EACCES\n.*hint: run as root, or as a user the socket lets in/,
      );
    });

    it('OpenFlow: EACCES on <bridge>.mgmt once OVSDB has answered', async () => {
      const result = await mcastctl(showArgs('db.sock'), { wrapper: NOBODY, timeoutMs: 20_000 });
      assert.equal(result.code, ExitCode.NoPermission, result.stderr);
      assert.match(
        result.stderr,
        /cannot connect to OpenFlow unix:.*br0\.mgmt: EACCES\n.*hint: run as root, or as a user the socket lets in/,
      );
    });
  });
});

describe('the metrics server: why it cannot listen, by exit code', () => {
  it('a privileged port as nobody is a missing privilege (77)', () => {
    const script = `
      const { DaemonMetrics } = await import(${JSON.stringify(new URL('../../src/controllers/daemon/observe/metrics.ts', import.meta.url).href)});
      const { MetricsServer } = await import(${JSON.stringify(new URL('../../src/controllers/daemon/observe/metrics-server.ts', import.meta.url).href)});
      const { FakeDaemonView } = await import(${JSON.stringify(new URL('../helpers/fake-daemon-view.ts', import.meta.url).href)});
      const registry = new DaemonMetrics(new FakeDaemonView()).registry;
      try { const server = await MetricsServer.listen({ address: '127.0.0.1:1', registry }); await server.close(); console.log('{}'); }
      catch (error) { console.log(JSON.stringify({ exitCode: error.exitCode, message: error.message })); }
      process.exit(0);`;
    const argv = [...NOBODY.slice(1), process.execPath, '--import', 'tsx', '--input-type=module', '-e', script];
    const output = execFileSync(NOBODY[0]!, argv, { cwd: REPO_ROOT, encoding: 'utf8' });
    const failure = JSON.parse(output) as { exitCode?: number; message?: string };
    assert.equal(failure.exitCode, ExitCode.NoPermission, output);
    assert.match(failure.message ?? '', /EACCES \(ports below 1024 need root or CAP_NET_BIND_SERVICE\)/);
  });
});
