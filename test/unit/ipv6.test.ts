/**
 * IPv6: the address kit (RFC 4291 §2.2 text forms, RFC 5952 canonical text), the
 * pseudo-header checksum (RFC 8200 §8.1), the header codec and its extension headers
 * (RFC 8200 §4), and the MLD packet and frame builder. Expected bytes are written out by
 * hand from the RFC layouts; checksums are worked by hand or by test/helpers/bytes.ts's
 * own routine over a pseudo-header built here.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import fc from 'fast-check';
import { DecodeError } from '../../src/errors.js';
import * as ethernet from '../../src/packet/ethernet.js';
import * as ipv6 from '../../src/packet/ipv6/header.js';
import type { DecodedIpv6, Ipv6Header, Ipv6Option } from '../../src/packet/ipv6/header.js';
import { MLD_ROUTER_ALERT } from '../../src/packet/ipv6/header.js';
import * as mldFrame from '../../src/packet/mld-frame.js';
import * as mld from '../../src/packet/mld/index.js';
import type { MldMessage } from '../../src/packet/mld/index.js';
import { ipv6PseudoHeaderChecksum } from '../../src/wire/checksum.js';
import {
  canonicalIPv6,
  isIPv6LinkLocalAt,
  isIPv6MulticastAt,
  isIPv6UnspecifiedAt,
  multicastMacForIPv6Group,
  parseIPv6,
  readIPv6,
  writeIPv6,
} from '../../src/wire/ipv6-address.js';
import { hex, referenceChecksum } from '../helpers/bytes.js';

const hexOf = (bytes: Uint8Array) => Buffer.from(bytes).toString('hex');

// Addresses as 16 octets, written out.
const FE80_1 = 'fe80 0000 0000 0000 0000 0000 0000 0001';
const FF02_1 = 'ff02 0000 0000 0000 0000 0000 0000 0001';
const FF02_16 = 'ff02 0000 0000 0000 0000 0000 0000 0016';
const DB8_1 = '2001 0db8 0000 0000 0000 0000 0000 0001';
const DB8_2 = '2001 0db8 0000 0000 0000 0000 0000 0002';

describe('IPv6 addresses: every RFC 4291 §2.2 text form', () => {
  const forms: [string, string][] = [
    ['ABCD:EF01:2345:6789:ABCD:EF01:2345:6789', 'abcd ef01 2345 6789 abcd ef01 2345 6789'],
    ['2001:DB8:0:0:8:800:200C:417A', '2001 0db8 0000 0000 0008 0800 200c 417a'],
    ['2001:0db8:0000:0000:0008:0800:200c:417a', '2001 0db8 0000 0000 0008 0800 200c 417a'],
    ['2001:DB8::8:800:200C:417A', '2001 0db8 0000 0000 0008 0800 200c 417a'],
    ['FF01:0:0:0:0:0:0:101', 'ff01 0000 0000 0000 0000 0000 0000 0101'],
    ['FF01::101', 'ff01 0000 0000 0000 0000 0000 0000 0101'],
    ['0:0:0:0:0:0:0:1', '0000 0000 0000 0000 0000 0000 0000 0001'],
    ['::1', '0000 0000 0000 0000 0000 0000 0000 0001'],
    ['0:0:0:0:0:0:0:0', '0000 0000 0000 0000 0000 0000 0000 0000'],
    ['::', '0000 0000 0000 0000 0000 0000 0000 0000'],
    ['0:0:0:0:0:0:13.1.68.3', '0000 0000 0000 0000 0000 0000 0d01 4403'],
    ['::13.1.68.3', '0000 0000 0000 0000 0000 0000 0d01 4403'],
    ['0:0:0:0:0:FFFF:129.144.52.38', '0000 0000 0000 0000 0000 ffff 8190 3426'],
    ['::FFFF:129.144.52.38', '0000 0000 0000 0000 0000 ffff 8190 3426'],
    ['1:2:3:4:5:6:1.2.3.4', '0001 0002 0003 0004 0005 0006 0102 0304'],
    ['2001:db8::', '2001 0db8 0000 0000 0000 0000 0000 0000'],
    ['1:2:3:4:5:6:7::', '0001 0002 0003 0004 0005 0006 0007 0000'],
    ['::2:3:4:5:6:7:8', '0000 0002 0003 0004 0005 0006 0007 0008'],
    ['fe80::1:2', 'fe80 0000 0000 0000 0000 0000 0001 0002'],
  ];
  for (const [text, octets] of forms) {
    it(text, () => assert.equal(hexOf(parseIPv6(text) ?? new Uint8Array(0)), hex(octets).toString('hex')));
  }
  const rejects = [
    ':::',
    '1::2::3',
    '12345::',
    '1:2:3:4:5:6:7:8:9',
    '1:2:3:4:5:6:7',
    '1::2:3:4:5:6:7:8', // "::" must stand for at least one group
    '1:2:3:4:5:6:7:8::',
    'fe80::1%eth0',
    '[::1]',
    '2001:db8::/32',
    '',
    ':',
    ':1::',
    '1:',
    '1:::2',
    'g::1',
    ' ::1',
    '::1 ',
    '::1.2.3',
    '::01.2.3.4',
    '::1.2.3.4:5',
    '1.2.3.4::',
    '1:2:3:4:5:6:7:1.2.3.4',
  ];
  it(`rejects what is no address: ${rejects.map((text) => JSON.stringify(text)).join(' ')}`, () => {
    for (const text of rejects) assert.equal(parseIPv6(text), undefined, JSON.stringify(text));
  });
});

describe('IPv6 addresses: RFC 5952 canonical text', () => {
  const vectors: [string, string, string][] = [
    ['2001:0db8::0001', '2001:db8::1', '§4.1 no leading zeros'],
    ['2001:db8:0:0:0:0:2:1', '2001:db8::2:1', '§4.2.1 "::" as long as it can be'],
    ['2001:db8::0:1', '2001:db8::1', '§4.2.1'],
    ['2001:db8:0:1:1:1:1:1', '2001:db8:0:1:1:1:1:1', '§4.2.2 never "::" for one group'],
    ['2001:db8::1:1:1:1:1', '2001:db8:0:1:1:1:1:1', '§4.2.2, from a one-group "::"'],
    ['1:0:1:0:1:0:1:0', '1:0:1:0:1:0:1:0', '§4.2.2, only single zero groups'],
    ['2001:0:0:1:0:0:0:1', '2001:0:0:1::1', '§4.2.3 the longest run'],
    ['0:1:0:0:1:0:0:0', '0:1:0:0:1::', '§4.2.3 the longest run, at the end'],
    ['0:0:1:0:0:0:0:0', '0:0:1::', '§4.2.3 the longest run, not the first'],
    ['2001:db8:0:0:1:0:0:1', '2001:db8::1:0:0:1', '§4.2.3 the first of equal runs'],
    ['1:0:0:1:0:0:1:1', '1::1:0:0:1:1', '§4.2.3 the first of equal runs'],
    ['2001:DB8::AbCd', '2001:db8::abcd', '§4.3 lower case'],
    ['0:0:0:0:0:0:0:0', '::', 'all zeros'],
    ['0:0:0:0:0:0:0:1', '::1', 'loopback'],
    ['1:0:0:0:0:0:0:0', '1::', 'trailing run'],
    ['FF02:0:0:0:0:1:FF00:0001', 'ff02::1:ff00:1', 'a solicited-node group'],
    // §5: the IPv4-mapped prefix alone ends in a dotted quad.
    ['::ffff:129.144.52.38', '::ffff:129.144.52.38', 'IPv4-mapped, with its dotted quad (RFC 5952 §5)'],
    ['::ffff:8190:3426', '::ffff:129.144.52.38', 'IPv4-mapped written in hex'],
    ['::fffe:8190:3426', '::fffe:8190:3426', 'not IPv4-mapped: hex'],
  ];
  for (const [input, canonical, why] of vectors) {
    it(`${input} → ${canonical} (${why})`, () => {
      assert.equal(canonicalIPv6(input), canonical);
      assert.equal(readIPv6(parseIPv6(input)!, 0), canonical);
    });
  }
  it('canonicalIPv6 of no address is undefined', () => assert.equal(canonicalIPv6('1::2::3'), undefined));

  /**
   * RFC 5952 §4 by brute force: every run of two or more zero groups tried, the first longest kept; §5 for IPv4-mapped.
   */
  function referenceCanonical(groups: number[]): string {
    if (groups.slice(0, 5).every((group) => group === 0) && groups[5] === 0xffff) {
      return `::ffff:${groups[6]! >> 8}.${groups[6]! & 0xff}.${groups[7]! >> 8}.${groups[7]! & 0xff}`;
    }
    const text = groups.map((group) => group.toString(16));
    let best = { at: -1, length: 1 };
    for (let at = 0; at < 8; at++) {
      for (let length = 2; at + length <= 8; length++) {
        if (groups.slice(at, at + length).every((group) => group === 0) && length > best.length) best = { at, length };
      }
    }
    if (best.at < 0) return text.join(':');
    return `${text.slice(0, best.at).join(':')}::${text.slice(best.at + best.length).join(':')}`;
  }
  it('readIPv6 says what the brute-force reference says, and parses back to the same octets', () => {
    const group = fc.oneof(fc.constant(0), fc.constant(0), fc.constant(0xffff), fc.integer({ min: 0, max: 0xffff }));
    fc.assert(
      fc.property(fc.array(group, { minLength: 8, maxLength: 8 }), (groups) => {
        const bytes = new Uint8Array(16);
        groups.forEach((value, at) => {
          bytes[2 * at] = value >> 8;
          bytes[2 * at + 1] = value & 0xff;
        });
        const text = readIPv6(bytes, 0);
        assert.equal(text, referenceCanonical(groups));
        assert.equal(hexOf(parseIPv6(text)!), hexOf(bytes));
      }),
      { numRuns: 5_000 },
    );
  });
});

