/**
 * The seals on the membership messages between peers: the key file's keys, the seal's
 * bytes, what opens and what does not, the counters, and the exchange that believes a
 * peer only under a seal.
 */
import assert from 'node:assert/strict';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inspect } from 'node:util';
import { after, before, describe, it } from '../helpers/node-test.js';
import { loadPeerKeyFile } from '../../src/controllers/daemon/config/peers-loader.js';
import { PeerExchange, type PeerExchangePort } from '../../src/controllers/daemon/tunnel/peer-exchange.js';
import { parsePeerKeyFile, peerKeyIdOf } from '../../src/domain/peers/peer-keys.js';
import * as seal from '../../src/domain/peers/peer-seal.js';
import {
  MAX_SEAL_SKEW_MS,
  openFrame,
  ReplayGuard,
  SEAL_LENGTH,
  SealCounter,
  sealFrame,
} from '../../src/domain/peers/peer-seal.js';
import { UsageError } from '../../src/errors.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';
import * as mldFrame from '../../src/packet/mld-frame.js';
import { internetChecksum } from '../../src/wire/checksum.js';
import { type GroupAddress, groupAddress, type HostAddress, hostAddress } from '../../src/wire/ip-address.js';
import { FakeClock } from '../fakes/fake-clock.js';
import { v3Report } from '../fakes/igmp-frames.js';
import { RecordingLogger } from '../fakes/recording-logger.js';

const KEY_A = 'a1'.repeat(32);
const KEY_B = 'b2'.repeat(16);
const KEY_C = 'c3'.repeat(32);
const NODE = hostAddress('192.168.60.11');
const P2 = hostAddress('192.168.60.12');
const P3 = hostAddress('192.168.60.13');
const G1 = groupAddress('239.1.1.1');
const ring = (...keys: string[]) => parsePeerKeyFile(keys.join('\n'), '/etc/mcastctl/keys');
const join2 = (group: string) => v3Report(P2, [{ type: 'CHANGE_TO_EXCLUDE_MODE', group }]);
const mldJoin = () =>
  mldFrame.encodeFrame({
    message: {
      kind: 'report',
      version: 2,
      records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: 'ff3e::1', sources: [] }],
    },
    src: 'fe80::2',
    dst: 'ff02::16',
  });

/** The error `run` throws (it must throw one). */
function thrown(run: () => unknown): Error {
  try {
    run();
  } catch (error) {
    return error as Error;
  }
  assert.fail('expected an error');
}

