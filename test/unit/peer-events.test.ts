/**
 * The membership messages between nodes on the daemon's event stream: what the loop in
 * tunnel mode publishes (only to subscribers, one event per message), and how
 * `snoop --daemon` prints them.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from '../helpers/node-test.js';
import { Chalk } from 'chalk';
import { formatDaemonEvent } from '../../src/cli/render/daemon-events.js';
import { formatClock } from '../../src/cli/render/human-format.js';
import type { IgmpMessage } from '../../src/packet/igmp/message.js';
import { MulticastController } from '../../src/controllers/daemon/loop/controller.js';
import { ControlClient } from '../../src/transport/control/control-client.js';
import { ControlServer } from '../../src/transport/control/control-server.js';
import type { DaemonEvent } from '../../src/transport/control/daemon-view.js';
import { groupAddress, hostAddress } from '../../src/wire/ip-address.js';
import { testDaemonConfig } from '../fakes/daemon-config.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { FakePodDirectory } from '../fakes/fake-pod-directory.js';
import { FakeSwitch } from '../fakes/fake-switch.js';
import { igmpFrame, v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';
import { settle, waitFor } from '../fakes/wait.js';
import { FakeDaemonView } from '../helpers/fake-daemon-view.js';

const GROUP = groupAddress('239.1.1.1');
const [GATEWAY, POD, TUNNEL] = [1, 2, 7];
const NODE = hostAddress('192.168.60.11');
const [PEER2, PEER3] = [hostAddress('192.168.60.12'), hostAddress('192.168.60.13')];
const plain = new Chalk({ level: 0 });

/** The loop in tunnel mode on the shared fakes; `events`: what a subscriber got, when `subscribed`. */
async function tunnelLoop(options: { subscribed: boolean }) {
  const clock = new FakeClock();
  const vswitch = new FakeSwitch();
  const podDirectory = new FakePodDirectory()
    .addPort('gw0', GATEWAY)
    .addPort('p1', POD, 'shop/web')
    .addPort('tun0', TUNNEL);
  const tunnel = {
    port: 'tun0',
    peers: [PEER2, PEER3],
    nodeAddress: NODE,
    refreshIntervalMs: 2_000,
    peerTimeoutMs: 5_000,
    maxGroupsPerPeer: 100,
  };
  const loop = new MulticastController({
    config: testDaemonConfig({ tunnel }),
    logger: new RecordingLogger(),
    vswitch,
    podDirectory,
    host: { interfaceIPv4: (name) => (name === 'gw0' ? { address: '10.1.0.1', mac: '02:00:00:00:00:01' } : undefined) },
    clock,
    pid: 4242,
  });
  const events: DaemonEvent[] = [];
  if (options.subscribed) loop.subscribe((event) => events.push(event));
  await loop.start();
  await settle();
  const stop = async () => {
    const stopping = loop.stop({ save: false });
    clock.advance(2_000);
    await stopping;
  };
  const peerEvents = () => events.filter((event) => event.type === 'peer-report' || event.type === 'peer-query');
  return { clock, vswitch, events, peerEvents, stop };
}

describe('the daemon publishes the messages with its peers', () => {
  it('the greeting, a local join told to the peers, and a peer report: one event per message, stamped with the wall clock', async () => {
    const { clock, vswitch, peerEvents, stop } = await tunnelLoop({ subscribed: true });
    try {
      const time = new Date(clock.wallMs()).toISOString();
      assert.deepEqual(peerEvents(), [
        { type: 'peer-report', time, direction: 'out', peers: [PEER2, PEER3], records: [] },
        { type: 'peer-query', time, direction: 'out', peers: [PEER2, PEER3] },
      ]);
      vswitch.packetIn(v3Report('10.1.0.5', [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: GROUP }]), POD);
      clock.advance(1);
      await settle();
      vswitch.packetIn(v3Report(PEER2, [{ type: 'MODE_IS_EXCLUDE', group: GROUP }]), TUNNEL, PEER2);
      await settle();
      const later = new Date(clock.wallMs()).toISOString();
      assert.deepEqual(peerEvents().slice(2), [
        {
          type: 'peer-report',
          time: later,
          direction: 'out',
          peers: [PEER2, PEER3],
          records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: GROUP }],
        },
        {
          type: 'peer-report',
          time: later,
          direction: 'in',
          peer: PEER2,
          records: [{ type: 'MODE_IS_EXCLUDE', group: GROUP }],
        },
      ]);
    } finally {
      await stop();
    }
  });

  it('a general query from a peer is published, and so is the answer, to that peer only', async () => {
    const { vswitch, peerEvents, stop } = await tunnelLoop({ subscribed: true });
    try {
      const query: IgmpMessage = {
        kind: 'query',
        version: 3,
        group: '0.0.0.0',
        maxRespCode: 10,
        sFlag: false,
        qrv: 2,
        qqic: 30,
        sources: [],
      };
      vswitch.packetIn(igmpFrame(query, { src: PEER3, dst: '224.0.0.1' }), TUNNEL, PEER3);
      await settle();
      assert.deepEqual(
        peerEvents()
          .slice(2)
          .map(({ time: _time, ...event }) => event),
        [
          { type: 'peer-query', direction: 'in', peer: PEER3 },
          { type: 'peer-report', direction: 'out', peers: [PEER3], records: [] },
        ],
      );
    } finally {
      await stop();
    }
  });
});

