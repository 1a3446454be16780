/**
 * The daemon against hostile signals, a second daemon, a full disk and bad settings with
 * OVS down: one real OVS node (user-space datapath) with a gateway port and two pods, the
 * built CLI, real IGMP from the pods' kernels and real UDP to prove delivery.
 *
 * - SIGUSR1 must never open Node's inspector (a debugger any local user could reach, in a
 *   root daemon): nothing new listens after it, checked with `ss` in the daemon's netns.
 * - SIGHUP re-reads the configuration (runtime settings take effect, others wait for a
 *   restart, a bad file changes nothing); SIGUSR2 saves the state; none of them stops it.
 * - A second daemon on the same bridge, with its own control socket and metrics port,
 *   exits 69 naming the first, which keeps working.
 * - SIGTERM while the state file system is full exits 1.
 * - Bad settings exit 64 before anything is connected to (OVS down).
 *
 * Needs root, iproute2, ethtool, util-linux (nsenter), Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, mcastctl } from '../lab/cli.js';
import { startDaemon, type RunningDaemon, control } from '../lab/daemon.js';
import { MULTICAST_ROUTING } from '../lab/kernel.js';
import { Lab, run, sleep, waitUntil } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';
import type { DaemonStatus, GroupView } from '../../src/transport/control/daemon-view.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

/** Member port names of `group` as the daemon sees them. */
async function membersOf(daemon: RunningDaemon, group: string): Promise<string[]> {
  const groups = await control<GroupView[]>(daemon, ['groups']);
  return [
    ...new Set(groups.find((view) => view.group === group)?.members.map((member) => member.port.name) ?? []),
  ].sort();
}

/** Listening TCP and UDP sockets in the namespace, as `ss` lists them (address:port). */
async function listeners(node: OvsNode): Promise<string[]> {
  const { stdout } = await node.exec(['ss', '-ltunH']);
  return stdout
    .split('\n')
    .filter((line) => line.trim() !== '')
    .map((line) => line.trim().split(/\s+/)[4]!)
    .sort();
}

/**
 * Proves delivery pod to pod: `receiver` gets every one of 20 datagrams from `sender`.
 * Then waits until the daemon has taken the receiver's leave to OVS, so that the next
 * test starts from a switch without the group.
 */
async function delivers(
  daemon: RunningDaemon,
  sender: OvsPod,
  receiver: OvsPod,
  group: string,
  port: number,
  tag: string,
): Promise<void> {
  const socket = await receiver.listen(group, port);
  await sleep(300);
  await sender.send(group, port, 20, { intervalMs: 5, tag });
  await sleep(300);
  const got = (await socket.stop()).filter((datagram) => datagram.payload.startsWith(`${tag} `)).length;
  assert.equal(got, 20, `${receiver.name} got ${got} of 20 datagrams of ${group}`);
  await waitUntil(`the leave of ${group} in OVS`, async () => {
    const left = (await membersOf(daemon, group)).length === 0;
    return left && (await control<DaemonStatus>(daemon, ['status'])).pendingSyncs === 0;
  });
}