describe('IPv6 addresses: reading, writing, classes, MACs', () => {
  it('reads and writes at an offset, and refuses text that is no address', () => {
    const bytes = new Uint8Array(20).fill(0xaa);
    writeIPv6(bytes, 2, 'ff02::1:ff00:1');
    assert.equal(hexOf(bytes), `aaaa${'ff02 0000 0000 0000 0000 0001 ff00 0001'.replace(/ /g, '')}aaaa`);
    assert.equal(readIPv6(bytes, 2), 'ff02::1:ff00:1');
    assert.throws(() => writeIPv6(bytes, 0, 'fe80::1%eth0'), RangeError);
  });
  it('tells multicast, link-local and unspecified apart', () => {
    const at = (text: string) => parseIPv6(text)!;
    assert.ok(isIPv6MulticastAt(at('ff02::1'), 0) && !isIPv6MulticastAt(at('fe80::1'), 0));
    assert.ok(isIPv6LinkLocalAt(at('fe80::1'), 0) && isIPv6LinkLocalAt(at('febf::1'), 0));
    assert.ok(!isIPv6LinkLocalAt(at('fec0::1'), 0) && !isIPv6LinkLocalAt(at('ff02::1'), 0));
    assert.ok(isIPv6UnspecifiedAt(at('::'), 0) && !isIPv6UnspecifiedAt(at('::1'), 0));
  });
  it('maps groups to 33:33 and their last 32 bits (RFC 2464 §7)', () => {
    assert.equal(multicastMacForIPv6Group('ff02::1:ff00:1'), '33:33:ff:00:00:01');
    assert.equal(multicastMacForIPv6Group('ff02::1'), '33:33:00:00:00:01');
    assert.equal(multicastMacForIPv6Group('ff02::16'), '33:33:00:00:00:16');
    assert.equal(multicastMacForIPv6Group('ff3e::8000:1234'), '33:33:80:00:12:34');
    assert.throws(() => multicastMacForIPv6Group('ff02::1::2'), RangeError);
  });
});

