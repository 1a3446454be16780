/**
 * Tunnel mode as it is seen: the status and group views built from the remote members, the peer metrics, and `status`
 * and `groups` in both output modes.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, it } from '../helpers/node-test.js';
import { DaemonMetrics } from '../../src/controllers/daemon/observe/metrics.js';
import { tunnelViewOf, withRemoteMembers } from '../../src/controllers/daemon/observe/tunnel-views.js';
import type { RemoteMembersView } from '../../src/domain/peers/remote-members.js';
import { ControlServer } from '../../src/transport/control/control-server.js';
import type { GroupView, TunnelView } from '../../src/transport/control/daemon-view.js';
import type { GroupAddress, HostAddress } from '../../src/wire/ip-address.js';
import { FakeDaemonView, NO_SEAL_DROPS, sampleGroups, sampleStatus } from '../helpers/fake-daemon-view.js';

const host = (text: string) => text as HostAddress;
const group = (text: string) => text as GroupAddress;
/** Monotonic 50 s is wall-clock 2026-01-01T12:00:00Z. */
const clock = { monotonicMs: () => 50_000, wallMs: () => Date.parse('2026-01-01T12:00:00.000Z') };

const REMOTE: RemoteMembersView = {
  peers: [
    { address: host('192.168.60.12'), state: 'up', lastContact: 47_000, members: 2 },
    { address: host('192.168.60.13'), state: 'unknown', lastContact: null, members: 0 },
  ],
  groups: [
    { group: group('239.1.2.3'), members: [{ peer: host('192.168.60.12'), lastRefresh: 47_000, expiresInMs: 67_000 }] },
    { group: group('239.9.9.9'), members: [{ peer: host('192.168.60.12'), lastRefresh: null, expiresInMs: 20_000 }] },
  ],
};

const TUNNEL = {
  port: 'tun0',
  peers: [host('192.168.60.12'), host('192.168.60.13')],
  nodeAddress: host('192.168.60.11'),
  refreshIntervalMs: 30_000,
  peerTimeoutMs: 70_000,
  maxGroupsPerPeer: 8192,
};

describe('tunnel views', () => {
  it('the status part: every peer with its state and last contact in wall-clock time, every drop reason', () => {
    const view = tunnelViewOf({
      tunnel: TUNNEL,
      ofport: 7,
      remote: REMOTE,
      drops: { 'unknown-peer': 3, self: 1 },
      clock,
    });
    assert.deepEqual(view, {
      port: 'tun0',
      ofport: 7,
      nodeAddress: '192.168.60.11',
      authentication: 'address',
      peers: [
        { address: '192.168.60.12', state: 'up', lastContact: '2026-01-01T11:59:57.000Z', members: 2 },
        { address: '192.168.60.13', state: 'unknown', lastContact: null, members: 0 },
      ],
      drops: {
        'unknown-peer': 3,
        self: 1,
        rate: 0,
        unsupported: 0,
        malformed: 0,
        refused: 0,
        ...NO_SEAL_DROPS,
        'over-rate': 0,
      },
    } satisfies TunnelView);
    assert.equal(tunnelViewOf({ tunnel: TUNNEL, ofport: undefined, remote: REMOTE, drops: {}, clock }).ofport, null);
  });

  it('the groups: remote members added to local groups, groups of remote members only listed too, by address', () => {
    const local: GroupView[] = [{ group: '239.1.2.3', ports: [], members: [], synced: true }];
    const views = withRemoteMembers({
      local,
      remote: REMOTE,
      clock,
      dirty: new Set(['239.9.9.9']),
      syncErrors: new Map(),
    });
    assert.deepEqual(views, [
      {
        group: '239.1.2.3',
        ports: [],
        members: [],
        synced: true,
        remoteMembers: [{ peer: '192.168.60.12', lastRefresh: '2026-01-01T11:59:57.000Z', expiresInMs: 67_000 }],
      },
      {
        group: '239.9.9.9',
        ports: [],
        members: [],
        synced: false,
        remoteMembers: [{ peer: '192.168.60.12', lastRefresh: null, expiresInMs: 20_000 }],
      },
    ]);
    const onlyLocal = withRemoteMembers({
      local: [{ group: '239.5.5.5', ports: [], members: [], synced: true }],
      remote: { peers: [], groups: [] },
      clock,
      dirty: new Set(),
      syncErrors: new Map(),
    });
    assert.deepEqual(onlyLocal[0]?.remoteMembers, []);
  });
});

