import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { LinkType } from '../../src/packet/pcap/index.js';
import { decodeFrame, ipLocator, type FrameEvent } from '../../src/packet/frame-decoder.js';
import { toJsonLine } from '../../src/packet/frame-event-json.js';
import { toJsonRecord } from '../../src/packet/frame-event-record.js';
import { V3_JOIN_239_1_1_1, V3_LEAVE_239_1_1_1 } from '../fixtures/real-frames.js';
import { ethernetFrame, hex, referenceChecksum } from '../helpers/bytes.js';
import { hostileFrames, validFrames } from '../helpers/hostile-frames.js';

// IPv6 addresses, written out as their 16 octets.
const UNSPECIFIED = '00000000000000000000000000000000';
const FE80_1 = 'fe800000000000000000000000000001';
const FF02_1 = 'ff020000000000000000000000000001';
const FF02_2 = 'ff020000000000000000000000000002';
const FF02_16 = 'ff020000000000000000000000000016';
const FF02_FB = 'ff0200000000000000000000000000fb';
const FF02_1_FF00_1 = 'ff0200000000000000000001ff000001';
const FF0E_1234 = 'ff0e0000000000000000000000001234';
const FF3E_8000_1 = 'ff3e0000000000000000000080000001';
const DB8_1 = '20010db8000000000000000000000001';

/** An ICMPv6 message from hex (checksum octets 2..3 zero), with its checksum over the RFC 8200 §8.1 pseudo-header. */
function icmpv6(src: string, dst: string, messageHex: string): Buffer {
  const message = hex(messageHex);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(message.length);
  const pseudoHeader = Buffer.concat([hex(src), hex(dst), length, hex('000000 3a')]);
  message.writeUInt16BE(referenceChecksum(Buffer.concat([pseudoHeader, message])), 2);
  return message;
}

/** MLD's hop-by-hop header (RFC 2711): next header 58, length 0 (8 octets), Router Alert 0 (MLD), PadN of 0. */
const ROUTER_ALERT_HEADER = '3a 00 0502 0000 0100';

/**
 * An IPv6 packet (RFC 8200 §3, field by field): version 6, hop limit 1, `nextHeader` (0 by
 * default: the hop-by-hop header of `headers` follows), `headers` (hex of the extension
 * headers, the Router Alert one by default), then `upper`.
 */
function ipv6Packet(
  src: string,
  dst: string,
  upper: Uint8Array,
  options: { nextHeader?: number; headers?: string } = {},
): Buffer {
  const payload = Buffer.concat([hex(options.headers ?? ROUTER_ALERT_HEADER), upper]);
  const length = Buffer.alloc(2);
  length.writeUInt16BE(payload.length);
  return Buffer.concat([
    hex('6000 0000'),
    length,
    Buffer.from([options.nextHeader ?? 0, 1]),
    hex(src),
    hex(dst),
    payload,
  ]);
}

function withOctetFlipped(bytes: Uint8Array, at: number): Buffer {
  const out = Buffer.from(bytes);
  out[at] = out[at]! ^ 0xff;
  return out;
}

/** An Ethernet frame of an IPv6 packet (the destination MAC does not matter to the decoder). */
function ethernet6(packet: Uint8Array): Buffer {
  return ethernetFrame(packet, 0x86dd, '333300000016');
}

