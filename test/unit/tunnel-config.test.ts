/**
 * Tunnel mode's settings: flags and file keys, their defaults, the peers file at start, and every way they can be
 * wrong.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/node-test.js';
import { Command } from 'commander';
import { loadDaemonConfig, type DaemonConfig, type DaemonFlags } from '../../src/controllers/daemon/config/config.js';
import { planReload } from '../../src/controllers/daemon/config/reload.js';
import { KERNEL_ROUTE, type NodeAddressFinder } from '../../src/controllers/daemon/config/tunnel-config.js';
import { addDaemonOptions } from '../../src/cli/options/daemon-options.js';
import { ExitCode, UsageError } from '../../src/errors.js';
import type { HostAddress } from '../../src/wire/ip-address.js';

const directory = mkdtempSync(join(tmpdir(), 'mcastctl-tunnel-config-'));
after(() => rmSync(directory, { recursive: true, force: true }));

let fileCount = 0;
function file(text: string, name = `file-${++fileCount}`): string {
  const path = join(directory, name);
  writeFileSync(path, text);
  return path;
}

/** A kernel whose route toward any peer leaves from 192.168.60.11; records what it was asked. */
function fakeRoutes(source = '192.168.60.11'): NodeAddressFinder & { asked: HostAddress[] } {
  const asked: HostAddress[] = [];
  return {
    asked,
    sourceAddressToward: async (peer) => {
      asked.push(peer);
      return source;
    },
  };
}

function load(flags: DaemonFlags, finder: NodeAddressFinder = fakeRoutes()): Promise<DaemonConfig> {
  return loadDaemonConfig(flags, {}, { nodeAddressFinder: finder });
}

function commandFlags(argv: string[]): DaemonFlags {
  const command = addDaemonOptions(
    new Command('daemon').exitOverride().configureOutput({ writeErr: () => {}, writeOut: () => {} }),
  );
  command.parse(argv, { from: 'user' });
  return command.opts<DaemonFlags>();
}

async function rejectsUsage(promise: Promise<unknown>, pattern: RegExp): Promise<void> {
  await assert.rejects(promise, (error: unknown) => {
    assert.ok(error instanceof UsageError, String(error));
    assert.equal(error.exitCode, ExitCode.Usage);
    assert.match(error.message, pattern);
    return true;
  });
}

