/**
 * Tunnel mode's drops by peer: counted by the exchange, shown in the status and the metrics, and gone with a peer taken
 * off the list.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join as joinPath } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, it } from '../helpers/node-test.js';
import { DaemonMetrics } from '../../src/controllers/daemon/observe/metrics.js';
import { PeerExchange } from '../../src/controllers/daemon/tunnel/peer-exchange.js';
import { tunnelViewOf } from '../../src/controllers/daemon/observe/tunnel-views.js';
import { ControlServer } from '../../src/transport/control/control-server.js';
import { groupAddress, type HostAddress, hostAddress } from '../../src/wire/ip-address.js';
import { FakeDaemonView, sampleStatus } from '../helpers/fake-daemon-view.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { igmpFrame, v2Report, v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { NO_SEAL_DROPS } from '../helpers/fake-daemon-view.js';

const NODE = hostAddress('192.168.60.11');
const P2 = hostAddress('192.168.60.12');
const P3 = hostAddress('192.168.60.13');
const STRANGER = hostAddress('10.9.9.9');
const G1 = groupAddress('239.1.1.1');
const G2 = groupAddress('239.1.1.2');
const NO_DROPS = { rate: 0, unsupported: 0, malformed: 0, refused: 0, ...NO_SEAL_DROPS };

const joinOf = (peer: string, group: string) => v3Report(peer, [{ type: 'CHANGE_TO_EXCLUDE_MODE', group }]);
const generalQuery = (peer: string) =>
  igmpFrame(
    { kind: 'query', version: 3, group: '0.0.0.0', maxRespCode: 10, sFlag: false, qrv: 2, qqic: 30, sources: [] },
    { src: peer, dst: '224.0.0.1' },
  );

function exchangeOf(peers: readonly HostAddress[] = [P2, P3]) {
  const clock = new FakeClock();
  const exchange = new PeerExchange({
    port: {
      sendToPeers: async (_frame, to) => ({ sent: to.length, refused: [] }),
      groupsChanged() {},
      clock,
      logger: new RecordingLogger(),
    },
    nodeAddress: NODE,
    sourceMac: () => undefined,
    peers,
    pathMtu: 1_500,
    refreshIntervalMs: 30_000,
    peerTimeoutMs: 70_000,
    maxGroupsPerPeer: 1,
    random: () => 0.5,
  });
  exchange.start();
  return { exchange, clock };
}

/** P2 sends one of each kind of drop a peer can cause; a stranger and this node are dropped too. */
function dropSome(exchange: PeerExchange): void {
  exchange.take(v2Report(P2, G1), P2);
  const corrupt = Buffer.from(joinOf(P2, G1));
  corrupt[corrupt.length - 1]! ^= 0xff; // the IGMP checksum no longer holds
  exchange.take(corrupt, P2);
  exchange.take(
    v3Report(P2, [
      { type: 'CHANGE_TO_EXCLUDE_MODE', group: G1 },
      { type: 'CHANGE_TO_EXCLUDE_MODE', group: G2 },
    ]),
    P2,
  );
  exchange.take(generalQuery(P2), P2);
  exchange.take(generalQuery(P2), P2);
  // A stranger's outer source, even with a peer's name inside: dropped before it is decoded.
  exchange.take(joinOf(P2, G1), STRANGER);
  const strangeCorrupt = Buffer.from(joinOf(STRANGER, G1));
  strangeCorrupt[strangeCorrupt.length - 1]! ^= 0xff;
  exchange.take(strangeCorrupt, STRANGER);
  exchange.take(new Uint8Array(0), undefined);
  exchange.take(joinOf(NODE, G1), NODE);
}

const TUNNEL = {
  port: 'tun0',
  peers: [P2, P3],
  nodeAddress: NODE,
  refreshIntervalMs: 30_000,
  peerTimeoutMs: 70_000,
  maxGroupsPerPeer: 1,
};

describe('drops by peer', () => {
  it("a configured peer's drops are its own; a stranger's, this node's and an unnamed frame's are counted apart; the totals hold all", () => {
    const { exchange } = exchangeOf();
    dropSome(exchange);
    assert.deepEqual(exchange.counters.drops, {
      'unknown-peer': 3,
      self: 1,
      unsupported: 1,
      malformed: 1,
      rate: 1,
      refused: 1,
      ...NO_SEAL_DROPS,
      'over-rate': 0,
    });
    const view = exchange.view();
    assert.deepEqual(
      view.peers.map((peer) => [peer.address, peer.drops]),
      [
        [P2, { rate: 1, unsupported: 1, malformed: 1, refused: 1, ...NO_SEAL_DROPS }],
        [P3, NO_DROPS],
      ],
    );
    assert.deepEqual(view.unattributedDrops, { 'unknown-peer': 3, self: 1, 'over-rate': 0 });
    // Never keyed by a stranger's address.
    assert.doesNotMatch(JSON.stringify(view), /10\.9\.9\.9/);
  });

  it('a peer taken off the list loses its counts (the totals keep them), and starts at 0 if it comes back', () => {
    const { exchange } = exchangeOf();
    dropSome(exchange);
    exchange.setPeers([P3]);
    assert.deepEqual(
      exchange.view().peers.map((peer) => peer.address),
      [P3],
    );
    assert.equal(exchange.counters.drops.refused, 1);
    exchange.setPeers([P2, P3]);
    assert.deepEqual(exchange.view().peers.find((peer) => peer.address === P2)?.drops, NO_DROPS);
  });

  it("the status shows each peer's drops next to its members, and the drops of no peer", () => {
    const { exchange, clock } = exchangeOf();
    dropSome(exchange);
    const view = tunnelViewOf({
      tunnel: TUNNEL,
      ofport: 7,
      remote: exchange.view(),
      drops: exchange.counters.drops,
      clock,
    });
    assert.deepEqual(view.peers[0], {
      address: P2,
      state: 'up',
      lastContact: new Date(clock.wallMs()).toISOString(),
      members: 1,
      drops: { rate: 1, unsupported: 1, malformed: 1, refused: 1, ...NO_SEAL_DROPS },
    });
    assert.deepEqual(view.drops, {
      'unknown-peer': 3,
      self: 1,
      rate: 1,
      unsupported: 1,
      malformed: 1,
      refused: 1,
      ...NO_SEAL_DROPS,
      'over-rate': 0,
    });
    assert.deepEqual(view.unattributedDrops, { 'unknown-peer': 3, self: 1, 'over-rate': 0 });
  });
});

