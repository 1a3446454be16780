/**
 * The raw IP socket of the native addon (src/transport/raw-socket.ts) against the real
 * kernel, without multicast routing (a kernel may lack CONFIG_IP_MROUTE, and this test
 * must run there too): a raw IPPROTO_IGMP socket in one lab host joins a group with
 * setsockopt of a struct (IP_ADD_MEMBERSHIP) and receives the IGMP report that another
 * host on the same bridge sends to that group; an int option is set; the kernel's
 * refusals (a struct of the wrong size, MRT_INIT where the kernel has no multicast routing)
 * come back as errors with the errno's name in `code`; close is idempotent and lets the
 * process exit, which shows the socket no longer holds the event loop; and the kernel's
 * table of raw sockets shows each one gone on close(), or on collection when idle.
 *
 * The socket runs in a child process inside the host's namespace: this same file, run
 * with MCL_RAW_SOCKET_ROLE set (see the bottom).
 *
 * Needs root (namespaces, CAP_NET_RAW), python3 and the built addon (`npm run build:native`).
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { after, before, describe, it } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';

import { IPPROTO_IGMP, IPPROTO_IP, IP_ADD_MEMBERSHIP, MRT_INIT } from '../../src/protocol/mroute/constants.js';
import * as ipMreqn from '../../src/protocol/mroute/ip-mreqn.js';
import { MrouteError } from '../../src/protocol/mroute/mroute-error.js';
import { IPV4_KIT } from '../../src/protocol/mroute/family-kits.js';
import { ifindexOf } from '../../src/transport/interface-index.js';
import { RouterSocket } from '../../src/transport/router-socket.js';
import { openRawSocket } from '../../src/transport/raw-socket.js';
import * as igmp from '../../src/packet/igmp/index.js';
import { Lab, sleep, type Host } from '../lab/lab.js';
import { Member } from '../lab/member.js';
import { socketLifecycle } from '../helpers/socket-lifecycle.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const GROUP = '239.42.0.7';
/** linux/in.h: IP_MULTICAST_TTL, an int option. */
const IP_MULTICAST_TTL = 33;

/** An IGMPv2 report for `group`, by the project's own codec. */
const v2Report = (group: string): Uint8Array => igmp.encode({ kind: 'report', version: 2, group });

// ---------------------------------------------------------------------------------------
// The child: the raw socket, reporting what happens as JSON lines on stdout

type Event =
  | {
      event: 'refused';
      what: string;
      code: unknown;
      errno: unknown;
      syscall: unknown;
      typed?: string;
      typedErrno?: string;
    }
  | { event: 'mrt-init-taken' }
  | { event: 'ready' }
  | { event: 'message'; source: string; protocol: number; type: number; group: string }
  | { event: 'closed'; afterClose: unknown }
  | { event: 'counts'; before: number; open: number; closed: number; collected: number };

function emit(event: Event): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

function describeError(what: string, error: unknown): Event {
  const { code, errno, syscall } = error as { code?: unknown; errno?: unknown; syscall?: unknown };
  return { event: 'refused', what, code, errno, syscall };
}