describe('tunnel mode settings', () => {
  it('is off without --tunnel-port: no tunnel field at all', async () => {
    const config = await load({});
    assert.equal('tunnel' in config, false);
  });

  it('takes the flags, with the defaults worked out from the rest', async () => {
    const routes = fakeRoutes();
    const config = await load(
      commandFlags(['--tunnel-port', 'tun0', '--peers', '192.168.60.13, 192.168.60.12,192.168.60.12,192.168.60.11']),
      routes,
    );
    assert.deepEqual(config.tunnel, {
      port: 'tun0',
      // Sorted, the repeat once, this node's own address (the route's source) left out quietly.
      peers: ['192.168.60.12', '192.168.60.13'],
      nodeAddress: '192.168.60.11',
      refreshIntervalMs: 30_000,
      peerTimeoutMs: 2 * 30_000 + 10_000,
      maxGroupsPerPeer: 8192,
    });
    // The first peer as given.
    assert.deepEqual(routes.asked, ['192.168.60.13']);
  });

  it('an explicit node address asks no route, and every default can be set', async () => {
    const routes = fakeRoutes();
    const config = await load(
      commandFlags([
        '--tunnel-port=tun0',
        '--peers=10.0.0.2',
        '--node-address=10.0.0.1',
        '--peer-refresh-interval=10s',
        '--peer-timeout=45s',
        '--max-groups-per-peer=100',
        '--robustness=3',
      ]),
      routes,
    );
    assert.deepEqual(config.tunnel, {
      port: 'tun0',
      peers: ['10.0.0.2'],
      nodeAddress: '10.0.0.1',
      refreshIntervalMs: 10_000,
      peerTimeoutMs: 45_000,
      maxGroupsPerPeer: 100,
    });
    assert.deepEqual(routes.asked, []);
  });

  it('the default peer timeout follows robustness and the refresh interval', async () => {
    const config = await load({
      tunnelPort: 'tun0',
      peers: '10.0.0.2',
      robustness: '3',
      peerRefreshInterval: '20s',
      maxGroups: '50',
    });
    assert.equal(config.tunnel?.peerTimeoutMs, 3 * 20_000 + 10_000);
    assert.equal(config.tunnel?.maxGroupsPerPeer, 50);
  });

  it('reads the YAML keys: a list or a comma string of peers', async () => {
    const yaml = file('tunnelPort: tun0\npeers:\n  - 10.0.0.3\n  - 10.0.0.2\nnodeAddress: 10.0.0.1\npeerTimeout: 2m\n');
    const config = await load({ config: yaml });
    assert.deepEqual(config.tunnel?.peers, ['10.0.0.2', '10.0.0.3']);
    assert.equal(config.tunnel?.peerTimeoutMs, 120_000);
    const comma = await load({ config: file('tunnelPort: tun0\npeers: "10.0.0.3,10.0.0.2"\nnodeAddress: 10.0.0.1\n') });
    assert.deepEqual(comma.tunnel?.peers, ['10.0.0.2', '10.0.0.3']);
  });

  it('reads the peers file at start, this node dropped, the first of the file asked for the route', async () => {
    const peers = file('# the cluster\n10.0.0.3\n10.0.0.2  # node 2\n\n10.0.0.1\n');
    const routes = fakeRoutes('10.0.0.1');
    const config = await load({ tunnelPort: 'tun0', peersFile: peers }, routes);
    assert.deepEqual(config.tunnel?.peers, ['10.0.0.2', '10.0.0.3']);
    assert.equal(config.tunnel?.peersFile, peers);
    assert.equal(config.tunnel?.nodeAddress, '10.0.0.1');
    assert.deepEqual(routes.asked, ['10.0.0.1']);
  });

  it('a bad peers file at start exits 64 naming FILE:LINE', async () => {
    const peers = file('10.0.0.2\n10.0.0.300\n');
    await rejectsUsage(
      load({ tunnelPort: 'tun0', peersFile: peers, nodeAddress: '10.0.0.1' }),
      new RegExp(`^${peers}:2: "10\\.0\\.0\\.300" is not an IPv4 address`),
    );
    await rejectsUsage(load({ tunnelPort: 'tun0', peersFile: join(directory, 'missing') }), /cannot read peers file/);
  });

  it('a node alone: an empty list with a node address', async () => {
    const config = await load(commandFlags(['--tunnel-port', 'tun0', '--peers', '', '--node-address', '10.0.0.1']));
    assert.deepEqual(config.tunnel?.peers, []);
    const empty = await load({ tunnelPort: 'tun0', peersFile: file('# nobody yet\n'), nodeAddress: '10.0.0.1' });
    assert.deepEqual(empty.tunnel?.peers, []);
  });

  it('refuses: tunnel settings without --tunnel-port (exit 64, naming the setting)', async () => {
    await rejectsUsage(
      load(commandFlags(['--peers', '10.0.0.2'])),
      /^--peers is a tunnel mode setting: it needs --tunnel-port/,
    );
    await rejectsUsage(load({ peersFile: '/etc/peers' }), /^--peers-file is a tunnel mode setting/);
    await rejectsUsage(load({ nodeAddress: '10.0.0.1' }), /^--node-address is a tunnel mode setting/);
    await rejectsUsage(load({ peerTimeout: '90s' }), /^--peer-timeout is a tunnel mode setting/);
    await rejectsUsage(
      load({ config: file('maxGroupsPerPeer: 10\n') }),
      /line 1: maxGroupsPerPeer is a tunnel mode setting/,
    );
  });

  it('contrib/daemon.yaml as it is (every key at its default) starts with tunnel mode off', async () => {
    const config = await load({ config: new URL('../../contrib/daemon.yaml', import.meta.url).pathname });
    assert.equal(config.tunnel, undefined);
  });

  it('refuses: a tunnel port without peers, peers from two places, no address to take', async () => {
    await rejectsUsage(load({ tunnelPort: 'tun0' }), /^--tunnel-port needs the peers/);
    await rejectsUsage(
      load({ tunnelPort: 'tun0', peers: '10.0.0.2', peersFile: file('10.0.0.3\n') }),
      /^--peers: the peers come from one place/,
    );
    await rejectsUsage(
      load(commandFlags(['--tunnel-port', 'tun0', '--peers', ''])),
      /^--node-address is needed: with no peers/,
    );
    const unroutable: NodeAddressFinder = {
      sourceAddressToward: async () => {
        throw new Error('connect ENETUNREACH');
      },
    };
    await rejectsUsage(
      load({ tunnelPort: 'tun0', peers: '10.0.0.2' }, unroutable),
      /no route to the first peer, 10\.0\.0\.2.*ENETUNREACH/,
    );
  });

  it('refuses bad values, each naming its flag or line', async () => {
    await rejectsUsage(
      load({ tunnelPort: 'tun0', peers: '10.0.0.2,239.1.1.1' }),
      /^--peers: entry 2: "239\.1\.1\.1" is not a unicast address/,
    );
    await rejectsUsage(load({ tunnelPort: 'tun0', peers: '10.0.0.2,,10.0.0.3' }), /^--peers: entry 2: an empty entry/);
    await rejectsUsage(
      load({ config: file('tunnelPort: tun0\npeers:\n  - 10.0.0.2\n  - 127.0.0.1\n') }),
      /line 4: peers: "127\.0\.0\.1" is a loopback address/,
    );
    await rejectsUsage(
      load({ tunnelPort: 'tun0', peers: '10.0.0.2', nodeAddress: '224.0.0.1' }),
      /^--node-address: "224\.0\.0\.1" is not a unicast IPv4 address/,
    );
    await rejectsUsage(
      load({ tunnelPort: 'tun/0', peers: '10.0.0.2' }),
      /^--tunnel-port: "tun\/0" is not an interface name/,
    );
    await rejectsUsage(
      load({ tunnelPort: 'tun0', peers: '10.0.0.2', peerTimeout: '20s' }),
      /^--peer-timeout: 20s must be longer than peerRefreshInterval \(30s, the default\)/,
    );
    await rejectsUsage(
      load({ tunnelPort: 'tun0', peers: '10.0.0.2', maxGroupsPerPeer: '0' }),
      /^--max-groups-per-peer: "0" is not a whole number/,
    );
  });

  it('a reload does not apply a change of the tunnel settings: a restart does (the peers file is read again apart)', async () => {
    const running = await load({ tunnelPort: 'tun0', peers: '10.0.0.2', nodeAddress: '10.0.0.1' });
    const next = await load({
      tunnelPort: 'tun0',
      peers: '10.0.0.2,10.0.0.3',
      nodeAddress: '10.0.0.1',
      peerTimeout: '90s',
    });
    const plan = planReload(running, next);
    assert.deepEqual(plan.applied, []);
    assert.deepEqual(plan.needRestart.sort(), ['peerTimeout', 'peers']);
    assert.deepEqual(plan.config.tunnel, running.tunnel);
    // Peers read from the file are the file's: a changed file is no change of the `peers` setting.
    const peers = file('10.0.0.2\n');
    const fromFile = await load({ tunnelPort: 'tun0', peersFile: peers, nodeAddress: '10.0.0.1' });
    const fileChanged = { ...fromFile, tunnel: { ...fromFile.tunnel!, peers: ['10.0.0.5' as HostAddress] } };
    assert.deepEqual(planReload(fromFile, fileChanged).needRestart, []);
  });

  it('cluster CIDRs: a list or a comma string; needed with multicast interfaces, refused when bad or without a tunnel', async () => {
    const both = {
      tunnelPort: 'tun0',
      peers: '10.0.0.2',
      nodeAddress: '10.0.0.1',
      gateway: 'gw0',
      multicastInterfaces: 'eth1',
    };
    const config = await load(
      commandFlags([
        '--tunnel-port=tun0',
        '--peers=10.0.0.2',
        '--node-address=10.0.0.1',
        '--cluster-cidrs',
        '10.244.0.0/16, 10.99.1.0/24',
      ]),
    );
    assert.deepEqual(config.tunnel?.clusterCidrs, [
      { family: 'ipv4', address: '10.244.0.0', length: 16 },
      { family: 'ipv4', address: '10.99.1.0', length: 24 },
    ]);
    const yaml = await load({
      config: file('tunnelPort: tun0\npeers: 10.0.0.2\nnodeAddress: 10.0.0.1\nclusterCidrs:\n  - 10.244.0.0/16\n'),
    });
    assert.deepEqual(yaml.tunnel?.clusterCidrs, [{ family: 'ipv4', address: '10.244.0.0', length: 16 }]);
    // Tunnel mode and underlay routing at once: the cluster's pod ranges are needed.
    await rejectsUsage(
      load(both),
      /^--tunnel-port with --multicast-interfaces needs --cluster-cidrs: the pods' multicast from other nodes comes through the tunnel/,
    );
    assert.equal((await load({ ...both, clusterCidrs: '10.244.0.0/16' })).tunnel?.clusterCidrs?.length, 1);
    await rejectsUsage(
      load({ ...both, clusterCidrs: '10.244.0.1/16' }),
      /^--cluster-cidrs: entry 1: "10\.244\.0\.1\/16": host bits are set: the block of 10\.244\.0\.1\/16 is 10\.244\.0\.0\/16/,
    );
    await rejectsUsage(
      load({ ...both, clusterCidrs: '10.244.0.0/16,239.0.0.0/8' }),
      /^--cluster-cidrs: entry 2: "239\.0\.0\.0\/8" is not a block of unicast addresses/,
    );
    await rejectsUsage(
      load({ ...both, clusterCidrs: 'pods' }),
      /^--cluster-cidrs: entry 1: "pods": not an address or CIDR block such as 10\.244\.0\.0\/16 or fd00:10:244::\/56/,
    );
    await rejectsUsage(
      load({ ...both, clusterCidrs: '10.1.0.0/16,10.1.0.0/16' }),
      /^--cluster-cidrs: 10\.1\.0\.0\/16 is listed twice/,
    );
    await rejectsUsage(
      load({
        config: file(
          'tunnelPort: tun0\npeers: 10.0.0.2\nnodeAddress: 10.0.0.1\nclusterCidrs:\n  - 10.244.0.0/16\n  - 10.300.0.0/16\n',
        ),
      }),
      /line 6: clusterCidrs: "10\.300\.0\.0\/16": not an address or CIDR block/,
    );
    await rejectsUsage(
      load({ clusterCidrs: '10.244.0.0/16' }),
      /^--cluster-cidrs is a tunnel mode setting: it needs --tunnel-port/,
    );
  });

  it("the kernel's route: connect() gives a source address and sends nothing", async () => {
    // 127.0.0.2 is on lo everywhere; the kernel answers with the source it would use.
    const source = await KERNEL_ROUTE.sourceAddressToward('127.0.0.2' as HostAddress);
    assert.match(source, /^127\./);
  });
});