describe('daemon hardening: signals, one daemon per bridge, full disk, settings checked first', {
  concurrency: 1,
}, () => {
  let lab: Lab;
  let node: OvsNode;
  let pods: [OvsPod, OvsPod];

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'n');
    await node.addGateway({ address: '10.31.1.1/24' });
    pods = [
      await node.addPod('p1', { address: '10.31.1.11/24' }),
      await node.addPod('p2', { address: '10.31.1.12/24' }),
    ];
  });

  after(async () => {
    await lab?.destroy();
  });

  it('SIGUSR1 opens no debugger: nothing new listens, the daemon logs a summary and keeps working', async () => {
    const daemon = startDaemon(node, { multicastInterfaces: [] });
    try {
      await daemon.ready();
      const before = await listeners(node);
      for (let i = 0; i < 3; i++) {
        daemon.child.kill('SIGUSR1');
        await daemon.waitForLog((entry) => entry['msg'] === 'SIGUSR1: state summary' && entry['podPorts'] === 2);
      }
      await sleep(500);
      const afterSignal = await listeners(node);
      assert.deepEqual(afterSignal, before, 'a socket started listening after SIGUSR1');
      assert.ok(
        !afterSignal.some((address) => address.endsWith(':9229')),
        `the inspector's port listens: ${afterSignal.join(' ')}`,
      );
      // No inspector through the other door either: its HTTP endpoint answers nothing.
      const probe = await node.exec(['sh', '-c', 'curl -s -m 2 http://127.0.0.1:9229/json/list; echo "exit=$?"']);
      assert.match(probe.stdout, /exit=7/, `curl reached something on 9229: ${probe.stdout}`);
      assert.equal(daemon.running(), true);
      await delivers(daemon, pods[0], pods[1], '239.31.1.1', 5301, 'usr1');
    } finally {
      assert.equal((await daemon.stop()).code, 0);
    }
  });

  it('SIGHUP re-reads the file: a runtime setting takes effect, others wait, a bad file changes nothing; SIGUSR2 saves; members stay', async () => {
    const file = lab.file('hup.yaml');
    writeFileSync(file, 'logLevel: info\nqueryInterval: 125s\n');
    const daemon = startDaemon(node, { multicastInterfaces: [], args: ['--config', file] });
    try {
      await daemon.ready();
      const group = '239.31.2.1';
      const member = await pods[1].listen(group, 5302);
      await waitUntil(`${pods[1].name} in ${group}`, async () =>
        (await membersOf(daemon, group)).includes(pods[1].port),
      );
      assert.equal(
        daemon.entries().filter((entry) => entry['level'] === 'debug').length,
        0,
        'debug lines at log level info',
      );

      // A runtime setting (logLevel) and one that waits for a restart (workers).
      writeFileSync(file, 'logLevel: debug\nqueryInterval: 60s\nworkers: 2\n');
      daemon.child.kill('SIGHUP');
      await daemon.waitForLog(
        (entry) => entry['msg'] === 'SIGHUP: setting changed' && entry['key'] === 'logLevel' && entry['to'] === 'debug',
      );
      await daemon.waitForLog(
        (entry) =>
          entry['msg'] === 'SIGHUP: setting changed' && entry['key'] === 'queryInterval' && entry['to'] === 60_000,
      );
      const waiting = await daemon.waitForLog((entry) =>
        String(entry['msg']).includes('take effect only at the next start'),
      );
      assert.equal(waiting['keys'], 'workers');
      // The new level took effect: a join is now logged at debug.
      const second = await pods[0].listen(group, 5302);
      await daemon.waitForLog(
        (entry) => entry['level'] === 'debug' && entry['msg'] === 'join' && entry['port'] === pods[0].port,
      );
      await second.stop();

      // A bad file: refused, and the running configuration stays (still at debug).
      writeFileSync(file, 'logLevel: info\nqueryInterval: soon\n');
      daemon.child.kill('SIGHUP');
      const refused = await daemon.waitForLog((entry) =>
        String(entry['msg']).startsWith('SIGHUP: the configuration was not reloaded'),
      );
      assert.match(String(refused['error']), /queryInterval/);
      // Unchanged file: said so.
      writeFileSync(file, 'logLevel: debug\nqueryInterval: 60s\n');
      daemon.child.kill('SIGHUP');
      await daemon.waitForLog((entry) => entry['msg'] === 'SIGHUP: configuration read again; nothing changed');

      // SIGUSR2 writes the state file now, with the member in it.
      const stateFile = `${daemon.stateDir}/state.json`;
      writeFileSync(stateFile, '');
      daemon.child.kill('SIGUSR2');
      await daemon.waitForLog((entry) => entry['msg'] === 'SIGUSR2: state saved');
      assert.match(readFileSync(stateFile, 'utf8'), new RegExp(group.replace(/\./g, '\\.')));

      assert.equal(daemon.running(), true, 'a signal stopped the daemon');
      assert.deepEqual(await membersOf(daemon, group), [pods[1].port]);
      const status = await control<DaemonStatus>(daemon, ['status']);
      assert.equal(status.pid, daemon.pid);
      await member.stop();
      await waitUntil(`the leave of ${group}`, async () => (await membersOf(daemon, group)).length === 0);
      await delivers(daemon, pods[0], pods[1], '239.31.2.2', 5303, 'hup');
    } finally {
      assert.equal((await daemon.stop()).code, 0);
    }
  });

  it('one daemon per bridge: a second one with its own socket and metrics port exits 69 naming the first', async () => {
    const first = startDaemon(node, { multicastInterfaces: [] });
    try {
      await first.ready();
      const switchBefore = await node.switchState();
      const second = startDaemon(node, {
        multicastInterfaces: [],
        controlSocket: lab.file('second/ctl.sock'),
        stateDir: lab.file('second/state'),
      });
      const exit = await Promise.race([second.exited, sleep(15_000).then(() => undefined)]);
      assert.ok(exit !== undefined, 'the second daemon did not exit');
      assert.equal(exit.code, 69, second.logs().join('\n'));
      const message = second.logs().join('\n');
      assert.match(message, /another mcastctl daemon is running on bridge br-int/);
      assert.match(message, new RegExp(`pid ${first.pid}\\b`), `the holder is not named: ${message}`);
      assert.deepEqual(await node.switchState(), switchBefore, 'the second daemon changed the switch');
      assert.equal(first.running(), true);
      await delivers(first, pods[0], pods[1], '239.31.3.1', 5304, 'second');
    } finally {
      assert.equal((await first.stop()).code, 0);
    }
    // The lock went with the first daemon: the next one starts.
    const next = startDaemon(node, { multicastInterfaces: [] });
    await next.ready();
    assert.equal((await next.stop()).code, 0);
  });

  it('SIGTERM while the state file system is full exits 1 (the final save failed)', async () => {
    const stateDir = lab.file('full/state');
    mkdirSync(stateDir, { recursive: true });
    chmodSync(stateDir, 0o700);
    // A tmpfs of 64 KiB on the state directory, in the daemon's own mount namespace
    // (`ip netns exec` gives it one): nothing outside it sees the mount, and it goes with it.
    const mountAndRun = ['sh', '-c', 'mount -t tmpfs -o size=64k,mode=0700 mcl-full "$0" && exec "$@"', stateDir];
    const daemon = startDaemon(node, { multicastInterfaces: [], stateDir, wrapper: mountAndRun });
    await daemon.ready();
    const member = await pods[1].listen('239.31.4.1', 5305);
    await waitUntil('the member', async () => (await membersOf(daemon, '239.31.4.1')).length > 0);
    // Fill it from inside the same mount namespace; dd stops at ENOSPC.
    await run([
      'nsenter',
      '-t',
      String(daemon.pid),
      '-m',
      '--',
      'sh',
      '-c',
      `dd if=/dev/zero of=${stateDir}/fill bs=4k 2>/dev/null; dd if=/dev/zero of=${stateDir}/fill2 bs=1 2>/dev/null; true`,
    ]);
    const status = await daemon.stop();
    await member.stop();
    assert.equal(status.code, 1, daemon.logs().slice(-5).join('\n'));
    assert.match(daemon.logs().join('\n'), /ENOSPC/);
  });

  it('a kernel without multicast routing: a daemon told to route exits 69 naming the kernel option, and OVS is left as it was', {
    skip: MULTICAST_ROUTING.ipv4 ? 'this kernel has multicast routing: its absence cannot be shown here' : false,
  }, async () => {
    const ovsState = async () => {
      const groups = await node.exec(['ovs-ofctl', '-O', 'OpenFlow15', 'dump-groups', node.bridge]);
      const flows = await node.exec(['ovs-ofctl', '-O', 'OpenFlow15', '--no-stats', 'dump-flows', node.bridge]);
      return `${groups.stdout}\n${flows.stdout}`.replace(/xid=0x[0-9a-f]+/g, '');
    };
    const before = await ovsState();
    const daemon = startDaemon(node, { multicastInterfaces: ['lo'], stateDir: lab.file('no-routing-state') });
    const exit = await Promise.race([daemon.exited, sleep(15_000).then(() => undefined)]);
    assert.deepEqual(exit, { code: 69, signal: null }, daemon.logs().join('\n'));
    const log = daemon.logs().join('\n');
    assert.match(
      log,
      /this kernel has no IPv4 multicast routing \(\/proc\/net\/ip_mr_vif is missing: it was built without CONFIG_IP_MROUTE\)/,
    );
    assert.match(log, /without multicastInterfaces \(snooping only, or tunnels between nodes\) none is needed/);
    assert.doesNotMatch(log, /internal error|at async/);
    assert.equal(await ovsState(), before, 'OVS was changed');
  });

  it('bad settings exit 64 before anything is connected to, with OVS down', async () => {
    const ns = await lab.namespace('nobody');
    const dir = lab.file('settings');
    mkdirSync(dir, { recursive: true });
    writeFileSync(`${dir}/a-file`, '');
    const open = `${dir}/open`;
    mkdirSync(open, { recursive: true });
    chmodSync(open, 0o777);
    const fifoState = `${dir}/fifo-state`;
    mkdirSync(fifoState, { recursive: true, mode: 0o700 });
    execFileSync('mkfifo', [`${fifoState}/state.json`]);
    const base = ['daemon', '--ovs-rundir', `${dir}/no-ovs`, '--no-metrics'];
    const cases: Array<[string, string[], RegExp]> = [
      [
        'a control socket under a file',
        [...base, '--control-socket', `${dir}/a-file/ctl.sock`, '--state-dir', `${dir}/s1`],
        /control socket/,
      ],
      [
        'a state directory that is a file',
        [...base, '--control-socket', `${dir}/c2.sock`, '--state-dir', `${dir}/a-file`],
        /state/,
      ],
      [
        'a state directory others may write',
        [...base, '--control-socket', `${dir}/c3.sock`, '--state-dir', open],
        /writable by others|chmod/,
      ],
      [
        'a state file that is a FIFO',
        [...base, '--control-socket', `${dir}/c5.sock`, '--state-dir', fifoState],
        /FIFO/,
      ],
      [
        'a multicast metrics address',
        [
          'daemon',
          '--ovs-rundir',
          `${dir}/no-ovs`,
          '--metrics-address',
          '239.1.1.1:9815',
          '--control-socket',
          `${dir}/c4.sock`,
          '--state-dir',
          `${dir}/s4`,
        ],
        /metrics/,
      ],
    ];
    for (const [name, args, message] of cases) {
      const result = await mcastctl(args, { ns, timeoutMs: 15_000 });
      assert.equal(result.code, 64, `${name}: exit ${result.code}: ${result.stderr}`);
      assert.match(result.stderr, message, name);
      assert.doesNotMatch(result.stderr, /OVSDB|\n\s+at /, `${name}: ${result.stderr}`);
    }
  });
});