// The messages, RFC 2710 §3 and RFC 3810 §5.1, §5.2: type, code, checksum, then the fields.
/** MLDv1 report (131) for ff0e::1234: max resp delay 0, reserved, the group. */
const V1_REPORT = icmpv6(FE80_1, FF0E_1234, `83 00 0000 0000 0000 ${FF0E_1234}`);
/** MLDv1 Done (132) for ff0e::1234, to all routers. */
const DONE = icmpv6(FE80_1, FF02_2, `84 00 0000 0000 0000 ${FF0E_1234}`);
/** MLDv1 general query (130, 24 octets): max resp delay 10000 ms, group ::. */
const V1_QUERY = icmpv6(FE80_1, FF02_1, `82 00 0000 2710 0000 ${UNSPECIFIED}`);
/** MLDv2 query for ff3e::8000:1 and source 2001:db8::1: max resp code 1000 (ms), S set, QRV 2, QQIC 125, one source. */
const V2_QUERY = icmpv6(FE80_1, FF3E_8000_1, `82 00 0000 03e8 0000 ${FF3E_8000_1} 0a 7d 0001 ${DB8_1}`);
/** MLDv2 general query, max resp code 0x8000: the float form, (0x1000 | 0) << (0 + 3) = 32768 ms (RFC 3810 §5.1.3). */
const V2_GENERAL_QUERY = icmpv6(FE80_1, FF02_1, `82 00 0000 8000 0000 ${UNSPECIFIED} 02 7d 0000`);
/** MLDv2 report (143), two records: TO_EX {} for ff0e::1234, ALLOW {2001:db8::1} for ff3e::8000:1. */
const V2_REPORT = icmpv6(
  FE80_1,
  FF02_16,
  `8f 00 0000 0000 0002 04 00 0000 ${FF0E_1234} 05 00 0001 ${FF3E_8000_1} ${DB8_1}`,
);
/** A Neighbor Solicitation (135, RFC 4861 §4.3) from :: for fe80::1: ICMPv6, not MLD. */
const NEIGHBOR_SOLICITATION = icmpv6(UNSPECIFIED, FF02_1_FF00_1, `87 00 0000 00000000 ${FE80_1}`);

const mldFrames = {
  v1Report: ethernet6(ipv6Packet(FE80_1, FF0E_1234, V1_REPORT)),
  done: ethernet6(ipv6Packet(FE80_1, FF02_2, DONE)),
  v1Query: ethernet6(ipv6Packet(FE80_1, FF02_1, V1_QUERY)),
  v2Query: ethernet6(ipv6Packet(FE80_1, FF3E_8000_1, V2_QUERY)),
  v2GeneralQuery: ethernet6(ipv6Packet(FE80_1, FF02_1, V2_GENERAL_QUERY)),
  v2Report: ethernet6(ipv6Packet(FE80_1, FF02_16, V2_REPORT)),
};

const ethernet = ipLocator(LinkType.ETHERNET);
const meta = { frame: 7, ts: 1700000000.25 };

function decode(frame: Uint8Array, locate = ethernet): FrameEvent | undefined {
  return decodeFrame(locate, frame, meta);
}