function receiverRole(iface: string): void {
  const socket = openRawSocket({ family: 4, protocol: IPPROTO_IGMP, receiveBufferBytes: 262144 });
  socket.setOption(IPPROTO_IP, IP_MULTICAST_TTL, 1);
  socket.setOption(
    IPPROTO_IP,
    IP_ADD_MEMBERSHIP,
    ipMreqn.encode({ group: GROUP, address: '0.0.0.0', ifindex: ifindexOf(iface) }),
  );
  try {
    socket.setOption(IPPROTO_IP, IP_ADD_MEMBERSHIP, new Uint8Array(3));
  } catch (error) {
    emit(describeError('short ip_mreqn', error));
  }
  try {
    socket.setOption(IPPROTO_IP, MRT_INIT, 1);
    emit({ event: 'mrt-init-taken' });
  } catch (error) {
    emit(describeError('MRT_INIT', error));
  }
  // The same refusal through the router socket: its typed error keeps the errno's name.
  try {
    RouterSocket.open({ family: IPV4_KIT, init: true }).close();
  } catch (error) {
    const refused = describeError('RouterSocket.open', error);
    if (refused.event === 'refused' && error instanceof MrouteError) {
      refused.typed = error.code;
      if (error.errno !== undefined) refused.typedErrno = error.errno;
    }
    emit(refused);
  }
  socket.listen(
    (data) => {
      const headerLength = (data[0]! & 0x0f) * 4;
      const igmp = data.subarray(headerLength);
      emit({
        event: 'message',
        source: [...data.subarray(12, 16)].join('.'),
        protocol: data[9]!,
        type: igmp[0] ?? -1,
        group: [...igmp.subarray(4, 8)].join('.'),
      });
    },
    (error) => emit(describeError('receive', error)),
  );
  emit({ event: 'ready' });
  // The parent closes stdin when it has seen enough: close twice, then nothing holds the loop.
  process.stdin.resume();
  process.stdin.on('end', () => {
    process.stdin.pause();
    socket.close();
    socket.close();
    let afterClose: unknown = 'no error';
    try {
      socket.setOption(IPPROTO_IP, IP_MULTICAST_TTL, 1);
    } catch (error) {
      afterClose = (error as { code?: unknown }).code;
    }
    emit({ event: 'closed', afterClose });
  });
}

/**
 * Opens three sockets (one closed, one listening then closed, one dropped unstarted) and counts them with the kernel.
 */
async function lifecycleRole(): Promise<void> {
  const counts = await socketLifecycle({
    table: '/proc/net/raw',
    open: () => openRawSocket({ family: 4, protocol: IPPROTO_IGMP }),
    listen: (socket) =>
      socket.listen(
        () => undefined,
        () => undefined,
      ),
  });
  emit({ event: 'counts', ...counts });
}

// ---------------------------------------------------------------------------------------
// The test

class Receiver {
  readonly events: Event[] = [];
  readonly exited: Promise<number | null>;
  stderr = '';

  constructor(readonly child: ChildProcess) {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      try {
        this.events.push(JSON.parse(line) as Event);
      } catch {
        this.stderr += `unparsed stdout: ${line}\n`;
      }
    });
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  async waitFor(what: string, found: () => boolean, timeoutMs = 15_000): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    while (!found()) {
      if (this.child.exitCode !== null)
        throw new Error(`the receiver exited (${this.child.exitCode}) before ${what}: ${this.stderr}`);
      if (Date.now() > deadline)
        throw new Error(
          `no ${what} after ${timeoutMs} ms: events ${JSON.stringify(this.events)}, stderr ${this.stderr}`,
        );
      await sleep(50);
    }
  }

  refusal(what: string): Extract<Event, { event: 'refused' }> | undefined {
    return this.events.find(
      (event): event is Extract<Event, { event: 'refused' }> => event.event === 'refused' && event.what === what,
    );
  }
}

