/**
 * PacketCapture against the real kernel: a veth pair between two network namespaces, real
 * IGMP sent by the kernel when sockets join groups, real UDP/ARP/IPv6 noise around it.
 *
 * Needs root (namespaces, CAP_NET_RAW) and the built addon (`npm run build:native`). The
 * root namespace is left alone: captures run in child processes started inside the
 * namespaces with `ip netns exec`. Those children are this same file, run with
 * MCL_PACKET_SOCKET_ROLE set (see `runChild` at the bottom), so their code is typed too.
 *
 * Run: node --import tsx --test test/e2e/packet-socket.test.ts
 */

import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import dgram from 'node:dgram';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { after, before, describe, test } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';

import { BPF_K, BPF_RET, igmpFilter, type BpfInstruction } from '../../src/packet/bpf.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';
import { LinkType } from '../../src/packet/pcap/link-type.js';
import { runBpf } from '../helpers/bpf-interpreter.js';
import { socketLifecycle } from '../helpers/socket-lifecycle.js';
import { type McastError, PermissionError, UsageError } from '../../src/errors.js';
import { nativePart } from '../../src/runtime/native-addon.js';
import { PacketCapture, type CapturedFrame } from '../../src/transport/packet-socket.js';

const THIS_FILE = fileURLToPath(import.meta.url);
const PROJECT_ROOT = path.resolve(path.dirname(THIS_FILE), '../..');

/** Addresses inside the private namespaces (TEST-NET-1, never routed). */
const CAPTURE_ADDRESS = '192.0.2.1';
const PEER_ADDRESS = '192.0.2.2';
/** Joined by the capturing namespace itself: its report leaves through the captured interface. */
const OWN_GROUP = '239.5.5.5';
/** Joined only by the peer: the capturing side must see this report anyway. */
const PEER_GROUP = '239.7.7.7';
/** UDP multicast noise: the capturing side never joins it. */
const NOISE_GROUP = '239.3.3.3';
const NOISE_PORT = 5000;
const NOISE_MARKER = 'mcl-noise';
/** Snaplen of the unfiltered capture, smaller than a noise datagram: shows MSG_TRUNC at work. */
const SMALL_SNAPLEN = 64;

// ---------------------------------------------------------------------------------------
// Frame parsing (independent of the project's codecs, which are tested elsewhere)
// ---------------------------------------------------------------------------------------

interface ParsedIpv4 {
  protocol: number;
  source: string;
  destination: string;
  payload: Buffer;
}

function ipv4String(bytes: Buffer, offset: number): string {
  return [0, 1, 2, 3].map((i) => bytes[offset + i]).join('.');
}

/** The IPv4 packet of an Ethernet frame, or undefined for anything else. */
function parseEthernetIpv4(frame: Buffer): ParsedIpv4 | undefined {
  if (frame.length < 34 || frame.readUInt16BE(12) !== 0x0800) return undefined;
  const ip = frame.subarray(14);
  const headerLength = (ip[0]! & 0x0f) * 4;
  return {
    protocol: ip[9]!,
    source: ipv4String(ip, 12),
    destination: ipv4String(ip, 16),
    payload: ip.subarray(headerLength),
  };
}

/** Group addresses named by an IGMP message (v1/v2 report or leave, v3 report records). */
function igmpGroups(igmp: Buffer): string[] {
  const type = igmp[0];
  if (type === 0x12 || type === 0x16 || type === 0x17) return [ipv4String(igmp, 4)];
  if (type !== 0x22) return [];
  const groups: string[] = [];
  let offset = 8;
  for (let i = 0; i < igmp.readUInt16BE(6) && offset + 8 <= igmp.length; i++) {
    groups.push(ipv4String(igmp, offset + 4));
    offset += 8 + igmp[offset + 1]! * 4 + igmp.readUInt16BE(offset + 2) * 4;
  }
  return groups;
}