describe('peer drop metrics', () => {
  it("a peer's drops carry its label, the others none; a peer taken off the list loses its members, messages and drops series", async () => {
    const { exchange, clock } = exchangeOf();
    dropSome(exchange);
    const daemonView = new FakeDaemonView();
    const metrics = new DaemonMetrics(daemonView);
    const statusNow = () =>
      sampleStatus({
        tunnel: tunnelViewOf({
          tunnel: TUNNEL,
          ofport: 7,
          remote: exchange.view(),
          drops: exchange.counters.drops,
          clock,
        }),
      });
    daemonView.statusValue = statusNow();
    metrics.peerMessage(P2, 'in', 'report', 2);
    metrics.peerMessage(P3, 'in', 'query');
    let text = await metrics.registry.metrics();
    assert.match(text, /^mcastctl_peer_drops_total\{peer="192\.168\.60\.12",reason="refused"\} 1$/m);
    assert.match(text, /^mcastctl_peer_drops_total\{peer="192\.168\.60\.12",reason="malformed"\} 1$/m);
    assert.match(text, /^mcastctl_peer_drops_total\{peer="192\.168\.60\.13",reason="rate"\} 0$/m);
    assert.doesNotMatch(text, /^mcastctl_peer_drops_total\{reason="malformed"\}/m);
    assert.match(text, /^mcastctl_peer_drops_total\{reason="unknown-peer"\} 3$/m);
    assert.match(text, /^mcastctl_peer_drops_total\{reason="self"\} 1$/m);
    assert.doesNotMatch(text, /10\.9\.9\.9/);
    // One metric, by peer and reason: summed, the series give the node's totals.
    const total = [...text.matchAll(/^mcastctl_peer_drops_total\{[^}]*\} (\d+)$/gm)].reduce(
      (sum, match) => sum + Number(match[1]),
      0,
    );
    assert.equal(total, 8);

    exchange.setPeers([P3]);
    // A send that completes after the reload still counts the peer's message: the next scrape removes it all the same.
    metrics.peerMessage(P2, 'out', 'report');
    daemonView.statusValue = statusNow();
    text = await metrics.registry.metrics();
    assert.doesNotMatch(text, /peer="192\.168\.60\.12"/);
    assert.match(text, /^mcastctl_peer_messages_total\{peer="192\.168\.60\.13",direction="in",type="query"\} 1$/m);
    assert.match(text, /^mcastctl_peer_members\{peer="192\.168\.60\.13"\} 0$/m);
    assert.match(text, /^mcastctl_peer_drops_total\{reason="unknown-peer"\} 3$/m);
  });
});

const REPO_ROOT = fileURLToPath(new URL('../../', import.meta.url));
const ENTRY = 'import { run } from "./src/cli/main.js"; process.exitCode = await run(process.argv.slice(1));';

function statusCommand(socket: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', '--input-type=module', '-e', ENTRY, '--', 'status', '--control-socket', socket],
    {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, NO_COLOR: '1', TZ: 'UTC' },
    },
  );
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

describe('status with drops by peer', () => {
  it("each peer's line ends with its drops, a peer with none as before", async () => {
    const { exchange, clock } = exchangeOf();
    dropSome(exchange);
    const root = await mkdtemp(joinPath(tmpdir(), 'mcastctl-peer-drops-'));
    const view = new FakeDaemonView();
    view.statusValue = sampleStatus({
      tunnel: tunnelViewOf({
        tunnel: TUNNEL,
        ofport: 7,
        remote: exchange.view(),
        drops: exchange.counters.drops,
        clock,
      }),
    });
    const server = await ControlServer.listen({ path: joinPath(root, 'mcastctl.sock'), view });
    try {
      const human = await statusCommand(joinPath(root, 'mcastctl.sock'));
      assert.equal(human.code, 0, human.stderr);
      assert.match(
        human.stdout,
        /^peer 192\.168\.60\.12: +up, .*, 1 group; dropped rate 1, unsupported 1, malformed 1, refused 1$/m,
      );
      assert.match(human.stdout, /^peer 192\.168\.60\.13: +unknown, never heard from, 0 groups$/m);
      assert.match(
        human.stdout,
        /^tunnel: .*; dropped unknown-peer 3, self 1, rate 1, unsupported 1, malformed 1, refused 1$/m,
      );
    } finally {
      await server.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});
