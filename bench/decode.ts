/**
 * Decode throughput on one core: IGMPv2 reports and IGMPv3 reports (4 records of 2
 * sources each), through the IGMP codec alone and through the whole frame decoder
 * (Ethernet, IPv4 with Router Alert, IGMP); MLDv2 reports of the same shape through the
 * MLD codec alone (checksum over the IPv6 pseudo-header included). Prints figures;
 * asserts nothing.
 */
import * as igmp from '../src/packet/igmp/index.js';
import * as mld from '../src/packet/mld/index.js';
import { writeIPv6 } from '../src/wire/ipv6-address.js';
import { LinkType } from '../src/packet/pcap/index.js';
import { decodeFrame, ipLocator } from '../src/packet/frame-decoder.js';
import { buildFrame } from './frames.js';

export interface DecodeFigures {
  name: string;
  perSecond: number;
}

const VARIANTS = 1024;

function v2Reports(): Uint8Array[] {
  return Array.from({ length: VARIANTS }, (_, i) =>
    igmp.encode({ kind: 'report', version: 2, group: `239.${i >> 8}.${i & 0xff}.1` }),
  );
}

function v3Reports(): Uint8Array[] {
  return Array.from({ length: VARIANTS }, (_, i) =>
    igmp.encode({
      kind: 'report',
      version: 3,
      records: [1, 2, 3, 4].map((r) => ({
        type: 'MODE_IS_INCLUDE' as const,
        group: `239.${r}.${i >> 8}.${i & 0xff}`,
        sources: [`10.${r}.0.1`, `10.${r}.0.2`],
      })),
    }),
  );
}

const MLD_ADDRESSES = { src: 'fe80::2', dst: 'ff02::16' };
/**
 * An MLD packet here is the 16-octet source, the destination, then the message: the codec reads the addresses in place.
 */
const MLD_OFFSETS = { srcAt: 0, dstAt: 16 };
const MLD_MESSAGE_AT = 32;

function mldV2Reports(): Uint8Array[] {
  return Array.from({ length: VARIANTS }, (_, i) => {
    const message = mld.encode(
      {
        kind: 'report',
        version: 2,
        records: [1, 2, 3, 4].map((r) => ({
          type: 'MODE_IS_INCLUDE' as const,
          group: `ff3e::${r}:${i.toString(16)}`,
          sources: [`2001:db8::${r}:1`, `2001:db8::${r}:2`],
        })),
      },
      MLD_ADDRESSES,
    );
    const packet = new Uint8Array(MLD_MESSAGE_AT + message.length);
    writeIPv6(packet, MLD_OFFSETS.srcAt, MLD_ADDRESSES.src);
    writeIPv6(packet, MLD_OFFSETS.dstAt, MLD_ADDRESSES.dst);
    packet.set(message, MLD_MESSAGE_AT);
    return packet;
  });
}

/** Runs `body` over the inputs until `seconds` have passed; returns operations per second. */
function measure(inputs: readonly Uint8Array[], body: (bytes: Uint8Array) => unknown, seconds = 1.5): number {
  let sink = 0;
  // Warm up so the JIT has settled before timing.
  for (let i = 0; i < 200_000; i++) sink ^= body(inputs[i % inputs.length]!) === undefined ? 1 : 0;
  let operations = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(seconds * 1e9));
  let now = start;
  while (now < deadline) {
    for (let i = 0; i < 100_000; i++) sink ^= body(inputs[i % inputs.length]!) === undefined ? 1 : 0;
    operations += 100_000;
    now = process.hrtime.bigint();
  }
  if (sink === 42) console.log(''); // keep `sink` alive
  return operations / (Number(now - start) / 1e9);
}

export function benchDecode(): DecodeFigures[] {
  const locate = ipLocator(LinkType.ETHERNET);
  const meta = { frame: 1, ts: 0 };
  const v2 = v2Reports();
  const v3 = v3Reports();
  const v2Frames = v2.map((message) => buildFrame(message, '239.1.1.1'));
  const v3Frames = v3.map((message) => buildFrame(message, '224.0.0.22'));
  const mldV2 = mldV2Reports();
  return [
    { name: 'IGMPv2 report, IGMP codec', perSecond: measure(v2, (bytes) => igmp.decode(bytes)) },
    { name: 'IGMPv2 report, whole frame', perSecond: measure(v2Frames, (bytes) => decodeFrame(locate, bytes, meta)) },
    { name: 'IGMPv3 report (4×2), IGMP codec', perSecond: measure(v3, (bytes) => igmp.decode(bytes)) },
    {
      name: 'IGMPv3 report (4×2), whole frame',
      perSecond: measure(v3Frames, (bytes) => decodeFrame(locate, bytes, meta)),
    },
    {
      name: 'MLDv2 report (4 records × 2 sources), MLD codec',
      perSecond: measure(mldV2, (bytes) => mld.decode(bytes, MLD_MESSAGE_AT, bytes.length, MLD_OFFSETS)),
    },
  ];
}
