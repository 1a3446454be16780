/**
 * The counts of the tunnel's membership messages the switch dropped, for a sender that is no
 * peer and past the tunnel's meter: read once a second while the tunnel port is there,
 * each carried across a restart of its counter, and left as they were by a switch that
 * does not answer.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { TunnelShedCount } from '../../src/controllers/daemon/tunnel/tunnel-shed.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { settle } from '../fakes/wait.js';

describe('TunnelShedCount', () => {
  it('reads the switch once a second, carries a restarted counter, and keeps its count when the switch fails', async () => {
    const clock = new FakeClock();
    const vswitch = { connected: true, count: 0n as bigint | Error, metered: 0n, reads: 0 };
    let present = true;
    const shed = new TunnelShedCount({
      vswitch: {
        get connected() {
          return vswitch.connected;
        },
        tunnelDrops: async () => {
          vswitch.reads++;
          if (vswitch.count instanceof Error) throw vswitch.count;
          return { notPeer: vswitch.count, overRate: vswitch.metered };
        },
      },
      clock,
      portPresent: () => present,
    });
    shed.start();
    vswitch.count = 40n;
    vswitch.metered = 7n;
    clock.advance(1000);
    await settle();
    assert.equal(shed.packets, 40);
    assert.equal(shed.metered, 7);
    // The base flows written again: their counters start from 0; the meter's goes on.
    vswitch.count = 5n;
    vswitch.metered = 9n;
    clock.advance(1000);
    await settle();
    assert.equal(shed.packets, 45);
    assert.equal(shed.metered, 9);
    // The meter changed: its counter starts from 0.
    vswitch.metered = 1n;
    clock.advance(1000);
    await settle();
    assert.equal(shed.metered, 10);
    vswitch.count = new Error('switch gone');
    clock.advance(1000);
    await settle();
    assert.equal(shed.packets, 45);
    present = false;
    const reads = vswitch.reads;
    vswitch.count = 100n;
    clock.advance(1000);
    await settle();
    assert.equal(vswitch.reads, reads, 'no port, no read');
    shed.stop();
    present = true;
    clock.advance(5000);
    await settle();
    assert.equal(vswitch.reads, reads, 'stopped');
    assert.equal(shed.packets, 45);
    assert.equal(shed.metered, 10);
  });
});
