/**
 * The daemon host, the daemon's front door (src/controllers/daemon/host/daemon-host.ts),
 * on fakes only: the real loop on the shared fakes (switch, pod directory, clock, state
 * store, peer source), the control and metrics listeners as recorders. No OVS, no
 * namespace, no root. Start, reload (configuration, policy, peers) and stop, and what a
 * failure at each leaves behind.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import type { DaemonConfig } from '../../src/controllers/daemon/config/daemon-config.js';
import {
  type DaemonHostOptions,
  type DaemonHostServices,
  type DaemonLoop,
  DaemonHost,
  type LoopStart,
} from '../../src/controllers/daemon/host/daemon-host.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import { parseGroupPolicy } from '../../src/domain/policy/policy-file.js';
import { McastError, UnavailableError, UsageError } from '../../src/errors.js';
import type { DaemonView } from '../../src/transport/control/daemon-view.js';
import { hostAddress } from '../../src/wire/ip-address.js';
import { testDaemonConfig } from '../fakes/daemon-config.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakePeerSource } from '../fakes/fake-peer-source.js';
import { FakePodDirectory } from '../fakes/fake-pod-directory.js';
import { MemoryStateStore } from '../fakes/fake-state-store.js';
import { FakeSwitch } from '../fakes/fake-switch.js';
import { v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { settle } from '../fakes/wait.js';
import { type PeerKeyRing, parsePeerKeyFile } from '../../src/domain/peers/peer-keys.js';

const NODE = hostAddress('192.168.60.11');
const [PEER2, PEER3] = [hostAddress('192.168.60.12'), hostAddress('192.168.60.13')];
const POLICY_FILE = '/policies/multicast.yaml';
const DENY_ALL = parseGroupPolicy('rules:\n  - {action: deny, pods: "*/*", groups: 224.0.0.0/4}\n', POLICY_FILE);
const TWO_RULES = parseGroupPolicy(
  'rules:\n  - {action: allow, pods: shop/web, groups: 239.1.0.0/16}\n  - {action: deny, pods: "*/*", groups: 224.0.0.0/4}\n',
  POLICY_FILE,
);

interface HostSetup {
  config?: Partial<DaemonConfig>;
  /** The configuration file's reads, in turn (a string: the read fails with it); absent: no --config. */
  configReads?: Array<Partial<DaemonConfig> | string>;
  peers?: FakePeerSource;
  /** The peer key file's reads on SIGHUP, in turn (a string: the read fails with it). */
  peerKeyReads?: Array<PeerKeyRing | string>;
  /** The loop's start fails with this. */
  loopFails?: McastError;
  /** Held until the test releases it: the loop's start waits. */
  holdLoop?: Promise<void>;
}

