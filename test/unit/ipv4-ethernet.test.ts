import assert from 'node:assert/strict';
import fc from 'fast-check';
import { describe, it } from '../helpers/node-test.js';
import * as ethernet from '../../src/packet/ethernet.js';
import { DecodeError } from '../../src/errors.js';
import * as ipv4 from '../../src/packet/ipv4/header.js';
import { ROUTER_ALERT, type Ipv4Header } from '../../src/packet/ipv4/header.js';
import { V3_JOIN_239_1_1_1 } from '../fixtures/real-frames.js';
import { formatIPv4, parseIPv4, readIPv4, writeIPv4 } from '../../src/wire/ipv4-address.js';
import { isMulticast } from '../../src/wire/ip-address.js';
import { hex, ipv4Packet } from '../helpers/bytes.js';

/** The IPv4 header of the real join (tcpdump -xx), options included. */
const realHeaderBytes = V3_JOIN_239_1_1_1.subarray(14, 14 + 24);
const realHeader: Ipv4Header = {
  tos: 0xc0,
  totalLength: 40,
  identification: 0,
  dontFragment: true,
  moreFragments: false,
  fragmentOffset: 0,
  ttl: 1,
  protocol: 2,
  src: '10.9.0.1',
  dst: '224.0.0.22',
  options: [ROUTER_ALERT],
};

describe('IPv4 header', () => {
  it('decodes the real header of a kernel IGMPv3 report, Router Alert and TTL 1', () => {
    const decoded = ipv4.decode(V3_JOIN_239_1_1_1, 14);
    assert.deepEqual(
      { ...decoded.header, options: decoded.header.options.map((o) => [o.type, [...o.data]]) },
      { ...realHeader, options: [[0x94, [0, 0]]] },
    );
    assert.equal(decoded.headerLength, 24);
    assert.equal(decoded.payloadStart, 38);
    assert.equal(decoded.payloadEnd, 54);
    assert.ok(ipv4.hasRouterAlert(decoded.header));
  });
  it('encodes the same header bytes, checksum 0xf9ef included', () => {
    assert.equal(ipv4.encodingLength(realHeader), 24);
    assert.equal(Buffer.from(ipv4.encode(realHeader)).toString('hex'), Buffer.from(realHeaderBytes).toString('hex'));
  });
  it('a header without options is 20 octets (built by the independent helper)', () => {
    const packet = ipv4Packet(
      { src: '10.0.0.1', dst: '239.1.2.3', routerAlert: false, ttl: 1 },
      hex('16000000ef010203'),
    );
    const decoded = ipv4.decode(packet);
    assert.equal(decoded.headerLength, 20);
    const reencoded = ipv4.encode({ ...decoded.header });
    assert.equal(Buffer.from(reencoded).toString('hex'), packet.subarray(0, 20).toString('hex'));
  });
  it('reports fragments without refusing them', () => {
    const first = ipv4.decode(
      ipv4Packet({ src: '10.0.0.1', dst: '224.0.0.22', flagsAndOffset: 0x2000 }, hex('00'.repeat(8))),
    );
    assert.ok(ipv4.isFragment(first.header) && first.header.moreFragments);
    const later = ipv4.decode(
      ipv4Packet({ src: '10.0.0.1', dst: '224.0.0.22', flagsAndOffset: 0x0003 }, hex('00'.repeat(8))),
    );
    assert.ok(ipv4.isFragment(later.header) && later.header.fragmentOffset === 3);
  });
  const failures: [string, Uint8Array, string][] = [
    ['fewer than 20 octets', hex('46c0 0028 0000 4000 0102'), 'truncated'],
    ['version 6', Buffer.concat([hex('66'), realHeaderBytes.subarray(1)]), 'bad-ip-header'],
    ['IHL 4', Buffer.concat([hex('44'), realHeaderBytes.subarray(1)]), 'bad-ip-header'],
    ['IHL past the data', realHeaderBytes.subarray(0, 22), 'truncated'],
    ['total length past the data', realHeaderBytes, 'truncated'],
    [
      'total length below the header',
      ipv4Packet({ src: '10.0.0.1', dst: '224.0.0.1', totalLength: 16 }, hex('')),
      'bad-ip-header',
    ],
    [
      'header checksum',
      Buffer.concat([realHeaderBytes.subarray(0, 10), hex('0000'), V3_JOIN_239_1_1_1.subarray(26)]),
      'bad-ip-checksum',
    ],
  ];
  for (const [name, bytes, code] of failures) {
    it(`refuses: ${name} (${code})`, () => {
      assert.throws(
        () => ipv4.decode(bytes),
        (error: unknown) => error instanceof DecodeError && error.code === code,
      );
    });
  }
  it('refuses an option whose length runs past the header (bad-ip-header)', () => {
    // IHL 6 with an option of declared length 8; total length 28 (header and 4 octets).
    const header = hex('46c0 001c 0000 0000 0102 0000 0a000001 e0000001 9408 0000 00000000');
    header.writeUInt16BE(0, 10);
    let sum = 0;
    for (let i = 0; i < 24; i += 2) sum += header.readUInt16BE(i); // header only
    while (sum > 0xffff) sum = (sum & 0xffff) + (sum >> 16);
    header.writeUInt16BE(~sum & 0xffff, 10);
    assert.throws(
      () => ipv4.decode(header),
      (error: unknown) => error instanceof DecodeError && error.code === 'bad-ip-header',
    );
  });
});