/** RFC 8200 §8.1: source, destination, upper-layer length (32 bits), three zeros, next header. */
function pseudoHeader(src: string, dst: string, length: number, nextHeader: number): Buffer {
  const out = Buffer.alloc(40);
  out.set(parseIPv6(src)!, 0);
  out.set(parseIPv6(dst)!, 16);
  out.writeUInt32BE(length, 32);
  out[39] = nextHeader;
  return out;
}

/** The checksum of `message` over IPv6, by the helper's 32-bit routine: a path independent of the codec's. */
function referenceIcmpv6Checksum(src: string, dst: string, message: Uint8Array): number {
  return referenceChecksum(Buffer.concat([pseudoHeader(src, dst, message.length, 58), message]));
}

/** An ICMPv6 message from hex with its checksum octets (2..3) filled in by the reference. */
function icmpv6Bytes(src: string, dst: string, text: string): Buffer {
  const out = hex(text);
  out.writeUInt16BE(0, 2);
  out.writeUInt16BE(referenceIcmpv6Checksum(src, dst, out), 2);
  return out;
}

/** The pseudo-header checksum under test, with the addresses read from a 32-octet block. */
function checksumUnderTest(src: string, dst: string, message: Uint8Array): number {
  const addresses = new Uint8Array(32);
  writeIPv6(addresses, 0, src);
  writeIPv6(addresses, 16, dst);
  return ipv6PseudoHeaderChecksum(message, 0, message.length, { addresses, srcAt: 0, dstAt: 16, nextHeader: 58 });
}

// MLDv2 report from fe80::1 to ff02::16 joining ff05::2 (one CHANGE_TO_EXCLUDE record), checksum zero.
const REPORT_FF05_2 = '8f00 0000 0000 0001 0400 0000 ff05 0000 0000 0000 0000 0000 0000 0002';

describe('IPv6 pseudo-header checksum (RFC 8200 §8.1)', () => {
  it('an MLDv2 report, worked by hand: 0x7005', () => {
    // Pseudo-header: fe80+0001 + ff02+0016 + length 0x1c + next header 0x3a = 0x1fdef.
    // Message: 8f00 + 0001 + 0400 + ff05 + 0002 = 0x19208. Sum 0x38ff7, folded 0x8ffa, complement 0x7005.
    const message = hex(REPORT_FF05_2);
    assert.equal(checksumUnderTest('fe80::1', 'ff02::16', message), 0x7005);
    assert.equal(referenceIcmpv6Checksum('fe80::1', 'ff02::16', message), 0x7005);
    message.writeUInt16BE(0x7005, 2);
    assert.equal(
      checksumUnderTest('fe80::1', 'ff02::16', message),
      0,
      'a message with its checksum in place sums to 0',
    );
  });
  it('agrees with the reference on odd lengths and on lengths past 65535 (the 32-bit length field)', () => {
    for (const length of [1, 7, 28, 65535, 65536, 70001]) {
      const message = Buffer.alloc(length);
      for (let at = 0; at < length; at++) message[at] = (at * 7 + 3) & 0xff;
      const expected = referenceIcmpv6Checksum('fe80::abcd', 'ff02::1:ff00:abcd', message);
      assert.equal(checksumUnderTest('fe80::abcd', 'ff02::1:ff00:abcd', message), expected, `length ${length}`);
    }
  });
  it('reads the addresses in place at any offsets of any block', () => {
    const message = hex(REPORT_FF05_2);
    const block = Buffer.concat([hex('aaaa'), hex(FF02_16), hex('bb'), hex(FE80_1)]);
    assert.equal(
      ipv6PseudoHeaderChecksum(message, 0, message.length, { addresses: block, srcAt: 19, dstAt: 2, nextHeader: 58 }),
      0x7005,
    );
  });
});