describe('peer key file', () => {
  it('one or two keys, comments and blank lines left out; the first seals; ids are what a seal names', () => {
    const keys = parsePeerKeyFile(`# the cluster's keys\n\n${KEY_A}\n  ${KEY_B.toUpperCase()}  \n`, 'f');
    assert.equal(keys.sealing.id, peerKeyIdOf(Buffer.from(KEY_A, 'hex')));
    assert.deepEqual(keys.sealing.secret, Buffer.from(KEY_A, 'hex'));
    assert.equal(keys.ids.length, 2);
    assert.match(keys.ids[0]!, /^0x[0-9a-f]{8}$/);
    assert.ok(keys.key(peerKeyIdOf(Buffer.from(KEY_B, 'hex'))) !== undefined);
    assert.equal(keys.key(peerKeyIdOf(Buffer.from(KEY_C, 'hex'))), undefined);
    assert.ok(keys.sameAs(ring(KEY_A, KEY_B)));
    assert.ok(!keys.sameAs(ring(KEY_B, KEY_A)), 'the order is which key seals');
    assert.ok(!keys.sameAs(undefined));
  });

  it('never shows a secret: JSON and inspection give the file and the ids', () => {
    const keys = ring(KEY_A, KEY_B);
    for (const shown of [JSON.stringify(keys), inspect(keys), JSON.stringify({ tunnel: { peerKeys: keys } })]) {
      assert.ok(!shown.includes(KEY_A) && !shown.includes(KEY_B), shown);
      assert.ok(shown.includes(keys.ids[0]!), shown);
    }
  });

  const refused: Array<[string, string, RegExp]> = [
    ['not hex', `${KEY_A}\nsecret-password-here-1234567890ab`, /keys:2: not a key/],
    ['an odd number of digits', `${KEY_A.slice(1)}`, /keys:1: not a key/],
    ['too short', 'ab'.repeat(15), /keys:1: a key of 15 octets/],
    ['too long', 'ab'.repeat(65), /keys:1: a key of 65 octets/],
    ['three keys', `${KEY_A}\n${KEY_B}\n${KEY_C}`, /3 keys; at most 2/],
    ['the same key twice', `${KEY_A}\n${KEY_A.toUpperCase()}`, /keys:2: the same key as an earlier line/],
    ['no key', '# nothing yet\n', /no key in the file/],
  ];
  for (const [what, text, message] of refused)
    it(`refuses ${what}, naming the line and never quoting it`, () => {
      const error = thrown(() => parsePeerKeyFile(text, '/etc/mcastctl/keys'));
      assert.ok(error instanceof UsageError);
      assert.match(error.message, message);
      for (const line of text.split('\n').filter((line) => line.length > 8))
        assert.ok(!error.message.includes(line), error.message);
    });

  describe('read from disk', () => {
    let dir = '';
    before(async () => {
      dir = await mkdtemp(join(tmpdir(), 'mcl-keys-'));
    });
    after(async () => {
      await rm(dir, { recursive: true, force: true });
    });

    it('a file of mode 0600 is read; one others may read is refused (exit 64) with the mode and a chmod hint', async () => {
      const path = join(dir, 'keys');
      await writeFile(path, `${KEY_A}\n`, { mode: 0o600 });
      assert.deepEqual((await loadPeerKeyFile(path)).ids, ring(KEY_A).ids);
      await chmod(path, 0o644);
      const error = await loadPeerKeyFile(path).then(
        () => assert.fail('a shared key file must be refused'),
        (error: unknown) => error as UsageError,
      );
      assert.ok(error instanceof UsageError);
      assert.equal(error.exitCode, 64);
      assert.match(error.message, /mode 0644/);
      assert.match(error.hint ?? '', /chmod 600/);
      await chmod(path, 0o640);
      await assert.rejects(loadPeerKeyFile(path), /mode 0640/);
    });

    it('a missing file or a directory is refused', async () => {
      await assert.rejects(loadPeerKeyFile(join(dir, 'none')), /no such file/);
      await assert.rejects(loadPeerKeyFile(dir), /only a regular file/);
    });
  });
});

