/**
 * Linux cooked-capture headers: bytes written out by hand from the LINKTYPE_LINUX_SLL
 * and LINKTYPE_LINUX_SLL2 pages, and every frame of the `tcpdump -i any` fixtures
 * compared with tshark's dissection of the same frame.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';
import { describe, it } from '../helpers/node-test.js';
import { fileURLToPath } from 'node:url';
import { DecodeError } from '../../src/errors.js';
import { ArphrdType, sll, sll2, SllPacketType, sllPacketTypeName } from '../../src/packet/sll/index.js';
import { hex } from '../helpers/bytes.js';
import { assertRoundTrip } from '../helpers/roundtrip.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/', import.meta.url));

function hasTshark(): boolean {
  try {
    execFileSync('tshark', ['--version'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}
const noTshark = !hasTshark() && 'tshark is not installed';

/** Per frame: the raw octets and the named tshark fields, straight from tshark. */
function tsharkFields(file: string, fields: readonly string[]): { raw: Buffer; values: string[] }[] {
  interface Packet {
    _source: { layers: Record<string, [string, ...unknown[]] | Record<string, string>> };
  }
  const out = execFileSync('tshark', ['-r', join(FIXTURES, file), '-T', 'json', '-x'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'ignore'],
    maxBuffer: 1 << 26,
  });
  return (JSON.parse(out) as Packet[]).map(({ _source: { layers } }) => {
    const raw = layers['frame_raw'] as [string];
    const dissected = layers['sll'] as Record<string, string>;
    return { raw: hex(raw[0]), values: fields.map((field) => dissected[field] ?? '') };
  });
}

function macText(address: Uint8Array): string {
  return [...address].map((octet) => octet.toString(16).padStart(2, '0')).join(':');
}

function truncatedAtEveryLength(decode: (bytes: Uint8Array) => unknown, full: Uint8Array): void {
  for (let length = 0; length < full.length; length++) {
    assert.throws(
      () => decode(full.subarray(0, length)),
      (error) => error instanceof DecodeError && error.code === 'truncated',
      `length ${length}`,
    );
  }
}

describe('sll (LINKTYPE_LINUX_SLL, 113)', () => {
  it('round-trips a multicast frame header written out from the spec', () => {
    // packet type 2 (multicast) | ARPHRD_ETHER | address length 6 | f2:d4:35:4f:4d:6f + 2 pad | IPv4
    assertRoundTrip(
      sll,
      {
        packetType: SllPacketType.multicast,
        arphrdType: ArphrdType.ETHER,
        addressLength: 6,
        address: hex('f2d4354f4d6f'),
        protocol: 0x0800,
      },
      hex('0002 0001 0006 f2d4354f4d6f0000 0800'),
    );
  });

  it('keeps only the first 8 octets of longer addresses, and none of an empty one', () => {
    // An InfiniBand sender: 20-octet address, of which the field holds 8.
    assertRoundTrip(
      sll,
      { packetType: 0, arphrdType: 32, addressLength: 20, address: hex('0102030405060708'), protocol: 0x0800 },
      hex('0000 0020 0014 0102030405060708 0800'),
    );
    assertRoundTrip(
      sll,
      {
        packetType: SllPacketType.outgoing,
        arphrdType: ArphrdType.NONE,
        addressLength: 0,
        address: new Uint8Array(0),
        protocol: 0x0800,
      },
      hex('0004 fffe 0000 0000000000000000 0800'),
    );
  });

  it('decodes every frame of the -y LINUX_SLL fixture as tshark does', { skip: noTshark }, () => {
    const frames = tsharkFields('any-sll.pcap', ['sll.pkttype', 'sll.hatype', 'sll.halen', 'sll.src.eth', 'sll.etype']);
    assert.ok(frames.length > 5);
    for (const { raw, values } of frames) {
      const header = sll.decode(raw);
      assert.deepEqual(
        [
          String(header.packetType),
          String(header.arphrdType),
          String(header.addressLength),
          macText(header.address),
          `0x${header.protocol.toString(16).padStart(4, '0')}`,
        ],
        values,
      );
      assert.equal(Buffer.from(sll.encode(header)).toString('hex'), raw.subarray(0, sll.HEADER_LENGTH).toString('hex'));
    }
  });

  it('says truncated below 16 octets', () => {
    truncatedAtEveryLength((bytes) => sll.decode(bytes), hex('0002 0001 0006 f2d4354f4d6f0000 0800'));
    assert.throws(() => sll.decode(hex('0002 0001 0006 f2d4354f4d6f0000 0800'), 0, 15), DecodeError);
  });

  it('refuses values the header cannot hold', () => {
    const header = { packetType: 0, arphrdType: 1, addressLength: 9, address: new Uint8Array(9), protocol: 0x0800 };
    assert.throws(() => sll.encode(header), RangeError);
    assert.throws(() => sll.encode({ ...header, address: new Uint8Array(6), protocol: 0x10000 }), RangeError);
  });
});