/** Options as [type, data hex]: Buffer and Uint8Array data compare equal. */
function optionsOf(options: readonly Ipv6Option[] | undefined): [number, string][] | undefined {
  return options?.map((option) => [option.type, hexOf(option.data)]);
}

function plain(decoded: DecodedIpv6): unknown {
  const { hopByHop, ...header } = decoded.header;
  return { ...decoded, header: hopByHop === undefined ? header : { ...header, hopByHop: optionsOf(hopByHop) } };
}

interface HeaderVector {
  name: string;
  /** The fixed header and any hop-by-hop header: what `encode` writes. */
  headerBytes: string;
  /** The rest of the payload: other extension headers and the upper-layer message. */
  restBytes: string;
  decoded: Omit<DecodedIpv6, 'header'> & { header: Omit<Ipv6Header, 'hopByHop'> & { hopByHop?: [number, string][] } };
  header: Ipv6Header;
}

const UDP_8 = '0035 0035 0008 0000';
const ECHO_8 = '8000 0000 0001 0001';
const MLD_QUERY_28 = `8200 5696 2710 0000 ${'00'.repeat(16)} 027d 0000`;

const headerVectors: HeaderVector[] = [
  {
    name: 'fixed header alone (UDP), traffic class and flow label',
    headerBytes: `6 12 abcde 0008 11 40 ${DB8_1} ${DB8_2}`,
    restBytes: UDP_8,
    header: {
      trafficClass: 0x12,
      flowLabel: 0xabcde,
      payloadLength: 8,
      nextHeader: 17,
      hopLimit: 64,
      src: '2001:db8::1',
      dst: '2001:db8::2',
    },
    decoded: {
      header: {
        trafficClass: 0x12,
        flowLabel: 0xabcde,
        payloadLength: 8,
        nextHeader: 17,
        hopLimit: 64,
        src: '2001:db8::1',
        dst: '2001:db8::2',
      },
      extensions: [],
      upperProtocol: 17,
      srcAt: 8,
      dstAt: 24,
      payloadStart: 40,
      payloadEnd: 48,
    },
  },
  {
    // As Linux sends MLD: next header 0; hop-by-hop: next header 58, length 0, Router Alert
    // (type 5, length 2, value 0), PadN (type 1, length 0).
    name: 'hop-by-hop Router Alert and PadN, as Linux sends MLD',
    headerBytes: `6000 0000 0024 00 01 ${FE80_1} ${FF02_1} 3a 00 05 02 0000 01 00`,
    restBytes: MLD_QUERY_28,
    header: {
      trafficClass: 0,
      flowLabel: 0,
      payloadLength: 36,
      nextHeader: 0,
      hopLimit: 1,
      src: 'fe80::1',
      dst: 'ff02::1',
      hopByHop: [MLD_ROUTER_ALERT],
      hopByHopNextHeader: 58,
    },
    decoded: {
      header: {
        trafficClass: 0,
        flowLabel: 0,
        payloadLength: 36,
        nextHeader: 0,
        hopLimit: 1,
        src: 'fe80::1',
        dst: 'ff02::1',
        hopByHop: [[5, '0000']],
        hopByHopNextHeader: 58,
      },
      routerAlert: 0,
      extensions: [0],
      upperProtocol: 58,
      srcAt: 8,
      dstAt: 24,
      payloadStart: 48,
      payloadEnd: 76,
    },
  },
  {
    // Destination options: next header 17, length 0, PadN of 4 zeros.
    name: 'destination options, then UDP',
    headerBytes: `6000 0000 0010 3c 40 ${DB8_1} ${DB8_2}`,
    restBytes: `11 00 01 04 0000 0000 ${UDP_8}`,
    header: {
      trafficClass: 0,
      flowLabel: 0,
      payloadLength: 16,
      nextHeader: 60,
      hopLimit: 64,
      src: '2001:db8::1',
      dst: '2001:db8::2',
    },
    decoded: {
      header: {
        trafficClass: 0,
        flowLabel: 0,
        payloadLength: 16,
        nextHeader: 60,
        hopLimit: 64,
        src: '2001:db8::1',
        dst: '2001:db8::2',
      },
      extensions: [60],
      upperProtocol: 17,
      srcAt: 8,
      dstAt: 24,
      payloadStart: 48,
      payloadEnd: 56,
    },
  },
  {
    // Type 2 routing (RFC 6275 §6.4): next header 58, length 2 (24 octets), type 2, segments left 1, reserved, home
    // address.
    name: 'routing header (type 2), then ICMPv6',
    headerBytes: `6000 0000 0020 2b 40 ${DB8_1} ${DB8_2}`,
    restBytes: `3a 02 02 01 0000 0000 2001 0db8 0000 0000 0000 0000 0000 0099 ${ECHO_8}`,
    header: {
      trafficClass: 0,
      flowLabel: 0,
      payloadLength: 32,
      nextHeader: 43,
      hopLimit: 64,
      src: '2001:db8::1',
      dst: '2001:db8::2',
    },
    decoded: {
      header: {
        trafficClass: 0,
        flowLabel: 0,
        payloadLength: 32,
        nextHeader: 43,
        hopLimit: 64,
        src: '2001:db8::1',
        dst: '2001:db8::2',
      },
      extensions: [43],
      upperProtocol: 58,
      srcAt: 8,
      dstAt: 24,
      payloadStart: 64,
      payloadEnd: 72,
    },
  },
  {
    // Fragment: next header 17, reserved, offset 11 (× 8 octets) and M: (11 << 3) | 1 = 0x0059, identification.
    name: 'a later fragment: reported, and the walk stops at its data',
    headerBytes: `6000 0000 0010 2c 40 ${DB8_1} ${DB8_2}`,
    restBytes: `11 00 0059 1234 5678 ${'ee'.repeat(8)}`,
    header: {
      trafficClass: 0,
      flowLabel: 0,
      payloadLength: 16,
      nextHeader: 44,
      hopLimit: 64,
      src: '2001:db8::1',
      dst: '2001:db8::2',
    },
    decoded: {
      header: {
        trafficClass: 0,
        flowLabel: 0,
        payloadLength: 16,
        nextHeader: 44,
        hopLimit: 64,
        src: '2001:db8::1',
        dst: '2001:db8::2',
      },
      extensions: [44],
      fragment: { offset: 11, moreFragments: true, identification: 0x12345678 },
      upperProtocol: 17,
      srcAt: 8,
      dstAt: 24,
      payloadStart: 48,
      payloadEnd: 56,
    },
  },
  {
    // hop-by-hop (next 60) → destination options (next 43) → routing type 0, 0 segments left (next 44)
    // → first fragment, offset 0, M (next 51) → AH, length 4: (4 + 2) × 4 = 24 octets (next 58) → ICMPv6.
    name: 'every extension header in RFC 8200 §4.1 order',
    headerBytes: `6000 0000 0040 00 40 ${DB8_1} ${DB8_2} 3c 00 05 02 0000 01 00`,
    restBytes:
      '2b 00 01 04 0000 0000 ' +
      '2c 00 00 00 0000 0000 ' +
      '33 00 0001 0000 0007 ' +
      `3a 04 0000 0000 0100 0000 0001 ${'cc'.repeat(12)} ` +
      ECHO_8,
    header: {
      trafficClass: 0,
      flowLabel: 0,
      payloadLength: 64,
      nextHeader: 0,
      hopLimit: 64,
      src: '2001:db8::1',
      dst: '2001:db8::2',
      hopByHop: [MLD_ROUTER_ALERT],
      hopByHopNextHeader: 60,
    },
    decoded: {
      header: {
        trafficClass: 0,
        flowLabel: 0,
        payloadLength: 64,
        nextHeader: 0,
        hopLimit: 64,
        src: '2001:db8::1',
        dst: '2001:db8::2',
        hopByHop: [[5, '0000']],
        hopByHopNextHeader: 60,
      },
      routerAlert: 0,
      extensions: [0, 60, 43, 44, 51],
      fragment: { offset: 0, moreFragments: true, identification: 7 },
      upperProtocol: 58,
      srcAt: 8,
      dstAt: 24,
      payloadStart: 96,
      payloadEnd: 104,
    },
  },
];