describe('peer metrics', () => {
  it('members and drops read from the status at each scrape; messages counted, a removed peer’s series gone', async () => {
    const view = new FakeDaemonView();
    const metrics = new DaemonMetrics(view);
    assert.doesNotMatch(await metrics.registry.metrics(), /^mcastctl_peer_members\{/m, 'no series out of tunnel mode');
    view.statusValue = sampleStatus({
      tunnel: tunnelViewOf({ tunnel: TUNNEL, ofport: 7, remote: REMOTE, drops: { rate: 4 }, clock }),
    });
    metrics.peerMessage('192.168.60.12', 'in', 'report', 3);
    metrics.peerMessage('192.168.60.12', 'out', 'query');
    metrics.peerMessage('192.168.60.13', 'out', 'report', 0);
    let text = await metrics.registry.metrics();
    assert.match(text, /^mcastctl_peer_members\{peer="192\.168\.60\.12"\} 2$/m);
    assert.match(text, /^mcastctl_peer_members\{peer="192\.168\.60\.13"\} 0$/m);
    assert.match(text, /^mcastctl_peer_drops_total\{reason="rate"\} 4$/m);
    assert.match(text, /^mcastctl_peer_drops_total\{reason="unknown-peer"\} 0$/m);
    assert.match(text, /^mcastctl_peer_messages_total\{peer="192\.168\.60\.12",direction="in",type="report"\} 3$/m);
    assert.match(text, /^mcastctl_peer_messages_total\{peer="192\.168\.60\.12",direction="out",type="query"\} 1$/m);
    assert.doesNotMatch(text, /peer="192\.168\.60\.13",direction/);
    metrics.peerRemoved('192.168.60.12');
    text = await metrics.registry.metrics();
    assert.doesNotMatch(text, /^mcastctl_peer_messages_total\{/m);
  });
});

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = 'import { run } from "./src/cli/main.js"; process.exitCode = await run(process.argv.slice(1));';

function cli(args: readonly string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', ENTRY, '--', ...args], {
    cwd: REPO_ROOT,
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1', TZ: 'UTC' },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

describe('status and groups in tunnel mode', { concurrency: true }, () => {
  let root: string;
  let path: string;
  let server: ControlServer;
  const view = new FakeDaemonView();
  const now = Date.now();
  before(async () => {
    root = await mkdtemp(join(tmpdir(), 'mcastctl-tunnel-cli-'));
    path = join(root, 'mcastctl.sock');
    const liveClock = { monotonicMs: () => 50_000, wallMs: () => now };
    view.statusValue = sampleStatus({
      tunnel: tunnelViewOf({
        tunnel: TUNNEL,
        ofport: 7,
        remote: REMOTE,
        drops: { 'unknown-peer': 3 },
        clock: liveClock,
      }),
    });
    view.groupsValue = withRemoteMembers({
      local: sampleGroups(now),
      remote: REMOTE,
      clock: liveClock,
      dirty: new Set(),
      syncErrors: new Map(),
    });
    server = await ControlServer.listen({ path, view });
  });
  after(async () => {
    await server.close();
    await rm(root, { recursive: true, force: true });
  });

  it('status lists the tunnel and each peer; --json carries them as they are', async () => {
    const human = await cli(['status', '--control-socket', path]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stdout,
      /^tunnel: +tun0 \(7\), node 192\.168\.60\.11, 2 peers \(1 up, 1 unknown\); dropped unknown-peer 3$/m,
    );
    assert.match(human.stdout, /^peer 192\.168\.60\.12: +up, last contact [\d.]+s ago, 2 groups$/m);
    assert.match(human.stdout, /^peer 192\.168\.60\.13: +unknown, never heard from, 0 groups$/m);
    const json = await cli(['status', '--control-socket', path, '--json']);
    assert.deepEqual(JSON.parse(json.stdout).tunnel, view.statusValue.tunnel);
  });

  it('groups shows a row per remote member, and the count; --json has remoteMembers', async () => {
    const human = await cli(['groups', '--control-socket', path]);
    assert.equal(human.code, 0, human.stderr);
    assert.match(
      human.stdout,
      /tunnel +│? *peer +│? *192\.168\.60\.12 +│? *v3 +│? *any source +│? *[\d.]+s ago +│? *1m07s/,
    );
    assert.match(human.stdout, /239\.9\.9\.9 +│? *tunnel +│? *peer +│? *192\.168\.60\.12 .*restored +│? *20s/);
    assert.match(human.stdout, /^3 groups, 3 members, 2 remote members$/m);
    const json = await cli(['groups', '--control-socket', path, '--json', '239.9.9.9']);
    assert.deepEqual(JSON.parse(json.stdout), [
      {
        group: '239.9.9.9',
        ports: [],
        members: [],
        synced: true,
        remoteMembers: [{ peer: '192.168.60.12', lastRefresh: null, expiresInMs: 20_000 }],
      },
    ]);
  });
});