function ipv4Packet(options: { firstByte?: number; protocol: number; length?: number }): Buffer {
  const ihl = ((options.firstByte ?? 0x45) & 0x0f) * 4;
  const packet = Buffer.alloc(options.length ?? Math.max(ihl, 20) + 8);
  packet[0] = options.firstByte ?? 0x45;
  packet[9] = options.protocol;
  return packet;
}

function ethernetFrame(etherType: number, payload: Buffer, vlan?: number): Buffer {
  const header = Buffer.alloc(vlan === undefined ? 14 : 18);
  header.fill(0xaa, 0, 12);
  if (vlan === undefined) header.writeUInt16BE(etherType, 12);
  else {
    header.writeUInt16BE(0x8100, 12);
    header.writeUInt16BE(vlan, 14);
    header.writeUInt16BE(etherType, 16);
  }
  return Buffer.concat([header, payload]);
}

function filterTests(): void {
  describe('igmpFilter (interpreted)', () => {
    const ethernet = igmpFilter(LinkType.ETHERNET);
    const raw = igmpFilter(LinkType.RAW);
    const accepts = (program: readonly BpfInstruction[], packet: Buffer): boolean => runBpf(program, packet) !== 0;

    test('every instruction is well formed', () => {
      for (const program of [ethernet, raw]) {
        for (const { code, jt, jf, k } of program) {
          assert.ok(Number.isInteger(code) && code >= 0 && code <= 0xffff);
          assert.ok(Number.isInteger(jt) && jt >= 0 && jt <= 0xff);
          assert.ok(Number.isInteger(jf) && jf >= 0 && jf <= 0xff);
          assert.ok(Number.isInteger(k) && k >= 0 && k <= 0xffffffff);
        }
        assert.equal(program.at(-1)?.code, BPF_RET | BPF_K);
      }
    });

    test('Ethernet: IGMP, with or without options and one VLAN tag, passes', () => {
      assert.ok(accepts(ethernet, ethernetFrame(0x0800, ipv4Packet({ firstByte: 0x46, protocol: 2 }))));
      assert.ok(accepts(ethernet, ethernetFrame(0x0800, ipv4Packet({ protocol: 2 }))));
      assert.ok(accepts(ethernet, ethernetFrame(0x0800, ipv4Packet({ firstByte: 0x46, protocol: 2 }), 7)));
      assert.ok(accepts(ethernet, ethernetFrame(0x0800, ipv4Packet({ protocol: 2 }), 7)));
    });

    test('Ethernet: frames the decoder must judge pass (runts, options, broken headers)', () => {
      assert.ok(accepts(ethernet, ethernetFrame(0x0800, Buffer.alloc(10, 0x45))), 'shorter than an IPv4 header');
      assert.ok(
        accepts(ethernet, ethernetFrame(0x0800, ipv4Packet({ firstByte: 0x46, protocol: 17 }))),
        'UDP with options',
      );
      assert.ok(accepts(ethernet, ethernetFrame(0x0800, ipv4Packet({ firstByte: 0x44, protocol: 17 }))), 'IHL below 5');
      assert.ok(accepts(ethernet, ethernetFrame(0x0800, Buffer.alloc(10, 0x45), 7)), 'tagged runt');
    });

    test('Ethernet: everything else is rejected', () => {
      assert.ok(!accepts(ethernet, ethernetFrame(0x0800, ipv4Packet({ protocol: 17 }))), 'UDP');
      assert.ok(!accepts(ethernet, ethernetFrame(0x0800, ipv4Packet({ protocol: 6 }))), 'TCP');
      assert.ok(!accepts(ethernet, ethernetFrame(0x0800, ipv4Packet({ protocol: 17 }), 7)), 'tagged UDP');
      assert.ok(!accepts(ethernet, ethernetFrame(0x0806, Buffer.alloc(28))), 'ARP');
      assert.ok(!accepts(ethernet, ethernetFrame(0x86dd, Buffer.alloc(48, 0x60))), 'IPv6');
      assert.ok(!accepts(ethernet, ethernetFrame(0x86dd, Buffer.alloc(48, 0x60), 7)), 'tagged IPv6');
      assert.ok(!accepts(ethernet, Buffer.alloc(10)), 'shorter than an Ethernet header');
    });

    test('raw IP: IPv4 IGMP and undecidable IPv4 pass, the rest does not', () => {
      assert.ok(accepts(raw, ipv4Packet({ protocol: 2 })));
      assert.ok(accepts(raw, ipv4Packet({ firstByte: 0x46, protocol: 2 })));
      assert.ok(accepts(raw, ipv4Packet({ firstByte: 0x46, protocol: 17 })), 'options');
      assert.ok(accepts(raw, Buffer.from([0x45, 0, 0, 10])), 'runt');
      assert.ok(!accepts(raw, ipv4Packet({ protocol: 17 })), 'UDP');
      assert.ok(!accepts(raw, Buffer.alloc(48, 0x60)), 'IPv6');
      assert.ok(!accepts(raw, Buffer.alloc(0)), 'empty');
    });

    test('an unknown link type has no filter', () => {
      assert.throws(() => igmpFilter(113), RangeError);
    });
  });
}