describe('IPv6 header codec: vectors', () => {
  for (const vector of headerVectors) {
    it(vector.name, () => {
      const headerBytes = hex(vector.headerBytes);
      const packet = Buffer.concat([headerBytes, hex(vector.restBytes)]);
      const decoded = ipv6.decode(packet, 0, packet.length);
      assert.deepEqual(plain(decoded), vector.decoded, 'decode');
      assert.equal(ipv6.encodingLength(vector.header), headerBytes.length, 'encodingLength');
      assert.equal(hexOf(ipv6.encode(vector.header)), hexOf(headerBytes), 'encode');
      assert.equal(hexOf(ipv6.encode(decoded.header)), hexOf(headerBytes), 'encode(decode(bytes))');
      // At an offset of a larger buffer: every offset moves, the text stays.
      const framed = Buffer.concat([hex('ffff ffff ffff ffff ffff ffff ffff'), packet, hex('0000 0000 0000')]);
      const shifted = ipv6.decode(framed, 14, framed.length);
      assert.equal(shifted.payloadStart, decoded.payloadStart + 14);
      assert.equal(
        shifted.payloadEnd,
        decoded.payloadEnd + 14,
        'octets past the payload length (Ethernet padding) are ignored',
      );
      assert.equal(shifted.srcAt, 22);
      assert.equal(shifted.dstAt, 38);
      assert.deepEqual(
        plain({ ...shifted, srcAt: 8, dstAt: 24, payloadStart: decoded.payloadStart, payloadEnd: decoded.payloadEnd }),
        vector.decoded,
      );
      const buf = Buffer.alloc(headerBytes.length + 7, 0xaa);
      ipv6.encode(vector.header, buf, 3);
      assert.equal(hexOf(buf.subarray(3, 3 + headerBytes.length)), hexOf(headerBytes), 'encode at offset');
      assert.equal(
        hexOf(buf.subarray(0, 3)) + hexOf(buf.subarray(3 + headerBytes.length)),
        'aa'.repeat(7),
        'encode stays in bounds',
      );
    });
  }
  it('lists other hop-by-hop options, skips Pad1 and PadN, and has no Router Alert without one', () => {
    // Hop-by-hop: next 58, length 0, Pad1, option 0x1e (RFC 4727 experiment) with data abcd, Pad1.
    const packet = hex(`6000 0000 0010 00 01 ${FE80_1} ${FF02_1} 3a 00 00 1e 02 abcd 00 ${ECHO_8}`);
    const decoded = ipv6.decode(packet);
    assert.deepEqual(optionsOf(decoded.header.hopByHop), [[0x1e, 'abcd']]);
    assert.equal('routerAlert' in decoded, false);
    assert.equal(decoded.upperProtocol, 58);
    // Encoding pads at the end instead: PadN of length 0.
    assert.equal(hexOf(ipv6.encode(decoded.header).subarray(40)), hex('3a 00 1e 02 abcd 01 00').toString('hex'));
  });
  it('keeps a Router Alert value other than MLD', () => {
    const packet = hex(`6000 0000 0010 00 01 ${FE80_1} ${FF02_1} 3a 00 05 02 0002 01 00 ${ECHO_8}`);
    const decoded = ipv6.decode(packet);
    assert.equal(decoded.routerAlert, 2);
    assert.deepEqual(optionsOf(decoded.header.hopByHop), [[5, '0002']]);
  });
});

