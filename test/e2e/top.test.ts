/**
 * `mcastctl top` in a real terminal: tmux (a private server, its socket in the lab's
 * directory) runs it against a lab daemon while a pod receives a group at 100 datagrams a
 * second from another; the group's row must show 80 to 120 packets a second at every
 * refresh (the rates are averaged over 5 s: OVS folds its datapath's counts in only about
 * every half second, which one-second differences read as 50 or 150), q must quit
 * with exit 0, and `top --once --json` must give the same figure.
 *
 * Needs root, iproute2, python3, tmux, Open vSwitch and the built CLI.
 */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { after, before, describe, it } from '../helpers/node-test.js';
import { cliMissing, MCASTCTL_BIN, mcastctl, REPO_ROOT } from '../lab/cli.js';
import { type RunningDaemon, startDaemon } from '../lab/daemon.js';
import { Lab, run, waitUntil } from '../lab/lab.js';
import { OvsNode, type OvsPod, type Receiver } from '../lab/ovs.js';
import { waitForOvsMembers } from '../lab/switch-checks.js';

const missing = cliMissing();
if (missing !== undefined) throw new Error(`the top tests run the built CLI: ${missing}`);

const GROUP = '239.77.1.1';
const PORT = 5477;
/** The sender's pace: 100 datagrams a second, for longer than the test needs. */
const RATE = 100;
const SEND_COUNT = 3000;

describe('mcastctl top in a terminal (tmux)', { concurrency: 1 }, () => {
  let lab: Lab;
  let node: OvsNode;
  let member: OvsPod;
  let sender: OvsPod;
  let daemon: RunningDaemon;
  let receiver: Receiver;
  let sending: Promise<void>;
  let tmuxSocket: string;
  const tmux = (...args: string[]) => run(['tmux', '-S', tmuxSocket, ...args]);

  before(async () => {
    lab = Lab.create();
    tmuxSocket = lab.file('tmux.sock');
    node = await OvsNode.start(lab, 'tp');
    await node.addGateway({ address: '10.77.0.1/24' });
    member = await node.addPod('p1', { address: '10.77.0.11/24', gateway: '10.77.0.1' });
    sender = await node.addPod('p2', { address: '10.77.0.12/24', gateway: '10.77.0.1' });
    daemon = startDaemon(node);
    await daemon.ready();
    receiver = await member.listen(GROUP, PORT);
    await waitForOvsMembers(node, GROUP, [member]);
    sending = sender.send(GROUP, PORT, SEND_COUNT, { intervalMs: 1000 / RATE, tag: 'top' });
    // Traffic flowing before anything is measured.
    await waitUntil('the member to receive', async () => receiver.received.length >= RATE);
  });

  after(async () => {
    await tmux('kill-server').catch(() => undefined);
    await receiver?.stop().catch(() => undefined);
    await lab?.destroy();
    await sending?.catch(() => undefined);
  });

  it("the group's row shows 80 to 120 packets a second, refreshed in place; q quits with exit 0", async () => {
    const exitFile = lab.file('top.exit');
    const command = [
      process.execPath,
      MCASTCTL_BIN,
      'top',
      '--control-socket',
      daemon.controlSocket,
      ';',
      'echo',
      '$?',
      '>',
      exitFile,
    ].join(' ');
    await tmux('new-session', '-d', '-s', 'top', '-x', '150', '-y', '40', '-c', REPO_ROOT, command);
    const screen = () => tmux('capture-pane', '-p', '-t', 'top').then((result) => result.stdout);
    // The first rates come once the reads span 5 s; two refreshes after them: the view is live.
    const rates: number[] = [];
    let last = '';
    await waitUntil(
      'three refreshes of the group row',
      async () => {
        const text = await screen();
        const row = text.split('\n').find((line) => line.startsWith(GROUP));
        const clock = /(\d\d:\d\d:\d\d) UTC/.exec(text)?.[1];
        if (row !== undefined && clock !== undefined && clock !== last) {
          last = clock;
          rates.push(Number(row.trim().split(/\s+/)[1]));
        }
        return rates.length >= 3 ? text : undefined;
      },
      30_000,
      300,
    );
    const text = await screen();
    console.log(`top in tmux, ${RATE} datagrams a second: rows read ${rates.join(', ')} packets a second`);
    for (const rate of rates) assert.ok(rate >= 80 && rate <= 120, `${rate} packets a second:\n${text}`);
    assert.match(text, /^mcastctl top: 1 group, a second over the last 5\.\d s, \d\d:\d\d:\d\d UTC; q quits$/m, text);
    assert.match(text, /^ {2}default\/p1 +\d+\.\d /m, `the member's row:\n${text}`);
    assert.ok(
      text.split('\n').every((line) => line.length <= 150),
      'fits the terminal',
    );
    assert.ok(!existsSync(exitFile), 'top is still running');
    await tmux('send-keys', '-t', 'top', 'q');
    const exit = await waitUntil('top to quit', async () =>
      existsSync(exitFile) ? readFileSync(exitFile, 'utf8').trim() : undefined,
    );
    assert.equal(exit, '0');
  });

  it('--once --json gives the same figures', async () => {
    const result = await mcastctl(['top', '--once', '--json', '--control-socket', daemon.controlSocket]);
    assert.equal(result.code, 0, result.stderr);
    const rates = JSON.parse(result.stdout) as {
      groups: Array<{ group: string; received: { packetsPerSecond: number }; pods: Array<{ pod: string }> }>;
    };
    const group = rates.groups.find((entry) => entry.group === GROUP);
    assert.ok(group !== undefined, result.stdout);
    const rate = group.received.packetsPerSecond;
    assert.ok(rate >= 80 && rate <= 120, `${rate} packets a second`);
    assert.deepEqual(
      group.pods.map((pod) => pod.pod),
      ['default/p1'],
    );
  });
});
