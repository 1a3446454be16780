/**
 * The OVSDB client against a real ovsdb-server (3.x, vswitch schema), private to this
 * test: its own temporary directory, socket and log, run as a child process that is
 * killed afterwards, also on failure (test/lab/ovsdb-server.ts). Nothing here
 * touches the system's OVS. Changes are made, and checked, with ovs-vsctl and
 * ovsdb-tool, independently of the client.
 *
 * Needs ovsdb-server, ovsdb-tool and ovs-vsctl (the openvswitch packages); no root, no
 * network namespace, no ovs-vswitchd (so ovs-vsctl runs with --no-wait).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { connect } from 'node:net';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { ExitCode, UnavailableError } from '../../src/errors.js';
import { OvsdbClient } from '../../src/transport/ovsdb/client.js';
import { asStringMap, namedUuid, ovsdbMap, uuid } from '../../src/protocol/ovsdb/datum.js';
import { OvsdbError, OvsdbTimeoutError } from '../../src/protocol/ovsdb/errors.js';
import type { MonitorUpdateReason, TableUpdates } from '../../src/protocol/ovsdb/monitor.js';
import {
  bridgeInterfaces,
  findBridge,
  NoSuchBridgeError,
  watchInterfaces,
  type InterfaceChanges,
} from '../../src/adapters/ovs/vswitch.js';
import { canConnect, ovsdbServerMissing, PrivateOvsdbServer, VSWITCH_SCHEMA } from '../lab/ovsdb-server.js';

const DB = 'Open_vSwitch';
const missing = ovsdbServerMissing();
if (missing !== false) throw new Error(`these tests run a real ovsdb-server: ${missing} (run scripts/setup.sh)`);

describe('OVSDB client against a real ovsdb-server', () => {
  let server: PrivateOvsdbServer;
  let client: OvsdbClient;
  const clients: OvsdbClient[] = [];

  before(async () => {
    server = await PrivateOvsdbServer.create({ managerRemotes: true });
    client = await open(server.endpoint);
  });

  after(async () => {
    await Promise.all(clients.map((each) => each.close()));
    await server?.destroy();
  });

  async function open(endpoint: string, options: { reconnect?: false } = {}): Promise<OvsdbClient> {
    const opened = await OvsdbClient.connect({
      endpoint,
      timeoutMs: 20_000,
      reconnect: options.reconnect ?? { minDelayMs: 50, maxDelayMs: 500 },
    });
    clients.push(opened);
    return opened;
  }

  it('list_dbs', async () => {
    assert.deepEqual((await client.listDbs()).sort(), ['Open_vSwitch', '_Server']);
  });

  it('get_schema returns the schema file the database was created from', async () => {
    const schema = await client.getSchema(DB);
    const file = JSON.parse(readFileSync(VSWITCH_SCHEMA, 'utf8')) as {
      name: string;
      version: string;
      tables: Record<string, { columns: Record<string, unknown> }>;
    };
    assert.equal(schema.name, file.name);
    assert.equal(schema.version, file.version);
    assert.deepEqual(Object.keys(schema.tables).sort(), Object.keys(file.tables).sort());
    assert.deepEqual(
      Object.keys(schema.tables['Interface']!.columns).sort(),
      Object.keys(file.tables['Interface']!.columns).sort(),
    );
  });

  it('echo', async () => {
    assert.deepEqual(await client.echo(['ping', 1, { a: [true] }]), ['ping', 1, { a: [true] }]);
  });

  it('transact: insert (with uuid-name), select, update, mutate, wait, comment, commit, delete', async () => {
    const [iface, port, bridge, attached, , , committed] = await client.transact(DB, [
      {
        op: 'insert',
        table: 'Interface',
        row: { name: 'tx0', type: 'internal', external_ids: ovsdbMap({ 'pod-name': 'web-1' }) },
        uuidName: 'iface',
      },
      { op: 'insert', table: 'Port', row: { name: 'tx0', interfaces: [namedUuid('iface')] }, uuidName: 'port' },
      {
        op: 'insert',
        table: 'Bridge',
        row: { name: 'br-tx', datapath_type: 'netdev', ports: [namedUuid('port')] },
        uuidName: 'bridge',
      },
      { op: 'mutate', table: 'Open_vSwitch', where: [], mutations: [['bridges', 'insert', [namedUuid('bridge')]]] },
      { op: 'comment', comment: 'mcastctl e2e: add br-tx' },
      {
        op: 'wait',
        table: 'Bridge',
        where: [['name', '==', 'br-tx']],
        columns: ['datapath_type'],
        until: '==',
        rows: [{ datapath_type: 'netdev' }],
        timeout: 0,
      },
      { op: 'commit', durable: false },
    ]);
    assert.match(iface.uuid, /^[0-9a-f-]{36}$/);
    assert.match(port.uuid, /^[0-9a-f-]{36}$/);
    assert.match(bridge.uuid, /^[0-9a-f-]{36}$/);
    assert.equal(attached.count, 1);
    assert.deepEqual(committed, {});
    // Seen independently:
    assert.equal((await server.vsctl('list-br')).trim(), 'br-tx');
    assert.equal((await server.vsctl('list-ports', 'br-tx')).trim(), 'tx0');
    assert.equal((await server.vsctl('get', 'Interface', 'tx0', '_uuid')).trim(), iface.uuid);

    const [selected] = await client.transact(DB, [
      {
        op: 'select',
        table: 'Interface',
        where: [['_uuid', '==', uuid(iface.uuid)]],
        columns: ['name', 'type', 'external_ids'],
      },
    ]);
    assert.deepEqual(selected.rows, [
      { name: 'tx0', type: 'internal', external_ids: { map: [['pod-name', 'web-1']] } },
    ]);

    const [updated, mutated] = await client.transact(DB, [
      {
        op: 'update',
        table: 'Bridge',
        where: [['name', '==', 'br-tx']],
        row: {
          other_config: ovsdbMap({ 'mcast-snooping-disable-flood-unregistered': 'true' }),
          mcast_snooping_enable: true,
        },
      },
      {
        op: 'mutate',
        table: 'Interface',
        where: [['name', '==', 'tx0']],
        mutations: [['external_ids', 'insert', ovsdbMap({ 'pod-namespace': 'default' })]],
      },
    ]);
    assert.equal(updated.count, 1);
    assert.equal(mutated.count, 1);
    assert.equal((await server.vsctl('get', 'Bridge', 'br-tx', 'mcast_snooping_enable')).trim(), 'true');
    assert.equal(
      (await server.vsctl('get', 'Interface', 'tx0', 'external_ids')).trim(),
      '{pod-name=web-1, pod-namespace=default}',
    );

    const [deleted] = await client.transact(DB, [
      { op: 'mutate', table: 'Open_vSwitch', where: [], mutations: [['bridges', 'delete', [uuid(bridge.uuid)]]] },
      { op: 'select', table: 'Bridge', where: [['name', '==', 'br-tx']] },
    ]);
    assert.equal(deleted.count, 1);
    // Bridge is not a root table: once unreferenced it is garbage-collected, with its ports and interfaces.
    assert.equal((await server.vsctl('list-br')).trim(), '');
    const [{ count }] = await client.transact(DB, [
      { op: 'delete', table: 'Manager', where: [['target', '==', 'nothing-here']] },
    ]);
    assert.equal(count, 0);
  });

  it('a referential integrity violation fails the commit: OvsdbError with no operation index', async () => {
    const missing = '00000000-0000-4000-8000-000000000000';
    await assert.rejects(
      client.transact(DB, [
        { op: 'insert', table: 'Bridge', row: { name: 'br-bad', ports: [uuid(missing)] }, uuidName: 'b' },
        { op: 'mutate', table: 'Open_vSwitch', where: [], mutations: [['bridges', 'insert', [namedUuid('b')]]] },
      ]),
      (error) => {
        assert.ok(error instanceof OvsdbError, String(error));
        assert.equal(error.error, 'referential integrity violation');
        assert.match(error.details ?? '', new RegExp(`references nonexistent row ${missing} in table Port`));
        assert.equal(error.operationIndex, undefined);
        assert.match(
          error.message,
          /^OVSDB transact on Open_vSwitch failed at commit, after all 2 operations succeeded: referential integrity violation: /,
        );
        return true;
      },
    );
  });

  it('a constraint violation (duplicate bridge name) fails the commit', async () => {
    await server.vsctl('add-br', 'br-dup');
    await assert.rejects(
      client.transact(DB, [
        { op: 'insert', table: 'Bridge', row: { name: 'br-dup' }, uuidName: 'b' },
        { op: 'mutate', table: 'Open_vSwitch', where: [], mutations: [['bridges', 'insert', [namedUuid('b')]]] },
      ]),
      (error) =>
        error instanceof OvsdbError && error.error === 'constraint violation' && error.operationIndex === undefined,
    );
    await server.vsctl('del-br', 'br-dup');
  });

  it('a failing operation rejects with its index and operation: wait timing out, abort, a bad column value', async () => {
    const wait = {
      op: 'wait',
      table: 'Open_vSwitch',
      where: [],
      columns: ['bridges'],
      until: '!=',
      rows: [{ bridges: [] }],
      timeout: 0,
    } as const;
    await assert.rejects(client.transact(DB, [{ op: 'comment', comment: 'first' }, wait]), (error) => {
      assert.ok(error instanceof OvsdbError);
      assert.equal(error.error, 'timed out');
      assert.equal(error.operationIndex, 1);
      assert.deepEqual(error.operation, wait);
      assert.match(error.message, /failed at operation 1 of 2 \(wait on Open_vSwitch\): timed out/);
      return true;
    });
    await assert.rejects(
      client.transact(DB, [{ op: 'abort' }]),
      (error) => error instanceof OvsdbError && error.error === 'aborted' && error.operationIndex === 0,
    );
    await assert.rejects(
      client.transact(DB, [{ op: 'insert', table: 'Bridge', row: { name: 7 } }]),
      (error) =>
        error instanceof OvsdbError &&
        error.error === 'syntax error' &&
        error.details === 'expected string' &&
        error.operationIndex === 0,
    );
    await assert.rejects(
      client.transact('Nope', [{ op: 'comment', comment: 'x' }]),
      (error) =>
        error instanceof OvsdbError && error.error === 'unknown database' && error.operationIndex === undefined,
    );
  });

  it('assert: fails without the lock, passes once lock() has it', async () => {
    const other = await open(server.endpoint);
    const assertion = [{ op: 'assert', lock: 'mcastctl_e2e' }] as const;
    await assert.rejects(
      other.transact(DB, assertion),
      (error) => error instanceof OvsdbError && error.error === 'not owner',
    );
    assert.equal(await other.lock('mcastctl_e2e'), true);
    assert.deepEqual(await other.transact(DB, assertion), [{}]);
    // A second client queues for the lock, and gets it when the first lets go.
    const third = await open(server.endpoint);
    const locked = once(third, 'locked');
    assert.equal(await third.lock('mcastctl_e2e'), false);
    await other.unlock('mcastctl_e2e');
    assert.deepEqual(await locked, ['mcastctl_e2e']);
  });

  it('cancel (§4.1.4): a transaction blocked in "wait" is cancelled on the server when it times out or is aborted', async () => {
    // ovsdb-server's memory/show counts pending transactions as "triggers:N".
    const triggers = async () => /triggers:(\d+)/.exec(await server.appctl('memory/show'))?.[1] ?? '0';
    const blocked = [
      { op: 'wait', table: 'Open_vSwitch', where: [], columns: ['bridges'], until: '!=', rows: [{ bridges: [] }] },
    ] as const;

    const controller = new AbortController();
    const aborted = assert.rejects(client.transact(DB, blocked, { signal: controller.signal }), /stop waiting/);
    await waitFor(async () => (await triggers()) === '1', 'the blocked transaction on the server');
    controller.abort(new Error('stop waiting'));
    await aborted;
    await waitFor(async () => (await triggers()) === '0', 'the server to drop the cancelled transaction');

    await assert.rejects(client.transact(DB, blocked, { timeoutMs: 300 }), OvsdbTimeoutError);
    await waitFor(async () => (await triggers()) === '0', 'the server to drop the timed-out transaction');
    assert.deepEqual(await client.echo(['after']), ['after']);
  });

  it('monitor: the initial state, then an update when ovs-vsctl adds a bridge, port and interface', async () => {
    const calls: Array<{ reason: MonitorUpdateReason; updates: TableUpdates }> = [];
    const initial = await client.monitor(
      DB,
      'e2e-monitor',
      { Bridge: { columns: ['name', 'ports'] }, Interface: { columns: ['name', 'type'] } },
      (updates, reason) => calls.push({ reason, updates }),
    );
    assert.deepEqual(initial, {}); // no bridges, no interfaces yet
    assert.deepEqual(calls, [{ reason: 'initial', updates: {} }]);
    await server.vsctl('add-br', 'br0', '--', 'add-port', 'br0', 'p1', '--', 'set', 'Interface', 'p1', 'type=internal');
    await waitFor(
      () => calls.some((call) => call.reason === 'update' && namesIn(call.updates, 'Interface').includes('p1')),
      'the update for p1',
    );
    const update = calls.find((call) => call.reason === 'update')!.updates;
    assert.deepEqual(namesIn(update, 'Bridge'), ['br0']);
    assert.deepEqual(namesIn(update, 'Interface').sort(), ['br0', 'p1']);
    const p1 = Object.values(update['Interface']!).find((row) => row.new?.['name'] === 'p1')!;
    assert.equal(p1.old, undefined);
    assert.equal(p1.new?.['type'], 'internal');
    await client.monitorCancel('e2e-monitor');
    const count = calls.length;
    await server.vsctl('add-port', 'br0', 'p-after-cancel');
    await client.echo();
    assert.equal(calls.length, count, 'no callback after monitorCancel');
    await server.vsctl('del-port', 'br0', 'p-after-cancel');
  });

  it('vswitch: findBridge, bridgeInterfaces and watchInterfaces agree with ovs-vsctl', async () => {
    await server.vsctl(
      '--may-exist',
      'add-br',
      'br0',
      '--',
      'set',
      'Bridge',
      'br0',
      'datapath_type=netdev',
      'protocols=OpenFlow13',
      'other_config:mcast-snooping-aging-time=300',
    );
    const bridge = await findBridge(client, 'br0');
    assert.ok(bridge !== undefined);
    assert.equal(bridge.uuid, (await server.vsctl('get', 'Bridge', 'br0', '_uuid')).trim());
    assert.equal(bridge.datapath_type, 'netdev');
    assert.deepEqual(bridge.protocols, ['OpenFlow13']);
    assert.equal(bridge.mcast_snooping_enable, false);
    assert.deepEqual(bridge.other_config, { 'mcast-snooping-aging-time': '300' });
    assert.equal(bridge.ports.length, 2);
    assert.equal(await findBridge(client, 'br-none'), undefined);
    await assert.rejects(bridgeInterfaces(client, 'br-none'), NoSuchBridgeError);

    const changes: InterfaceChanges[] = [];
    const watch = await watchInterfaces(client, 'br0', (change) => changes.push(change));
    assert.deepEqual(
      changes.map((change) => [change.reason, change.added.map((row) => row.name).sort()]),
      [['initial', ['br0', 'p1']]],
    );

    await server.vsctl(
      'add-port',
      'br0',
      'pod1',
      '--',
      'set',
      'Interface',
      'pod1',
      'type=internal',
      'external_ids:pod-name=web-1',
      'external_ids:ip-address=10.0.0.5/24',
    );
    await waitFor(() => changes.some((change) => change.added.some((row) => row.name === 'pod1')), 'pod1 added');
    const interfaces = await bridgeInterfaces(client, 'br0');
    assert.deepEqual(
      interfaces.map((row) => row.name),
      ['br0', 'p1', 'pod1'],
    );
    const pod1 = interfaces.find((row) => row.name === 'pod1')!;
    assert.deepEqual(pod1.external_ids, { 'pod-name': 'web-1', 'ip-address': '10.0.0.5/24' });
    assert.equal(pod1.type, 'internal');
    assert.equal(pod1.ofport, undefined, 'no ovs-vswitchd, so no OpenFlow port number');
    assert.equal(pod1.mac_in_use, undefined);
    assert.deepEqual(asStringMap(undefined), {});
    assert.deepEqual([...watch.interfaces().values()].map((row) => row.name).sort(), ['br0', 'p1', 'pod1']);

    // ovs-vswitchd would set ofport; here the test does, and -1 (OVS's "failed") reads as undefined.
    await server.vsctl('set', 'Interface', 'pod1', 'ofport=7');
    await waitFor(() => watch.interfaces().get(pod1.uuid)?.ofport === 7, 'ofport 7');
    assert.ok(
      changes.some((change) =>
        change.modified.some(({ before, after }) => before.ofport === undefined && after.ofport === 7),
      ),
    );
    await server.vsctl('set', 'Interface', 'pod1', 'ofport=-1');
    await waitFor(
      () =>
        changes.some((change) =>
          change.modified.some(({ after }) => after.name === 'pod1' && after.ofport === undefined),
        ),
      'ofport -1',
    );

    // A port on another bridge is not this bridge's business.
    const before = changes.length;
    await server.vsctl('add-br', 'br1', '--', 'add-port', 'br1', 'elsewhere');
    await server.vsctl('del-port', 'br0', 'pod1');
    await waitFor(() => changes.some((change) => change.removed.some((row) => row.name === 'pod1')), 'pod1 removed');
    assert.ok(
      changes
        .slice(before)
        .every((change) =>
          [...change.added, ...change.removed].every((row) => row.name !== 'elsewhere' && row.name !== 'br1'),
        ),
    );
    await watch.cancel();
    await server.vsctl('del-br', 'br1');
  });

  it("answers ovsdb-server's inactivity probes: a silent peer is dropped, the client is not", async () => {
    // A Manager row with a 1 s probe makes ovsdb-server listen on probe.sock and send
    // {"method":"echo"} after 1 s of silence, dropping a peer that does not answer
    // within another second. (The plain db.sock remote is never probed.)
    const probeSocket = join(server.dir, 'probe.sock');
    await server.vsctl(
      '--',
      '--id=@m',
      'create',
      'Manager',
      `target="punix:${probeSocket}"`,
      'inactivity_probe=1000',
      '--',
      'add',
      'Open_vSwitch',
      '.',
      'manager_options',
      '@m',
    );
    await waitFor(() => canConnect(probeSocket), 'probe.sock');

    const silent = connect({ path: probeSocket });
    silent.on('data', () => {}); // reads, never answers
    const silentClosed = once(silent, 'close');
    const prober = await open(`unix:${probeSocket}`, { reconnect: false });
    const drops: Error[] = [];
    prober.on('disconnected', (event) => drops.push(event.error));

    const started = Date.now();
    await withTimeout(silentClosed, 15_000, 'ovsdb-server never dropped the silent peer: is the probe configured?');
    // The client was probed at least as often as the silent peer, and kept its connection.
    await sleep(Math.max(0, 4_500 - (Date.now() - started)));
    assert.deepEqual(drops, []);
    assert.equal(prober.state, 'connected');
    assert.deepEqual(await prober.echo(['still here']), ['still here']);
    assert.match(server.logTail(50), /no response to inactivity probe/);
  });

  it('reconnects after ovsdb-server is killed and restarted, resyncs the monitor, and gets later updates', async () => {
    const monitored: Array<{ reason: MonitorUpdateReason; updates: TableUpdates }> = [];
    await client.monitor(DB, 'e2e-resync', { Interface: { columns: ['name', 'external_ids'] } }, (updates, reason) =>
      monitored.push({ reason, updates }),
    );
    const watched: InterfaceChanges[] = [];
    await watchInterfaces(client, 'br0', (change) => watched.push(change));
    const events: string[] = [];
    client.on('disconnected', () => events.push('disconnected'));
    client.on('reconnected', () => events.push('reconnected'));
    const reconnected = once(client, 'reconnected');

    await server.stop();
    await waitFor(() => events.includes('disconnected'), 'the disconnected event');
    await assert.rejects(client.listDbs(), UnavailableError);
    // Change the database while no server runs, so only a resync can tell the client.
    await execute('ovsdb-tool', [
      'transact',
      server.dbPath,
      JSON.stringify([
        DB,
        {
          op: 'mutate',
          table: 'Interface',
          where: [['name', '==', 'p1']],
          mutations: [['external_ids', 'insert', ['map', [['offline', 'yes']]]]],
        },
      ]),
    ]);
    await server.start();
    const [event] = (await withTimeout(reconnected, 20_000, 'no reconnected event')) as [{ monitors: string[] }];
    assert.ok(event.monitors.includes('e2e-resync'), event.monitors.join());
    assert.ok(
      event.monitors.some((id) => id.startsWith('mcastctl-interfaces-br0-')),
      event.monitors.join(),
    );

    const resync = monitored.find((call) => call.reason === 'resync');
    assert.ok(resync !== undefined, 'the monitor got its state again');
    const p1 = Object.values(resync.updates['Interface'] ?? {}).find((row) => row.new?.['name'] === 'p1');
    assert.deepEqual(p1?.new?.['external_ids'], { map: [['offline', 'yes']] });
    const resynced = watched.find((change) => change.reason === 'resync');
    assert.ok(resynced !== undefined);
    assert.deepEqual(
      resynced.modified.map(({ after }) => [after.name, after.external_ids]),
      [['p1', { offline: 'yes' }]],
    );

    await server.vsctl('add-port', 'br0', 'after-restart');
    await waitFor(
      () =>
        monitored.some(
          (call) => call.reason === 'update' && namesIn(call.updates, 'Interface').includes('after-restart'),
        ),
      'an update after the restart',
    );
    await waitFor(
      () =>
        watched.some(
          (change) => change.reason === 'update' && change.added.some((row) => row.name === 'after-restart'),
        ),
      'watchInterfaces after the restart',
    );
    assert.deepEqual(events, ['disconnected', 'reconnected']);
  });

  it('a socket this user may not open is PermissionError (exit 77)', async () => {
    assert.equal(process.getuid?.(), 0, 'this test needs root, to run a client as nobody');
    // The server's directory is 0700 root: nobody gets EACCES.
    const script = `
      const { OvsdbClient } = await import(${JSON.stringify(new URL('../../src/transport/ovsdb/client.ts', import.meta.url).href)});
      try { await OvsdbClient.connect({ endpoint: ${JSON.stringify(server.endpoint)} }); console.log('{}'); }
      catch (error) { console.log(JSON.stringify({ name: error.name, exitCode: error.exitCode, message: error.message, hint: error.hint })); }`;
    const output = await execute('setpriv', [
      '--reuid=65534',
      '--regid=65534',
      '--clear-groups',
      process.execPath,
      '--import',
      'tsx',
      '--input-type=module',
      '-e',
      script,
    ]);
    assert.deepEqual(JSON.parse(output), {
      name: 'PermissionError',
      exitCode: ExitCode.NoPermission,
      message: `cannot connect to OVSDB ${server.endpoint}: EACCES`,
      hint: 'run as root, or as a user the socket lets in',
    });
  });

  it('a missing socket is UnavailableError (exit 69) with a hint', async () => {
    const endpoint = `unix:${join(server.dir, 'missing.sock')}`;
    await assert.rejects(OvsdbClient.connect({ endpoint }), (error) => {
      assert.ok(error instanceof UnavailableError);
      assert.equal(error.exitCode, ExitCode.Unavailable);
      assert.equal(error.message, `cannot connect to OVSDB ${endpoint}: ENOENT`);
      assert.equal(error.hint, 'is ovsdb-server running? set OVS_RUNDIR or --db');
      return true;
    });
  });
});

function namesIn(updates: TableUpdates, table: string): string[] {
  return Object.values(updates[table] ?? {}).flatMap((row) =>
    typeof row.new?.['name'] === 'string' ? [row.new['name']] : [],
  );
}

async function waitFor(condition: () => boolean | Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(20);
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

async function withTimeout<T>(promise: Promise<T>, ms: number, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

function execute(file: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 30_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} failed: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
  });
}