describe('IPv6 header codec: hop-by-hop padding on encode (RFC 8200 §4.2)', () => {
  const base: Ipv6Header = {
    trafficClass: 0,
    flowLabel: 0,
    payloadLength: 16,
    nextHeader: 0,
    hopLimit: 1,
    src: 'fe80::1',
    dst: 'ff02::1',
    hopByHopNextHeader: 58,
  };
  const cases: [string, Ipv6Option[], string][] = [
    ['no options: PadN of 4', [], '3a 00 01 04 0000 0000'],
    ['7 octets: Pad1', [{ type: 0x1e, data: hex('aabbcc') }], '3a 00 1e 03 aabbcc 00'],
    ['8 octets: no padding', [{ type: 0x1e, data: hex('aabbccdd') }], '3a 00 1e 04 aabbccdd'],
    ['9 octets: PadN of 5 to 16', [{ type: 0x1e, data: hex('aabbccddee') }], '3a 01 1e 05 aabbccddee 01 05 0000000000'],
    [
      'Router Alert and another: PadN of 4 to 16',
      [MLD_ROUTER_ALERT, { type: 0x3e, data: hex('1122') }],
      '3a 01 05 02 0000 3e 02 1122 01 04 0000 0000',
    ],
  ];
  for (const [name, hopByHop, expected] of cases) {
    it(name, () => {
      const header = { ...base, hopByHop };
      const bytes = hex(expected);
      assert.equal(ipv6.encodingLength(header), 40 + bytes.length);
      // Over a dirty buffer: the padding must be written, not left to a zeroed allocation.
      const out = ipv6.encode(header, Buffer.alloc(40 + bytes.length, 0xee), 0);
      assert.equal(hexOf(out.subarray(40)), bytes.toString('hex'));
      const packet = Buffer.concat([out, Buffer.alloc(16 - bytes.length)]);
      assert.deepEqual(optionsOf(ipv6.decode(packet).header.hopByHop), optionsOf(hopByHop));
    });
  }
});

describe('IPv6 header codec: encode refuses what the wire cannot hold', () => {
  const mldHeader: Ipv6Header = headerVectors[1]!.header;
  const refusals: [string, Ipv6Header][] = [
    ['a 21-bit flow label', { ...mldHeader, flowLabel: 0x100000 }],
    ['traffic class 256', { ...mldHeader, trafficClass: 256 }],
    ['payload length 65536', { ...mldHeader, payloadLength: 0x10000 }],
    ['a payload length shorter than the hop-by-hop header', { ...mldHeader, payloadLength: 4 }],
    ['hop limit 256', { ...mldHeader, hopLimit: 256 }],
    ['next header 58 with a hop-by-hop header', { ...mldHeader, nextHeader: 58 }],
    ['a hop-by-hop header without its next header', { ...mldHeader, hopByHopNextHeader: undefined }],
    ['a hop-by-hop next header without a hop-by-hop header', { ...headerVectors[0]!.header, hopByHopNextHeader: 58 }],
    ['PadN listed as an option', { ...mldHeader, hopByHop: [{ type: 1, data: hex('00') }] }],
    ['Pad1 listed as an option', { ...mldHeader, hopByHop: [{ type: 0, data: new Uint8Array(0) }] }],
    [
      'option data of 256 octets',
      { ...mldHeader, payloadLength: 300, hopByHop: [{ type: 0x1e, data: new Uint8Array(256) }] },
    ],
    ['option type 256', { ...mldHeader, hopByHop: [{ type: 256, data: hex('00') }] }],
    [
      'options past 2048 octets',
      { ...mldHeader, payloadLength: 0xffff, hopByHop: new Array(9).fill({ type: 0x1e, data: new Uint8Array(255) }) },
    ],
    ['a source with a zone index', { ...mldHeader, src: 'fe80::1%eth0' }],
    ['an IPv4 destination', { ...mldHeader, dst: '224.0.0.1' }],
  ];
  for (const [name, header] of refusals) it(name, () => assert.throws(() => ipv6.encode(header), RangeError));
  it('a buffer too small', () => assert.throws(() => ipv6.encode(mldHeader, new Uint8Array(47)), RangeError));
});