describe('frame decoder', () => {
  it('turns a real kernel join into the --json record of the contract', () => {
    assert.deepEqual(toJsonRecord(decode(V3_JOIN_239_1_1_1)!), {
      frame: 7,
      ts: 1700000000.25,
      src: '10.9.0.1',
      dst: '224.0.0.22',
      protocol: 'igmp',
      version: 3,
      type: 'report',
      records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.1.1.1', sources: [] }],
    });
    assert.deepEqual(toJsonRecord(decode(V3_LEAVE_239_1_1_1)!).records, [
      { type: 'CHANGE_TO_INCLUDE_MODE', group: '239.1.1.1', sources: [] },
    ]);
  });
  it('the fast NDJSON line is exactly JSON.stringify of the record', () => {
    const frames = [
      V3_JOIN_239_1_1_1,
      V3_LEAVE_239_1_1_1,
      ...Object.values(validFrames),
      ...hostileFrames.map((hostile) => hostile.frame),
    ];
    let compared = 0;
    for (const frame of frames) {
      const event = decode(frame);
      if (event === undefined) continue;
      assert.equal(toJsonLine(event), JSON.stringify(toJsonRecord(event)));
      compared++;
    }
    assert.ok(compared >= hostileFrames.length + 4);
  });
  it('gives queries their times', () => {
    assert.deepEqual(toJsonRecord(decode(validFrames.v2Query)!), {
      ...meta,
      src: '10.0.0.1',
      dst: '224.0.0.1',
      protocol: 'igmp',
      version: 2,
      type: 'query',
      group: '0.0.0.0',
      maxRespTimeMs: 10000,
    });
  });
  it('reports other IGMP types by number', () => {
    const record = toJsonRecord(decode(validFrames.mtrace)!);
    assert.equal(record.type, 'other');
    assert.equal(record.igmpType, 0x1f);
    assert.equal(record.version, 1);
  });
  it('says nothing of UDP, ARP or IPv6 UDP', () => {
    assert.equal(decode(validFrames.udp), undefined);
    assert.equal(decode(validFrames.arp), undefined);
    // IPv6: payload length 8, next header 17 (UDP), hop limit 1, fe80::1 > ff02::fb, then UDP 5353 > 5353.
    const udp6 = hex(`3333000000fb 020000000001 86dd 60000000 0008 11 01 ${FE80_1} ${FF02_FB} 14e9 14e9 0008 0000`);
    assert.equal(decode(udp6), undefined);
    assert.equal(decode(hex('01005e')), undefined, 'too short to be anything');
  });
  for (const hostile of hostileFrames) {
    it(`hostile: ${hostile.name} → ${hostile.error}`, () => {
      const event = decode(hostile.frame);
      assert.ok(event !== undefined && event.kind === 'malformed', 'a malformed event');
      const record = toJsonRecord(event);
      assert.equal(record.error, hostile.error);
      assert.ok(typeof record.message === 'string' && record.message.length > 10);
      assert.equal(record.type, undefined, 'no type on an error line');
    });
  }
  it('truncation at every offset of a real frame: nothing below the IPv4 header, truncated after', () => {
    for (let length = 0; length < V3_JOIN_239_1_1_1.length; length++) {
      const event = decode(V3_JOIN_239_1_1_1.subarray(0, length));
      if (length < 14) assert.equal(event, undefined, `length ${length}`);
      else
        assert.ok(
          event?.kind === 'malformed' && event.code === 'truncated',
          `length ${length}: ${JSON.stringify(event)}`,
        );
    }
  });
  it('ignores Ethernet padding after the IP total length', () => {
    const padded = Buffer.concat([V3_JOIN_239_1_1_1, Buffer.alloc(6)]);
    assert.equal(decode(padded)?.kind, 'igmp');
  });
  it('decodes every supported link type', () => {
    const packet = V3_JOIN_239_1_1_1.subarray(14);
    const raw = decode(packet, ipLocator(LinkType.RAW));
    assert.equal(raw?.kind, 'igmp');
    assert.equal(decode(packet, ipLocator(12))?.kind, 'igmp', 'BSD DLT_RAW');
    assert.equal(decode(packet, ipLocator(LinkType.IPV4))?.kind, 'igmp');
    // SLL (16 octets): packet type 2 (multicast), ARPHRD 1, address length 6, address, protocol 0x0800.
    const sll = Buffer.concat([hex('0002 0001 0006 1687c5031deb 0000 0800'), packet]);
    assert.equal(decode(sll, ipLocator(LinkType.LINUX_SLL))?.kind, 'igmp');
    // SLL2 (20 octets): protocol 0x0800, reserved, ifindex 3, ARPHRD 1, packet type 2, address length 6, address.
    const sll2 = Buffer.concat([hex('0800 0000 00000003 0001 02 06 1687c5031deb 0000'), packet]);
    assert.equal(decode(sll2, ipLocator(LinkType.LINUX_SLL2))?.kind, 'igmp');
    assert.equal(
      decode(
        Buffer.concat([hex('0806 0000 00000003 0001 02 06 1687c5031deb 0000'), packet]),
        ipLocator(LinkType.LINUX_SLL2),
      ),
      undefined,
      'ARP',
    );
  });
  it('refuses a link type it cannot decode, by a typed error', () => {
    assert.throws(
      () => ipLocator(147),
      (error: unknown) => (error as { code?: string }).code === 'unsupported-link-type',
    );
  });
});

