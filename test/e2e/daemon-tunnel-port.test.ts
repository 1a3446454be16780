/**
 * The daemon refuses a --tunnel-port that is no flow-based Geneve or VXLAN port: one real
 * OVS node (user-space datapath) with a gateway port and a port named as the tunnel, of
 * type internal, then a Geneve port with a fixed remote_ip. Each run exits 64 with the
 * reason and the ovs-vsctl that fixes it, and leaves the bridge's flows and groups as
 * they were: nothing of ours is programmed before the refusal.
 *
 * Needs root, iproute2, Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing } from '../lab/cli.js';
import { startDaemon } from '../lab/daemon.js';
import { Lab } from '../lab/lab.js';
import { OvsNode } from '../lab/ovs.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the daemon tests run the built CLI: ${missing}`);

/**
 * The tunnel flags, with a peer and a node address that need no underlay: the daemon must stop before it sends
 * anything.
 */
const TUNNEL_ARGS = ['--tunnel-port', 'tun0', '--peers', '192.0.2.12', '--node-address', '192.0.2.11'];

describe('daemon: the tunnel port must be a flow-based Geneve or VXLAN port', { concurrency: 1 }, () => {
  let lab: Lab;
  let node: OvsNode;

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'n');
    await node.addGateway({ address: '10.33.1.1/24' });
  });

  after(async () => {
    await lab?.destroy();
  });

  for (const [what, columns, reason] of [
    ['an internal port', ['type=internal'], 'type internal, not geneve or vxlan'],
    [
      'a Geneve port to one fixed node',
      ['type=geneve', 'options:remote_ip=192.0.2.1'],
      'options:remote_ip is 192.0.2.1, not flow',
    ],
  ] as const) {
    it(`refuses ${what}: exit 64 with the reason, and no flow or group of ours on the bridge`, async () => {
      await node.vsctl('--may-exist', 'add-port', node.bridge, 'tun0', '--', 'set', 'interface', 'tun0', ...columns);
      try {
        await node.ofportOf('tun0'); // numbered: the daemon sees the port, not its absence
        const before = await node.switchState();
        const daemon = startDaemon(node, { args: TUNNEL_ARGS });
        const status = await Promise.race([
          daemon.exited,
          new Promise<undefined>((resolve) => setTimeout(resolve, 8_000, undefined)),
        ]);
        if (status === undefined) await daemon.kill9();
        const stderr = daemon.logs().join('\n');
        assert.equal(
          status?.code,
          64,
          `exit ${status === undefined ? 'none within 8 s' : (status.signal ?? status.code)}: ${stderr}`,
        );
        assert.ok(
          stderr.includes(`the tunnel port tun0 cannot carry frames to the peers (--tunnel-port): ${reason}`),
          stderr,
        );
        assert.ok(stderr.includes('ovs-vsctl set Interface tun0 type=geneve options:remote_ip=flow'), stderr);
        assert.deepEqual(await node.switchState(), before, 'the bridge is as it was');
      } finally {
        await node.vsctl('--if-exists', 'del-port', node.bridge, 'tun0');
      }
    });
  }
});