function assertDecodeError(bytes: Uint8Array, code: string, start = 0, end = bytes.length): void {
  assert.throws(
    () => ipv6.decode(bytes, start, end),
    (error: unknown) => error instanceof DecodeError && error.code === code,
    `expected DecodeError ${code}`,
  );
}

describe('IPv6 header codec: hostile input', () => {
  const mldPacket = hex(headerVectors[1]!.headerBytes + MLD_QUERY_28);
  it('a packet cut at every offset is truncated, inside a larger buffer too', () => {
    assert.equal(mldPacket.length, 76);
    for (let length = 0; length < mldPacket.length; length++) {
      assertDecodeError(mldPacket.subarray(0, length), 'truncated');
      const framed = Buffer.concat([hex('ffff'), mldPacket, hex('ffff')]);
      assertDecodeError(framed, 'truncated', 2, 2 + length);
    }
  });
  it('version 4, version 0 (bad-ip-header)', () => {
    assertDecodeError(Buffer.concat([hex('45'), mldPacket.subarray(1)]), 'bad-ip-header');
    assertDecodeError(Buffer.concat([hex('00'), mldPacket.subarray(1)]), 'bad-ip-header');
  });
  it('payload length 0 with a hop-by-hop header: a jumbogram (bad-ip-header)', () => {
    // RFC 2675: the Jumbo Payload option (0xc2, length 4) carries the length instead.
    assertDecodeError(
      hex(`6000 0000 0000 00 01 ${FE80_1} ${FF02_1} 3a 00 c2 04 0001 0010 ${'00'.repeat(16)}`),
      'bad-ip-header',
    );
  });
  it('payload length 0 without one is an empty payload', () => {
    const decoded = ipv6.decode(hex(`6000 0000 0000 3b 40 ${DB8_1} ${DB8_2}`));
    assert.deepEqual([decoded.upperProtocol, decoded.payloadStart, decoded.payloadEnd], [59, 40, 40]);
  });
  const fixed = (payloadLength: string, nextHeader: string) =>
    `6000 0000 ${payloadLength} ${nextHeader} 40 ${DB8_1} ${DB8_2}`;
  const malformed: [string, string][] = [
    ['destination options of 16 octets in an 8-octet payload', `${fixed('0008', '3c')} 11 01 0104 0000 0000`],
    ['destination options with one octet left', `${fixed('0001', '3c')} 11`],
    [
      'routing header of 24 octets in a 16-octet payload',
      `${fixed('0010', '2b')} 3a 02 02 01 0000 0000 ${'00'.repeat(8)}`,
    ],
    ['a fragment header in 4 octets', `${fixed('0004', '2c')} 11 00 0001`],
    ['an authentication header of 24 octets in 8', `${fixed('0008', '33')} 3a 04 0000 0000 0000`],
    ['a hop-by-hop header of 16 octets in 8', `${fixed('0008', '00')} 3a 01 05 02 0000 01 00`],
    ['a hop-by-hop option past its header', `${fixed('0008', '00')} 3a 00 1e 09 0000 0000`],
    ['a hop-by-hop option with no length octet', `${fixed('0008', '00')} 3a 00 01 03 000000 1e`],
    ['Router Alert of length 3', `${fixed('0008', '00')} 3a 00 05 03 000000 00`],
    ['Router Alert of length 0', `${fixed('0008', '00')} 3a 00 05 00 01 02 0000`],
    [
      'a hop-by-hop header after destination options',
      `${fixed('0010', '3c')} 00 00 01 04 0000 0000 3a 00 05 02 0000 01 00`,
    ],
  ];
  for (const [name, text] of malformed) {
    it(`${name} (bad-extension-header)`, () => {
      const packet = hex(text);
      assertDecodeError(packet, 'bad-extension-header');
      // More data after the payload length mends nothing: it is not the packet's.
      assertDecodeError(Buffer.concat([packet, Buffer.alloc(64)]), 'bad-extension-header');
    });
  }
  it('random and mutated packets throw nothing but DecodeError', () => {
    const seeds = headerVectors.map((vector) => hex(vector.headerBytes + vector.restBytes));
    const mutated = fc
      .tuple(
        fc.constantFrom(...seeds),
        fc.array(fc.tuple(fc.nat(127), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 }),
        fc.nat(128),
      )
      .map(([seed, edits, cut]) => {
        const out = Buffer.from(seed);
        for (const [at, value] of edits) out[at % out.length] = value;
        return out.subarray(0, cut % (out.length + 1));
      });
    const packet = fc.oneof(
      mutated,
      fc.uint8Array({ maxLength: 120 }).map((bytes) => Buffer.from([0x60, ...bytes])),
    );
    fc.assert(
      fc.property(packet, (bytes) => {
        try {
          const decoded = ipv6.decode(bytes, 0, bytes.length);
          assert.ok(
            decoded.payloadStart <= decoded.payloadEnd && decoded.payloadEnd <= bytes.length,
            'the payload lies within the data',
          );
        } catch (error) {
          if (!(error instanceof DecodeError)) throw error;
        }
      }),
      { numRuns: 20_000, seed: 0x1b6 },
    );
  });
});