/** A host started on fakes; what the services were asked to do, in order. */
async function startHost(setup: HostSetup = {}) {
  const clock = new FakeClock();
  const vswitch = new FakeSwitch();
  const pods = new FakePodDirectory().addPort('gw0', 1).addPort('p1', 2, 'shop/web', '10.1.0.2');
  if (setup.config?.tunnel !== undefined) pods.addPort('tun0', 7);
  const store = new MemoryStateStore();
  const logger = new RecordingLogger();
  const calls: string[] = [];
  const views: DaemonView[] = [];
  const policyFiles = new Map([[POLICY_FILE, DENY_ALL]]);
  let loop: MulticastController | undefined;
  let loopStart: LoopStart | undefined;
  const services: DaemonHostServices = {
    async openStateStore(dir) {
      calls.push(`state ${dir}`);
      return store;
    },
    async listenControl({ path, view }) {
      calls.push(`control ${path}`);
      views.push(view);
      return { close: async () => void calls.push('control closed') };
    },
    async listenMetrics(address) {
      calls.push(`metrics ${address}`);
      const metrics = {
        packetIn() {},
        igmpMessage() {},
        ignoredNonPod() {},
        syncDone() {},
        error() {},
        queriesSent() {},
        peerMessage() {},
      };
      return { address: '127.0.0.1:39090', metrics, close: async () => void calls.push('metrics closed') };
    },
    async startLoop(config, start): Promise<DaemonLoop> {
      calls.push('loop');
      loopStart = start;
      await setup.holdLoop;
      if (setup.loopFails !== undefined) throw setup.loopFails;
      loop = new MulticastController({
        config,
        logger: start.logger,
        vswitch,
        podDirectory: pods,
        host: {
          interfaceIPv4: (name) => (name === 'gw0' ? { address: '10.1.0.1', mac: '02:00:00:00:00:01' } : undefined),
          interfaceHolding: (address) => (address === NODE ? 'br-phy' : undefined),
        },
        clock,
        stateStore: start.stateStore,
        ...(start.policy === undefined ? {} : { policy: start.policy }),
        onFatal: start.onFatal,
        pid: 4242,
      });
      start.onCreated?.(loop);
      await loop.start();
      const running = loop;
      const stopLoop = running.stop.bind(running);
      // The fake clock moves on for the stop, which waits up to 2 s for the syncs under way.
      return Object.assign(running, {
        stop: async () => {
          calls.push('loop stopped');
          const stopping = stopLoop();
          clock.advance(2_000);
          await stopping;
        },
      });
    },
  };
  const reads = [...(setup.configReads ?? [])];
  const config = testDaemonConfig(setup.config);
  const options: DaemonHostOptions = {
    config,
    logger,
    services,
    policySource: {
      read: async (file) => {
        const policy = policyFiles.get(file);
        if (policy === undefined) throw new UsageError(`${file}: no such file`);
        return policy;
      },
    },
    ...(setup.configReads === undefined
      ? {}
      : {
          configSource: {
            file: '/etc/mcastctl/daemon.yaml',
            read: async () => {
              const next = reads.shift() ?? {};
              if (typeof next === 'string') throw new UsageError(next);
              return testDaemonConfig({ ...setup.config, ...next });
            },
          },
        }),
    ...(setup.peers === undefined ? {} : { peerSource: setup.peers }),
    peerKeySource: {
      read: async (file) => {
        const next = setup.peerKeyReads?.shift() ?? `${file}: nothing more to read`;
        if (typeof next === 'string') throw new UsageError(next);
        return next;
      },
    },
  };
  const starting = DaemonHost.start(options);
  return {
    starting,
    calls,
    views,
    store,
    logger,
    vswitch,
    clock,
    policyFiles,
    loop: () => loop,
    loopStart: () => loopStart,
  };
}

const TUNNEL = {
  port: 'tun0',
  peers: [PEER2, PEER3],
  nodeAddress: NODE,
  refreshIntervalMs: 2_000,
  peerTimeoutMs: 5_000,
  maxGroupsPerPeer: 100,
};