// ---------------------------------------------------------------------------------------
// The lab
// ---------------------------------------------------------------------------------------

function run(command: string, args: readonly string[]): string {
  return execFileSync(command, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Environment of the child processes: without node:test's marker, which would make a
    child node believe it is a test-runner subprocess. */
function childEnv(role: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, MCL_PACKET_SOCKET_ROLE: role, ...extra };
  delete env.NODE_TEST_CONTEXT;
  return env;
}

/** A child process speaking NDJSON on stdout, with a way to wait for a given line. */
class Child {
  readonly events: Array<Record<string, unknown>> = [];
  readonly exited: Promise<number | null>;
  #stderr = '';
  #waiters: Array<() => void> = [];

  constructor(readonly process: ChildProcess) {
    createInterface({ input: process.stdout! }).on('line', (line) => {
      try {
        this.events.push(JSON.parse(line) as Record<string, unknown>);
      } catch {
        this.events.push({ event: 'garbage', line });
      }
      for (const wake of this.#waiters) wake();
    });
    process.stderr!.on('data', (chunk: Buffer) => {
      this.#stderr += chunk.toString();
    });
    this.exited = new Promise((resolve) => {
      process.on('close', (code) => {
        resolve(code);
        for (const wake of this.#waiters) wake();
      });
    });
  }

  get stderr(): string {
    return this.#stderr;
  }

  /** The exit code; a child that hangs is killed after the deadline (a failure, not a measurement). */
  async exit(deadlineMs = 30_000): Promise<number | null> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        this.process.kill('SIGKILL');
        reject(
          new Error(
            `child still running after ${deadlineMs} ms\nevents: ${JSON.stringify(this.events).slice(0, 4000)}\nstderr: ${this.#stderr}`,
          ),
        );
      }, deadlineMs);
    });
    try {
      return await Promise.race([this.exited, deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  send(command: string): void {
    this.process.stdin!.write(`${command}\n`);
  }

  /**
   * Resolves when `done` holds. The deadline only keeps a broken kernel path from hanging
   * the suite; nothing is asserted about how long it took.
   */
  async waitFor(what: string, done: () => boolean, deadlineMs = 20_000): Promise<void> {
    const started = Date.now();
    while (!done()) {
      if (this.process.exitCode !== null || this.process.signalCode !== null) {
        throw new Error(
          `child exited (${this.process.exitCode ?? this.process.signalCode}) before ${what}\nstderr: ${this.#stderr}`,
        );
      }
      if (Date.now() - started > deadlineMs) {
        throw new Error(
          `gave up waiting for ${what}\nevents: ${JSON.stringify(this.events, null, 1).slice(0, 4000)}\nstderr: ${this.#stderr}`,
        );
      }
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 250);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      this.#waiters = [];
    }
  }
}

function spawnChild(prefix: readonly string[], role: string, extra: Record<string, string> = {}): Child {
  const child = spawn(prefix[0]!, [...prefix.slice(1), process.execPath, '--import', 'tsx', THIS_FILE], {
    cwd: PROJECT_ROOT,
    env: childEnv(role, extra),
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  return new Child(child);
}

// These tests are never skipped: without root or the addon they fail, saying why.
function assertCanRun(): void {
  if (process.getuid?.() !== 0)
    throw new Error('the kernel tests need root (network namespaces, CAP_NET_RAW): run them with sudo');
  try {
    nativePart('packetSocket');
  } catch (error) {
    throw new Error(`the kernel tests need the addon: npm run build:native (${(error as Error).message})`);
  }
}

function kernelTests(): void {
  describe('PacketCapture on a real veth', () => {
    before(assertCanRun);
    const id = randomBytes(2).toString('hex');
    // Every name carries the lab prefix and this run's id (interface names: at most 15 bytes).
    const captureNs = `mclcap-${id}-cap`;
    const peerNs = `mclcap-${id}-peer`;
    const captureIf = `mclcap${id}c`;
    const peerIf = `mclcap${id}p`;
    const children: Child[] = [];
    let torn = false;

    function teardown(): void {
      if (torn) return;
      torn = true;
      for (const child of children) if (child.process.exitCode === null) child.process.kill('SIGKILL');
      for (const ns of [captureNs, peerNs]) {
        try {
          run('ip', ['netns', 'del', ns]); // also destroys the veth ends inside
        } catch {
          // not created, or already gone
        }
      }
    }
    const onSignal = (signal: NodeJS.Signals): void => {
      teardown();
      process.kill(process.pid, signal);
    };

    before(() => {
      process.once('exit', teardown);
      process.once('SIGINT', onSignal);
      process.once('SIGTERM', onSignal);
      run('ip', ['netns', 'add', captureNs]);
      run('ip', ['netns', 'add', peerNs]);
      // Created directly inside the namespaces: the root namespace never sees these devices.
      run('ip', ['-n', captureNs, 'link', 'add', captureIf, 'type', 'veth', 'peer', 'name', peerIf, 'netns', peerNs]);
      run('ip', ['-n', captureNs, 'addr', 'add', `${CAPTURE_ADDRESS}/24`, 'dev', captureIf]);
      run('ip', ['-n', peerNs, 'addr', 'add', `${PEER_ADDRESS}/24`, 'dev', peerIf]);
      for (const [ns, dev] of [
        [captureNs, captureIf],
        [peerNs, peerIf],
      ] as const) {
        run('ip', ['-n', ns, 'link', 'set', 'lo', 'up']);
        run('ip', ['-n', ns, 'link', 'set', dev, 'up']);
        // The lab's rule for veths: with offload on, UDP leaves with its checksum unfilled.
        run('ip', ['netns', 'exec', ns, 'ethtool', '-K', dev, 'tx', 'off']);
      }
    });

    after(() => {
      teardown();
      process.off('exit', teardown);
      process.off('SIGINT', onSignal);
      process.off('SIGTERM', onSignal);
    });

    function promiscuity(): number {
      const [link] = JSON.parse(run('ip', ['-n', captureNs, '-d', '-j', 'link', 'show', captureIf])) as Array<{
        promiscuity: number;
      }>;
      return link!.promiscuity;
    }

    test('sees IGMP crossing the interface, in both directions, and only IGMP and MLD through the filter', async () => {
      const capture = spawnChild(['ip', 'netns', 'exec', captureNs], 'capture', { MCL_IFACE: captureIf });
      children.push(capture);
      await capture.waitFor('the capture to open', () => capture.events.some((e) => e.event === 'ready'));
      const ready = capture.events.find((e) => e.event === 'ready')!;
      assert.equal(ready.linkType, LinkType.ETHERNET);
      assert.equal(
        ready.ifindex,
        Number(run('ip', ['netns', 'exec', captureNs, 'cat', `/sys/class/net/${captureIf}/ifindex`]).trim()),
      );
      assert.ok(promiscuity() >= 1, 'promiscuous while the filtered capture is open');

      // The peer joins a group the capturing side never joins, and makes noise.
      const peer = spawnChild(['ip', 'netns', 'exec', peerNs], 'peer');
      children.push(peer);
      // The capturing namespace joins a group of its own: its report is an outgoing frame.
      capture.send('join');

      type FrameEvent = {
        capture: 'filtered' | 'all';
        direction: string;
        hex: string;
        originalLength: number;
        tsSec: number;
        tsNsec: number;
      };
      const frames = (which: 'filtered' | 'all'): FrameEvent[] =>
        capture.events.filter((e) => e.event === 'frame' && e.capture === which) as unknown as FrameEvent[];
      const igmpWithGroup = (group: string, direction: string) => (f: FrameEvent) => {
        const ip = parseEthernetIpv4(Buffer.from(f.hex, 'hex'));
        return f.direction === direction && ip?.protocol === 2 && igmpGroups(ip.payload).includes(group);
      };
      const isNoise = (f: FrameEvent): boolean => Buffer.from(f.hex, 'hex').includes(NOISE_MARKER);

      await capture.waitFor('the peer report', () => frames('filtered').some(igmpWithGroup(PEER_GROUP, 'in')));
      await capture.waitFor('our own report', () => frames('filtered').some(igmpWithGroup(OWN_GROUP, 'out')));
      await capture.waitFor('the noise, unfiltered', () => frames('all').some(isNoise));
      assert.equal(await peer.exit(), 0, `peer failed: ${peer.stderr}`);

      capture.send('stop');
      assert.equal(await capture.exit(), 0, `capture child failed: ${capture.stderr}`);
      assert.ok(
        capture.events.some((e) => e.event === 'closed'),
        'the child exited on its own after close(): nothing kept its loop alive',
      );
      assert.equal(promiscuity(), 0, 'promiscuous mode ends with the socket');

      // Through the filter: IGMP (and the MLD the kernel sends on its own when the link
      // comes up), in both directions, never the noise.
      const filtered = frames('filtered');
      const locate = ipLocator(LinkType.ETHERNET);
      for (const frame of filtered) {
        const bytes = Buffer.from(frame.hex, 'hex');
        const ip = parseEthernetIpv4(bytes);
        const isMld = decodeFrame(locate, bytes, { frame: 0, ts: 0 })?.kind === 'mld';
        assert.ok(ip?.protocol === 2 || isMld, `a frame neither IGMP nor MLD passed the filter: ${frame.hex}`);
        assert.ok(!isNoise(frame));
        assert.equal(frame.originalLength, frame.hex.length / 2, 'default snaplen keeps whole frames');
        assert.ok(frame.tsNsec >= 0 && frame.tsNsec < 1e9);
        // A wall-clock kernel timestamp: same day as this test, not e.g. a monotonic clock.
        assert.ok(Math.abs(frame.tsSec - Date.now() / 1000) < 86_400, `timestamp ${frame.tsSec}`);
      }
      assert.ok(!filtered.some(igmpWithGroup(OWN_GROUP, 'in')), 'own reports are outgoing, not incoming');

      // Without a filter the same socket type sees everything, cut at the snaplen.
      const all = frames('all');
      const noise = all.filter(isNoise);
      assert.ok(noise.length > 0);
      for (const frame of noise) {
        assert.equal(frame.hex.length / 2, SMALL_SNAPLEN);
        assert.ok(frame.originalLength > SMALL_SNAPLEN, 'MSG_TRUNC reports the length on the wire');
        assert.equal(frame.direction, 'in');
      }
      const etherTypes = new Set(all.map((f) => Buffer.from(f.hex, 'hex').readUInt16BE(12)));
      assert.ok(etherTypes.has(0x0806), 'ARP crossed the interface (and the filter kept it out)');

      const stats = capture.events.find((e) => e.event === 'stats') as
        | { filtered: { received: number; dropped: number } }
        | undefined;
      assert.ok(stats !== undefined);
      assert.ok(stats.filtered.received >= filtered.length, 'the kernel counted at least the frames delivered');
      assert.equal(stats.filtered.dropped, 0);
    });

    test('an exception thrown by a frame listener is an uncaught exception', async () => {
      const child = spawnChild(['ip', 'netns', 'exec', captureNs], 'throwing-listener');
      children.push(child);
      assert.equal(await child.exit(), 0, child.stderr);
      const uncaught = child.events.find((e) => e.event === 'uncaught');
      assert.equal(uncaught?.message, 'listener failed on purpose');
    });

    test('frees the socket on close() and when an idle capture is garbage collected', async () => {
      const child = spawnChild(['ip', 'netns', 'exec', captureNs], 'lifecycle', { NODE_OPTIONS: '--expose-gc' });
      children.push(child);
      assert.equal(await child.exit(), 0, child.stderr);
      const counts = child.events.find((e) => e.event === 'counts') as
        | { before: number; open: number; closed: number; collected: number }
        | undefined;
      assert.ok(counts !== undefined, child.stderr);
      assert.equal(counts.open, counts.before + 3);
      assert.equal(counts.closed, counts.before + 2);
      assert.equal(counts.collected, counts.before);
    });

    test('reports a link going down, and the interface being deleted', async () => {
      const iface = `mclcap${id}x`;
      run('ip', ['-n', captureNs, 'link', 'add', iface, 'type', 'veth', 'peer', 'name', `mclcap${id}y`]);
      run('ip', ['-n', captureNs, 'addr', 'add', '198.51.100.1/24', 'dev', iface]);
      run('ip', ['-n', captureNs, 'link', 'set', iface, 'up']);
      run('ip', ['-n', captureNs, 'link', 'set', `mclcap${id}y`, 'up']);
      const child = spawnChild(['ip', 'netns', 'exec', captureNs], 'link-events', { MCL_IFACE: iface });
      children.push(child);
      // Exiting at all shows that the capture, closed on deletion, released the loop.
      assert.equal(await child.exit(), 0, child.stderr);
      const errors = child.events.filter((e) => e.event === 'capture-error');
      assert.deepEqual(
        errors.map((e) => [e.code, e.closed]),
        [
          ['io', false],
          ['no-such-interface', true],
        ],
      );
      assert.match(String(errors[0]?.message), /ENETDOWN/);
      assert.match(String(errors[1]?.message), new RegExp(`${iface}.*removed`));
      assert.ok(
        child.events.some((e) => e.event === 'frame-after-up'),
        'frames flow again after the link came back',
      );
    });

    test('without CAP_NET_RAW: PermissionError', async () => {
      // setpriv (util-linux) switches to nobody, which drops every capability.
      const child = spawnChild(
        ['ip', 'netns', 'exec', captureNs, 'setpriv', '--reuid=65534', '--regid=65534', '--clear-groups'],
        'unprivileged',
        {
          MCL_IFACE: captureIf,
        },
      );
      children.push(child);
      assert.equal(await child.exit(), 0, child.stderr);
      const result = child.events.find((e) => e.event === 'error');
      assert.deepEqual(
        { name: result?.name, code: result?.code, exitCode: result?.exitCode },
        { name: 'PermissionError', code: 'no-permission', exitCode: 77 },
      );
      assert.match(
        String(result?.message),
        new RegExp(`^cannot capture on ${captureIf}: EPERM .*CAP_NET_RAW.*setcap cap_net_raw\\+ep`),
      );
    });

    test('a missing interface is a usage error naming it', () => {
      // Harmless in the root namespace: the socket is created with protocol 0 and receives
      // nothing; the interface lookup fails before anything is bound.
      const missing = `mclnone${id}`;
      assert.throws(
        () => PacketCapture.open({ iface: missing }),
        (error: unknown) => {
          assert.ok(error instanceof UsageError);
          assert.equal(error.code, 'no-such-interface');
          assert.equal(error.exitCode, 64);
          assert.match(error.message, new RegExp(`${missing}.*ip link`));
          return true;
        },
      );
    });

    test('invalid interface names and options are refused before any system call', () => {
      for (const iface of ['', 'a'.repeat(16), 'eth/0', 'eth 0', 'eth0:1']) {
        assert.throws(
          () => PacketCapture.open({ iface }),
          (error: unknown) => error instanceof UsageError && error.code === 'usage',
          iface,
        );
      }
      assert.throws(() => PacketCapture.open({ iface: 'lo', snaplen: 0 }), UsageError);
      assert.throws(() => PacketCapture.open({ iface: 'lo', receiveBufferBytes: 1.5 }), UsageError);
    });
  });
}

// ---------------------------------------------------------------------------------------
// Child processes (this file, run with MCL_PACKET_SOCKET_ROLE set)
// ---------------------------------------------------------------------------------------

function emit(event: Record<string, unknown>): void {
  process.stdout.write(`${JSON.stringify(event)}\n`);
}

function frameEvent(capture: 'filtered' | 'all', frame: CapturedFrame): Record<string, unknown> {
  return {
    event: 'frame',
    capture,
    direction: frame.direction,
    hex: frame.data.toString('hex'),
    originalLength: frame.originalLength,
    tsSec: frame.tsSec,
    tsNsec: frame.tsNsec,
  };
}

/** Opens a filtered and an unfiltered capture, joins OWN_GROUP on 'join', closes on 'stop'. */
function captureRole(): void {
  const iface = process.env.MCL_IFACE!;
  const filtered = PacketCapture.open({ iface, filter: igmpFilter });
  const all = PacketCapture.open({ iface, snaplen: SMALL_SNAPLEN, promiscuous: false, receiveBufferBytes: 1 << 20 });
  filtered.onFrame((frame) => emit(frameEvent('filtered', frame)));
  all.onFrame((frame) => emit(frameEvent('all', frame)));
  emit({ event: 'ready', linkType: filtered.linkType, ifindex: filtered.ifindex });

  const socket = dgram.createSocket({ type: 'udp4', reuseAddr: true });
  const input = createInterface({ input: process.stdin });
  input.on('line', (command) => {
    if (command === 'join') {
      socket.bind(0, () => {
        socket.addMembership(OWN_GROUP, CAPTURE_ADDRESS);
        emit({ event: 'joined' });
      });
    } else if (command === 'stop') {
      filtered.close();
      all.close();
      filtered.close(); // idempotent
      emit({ event: 'stats', filtered: filtered.stats(), all: all.stats() });
      socket.close();
      input.close();
      process.stdin.destroy();
      // Nothing else is left: if the captures still held the loop, the process would hang.
      process.on('exit', () => emit({ event: 'closed' }));
    }
  });
}

/** In the peer namespace: joins PEER_GROUP (the kernel reports it), sends UDP noise, leaves. */
function peerRole(): void {
  const socket = dgram.createSocket({ type: 'udp4', reuseAddr: true });
  socket.bind(NOISE_PORT, () => {
    socket.addMembership(PEER_GROUP, PEER_ADDRESS);
    socket.setMulticastInterface(PEER_ADDRESS);
    const payload = Buffer.concat([Buffer.from(NOISE_MARKER), Buffer.alloc(200)]);
    let sent = 0;
    const tick = (): void => {
      socket.send(payload, 9, CAPTURE_ADDRESS); // unicast: ARP first, then UDP (and ICMP back)
      socket.send(payload, NOISE_PORT, NOISE_GROUP); // multicast UDP nobody on the other side joined
      sent += 1;
      if (sent < 10) setTimeout(tick, 100);
      else setTimeout(() => socket.close(), 500); // closing leaves the group: one more report
    };
    tick();
  });
}

/** A listener that throws: the error must reach 'uncaughtException'. */
function throwingListenerRole(): void {
  const capture = PacketCapture.open({ iface: 'lo' });
  const sender = dgram.createSocket('udp4');
  process.on('uncaughtException', (error) => {
    emit({ event: 'uncaught', message: error.message });
    capture.close();
    sender.close();
  });
  capture.onFrame(() => {
    throw new Error('listener failed on purpose');
  });
  sender.send('x', 9, '127.0.0.1');
}

async function lifecycleRole(): Promise<void> {
  const counts = await socketLifecycle({
    table: '/proc/net/packet',
    open: () => PacketCapture.open({ iface: 'lo' }),
    listen: (capture) => capture.onFrame(() => {}),
  });
  emit({ event: 'counts', ...counts });
}

/** Takes its interface down, up, and deletes it, reporting what the capture says. */
async function linkEventsRole(): Promise<void> {
  const iface = process.env.MCL_IFACE!;
  const capture = PacketCapture.open({ iface });
  const codes: string[] = [];
  let sawFrameAfterUp = false;
  let upAgain = false;
  let wake = (): void => {};
  const until = (done: () => boolean): Promise<void> =>
    new Promise((resolve) => {
      const check = (): void => (done() ? resolve() : void (wake = check));
      check();
    });
  capture.onFrame(() => {
    if (upAgain && !sawFrameAfterUp) {
      sawFrameAfterUp = true;
      emit({ event: 'frame-after-up' });
    }
    wake();
  });
  capture.onError((error) => {
    emit({ event: 'capture-error', code: error.code, message: error.message, closed: capture.closed });
    codes.push(error.code);
    wake();
  });
  execFileSync('ip', ['link', 'set', iface, 'down']);
  await until(() => codes.length >= 1);
  upAgain = true;
  execFileSync('ip', ['link', 'set', iface, 'up']);
  // Make traffic: a datagram to a neighbour nobody answers sends ARP requests out of iface.
  const sender = dgram.createSocket('udp4');
  const poke = setInterval(() => sender.send('x', 9, '198.51.100.2'), 200);
  await until(() => sawFrameAfterUp);
  clearInterval(poke);
  sender.close();
  execFileSync('ip', ['link', 'del', iface]);
  await until(() => codes.length >= 2);
}

function unprivilegedRole(): void {
  try {
    PacketCapture.open({ iface: process.env.MCL_IFACE! }).close();
    emit({ event: 'opened' });
  } catch (error) {
    const e = error as McastError;
    emit({
      event: 'error',
      name: e.name,
      code: e.code,
      exitCode: e.exitCode,
      message: e.message,
      isPermissionError: e instanceof PermissionError,
    });
  }
}

async function runChild(role: string): Promise<void> {
  switch (role) {
    case 'capture':
      return captureRole();
    case 'peer':
      return peerRole();
    case 'throwing-listener':
      return throwingListenerRole();
    case 'lifecycle':
      return lifecycleRole();
    case 'link-events':
      return linkEventsRole();
    case 'unprivileged':
      return unprivilegedRole();
    default:
      throw new Error(`unknown role ${role}`);
  }
}

// A child runs its role and nothing else: registering tests would make it a test run.
const role = process.env.MCL_PACKET_SOCKET_ROLE;
if (role !== undefined) {
  await runChild(role);
} else {
  filterTests();
  kernelTests();
}