describe('sll2 (LINKTYPE_LINUX_SLL2, 276)', () => {
  it('round-trips an outgoing frame header written out from the spec', () => {
    // IPv4 | reserved 0 | ifindex 3 | ARPHRD_ETHER | packet type 4 | address length 6 | address + 2 pad
    assertRoundTrip(
      sll2,
      {
        protocol: 0x0800,
        reserved: 0,
        interfaceIndex: 3,
        arphrdType: ArphrdType.ETHER,
        packetType: SllPacketType.outgoing,
        addressLength: 6,
        address: hex('aa036020fcd6'),
      },
      hex('0800 0000 00000003 0001 04 06 aa036020fcd60000'),
    );
  });

  it('keeps the reserved field and large interface indexes', () => {
    assertRoundTrip(
      sll2,
      {
        protocol: 0x86dd,
        reserved: 0xbeef,
        interfaceIndex: 0xfffffffe,
        arphrdType: ArphrdType.LOOPBACK,
        packetType: 0,
        addressLength: 12,
        address: hex('0102030405060708'),
      },
      hex('86dd beef fffffffe 0304 00 0c 0102030405060708'),
    );
  });

  it('decodes every frame of the -i any fixture as tshark does', { skip: noTshark }, () => {
    const frames = tsharkFields('any-sll2.pcap', [
      'sll.etype',
      'sll.ifindex',
      'sll.hatype',
      'sll.pkttype',
      'sll.halen',
      'sll.src.eth',
    ]);
    assert.ok(frames.length > 5);
    const seenTypes = new Set<string>();
    for (const { raw, values } of frames) {
      const header = sll2.decode(raw);
      assert.deepEqual(
        [
          `0x${header.protocol.toString(16).padStart(4, '0')}`,
          String(header.interfaceIndex),
          String(header.arphrdType),
          String(header.packetType),
          String(header.addressLength),
          macText(header.address),
        ],
        values,
      );
      assert.equal(header.reserved, 0);
      assert.equal(
        Buffer.from(sll2.encode(header)).toString('hex'),
        raw.subarray(0, sll2.HEADER_LENGTH).toString('hex'),
      );
      seenTypes.add(sllPacketTypeName(header.packetType) ?? 'unknown');
    }
    // The fixture has what a snooper meets: received multicast, our own sends, loopback.
    assert.deepEqual([...seenTypes].sort(), ['host', 'multicast', 'outgoing']);
  });

  it('says truncated below 20 octets', () => {
    truncatedAtEveryLength((bytes) => sll2.decode(bytes), hex('0800 0000 00000003 0001 04 06 aa036020fcd60000'));
  });

  it('refuses values the header cannot hold', () => {
    const header = {
      protocol: 0x0800,
      reserved: 0,
      interfaceIndex: 1,
      arphrdType: 1,
      packetType: 0,
      addressLength: 6,
      address: new Uint8Array(6),
    };
    assert.throws(() => sll2.encode({ ...header, packetType: 256 }), RangeError);
    assert.throws(() => sll2.encode({ ...header, interfaceIndex: -1 }), RangeError);
    assert.throws(() => sll2.encode({ ...header, address: new Uint8Array(9) }), RangeError);
  });
});

describe('packet types', () => {
  it('names the five the spec defines', () => {
    assert.deepEqual([0, 1, 2, 3, 4, 5].map(sllPacketTypeName), [
      'host',
      'broadcast',
      'multicast',
      'otherhost',
      'outgoing',
      undefined,
    ]);
  });
});