describe('peer seal', () => {
  it('encodes and decodes its 32 octets; anything without the magic is no seal', () => {
    const code = Uint8Array.from({ length: 16 }, (_, index) => index);
    const bytes = seal.encode({ keyId: 0xdeadbeef, counter: 1_767_225_600_000_123n, code });
    assert.equal(bytes.length, seal.encodingLength());
    assert.equal(Buffer.from(bytes.subarray(0, 4)).toString('latin1'), 'MCS1');
    assert.deepEqual(seal.decode(bytes), { keyId: 0xdeadbeef, counter: 1_767_225_600_000_123n, code });
    assert.equal(seal.decode(new Uint8Array(32)), undefined);
    assert.equal(seal.decode(bytes, 0, 31), undefined);
  });

  it('sealed, an IGMPv3 report grows by 32 octets with a right IPv4 header; opened, it is the report again', () => {
    const frame = join2('239.1.1.1');
    const sealed = sealFrame(frame, { key: ring(KEY_A).sealing, sender: P2, counter: 7n });
    assert.equal(sealed.length, frame.length + SEAL_LENGTH);
    assert.equal(Buffer.from(sealed).readUInt16BE(16), Buffer.from(frame).readUInt16BE(16) + SEAL_LENGTH);
    assert.equal(internetChecksum(sealed, 14, 14 + 24), 0, 'the IPv4 header checksum follows the new length');
    const opened = openFrame(sealed, ring(KEY_A), P2);
    assert.ok('frame' in opened);
    assert.deepEqual(Buffer.from(opened.frame), Buffer.from(frame));
    assert.equal(opened.counter, 7n);
    assert.equal(decodeFrame(ipLocator(1), opened.frame, { frame: 1, ts: 0 })?.kind, 'igmp');
  });

  it('an MLDv2 report too (the IPv6 payload length grows)', () => {
    const frame = mldJoin();
    const sealed = sealFrame(frame, { key: ring(KEY_A).sealing, sender: P2, counter: 9n });
    assert.equal(Buffer.from(sealed).readUInt16BE(18), Buffer.from(frame).readUInt16BE(18) + SEAL_LENGTH);
    const opened = openFrame(sealed, ring(KEY_B, KEY_A), P2);
    assert.ok('frame' in opened, 'the second key opens what it sealed');
    assert.deepEqual(Buffer.from(opened.frame), Buffer.from(frame));
    assert.equal(decodeFrame(ipLocator(1), opened.frame, { frame: 1, ts: 0 })?.kind, 'mld');
  });

  it('refuses a frame without a seal, under a key not held, from another sender, or altered anywhere after the IP header', () => {
    const frame = join2('239.1.1.1');
    const sealed = sealFrame(frame, { key: ring(KEY_A).sealing, sender: P2, counter: 7n });
    assert.deepEqual(openFrame(frame, ring(KEY_A), P2), { refused: 'unsealed' });
    assert.deepEqual(openFrame(sealed, ring(KEY_C), P2), { refused: 'unknown-key' });
    assert.deepEqual(openFrame(sealed, ring(KEY_A), P3), { refused: 'bad-seal' }, "node 2's seal under node 3's name");
    const ipPayloadStart = 14 + 24;
    for (let at = ipPayloadStart; at < sealed.length; at++) {
      if (at >= sealed.length - SEAL_LENGTH && at < sealed.length - SEAL_LENGTH + 8) continue; // magic and key id
      const altered = Buffer.from(sealed);
      altered[at]! ^= 0x01;
      assert.deepEqual(openFrame(altered, ring(KEY_A), P2), { refused: 'bad-seal' }, `octet ${at} altered`);
    }
  });

  it('a counter goes up with the clock and past it, and keeps going up across a restart', () => {
    const counter = new SealCounter();
    const first = counter.next(1_000);
    assert.equal(first, 1_000_000n);
    assert.equal(counter.next(1_000), 1_000_001n);
    assert.equal(counter.next(999), 1_000_002n, 'a clock stepped back does not take it back');
    assert.equal(counter.next(1_001), 1_001_000n);
    assert.ok(new SealCounter().next(1_002) > counter.next(1_001), 'a restart a millisecond later starts above');
  });

  it('a replay, an older counter and a time 5 minutes off are refused; a peer forgotten starts again', () => {
    const guard = new ReplayGuard();
    const now = 1_767_225_600_000;
    const at = (ms: number) => BigInt(ms) * 1000n;
    assert.equal(guard.judge(P2, at(now), now), undefined);
    guard.take(P2, at(now));
    assert.equal(guard.judge(P2, at(now), now), 'replay');
    assert.equal(guard.judge(P2, at(now) - 1n, now), 'replay');
    assert.equal(guard.judge(P2, at(now) + 1n, now), undefined);
    assert.equal(guard.judge(P3, at(now), now), undefined, 'each peer has its own counter');
    assert.equal(guard.judge(P3, at(now - MAX_SEAL_SKEW_MS - 1), now), 'stale');
    assert.equal(guard.judge(P3, at(now + MAX_SEAL_SKEW_MS + 1), now), 'stale');
    assert.equal(guard.judge(P3, at(now - MAX_SEAL_SKEW_MS), now), undefined);
    guard.forget(P2);
    assert.equal(guard.judge(P2, at(now), now), undefined);
  });
});