describe('snoop --daemon prints the messages with the peers', () => {
  const time = '2026-01-01T12:00:00.000Z';
  // As the user's time zone shows it.
  const clock = formatClock(Date.parse(time) / 1000);
  const lines = (events: DaemonEvent[]) => events.map((event) => formatDaemonEvent(event, plain));

  it('one human line each: direction, the peer or peers, the records or the query', () => {
    assert.deepEqual(
      lines([
        {
          type: 'peer-report',
          time,
          direction: 'in',
          peer: '192.168.60.12',
          records: [{ type: 'MODE_IS_EXCLUDE', group: '239.1.1.1' }],
        },
        {
          type: 'peer-report',
          time,
          direction: 'out',
          peers: ['192.168.60.12', '192.168.60.13'],
          records: [
            { type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.1.1.1' },
            { type: 'CHANGE_TO_INCLUDE_MODE', group: '239.1.1.2' },
          ],
        },
        { type: 'peer-report', time, direction: 'out', peers: ['192.168.60.13'], records: [] },
        { type: 'peer-query', time, direction: 'in', peer: '192.168.60.13' },
        { type: 'peer-query', time, direction: 'out', peers: ['192.168.60.12', '192.168.60.13'] },
      ]),
      [
        `${clock} peer-report in  from 192.168.60.12: 239.1.1.1 IS_EX`,
        `${clock} peer-report out to 192.168.60.12, 192.168.60.13: 239.1.1.1 TO_EX; 239.1.1.2 TO_IN`,
        `${clock} peer-report out to 192.168.60.13: (no records)`,
        `${clock} peer-query in  from 192.168.60.13: general`,
        `${clock} peer-query out to 192.168.60.12, 192.168.60.13: general`,
      ],
    );
  });

  it('the events the other lines print are as they were', () => {
    const port = { ofport: 5, name: 'veth-a', pod: 'default/pod-a' };
    assert.deepEqual(
      lines([
        { type: 'join', time, group: '239.1.2.3', port, host: '10.0.0.5' },
        { type: 'replay', time, what: 'openflow', groups: 3 },
      ]),
      [
        `${clock} join   veth-a (5) default/pod-a  239.1.2.3 host 10.0.0.5`,
        `${clock} replay openflow reconnected: 3 groups replayed`,
      ],
    );
  });

  it('--json prints the event itself: the peer events cross the control socket field for field', async () => {
    const root = await mkdtemp(join(tmpdir(), 'mcastctl-peer-events-'));
    const view = new FakeDaemonView();
    const server = await ControlServer.listen({ path: join(root, 'mcastctl.sock'), view });
    const client = await ControlClient.connect(join(root, 'mcastctl.sock'));
    try {
      const sent: DaemonEvent[] = [
        {
          type: 'peer-report',
          time,
          direction: 'in',
          peer: '192.168.60.12',
          records: [{ type: 'MODE_IS_EXCLUDE', group: '239.1.1.1' }],
        },
        { type: 'peer-query', time, direction: 'out', peers: ['192.168.60.12', '192.168.60.13'] },
      ];
      const received: DaemonEvent[] = [];
      const stop = new AbortController();
      const following = client.events((event) => received.push(event) === sent.length && stop.abort(), {
        signal: stop.signal,
      });
      await waitFor(() => server.subscriberCount > 0, 'the subscription');
      for (const event of sent) view.emit(event);
      await following;
      assert.deepEqual(received, sent);
    } finally {
      client.close();
      await server.close();
      await rm(root, { recursive: true, force: true });
    }
  });
});