function kernelTests(): void {
  describe('the raw IGMP socket on a real kernel', () => {
    let lab: Lab;
    let receiverHost: Host;
    let sender: Member;
    let receiver: Receiver;

    before(async () => {
      if (process.getuid?.() !== 0)
        throw new Error('the raw socket tests need root (network namespaces, CAP_NET_RAW): run them with sudo');
      lab = Lab.create();
      const ns = await lab.namespace('sw');
      const bridge = await lab.linuxBridge(ns, 'br', { address: '10.62.0.1/24', snooping: false });
      receiverHost = await lab.host('rx', { bridge });
      const senderHost = await lab.host('tx', { bridge });
      sender = await Member.start(lab, senderHost);
      const env: NodeJS.ProcessEnv = {
        ...process.env,
        MCL_RAW_SOCKET_ROLE: 'receiver',
        MCL_RAW_SOCKET_IFACE: receiverHost.iface,
      };
      delete env.NODE_TEST_CONTEXT;
      receiver = new Receiver(lab.spawn(receiverHost.ns, [process.execPath, '--import', 'tsx', THIS_FILE], { env }));
      await receiver.waitFor('ready line', () => receiver.events.some((event) => event.event === 'ready'));
    });

    after(async () => {
      await lab?.destroy();
    });

    it('receives the IGMP report another host sends to a group it joined with a struct option', async () => {
      const report = v2Report(GROUP);
      const seen = () =>
        receiver.events.some(
          (event) => event.event === 'message' && event.source === sender.host.address && event.group === GROUP,
        );
      // Sent until seen: the receiver's membership takes effect as its own report leaves.
      for (let attempt = 0; attempt < 40 && !seen(); attempt++) {
        await sender.sendIgmp(GROUP, report);
        await sleep(250);
      }
      await receiver.waitFor('report from the sender', seen, 2000);
      const message = receiver.events.find(
        (event) => event.event === 'message' && event.source === sender.host.address,
      );
      assert.deepEqual(message, {
        event: 'message',
        source: sender.host.address,
        protocol: IPPROTO_IGMP,
        type: 0x16,
        group: GROUP,
      });
    });

    it("a kernel refusal is a system error: the errno's name in code, its negated number, the call", () => {
      assert.deepEqual(receiver.refusal('short ip_mreqn'), {
        event: 'refused',
        what: 'short ip_mreqn',
        code: 'EINVAL',
        errno: -22,
        syscall: 'setsockopt',
      });
    });

    it('MRT_INIT without multicast routing in the kernel is ENOPROTOOPT, and the router socket keeps that name', (t) => {
      if (receiver.events.some((event) => event.event === 'mrt-init-taken')) {
        t.skip('this kernel has multicast routing: MRT_INIT was taken, its absence cannot be shown here');
        return;
      }
      assert.deepEqual(receiver.refusal('MRT_INIT'), {
        event: 'refused',
        what: 'MRT_INIT',
        code: 'ENOPROTOOPT',
        errno: -92,
        syscall: 'setsockopt',
      });
      const typed = receiver.refusal('RouterSocket.open');
      assert.equal(typed?.typed, 'io');
      assert.equal(typed?.typedErrno, 'ENOPROTOOPT');
    });

    it('closes twice without error, refuses options after close, and lets the process exit', async () => {
      receiver.child.stdin!.end();
      let timer: NodeJS.Timeout | undefined;
      const deadline = new Promise<'still running'>((resolve) => {
        timer = setTimeout(() => resolve('still running'), 10_000);
      });
      const code = await Promise.race([receiver.exited, deadline]);
      clearTimeout(timer);
      assert.equal(code, 0, `receiver: ${receiver.stderr}`);
      assert.deepEqual(
        receiver.events.find((event) => event.event === 'closed'),
        { event: 'closed', afterClose: 'ERR_SOCKET_CLOSED' },
      );
      assert.equal(receiver.refusal('receive'), undefined, 'no receive error');
    });

    it('frees the socket on close() and when an idle socket is garbage collected', async () => {
      const env: NodeJS.ProcessEnv = { ...process.env, MCL_RAW_SOCKET_ROLE: 'lifecycle' };
      delete env.NODE_TEST_CONTEXT;
      const child = new Receiver(
        lab.spawn(receiverHost.ns, [process.execPath, '--expose-gc', '--import', 'tsx', THIS_FILE], { env }),
      );
      assert.equal(await child.exited, 0, child.stderr);
      const counts = child.events.find(
        (event): event is Extract<Event, { event: 'counts' }> => event.event === 'counts',
      );
      assert.ok(counts !== undefined, child.stderr);
      assert.equal(counts.open, counts.before + 3, 'three sockets open');
      assert.equal(counts.closed, counts.before + 2, 'close() released one at once');
      assert.equal(counts.collected, counts.before, 'the listening one closed, the dropped one collected');
    });
  });
}

const role = process.env.MCL_RAW_SOCKET_ROLE;
if (role === 'receiver') {
  receiverRole(process.env.MCL_RAW_SOCKET_IFACE ?? '');
} else if (role === 'lifecycle') {
  await lifecycleRole();
} else {
  kernelTests();
}