describe('Ethernet', () => {
  it('decodes the real frame header', () => {
    const { header, payloadStart } = ethernet.decode(V3_JOIN_239_1_1_1);
    assert.deepEqual(header, { dst: '01:00:5e:00:00:16', src: '16:87:c5:03:1d:eb', vlanIds: [], etherType: 0x0800 });
    assert.equal(payloadStart, 14);
    assert.equal(
      Buffer.from(ethernet.encode(header)).toString('hex'),
      V3_JOIN_239_1_1_1.subarray(0, 14).toString('hex'),
    );
  });
  it('walks an 802.1Q tag', () => {
    const frame = hex('01005e010203 020000000001 8100 0064 0800 45');
    const { header, payloadStart } = ethernet.decode(frame);
    assert.deepEqual(header.vlanIds, [100]);
    assert.equal(header.etherType, 0x0800);
    assert.equal(payloadStart, 18);
    assert.equal(Buffer.from(ethernet.encode(header)).toString('hex'), frame.subarray(0, 18).toString('hex'));
  });
  it('maps IPv4 groups to MACs (RFC 1112 §6.4: low 23 bits)', () => {
    assert.equal(ethernet.multicastMacForGroup('224.0.0.22'), '01:00:5e:00:00:16');
    assert.equal(ethernet.multicastMacForGroup('239.129.2.3'), '01:00:5e:01:02:03'); // bit 24 dropped
    assert.equal(ethernet.multicastMacForGroup('239.255.255.250'), '01:00:5e:7f:ff:fa');
    assert.throws(() => ethernet.multicastMacForGroup('10.0.0.1'), RangeError);
  });
  it('refuses a frame shorter than its header', () => {
    assert.throws(
      () => ethernet.decode(hex('01005e')),
      (error: unknown) => error instanceof DecodeError && error.code === 'truncated',
    );
  });
});

describe('IPv4 addresses', () => {
  it('parses strict dotted quads only', () => {
    assert.equal(parseIPv4('239.1.2.3'), 0xef010203);
    assert.equal(parseIPv4('0.0.0.0'), 0);
    assert.equal(parseIPv4('255.255.255.255'), 0xffffffff);
    for (const bad of [
      '239.1.2',
      '239.1.2.3.4',
      '256.1.1.1',
      '010.1.1.1',
      '1.1.1.-1',
      ' 1.1.1.1',
      '1.1.1.1 ',
      'a.b.c.d',
      '',
      '1..1.1',
      '1.1.1.',
      '.1.1.1',
      '1.1.1.1000',
      '1.1.1.00',
      '1.1.1.+1',
      '1.1.1.1e0',
      '１.1.1.1',
    ]) {
      assert.equal(parseIPv4(bad), undefined, JSON.stringify(bad));
    }
  });
  it('parses exactly the text that splits into four decimal octets without leading zeros (the definition, on random text)', () => {
    const reference = (text: string) => {
      const parts = text.split('.');
      if (parts.length !== 4 || !parts.every((part) => /^(0|[1-9][0-9]{0,2})$/.test(part) && Number(part) <= 255))
        return undefined;
      return parts.reduce((value, part) => value * 256 + Number(part), 0);
    };
    const addressLike = fc.stringMatching(/^[0-9.]{0,16}$/);
    const octets = fc.tuple(fc.nat(300), fc.nat(300), fc.nat(300), fc.nat(300)).map((parts) => parts.join('.'));
    fc.assert(
      fc.property(fc.oneof(addressLike, octets, fc.string()), (text) => parseIPv4(text) === reference(text)),
      { numRuns: 20_000 },
    );
  });
  it('formats, reads and writes what it parses', () => {
    const bytes = new Uint8Array(6);
    writeIPv4(bytes, 1, '224.0.0.22');
    assert.deepEqual([...bytes], [0, 224, 0, 0, 22, 0]);
    assert.equal(readIPv4(bytes, 1), '224.0.0.22');
    assert.equal(formatIPv4(0xe0000016), '224.0.0.22');
    assert.throws(() => writeIPv4(bytes, 0, '224.0.0'), RangeError);
  });
  it('knows multicast from unicast (224.0.0.0/4)', () => {
    assert.ok(isMulticast('224.0.0.1') && isMulticast('239.255.255.255'));
    assert.ok(!isMulticast('223.255.255.255') && !isMulticast('240.0.0.1') && !isMulticast('nonsense'));
  });
});
