/**
 * The hostile-input suite: malformed IGMP frames, each with the error code `snoop` must
 * report for it, built by the independent helpers from hand-written layouts.
 */
import { ethernetFrame, hex, igmpBytes, ipv4Packet } from './bytes.js';

export interface HostileFrame {
  name: string;
  frame: Buffer;
  /** The `error` code expected on this frame's line. */
  error: string;
}

const host = { src: '10.0.0.2', dst: '224.0.0.22' };
const v3Join = igmpBytes('22 00 0000 0000 0001 04 00 0000 ef010101');

function corruptChecksum(message: Buffer): Buffer {
  const out = Buffer.from(message);
  out[3] = out[3]! ^ 0xff;
  return out;
}

function withFirstOctet(packet: Buffer, octet: number): Buffer {
  const out = Buffer.from(packet);
  out[0] = octet;
  return out;
}

export const hostileFrames: HostileFrame[] = [
  {
    name: 'bad IGMP checksum (v2 report)',
    frame: ethernetFrame(ipv4Packet({ ...host, dst: '239.1.2.3' }, corruptChecksum(igmpBytes('16 00 0000 ef010203')))),
    error: 'bad-checksum',
  },
  {
    name: 'bad IGMP checksum (v3 report)',
    frame: ethernetFrame(ipv4Packet(host, corruptChecksum(v3Join))),
    error: 'bad-checksum',
  },
  {
    name: 'record count larger than the packet',
    frame: ethernetFrame(ipv4Packet(host, igmpBytes('22 00 0000 0000 0009 04 00 0000 ef010101'))),
    error: 'truncated',
  },
  {
    name: 'source count larger than the packet',
    frame: ethernetFrame(ipv4Packet(host, igmpBytes('22 00 0000 0000 0001 01 00 4000 ef010101 0a000001'))),
    error: 'truncated',
  },
  {
    name: 'v3 query source count larger than the packet',
    frame: ethernetFrame(
      ipv4Packet({ src: '10.0.0.1', dst: '224.0.0.1' }, igmpBytes('11 64 0000 00000000 02 7d 0003 0a000001')),
    ),
    error: 'truncated',
  },
  { name: 'IHL below 5', frame: ethernetFrame(withFirstOctet(ipv4Packet(host, v3Join), 0x44)), error: 'bad-ip-header' },
  {
    name: 'IP version 5 in an IPv4 frame',
    frame: ethernetFrame(withFirstOctet(ipv4Packet(host, v3Join), 0x56)),
    error: 'bad-ip-header',
  },
  {
    name: 'IP total length past the frame',
    frame: ethernetFrame(ipv4Packet({ ...host, totalLength: 200 }, v3Join)),
    error: 'truncated',
  },
  { name: 'IPv4 header cut short', frame: ethernetFrame(ipv4Packet(host, v3Join).subarray(0, 12)), error: 'truncated' },
  {
    name: 'first fragment (more fragments set)',
    frame: ethernetFrame(ipv4Packet({ ...host, flagsAndOffset: 0x2000 }, v3Join)),
    error: 'fragmented',
  },
  {
    name: 'later fragment (offset 8)',
    frame: ethernetFrame(ipv4Packet({ ...host, flagsAndOffset: 0x0001 }, v3Join)),
    error: 'fragmented',
  },
  {
    name: 'v2 report for a unicast group',
    frame: ethernetFrame(ipv4Packet({ ...host, dst: '10.1.2.3' }, igmpBytes('16 00 0000 0a010203'))),
    error: 'invalid-group',
  },
  {
    name: 'v2 leave for 0.0.0.0',
    frame: ethernetFrame(ipv4Packet({ ...host, dst: '224.0.0.2' }, igmpBytes('17 00 0000 00000000'))),
    error: 'invalid-group',
  },
  {
    name: 'v3 record for a unicast group',
    frame: ethernetFrame(ipv4Packet(host, igmpBytes('22 00 0000 0000 0001 04 00 0000 c0a80001'))),
    error: 'invalid-group',
  },
  {
    name: 'query for a unicast group',
    frame: ethernetFrame(ipv4Packet({ src: '10.0.0.1', dst: '224.0.0.1' }, igmpBytes('11 64 0000 0a000001'))),
    error: 'invalid-group',
  },
  { name: 'empty IGMP payload', frame: ethernetFrame(ipv4Packet(host, hex(''))), error: 'truncated' },
  { name: 'IGMP payload of 3 octets', frame: ethernetFrame(ipv4Packet(host, hex('160000'))), error: 'truncated' },
  {
    name: '10-octet query (no version has that length)',
    frame: ethernetFrame(ipv4Packet({ src: '10.0.0.1', dst: '224.0.0.1' }, igmpBytes('11 64 0000 00000000 0000'))),
    error: 'bad-length',
  },
  {
    name: 'bad IPv4 header checksum',
    frame: ethernetFrame(corruptIpChecksum(ipv4Packet(host, v3Join))),
    error: 'bad-ip-checksum',
  },
];

function corruptIpChecksum(packet: Buffer): Buffer {
  const out = Buffer.from(packet);
  out[11] = out[11]! ^ 0x55;
  return out;
}

/** Valid frames to put around the hostile ones: they must still decode. */
export const validFrames = {
  v2Report: ethernetFrame(ipv4Packet({ ...host, dst: '239.1.2.3' }, igmpBytes('16 00 0000 ef010203'))),
  v3Join: ethernetFrame(ipv4Packet(host, v3Join)),
  v2Query: ethernetFrame(ipv4Packet({ src: '10.0.0.1', dst: '224.0.0.1' }, hex('11 64 ee9b 00000000'))),
  /** An mtrace: decoded as type "other". */
  mtrace: ethernetFrame(
    ipv4Packet(
      { src: '10.0.0.1', dst: '224.0.0.2', routerAlert: false },
      igmpBytes('1f 10 0000 ef010203 0a000001 0a000002 0a000003 e0000001 40 000001'),
    ),
  ),
  /** UDP: no line. */
  udp: ethernetFrame(
    ipv4Packet(
      { src: '10.0.0.2', dst: '239.1.2.3', protocol: 17, routerAlert: false },
      hex('1388 1388 000c 0000 68690a0a'),
    ),
  ),
  /** ARP: no line. */
  arp: ethernetFrame(hex('0001 0800 06 04 0001 020000000001 0a000002 000000000000 0a000001'), 0x0806, 'ffffffffffff'),
};