describe('frame decoder: MLD', () => {
  const head = '{"frame":7,"ts":1700000000.25,"src":"fe80::1"';
  it('the exact --json lines of an MLDv1 report, a Done, an MLDv1 query, two MLDv2 queries and an MLDv2 report', () => {
    const lines = Object.fromEntries(
      Object.entries(mldFrames).map(([name, frame]) => [name, toJsonLine(decode(frame)!)]),
    );
    assert.deepEqual(lines, {
      v1Report: `${head},"dst":"ff0e::1234","protocol":"mld","version":1,"type":"report","group":"ff0e::1234"}`,
      done: `${head},"dst":"ff02::2","protocol":"mld","version":1,"type":"leave","group":"ff0e::1234"}`,
      v1Query: `${head},"dst":"ff02::1","protocol":"mld","version":1,"type":"query","group":"::","maxRespTimeMs":10000}`,
      v2Query:
        `${head},"dst":"ff3e::8000:1","protocol":"mld","version":2,"type":"query","group":"ff3e::8000:1","maxRespTimeMs":1000` +
        ',"sFlag":true,"qrv":2,"qqicSec":125,"sources":["2001:db8::1"]}',
      v2GeneralQuery:
        `${head},"dst":"ff02::1","protocol":"mld","version":2,"type":"query","group":"::","maxRespTimeMs":32768` +
        ',"sFlag":false,"qrv":2,"qqicSec":125,"sources":[]}',
      v2Report:
        `${head},"dst":"ff02::16","protocol":"mld","version":2,"type":"report","records":[` +
        '{"type":"CHANGE_TO_EXCLUDE_MODE","group":"ff0e::1234","sources":[]},' +
        '{"type":"ALLOW_NEW_SOURCES","group":"ff3e::8000:1","sources":["2001:db8::1"]}]}',
    });
  });

  it('an MLD event carries the IPv6 header it came in', () => {
    const event = decode(mldFrames.v1Report);
    assert.ok(event?.kind === 'mld');
    assert.deepEqual(
      { src: event.src, dst: event.dst, hopLimit: event.ip.hopLimit, nextHeader: event.ip.nextHeader },
      { src: 'fe80::1', dst: 'ff0e::1234', hopLimit: 1, nextHeader: 0 },
    );
    assert.deepEqual(event.message, { kind: 'report', version: 1, group: 'ff0e::1234' });
  });

  it('decodes MLD over every link type that carries IPv6', () => {
    const packet = mldFrames.v2Report.subarray(14);
    assert.equal(decode(packet, ipLocator(LinkType.RAW))?.kind, 'mld');
    assert.equal(decode(packet, ipLocator(12))?.kind, 'mld', 'BSD DLT_RAW');
    // SLL: packet type 2 (multicast), ARPHRD 1, address length 6, address, protocol 0x86dd.
    assert.equal(
      decode(Buffer.concat([hex('0002 0001 0006 1687c5031deb 0000 86dd'), packet]), ipLocator(LinkType.LINUX_SLL))
        ?.kind,
      'mld',
    );
    // SLL2: protocol 0x86dd, reserved, ifindex 3, ARPHRD 1, packet type 2, address length 6, address.
    assert.equal(
      decode(
        Buffer.concat([hex('86dd 0000 00000003 0001 02 06 1687c5031deb 0000'), packet]),
        ipLocator(LinkType.LINUX_SLL2),
      )?.kind,
      'mld',
    );
    // One 802.1Q tag (VLAN 10), then 0x86dd.
    const tagged = Buffer.concat([
      mldFrames.v2Report.subarray(0, 12),
      hex('8100 000a'),
      mldFrames.v2Report.subarray(12),
    ]);
    assert.equal(decode(tagged)?.kind, 'mld');
    // The IPV4 link type holds IPv4 only: an IPv6 packet there is a broken IPv4 header.
    const asIpv4 = decode(packet, ipLocator(LinkType.IPV4));
    assert.ok(
      asIpv4?.kind === 'malformed' && asIpv4.protocol === 'igmp' && asIpv4.code === 'bad-ip-header',
      JSON.stringify(asIpv4),
    );
  });

  it('says nothing of other ICMPv6 (Neighbor Discovery, echo), of IPv6 UDP, or of an empty ICMPv6 message', () => {
    assert.equal(
      decode(ethernet6(ipv6Packet(UNSPECIFIED, FF02_1_FF00_1, NEIGHBOR_SOLICITATION, { nextHeader: 58, headers: '' }))),
      undefined,
    );
    const echo = icmpv6(FE80_1, FF02_1, '80 00 0000 0001 0001');
    assert.equal(
      decode(ethernet6(ipv6Packet(FE80_1, FF02_1, echo))),
      undefined,
      'echo request, even with a Router Alert',
    );
    assert.equal(decode(ethernet6(ipv6Packet(FE80_1, FF02_1, hex('')))), undefined, 'empty ICMPv6');
    const udp = ipv6Packet(FE80_1, FF02_FB, hex('14e9 14e9 0008 0000'), { nextHeader: 17, headers: '' });
    assert.equal(decode(ethernet6(udp)), undefined);
    // Its payload length (0x00c8) past the data: still plainly UDP, so still no line (as for IPv4).
    const badLength = Buffer.from(udp);
    badLength.writeUInt16BE(200, 4);
    assert.equal(decode(ethernet6(badLength)), undefined);
  });

  it('a Router Alert of another value than 0 (MLD) is MLD still', () => {
    const frame = ethernet6(ipv6Packet(FE80_1, FF0E_1234, V1_REPORT, { headers: '3a 00 0502 0001 0100' }));
    assert.equal(decode(frame)?.kind, 'mld');
  });

  it('an atomic fragment (offset 0, no more fragments, RFC 6946) is a whole packet', () => {
    const frame = ethernet6(
      ipv6Packet(FE80_1, FF0E_1234, V1_REPORT, { headers: '2c 00 0502 0000 0100  3a 00 0000 0000002a' }),
    );
    assert.equal(decode(frame)?.kind, 'mld');
  });

  it('a later fragment says nothing: its first octets are no ICMPv6 header', () => {
    // Fragment offset 1 (8 octets), more fragments clear; the data happens to start with 0x83.
    const frame = ethernet6(
      ipv6Packet(FE80_1, FF0E_1234, V1_REPORT, { headers: '2c 00 0502 0000 0100  3a 00 0008 0000002a' }),
    );
    assert.equal(decode(frame), undefined);
  });

  const hostileMld: { name: string; frame: Buffer; error: string; src: string | null; dst: string | null }[] = [
    {
      name: 'MLD without a hop-by-hop header',
      frame: ethernet6(ipv6Packet(FE80_1, FF0E_1234, V1_REPORT, { nextHeader: 58, headers: '' })),
      error: 'no-router-alert',
      src: 'fe80::1',
      dst: 'ff0e::1234',
    },
    {
      name: 'MLD whose hop-by-hop header holds only padding',
      frame: ethernet6(ipv6Packet(FE80_1, FF0E_1234, V1_REPORT, { headers: '3a 00 0104 00000000' })),
      error: 'no-router-alert',
      src: 'fe80::1',
      dst: 'ff0e::1234',
    },
    {
      name: 'MLD behind destination options only',
      frame: ethernet6(ipv6Packet(FE80_1, FF0E_1234, V1_REPORT, { nextHeader: 60, headers: '3a 00 0104 00000000' })),
      error: 'no-router-alert',
      src: 'fe80::1',
      dst: 'ff0e::1234',
    },
    {
      name: 'MLD in a first fragment (more fragments set)',
      frame: ethernet6(
        ipv6Packet(FE80_1, FF0E_1234, V1_REPORT, { headers: '2c 00 0502 0000 0100  3a 00 0001 0000002a' }),
      ),
      error: 'fragmented',
      src: 'fe80::1',
      dst: 'ff0e::1234',
    },
    {
      name: 'bad MLD checksum',
      frame: ethernet6(ipv6Packet(FE80_1, FF0E_1234, withOctetFlipped(V1_REPORT, 3))),
      error: 'bad-checksum',
      src: 'fe80::1',
      dst: 'ff0e::1234',
    },
    {
      // The hop-by-hop length octet says 5 × 8 + 8 = 48 octets; the payload holds 32.
      name: 'hop-by-hop header longer than the payload',
      frame: ethernet6(ipv6Packet(FE80_1, FF0E_1234, V1_REPORT, { headers: '3a 05 0502 0000 0100' })),
      error: 'bad-extension-header',
      src: 'fe80::1',
      dst: 'ff0e::1234',
    },
    {
      name: 'IP version 4 in an IPv6 frame',
      frame: ethernet6(Buffer.concat([hex('40'), ipv6Packet(FE80_1, FF0E_1234, V1_REPORT).subarray(1)])),
      error: 'bad-ip-header',
      src: 'fe80::1',
      dst: 'ff0e::1234',
    },
    {
      name: 'IPv6 header cut at 20 octets',
      frame: ethernet6(ipv6Packet(FE80_1, FF0E_1234, V1_REPORT).subarray(0, 20)),
      error: 'truncated',
      src: null,
      dst: null,
    },
    {
      name: 'IPv6 header cut at 30 octets: the source is there, the destination not',
      frame: ethernet6(ipv6Packet(FE80_1, FF0E_1234, V1_REPORT).subarray(0, 30)),
      error: 'truncated',
      src: 'fe80::1',
      dst: null,
    },
  ];
  for (const hostile of hostileMld) {
    it(`hostile MLD: ${hostile.name} → ${hostile.error}`, () => {
      const event = decode(hostile.frame);
      assert.ok(event?.kind === 'malformed', `a malformed event, not ${JSON.stringify(event)}`);
      assert.deepEqual(
        { protocol: event.protocol, code: event.code, src: event.src, dst: event.dst },
        { protocol: 'mld', code: hostile.error, src: hostile.src, dst: hostile.dst },
      );
      assert.ok(event.message.length > 10);
      const line = JSON.parse(toJsonLine(event)) as Record<string, unknown>;
      assert.deepEqual(Object.keys(line), ['frame', 'ts', 'src', 'dst', 'protocol', 'error', 'message']);
    });
  }

  it('the fast NDJSON line is exactly JSON.stringify of the record, for every kind of MLD line', () => {
    const frames = [...Object.values(mldFrames), ...hostileMld.map((hostile) => hostile.frame)];
    for (const frame of frames) {
      const event = decode(frame)!;
      assert.equal(toJsonLine(event), JSON.stringify(toJsonRecord(event)));
    }
    const kinds = new Set(frames.map((frame) => decode(frame)!.kind));
    assert.deepEqual([...kinds].sort(), ['malformed', 'mld']);
  });

  it('puts protocol right after dst on IGMP lines too, malformed ones included', () => {
    const igmp = JSON.parse(toJsonLine(decode(validFrames.v2Report)!)) as Record<string, unknown>;
    assert.deepEqual(Object.keys(igmp).slice(0, 6), ['frame', 'ts', 'src', 'dst', 'protocol', 'version']);
    assert.equal(igmp.protocol, 'igmp');
    const broken = decode(hostileFrames[0]!.frame)!;
    assert.equal(JSON.parse(toJsonLine(broken)).protocol, 'igmp');
  });

  it('truncation at every offset of an MLDv2 report: nothing below the Ethernet header, malformed MLD after', () => {
    const frame = mldFrames.v2Report;
    for (let length = 0; length < frame.length; length++) {
      const event = decode(frame.subarray(0, length));
      if (length < 14) assert.equal(event, undefined, `length ${length}`);
      else
        assert.ok(
          event?.kind === 'malformed' && event.protocol === 'mld',
          `length ${length}: ${JSON.stringify(event)}`,
        );
    }
  });

  it('ignores Ethernet padding after the IPv6 payload length', () => {
    assert.equal(decode(Buffer.concat([mldFrames.v1Report, Buffer.alloc(6)]))?.kind, 'mld');
  });
});