describe('PeerExchange with keys', () => {
  /** The exchange of node 1, holding `keys`; what it sends is kept raw. */
  function keyed(keys = ring(KEY_A)) {
    const clock = new FakeClock();
    const logger = new RecordingLogger();
    const sent: Uint8Array[] = [];
    const changes: GroupAddress[][] = [];
    const port: PeerExchangePort = {
      async sendToPeers(frame, peers) {
        sent.push(frame);
        return { sent: peers.length, refused: [] };
      },
      groupsChanged: (groups) => changes.push([...groups]),
      clock,
      logger,
    };
    const exchange = new PeerExchange({
      port,
      nodeAddress: NODE,
      sourceMac: () => '02:00:00:00:00:01',
      peers: [P2, P3],
      keys,
      pathMtu: 1_500,
      refreshIntervalMs: 30_000,
      peerTimeoutMs: 70_000,
      maxGroupsPerPeer: 100,
      random: () => 0.5,
    });
    /** A frame as `from` sends it now, sealed with `key`. */
    const from = (peer: HostAddress, frame: Uint8Array, key = KEY_A) =>
      sealFrame(frame, { key: ring(key).sealing, sender: peer, counter: BigInt(clock.wallMs()) * 1000n + 1n });
    return { clock, logger, sent, changes, exchange, from };
  }

  it('believes a peer under its seal, and nothing else: unsealed, forged, foreign key and replay are counted apart', () => {
    const { exchange, changes, from, logger } = keyed();
    const sealed = from(P2, join2('239.1.1.1'));
    exchange.take(join2('239.1.1.2'), P2);
    exchange.take(from(P3, join2('239.1.1.3')), P2);
    exchange.take(from(P2, join2('239.1.1.4'), KEY_C), P2);
    assert.deepEqual(changes, []);
    exchange.take(sealed, P2);
    assert.deepEqual(exchange.peersOf(G1), [P2]);
    exchange.take(sealed, P2);
    const drops = exchange.view().peers.find((peer) => peer.address === P2)?.drops;
    assert.deepEqual(
      { ...drops },
      { ...drops, unsealed: 1, 'bad-seal': 1, 'unknown-key': 1, replay: 1, stale: 0, malformed: 0 },
    );
    assert.deepEqual(changes, [[G1]]);
    const warnings = logger.lines.filter((line) => line.level === 'warn').map((line) => line.message);
    for (const reason of ['unsealed', 'bad-seal', 'unknown-key', 'replay'])
      assert.ok(
        warnings.some((message) => message.endsWith(reason)),
        `${reason} warned: ${warnings.join('; ')}`,
      );
  });

  it("seals what it sends with the first key: a peer holding it opens every frame under this node's name", async () => {
    const { exchange, sent } = keyed(ring(KEY_B, KEY_A));
    exchange.start();
    exchange.localGroupChanged(G1, true);
    exchange.flushChanges();
    await new Promise((resolve) => setImmediate(resolve));
    assert.ok(sent.length >= 2, 'the greeting and the change');
    let last = 0n;
    for (const frame of sent) {
      assert.deepEqual(openFrame(frame, ring(KEY_A), NODE), { refused: 'unknown-key' }, 'KEY_B seals, not KEY_A');
      const opened = openFrame(frame, ring(KEY_B), NODE);
      assert.ok('counter' in opened);
      assert.ok(opened.counter > last, 'every frame a counter above the last');
      last = opened.counter;
    }
  });

  it('keys changed by a reload seal and open from the next frame on; the counters taken stay', () => {
    const { exchange, from, clock } = keyed(ring(KEY_A));
    const first = from(P2, join2('239.1.1.1'));
    exchange.take(first, P2);
    exchange.setKeys(ring(KEY_C));
    exchange.take(from(P2, join2('239.1.1.2')), P2);
    clock.advance(1);
    exchange.take(from(P2, join2('239.1.1.3'), KEY_C), P2);
    exchange.setKeys(ring(KEY_C, KEY_A));
    exchange.take(first, P2);
    exchange.setKeys(undefined);
    exchange.take(join2('239.1.1.5'), P2);
    const drops = exchange.view().peers.find((peer) => peer.address === P2)?.drops;
    assert.equal(drops?.['unknown-key'], 1);
    assert.equal(drops?.replay, 1, 'a frame taken under the old keys stays a replay under the new');
    assert.deepEqual(exchange.groupsWithRemoteMembers().sort(), ['239.1.1.1', '239.1.1.3', '239.1.1.5']);
  });
});