describe('MLD packet and frame', () => {
  const generalQuery: MldMessage = {
    kind: 'query',
    version: 2,
    group: '::',
    maxRespCode: 10000,
    sFlag: false,
    qrv: 2,
    qqic: 125,
    sources: [],
  };
  // Checksum by hand: fe80+0001 + ff02+0001 + 0x1c + 0x3a = 0x1fdda; 8200 + 2710 + 027d = 0xab8d;
  // 0x2a967 folds to 0xa969, complement 0x5696.
  const queryFrame = hex(
    `3333 0000 0001 0200 0000 6d63 86dd 6000 0000 0024 00 01 ${FE80_1} ${FF02_1} 3a 00 05 02 0000 01 00 ` +
      `82 00 5696 2710 0000 ${'00'.repeat(16)} 02 7d 0000`,
  );
  const queryPacket: mldFrame.MldPacket = { message: generalQuery, src: 'fe80::1', dst: 'ff02::1' };

  it('an MLDv2 general query from fe80::1 to ff02::1, byte for byte', () => {
    assert.equal(mldFrame.encodingLength(queryPacket), 76);
    assert.equal(hexOf(mldFrame.encodeFrame(queryPacket)), hexOf(queryFrame));
    assert.equal(hexOf(mldFrame.encode(queryPacket)), hexOf(queryFrame.subarray(14)));
    assert.equal(
      referenceIcmpv6Checksum('fe80::1', 'ff02::1', queryFrame.subarray(62)),
      0,
      'the reference agrees with the hand sum',
    );
  });
  it('decodes back through Ethernet, IPv6 and MLD', () => {
    const { header: frameHeader, payloadStart } = ethernet.decode(queryFrame);
    assert.deepEqual(frameHeader, {
      dst: '33:33:00:00:00:01',
      src: '02:00:00:00:6d:63',
      vlanIds: [],
      etherType: ethernet.EtherType.IPv6,
    });
    const ip = ipv6.decode(queryFrame, payloadStart, queryFrame.length);
    assert.deepEqual(
      [
        ip.header.hopLimit,
        ip.header.trafficClass,
        ip.routerAlert,
        ip.extensions,
        ip.upperProtocol,
        ip.payloadStart,
        ip.payloadEnd,
      ],
      [1, 0, 0, [0], 58, 62, 90],
    );
    assert.deepEqual(mld.decode(queryFrame, ip.payloadStart, ip.payloadEnd, ip), generalQuery);
  });
  it('encodes at an offset of a caller buffer and nowhere else', () => {
    const buf = Buffer.alloc(76 + 5, 0xaa);
    mldFrame.encode(queryPacket, buf, 2);
    assert.equal(hexOf(buf.subarray(2, 78)), hexOf(queryFrame.subarray(14)));
    assert.equal(hexOf(buf.subarray(0, 2)) + hexOf(buf.subarray(78)), 'aa'.repeat(5));
  });
  it('an MLDv2 report to ff02::16 from the link MAC (checksum 0x7005, worked above)', () => {
    const report: MldMessage = {
      kind: 'report',
      version: 2,
      records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: 'ff05::2', sources: [] }],
    };
    const frame = mldFrame.encodeFrame({ message: report, src: 'fe80::1', dst: 'ff02::16' }, '16:87:c5:03:1d:eb');
    const expected = hex(
      `3333 0000 0016 1687 c503 1deb 86dd 6000 0000 0024 00 01 ${FE80_1} ${FF02_16} 3a 00 05 02 0000 01 00 ` +
        REPORT_FF05_2.replace('8f00 0000', '8f00 7005'),
    );
    assert.equal(hexOf(frame), hexOf(expected));
    const ip = ipv6.decode(frame, 14, frame.length);
    assert.deepEqual(mld.decode(frame, ip.payloadStart, ip.payloadEnd, ip), report);
  });
  it('a report from :: (a host without a link-local address yet) checksums over ::', () => {
    const report: MldMessage = { kind: 'report', version: 1, group: 'ff05::2' };
    const packet = mldFrame.encode({ message: report, src: '::', dst: 'ff05::2' });
    const message = packet.subarray(48);
    assert.equal(
      hexOf(message),
      hexOf(icmpv6Bytes('::', 'ff05::2', `83 00 0000 0000 0000 ${'ff05 0000 0000 0000 0000 0000 0000 0002'}`)),
    );
    const ip = ipv6.decode(packet);
    assert.equal(ip.header.src, '::');
    assert.deepEqual(mld.decode(packet, ip.payloadStart, ip.payloadEnd, ip), report);
  });
  it('refuses a destination that is no IPv6 address', () => {
    assert.throws(() => mldFrame.encodeFrame({ ...queryPacket, dst: '224.0.0.1' }), RangeError);
  });
});