describe('DaemonHost: start', () => {
  it('opens the state directory, then the control socket and the metrics, then the loop; the view answers from the loop', async () => {
    const { starting, calls, views, logger } = await startHost({ config: { metricsAddress: '127.0.0.1:0' } });
    const host = await starting;
    try {
      assert.deepEqual(calls, [
        'state /nonexistent/state',
        'control /nonexistent/mcastctl.sock',
        'metrics 127.0.0.1:0',
        'loop',
      ]);
      assert.equal(views[0], host.view);
      const status = host.view.status();
      assert.equal(status.bridge, 'br-test');
      assert.equal(status.metricsAddress, '127.0.0.1:39090', 'the address listened on, not the one asked for');
      assert.deepEqual(logger.find('listening')[0]?.fields, {
        controlSocket: '/nonexistent/mcastctl.sock',
        metrics: 'http://127.0.0.1:39090/metrics',
      });
    } finally {
      await host.stop();
    }
  });

  it('until the loop runs, the view answers that the daemon is starting', async () => {
    let release: () => void = () => undefined;
    const holdLoop = new Promise<void>((resolve) => (release = resolve));
    const { starting, views, calls } = await startHost({ holdLoop });
    await settle();
    assert.deepEqual(calls.at(-1), 'loop');
    assert.throws(
      () => views[0]!.status(),
      (error: unknown) => error instanceof UnavailableError && /starting/.test(error.message),
    );
    release();
    const host = await starting;
    assert.equal(host.view.status().bridge, 'br-test');
    await host.stop();
  });

  it('a subscriber that comes while the daemon starts gets its events from the start on; one that leaves gets none', async () => {
    let release: () => void = () => undefined;
    const holdLoop = new Promise<void>((resolve) => (release = resolve));
    const { starting, views, vswitch } = await startHost({ holdLoop });
    await settle();
    const early: string[] = [];
    const gone: string[] = [];
    views[0]!.subscribe((event) => early.push(event.type));
    const leave = views[0]!.subscribe((event) => gone.push(event.type));
    leave();
    release();
    const host = await starting;
    try {
      vswitch.packetIn(v3Report('10.1.0.2', [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.1.1.1' }]), 2);
      await settle();
      assert.ok(early.includes('join'), `the early subscriber saw the join: ${early.join(', ')}`);
      assert.deepEqual(gone, [], 'unsubscribed before the loop existed: nothing');
    } finally {
      await host.stop();
    }
  });

  it('a bad policy file stops the start before anything is opened (64)', async () => {
    const { starting, calls } = await startHost({ config: { groupPolicy: '/policies/missing.yaml' } });
    await assert.rejects(starting, (error: unknown) => error instanceof UsageError && error.exitCode === 64);
    assert.deepEqual(calls, []);
  });

  it("a loop that fails to start leaves nothing listening, and its error is the start's", async () => {
    const failure = new McastError('unavailable', 'OVSDB unix:/nonexistent/db.sock did not answer', { exitCode: 69 });
    const { starting, calls } = await startHost({ config: { metricsAddress: '127.0.0.1:0' }, loopFails: failure });
    await assert.rejects(starting, (error: unknown) => error === failure);
    assert.deepEqual(calls.slice(-2), ['metrics closed', 'control closed']);
  });

  it('starts the loop with the policy file in force', async () => {
    const { starting } = await startHost({ config: { groupPolicy: POLICY_FILE } });
    const host = await starting;
    try {
      assert.equal(host.view.status().groupPolicy?.rules, 1);
      assert.equal(host.view.status().groupPolicy?.file, POLICY_FILE);
    } finally {
      await host.stop();
    }
  });
});

describe('DaemonHost: reload', () => {
  it('a runtime setting changed in the file takes effect, the log level too; another waits for a restart; a bad file leaves what runs', async () => {
    const { starting, logger, loop } = await startHost({
      configReads: [
        { queryIntervalMs: 60_000, logLevel: 'warn', workers: 4 },
        'line 3: queryInterval: "soon" is not a duration',
        {},
      ],
    });
    const host = await starting;
    try {
      await host.reload();
      assert.equal(loop()?.configuration.queryIntervalMs, 60_000);
      assert.equal(logger.level, 'warn');
      assert.deepEqual(
        logger.find('SIGHUP: these settings changed in the file but take effect only at the next start')[0]?.fields,
        { keys: 'workers' },
      );
      assert.ok(
        logger
          .find('SIGHUP: setting changed')
          .some((line) => line.fields['key'] === 'queryInterval' && line.fields['to'] === 60_000),
      );
      await host.reload();
      assert.match(
        String(logger.find('SIGHUP: the configuration was not reloaded; the running one stays')[0]?.fields['error']),
        /not a duration/,
      );
      assert.equal(loop()?.configuration.queryIntervalMs, 60_000, 'the running configuration stays');
    } finally {
      await host.stop();
    }
  });

  it('the group policy is read again: a new one is put in force, a bad one leaves the one in force', async () => {
    const { starting, logger, policyFiles } = await startHost({ config: { groupPolicy: POLICY_FILE } });
    const host = await starting;
    try {
      policyFiles.set(POLICY_FILE, TWO_RULES);
      await host.reload();
      assert.equal(host.view.status().groupPolicy?.rules, 2);
      assert.equal(logger.find('SIGHUP: group policy in force').length, 1);
      assert.ok(logger.find('SIGHUP: no configuration file (--config) to read again').length === 1);
      policyFiles.delete(POLICY_FILE);
      await host.reload();
      assert.equal(host.view.status().groupPolicy?.rules, 2, 'the policy in force stays');
      assert.equal(logger.find('SIGHUP: the group policy was not reloaded; the one in force stays').length, 1);
    } finally {
      await host.stop();
    }
  });

  it('tunnel mode: the peer source is watched; a change reaches the loop at once, a bad read leaves the peers, SIGHUP reads it too', async () => {
    const peers = new FakePeerSource([PEER2, PEER3, NODE]);
    const { starting, logger } = await startHost({ config: { tunnel: TUNNEL }, peers });
    const host = await starting;
    const peersNow = () => host.view.status().tunnel?.peers.map((peer) => peer.address);
    try {
      assert.equal(peers.watching, true);
      assert.deepEqual(peersNow(), [PEER2, PEER3]);
      peers.set([PEER3]);
      await settle();
      assert.deepEqual(peersNow(), [PEER3]);
      assert.deepEqual(logger.find('fake peers changed: the peers changed')[0]?.fields, {
        source: 'fake peers',
        added: '',
        removed: PEER2,
        peers: 1,
      });
      peers.failure = 'fake peers:2: "10.0.0" is not an IPv4 address';
      peers.set([PEER2]);
      await settle();
      assert.deepEqual(peersNow(), [PEER3], 'a bad source leaves the peers');
      assert.equal(logger.find('fake peers changed: the peers were not read again; they stay').length, 1);
      peers.failure = undefined;
      await host.reload();
      assert.deepEqual(peersNow(), [PEER2]);
      await host.reload();
      assert.equal(logger.find('SIGHUP: peers read again; the same peers').length, 1);
    } finally {
      await host.stop();
    }
    assert.equal(peers.watching, false, 'the watch ends at stop');
  });
});

describe('DaemonHost: peer keys', () => {
  const KEYS = '/etc/mcastctl/peer-keys';
  const keyRing = (...keys: string[]) => parsePeerKeyFile(keys.join('\n'), KEYS);
  const [A, B] = ['a1'.repeat(32), 'b2'.repeat(32)];

  it('SIGHUP reads the key file again: new keys are in force, a bad file leaves them, the same keys change nothing', async () => {
    const { starting, logger } = await startHost({
      config: { tunnel: { ...TUNNEL, peerKeys: keyRing(A) } },
      peerKeyReads: [keyRing(A, B), `${KEYS}:2: not a key`, keyRing(A, B)],
    });
    const host = await starting;
    const keysNow = () => host.view.status().tunnel?.authentication;
    try {
      assert.deepEqual(keysNow(), { keyFile: KEYS, keys: keyRing(A).ids });
      await host.reload();
      assert.deepEqual(keysNow(), { keyFile: KEYS, keys: keyRing(A, B).ids });
      assert.deepEqual(logger.find('SIGHUP: peer keys in force')[0]?.fields, {
        file: KEYS,
        keys: keyRing(A, B).ids.join(','),
        sealing: keyRing(A).ids[0],
      });
      await host.reload();
      assert.deepEqual(keysNow(), { keyFile: KEYS, keys: keyRing(A, B).ids }, 'a bad file leaves the keys');
      assert.equal(logger.find('SIGHUP: the peer key file was not read again; the keys in force stay').length, 1);
      await host.reload();
      assert.equal(logger.find('SIGHUP: peer key file read again; the same keys').length, 1);
    } finally {
      await host.stop();
    }
  });

  it('without a key file, the start says that peers are believed by address alone, and SIGHUP reads no key file', async () => {
    const { starting, logger } = await startHost({ config: { tunnel: TUNNEL }, peerKeyReads: [keyRing(A)] });
    const host = await starting;
    try {
      assert.equal(host.view.status().tunnel?.authentication, 'address');
      assert.equal(
        logger.lines.filter((line) => line.message.startsWith('peers are believed by address alone')).length,
        1,
      );
      await host.reload();
      assert.equal(host.view.status().tunnel?.authentication, 'address');
    } finally {
      await host.stop();
    }
  });
});

describe('DaemonHost: stop', () => {
  it('closes the watch and the listeners, then stops the loop with its final save', async () => {
    const peers = new FakePeerSource([PEER2]);
    const { starting, calls, store, vswitch } = await startHost({
      config: { tunnel: TUNNEL, metricsAddress: '127.0.0.1:0' },
      peers,
    });
    const host = await starting;
    vswitch.packetIn(v3Report('10.1.0.2', [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.1.1.1' }]), 2);
    await settle();
    const saves = store.saves;
    await host.stop();
    assert.deepEqual(calls.slice(-3), ['metrics closed', 'control closed', 'loop stopped']);
    assert.equal(peers.watching, false);
    assert.ok(store.saves > saves, 'the final save');
    assert.deepEqual(
      store.state?.groups.map((group) => group.group),
      ['239.1.1.1'],
    );
    await host.stop();
    assert.equal(calls.filter((call) => call === 'loop stopped').length, 1, 'a second stop does nothing');
  });

  it("a failure the loop cannot go on without is the host's: told to whoever listens, once, and kept for the exit", async () => {
    const { starting, loopStart } = await startHost();
    const host = await starting;
    const told: McastError[] = [];
    host.onFailure((error) => told.push(error));
    const first = new McastError('busy', 'another mcastctl daemon took bridge br-test');
    loopStart()!.onFatal(first);
    loopStart()!.onFatal(new McastError('io', 'the routing socket failed'));
    assert.deepEqual(told, [first]);
    assert.equal(host.fatal, first);
    const late: McastError[] = [];
    host.onFailure((error) => late.push(error));
    assert.deepEqual(late, [first], 'a listener added after the failure hears of it at once');
    await host.stop();
  });
});
