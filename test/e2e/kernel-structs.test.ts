/**
 * The kernel struct codecs against the kernel's own headers. test/fixtures/kernel-structs.c,
 * compiled here by gcc against this machine's linux/mroute.h, linux/mroute6.h and
 * netinet/in.h, prints each struct's sizeof and its fields' offsetof and sizeof. Each codec
 * is read as a black box, field by field, and must agree:
 *
 * - its encodingLength and its length constant are the struct's sizeof;
 * - the base value (every field zero, but for values a struct cannot do without, such as a
 *   sockaddr's family) encodes to the base octets built from the header, zeros with those
 *   values at their offsets, and decodes from them back to itself;
 * - for each field, a marker (a value whose every octet is non-zero) set in that field alone
 *   changes the encoding exactly where the header puts the field, to the octets the kernel
 *   reads; and the marker's octets written at the header's offset into the base octets
 *   decode to the base value with that field, and nothing else, changed.
 *
 * Needs gcc and the kernel's headers (linux-libc-dev), neither root nor a kernel that routes
 * multicast: the headers fix the layout the kernel reads.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { endianness, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { it } from '../helpers/node-test.js';

import { MAXVIFS, VIFF_USE_IFINDEX } from '../../src/protocol/mroute/constants.js';
import { GROUP_FILTER_BASE_LENGTH, GROUP_SOURCE_REQ_LENGTH, type GroupFilter, groupFilter, groupSourceReq } from '../../src/protocol/mroute/group-req.js';
import * as igmpmsg from '../../src/protocol/mroute/igmpmsg.js';
import * as ipMreqn from '../../src/protocol/mroute/ip-mreqn.js';
import * as mfcctl from '../../src/protocol/mroute/mfcctl.js';
import * as vifctl from '../../src/protocol/mroute/vifctl.js';
import { IF_SETSIZE } from '../../src/protocol/mroute6/constants.js';
import {
  GROUP_FILTER6_BASE_LENGTH,
  GROUP_REQ6_LENGTH,
  GROUP_SOURCE_REQ6_LENGTH,
  type GroupFilter6,
  groupFilter6,
  groupReq6,
  groupSourceReq6,
  IPV6_MREQ_LENGTH,
  ipv6Mreq,
} from '../../src/protocol/mroute6/group-req6.js';
import * as mf6cctl from '../../src/protocol/mroute6/mf6cctl.js';
import * as mif6ctl from '../../src/protocol/mroute6/mif6ctl.js';
import * as mrt6msg from '../../src/protocol/mroute6/mrt6msg.js';

const LAYOUT_PROGRAM = fileURLToPath(new URL('../fixtures/kernel-structs.c', import.meta.url));
const SETUP_HINT = 'run scripts/setup.sh: it installs g++, which brings gcc, and with it linux-libc-dev, the kernel headers';

interface FieldLayout {
  offset: number;
  size: number;
}

interface StructLayout {
  size: number;
  fields: Map<string, FieldLayout>;
}

/** What the layout program printed: the structs and constants as this machine's headers declare them. */
class KernelLayout {
  readonly #structs = new Map<string, StructLayout>();
  readonly #constants = new Map<string, number>();

  constructor(output: string) {
    for (const line of output.split('\n').filter((text) => text !== '')) {
      const [kind, ...words] = line.split(' ');
      if (kind === 'size' && words.length === 2) this.#structs.set(words[0]!, { size: Number(words[1]), fields: new Map() });
      else if (kind === 'field' && words.length === 4) this.struct(words[0]!).fields.set(words[1]!, { offset: Number(words[2]), size: Number(words[3]) });
      else if (kind === 'constant' && words.length === 2) this.#constants.set(words[0]!, Number(words[1]));
      else throw new Error(`the layout program printed a line this test does not read: ${JSON.stringify(line)}`);
    }
  }

  struct(name: string): StructLayout {
    const found = this.#structs.get(name);
    if (found === undefined) throw new Error(`the layout program prints no struct ${name}`);
    return found;
  }

  field(struct: string, name: string): FieldLayout {
    const found = this.struct(struct).fields.get(name);
    if (found === undefined) throw new Error(`the layout program prints no field ${name} of struct ${struct}`);
    return found;
  }

  constant(name: string): number {
    const value = this.#constants.get(name);
    if (value === undefined) throw new Error(`the layout program prints no constant ${name}`);
    return value;
  }
}

/** Compiles and runs the layout program in a directory of its own, removed afterwards. */
function readKernelLayout(): KernelLayout {
  const directory = mkdtempSync(join(tmpdir(), 'mcastctl-kernel-structs-'));
  try {
    const program = join(directory, 'kernel-structs');
    try {
      execFileSync('gcc', ['-std=c11', '-o', program, LAYOUT_PROGRAM], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], timeout: 60_000 });
    } catch (error) {
      const { code, stderr } = error as { code?: string; stderr?: string };
      if (code === 'ENOENT') throw new Error(`gcc is not installed: ${SETUP_HINT}`);
      const missingHeader = /fatal error: (\S+): No such file or directory/.exec(stderr ?? '');
      if (missingHeader) throw new Error(`the header ${missingHeader[1]} is not installed: ${SETUP_HINT}`);
      throw new Error(`gcc could not compile ${LAYOUT_PROGRAM}:\n${stderr}`);
    }
    return new KernelLayout(execFileSync(program, [], { encoding: 'utf8', timeout: 60_000 }));
  } finally {
    rmSync(directory, { recursive: true, force: true });
  }
}

const kernel = readKernelLayout();

/** An integer's octets as the kernel reads it: in this machine's byte order. */
function hostOrder(value: number, size: 2 | 4): number[] {
  const octets = new DataView(new ArrayBuffer(size));
  const little = endianness() === 'LE';
  if (size === 2) octets.setUint16(0, value, little);
  else octets.setUint32(0, value, little);
  return [...new Uint8Array(octets.buffer)];
}

// Markers: no octet is zero, so a marker changes every octet of the field it is set in.
const BYTE = 0xa5;
const U16 = 0x1a2b;
const U32 = 0x1a2b3c4d;
const IPV4 = { text: '198.51.100.7', octets: [198, 51, 100, 7] };
const IPV6 = {
  text: '2001:db8:a1b2:c3d4:e5f6:1718:191a:1b1c',
  octets: [0x20, 0x01, 0x0d, 0xb8, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c],
};

const AF_INET = hostOrder(kernel.constant('AF_INET'), 2);
const AF_INET6 = hostOrder(kernel.constant('AF_INET6'), 2);

interface StructCodec<V> {
  encode(value: V): Uint8Array;
  decode(bytes: Uint8Array): V;
  encodingLength(value: V): number;
}

/** A codec value and the same content as the octets of the kernel's fields (by their header names); fields not named are zero. */
interface Base<V> {
  value: V;
  octets: Record<string, number[]>;
}

interface FieldMarker<V> {
  /** The field set to the marker, in the codec's terms. */
  value: Partial<V>;
  /** The same marker as the kernel's field holds it. */
  octets: number[];
  /** A base of its own, for a field that is read only when another field says so (a union's arm). */
  base?: Base<V>;
  /** The codec cannot encode this marker (each use says why): only decoding is checked. */
  decodeOnly?: true;
}

interface StructCase<V> {
  /** The struct's name in the headers. */
  struct: string;
  /** The test's name for it: the struct's, with the family where both families' codecs share the struct. */
  title: string;
  codec: StructCodec<V>;
  /** The codec's exported length of the struct. */
  lengthConstant?: number;
  base: Base<V>;
  /** Keyed by the field's name in the layout program's output. */
  fields: Record<string, FieldMarker<V>>;
  /** The codec's exported offsets of fields, keyed by field name. */
  offsetConstants?: Record<string, number>;
}

function hex(octets: Uint8Array): string {
  return Buffer.from(octets).toString('hex');
}

/** The first and last octet where two encodings differ, as an offset and a size (size 0: they are equal). */
function differingSpan(before: Uint8Array, after: Uint8Array): FieldLayout {
  const differs = (index: number) => before[index] !== after[index];
  const length = Math.max(before.length, after.length);
  let first = 0;
  while (first < length && !differs(first)) first++;
  if (first === length) return { offset: 0, size: 0 };
  let last = length - 1;
  while (!differs(last)) last--;
  return { offset: first, size: last - first + 1 };
}

function describeSpan(span: FieldLayout): string {
  return span.size === 0 ? 'nowhere' : `at offset ${span.offset} size ${span.size}`;
}

/** The names of the kernel's fields that hold the octet at `offset`. */
function fieldsAt(struct: string, offset: number): string {
  const names = [...kernel.struct(struct).fields].filter(([, field]) => offset >= field.offset && offset < field.offset + field.size).map(([name]) => name);
  return names.length === 0 ? 'no field: padding' : names.join(', ');
}

/** The struct's octets as the kernel lays them out: zeros, with each named field's octets at its offset. */
function kernelOctets(struct: string, ...fieldOctets: Record<string, number[]>[]): Uint8Array {
  const out = new Uint8Array(kernel.struct(struct).size);
  for (const [name, octets] of fieldOctets.flatMap((fields) => Object.entries(fields))) {
    const field = kernel.field(struct, name);
    if (octets.length !== field.size) throw new Error(`${struct}.${name}: the test gives ${octets.length} octets for a field of sizeof ${field.size}`);
    out.set(octets, field.offset);
  }
  return out;
}

/** The fields of a decoded value that are not the expected ones, each with both values ('' when none). */
function differences<V>(actual: V, expected: V): string {
  const got = actual as Record<string, unknown>;
  const wanted = expected as Record<string, unknown>;
  return [...new Set([...Object.keys(got), ...Object.keys(wanted)])]
    .filter((key) => !isDeepStrictEqual(got[key], wanted[key]))
    .map((key) => `${key} ${JSON.stringify(got[key])} (expected ${JSON.stringify(wanted[key])})`)
    .join(', ');
}

/** The codec's encoding, or an error that says which check's value it refused. */
function encodeOrExplain<V>(subject: StructCase<V>, value: V, where: string): Uint8Array {
  try {
    return subject.codec.encode(value);
  } catch (error) {
    throw new Error(`${where}: encoding ${JSON.stringify(value)} throws: ${(error as Error).message}`);
  }
}

/** The codec's decoding, or an error that says which check's octets it refused. */
function decodeOrExplain<V>(subject: StructCase<V>, bytes: Uint8Array, where: string, what: string): V {
  try {
    return subject.codec.decode(bytes);
  } catch (error) {
    throw new Error(`${where}: decoding ${what} throws: ${(error as Error).message}`);
  }
}

/** What one check finds at odds with the header; a check that throws finds its error. */
function problemsOf(check: () => string[]): string[] {
  try {
    return check();
  } catch (error) {
    return [(error as Error).message];
  }
}

function lengthProblems<V>(subject: StructCase<V>): string[] {
  const { size } = kernel.struct(subject.struct);
  const lengths = {
    encodingLength: subject.codec.encodingLength(subject.base.value),
    'the encoding': encodeOrExplain(subject, subject.base.value, subject.title).length,
    ...(subject.lengthConstant === undefined ? {} : { 'the length constant': subject.lengthConstant }),
  };
  return Object.entries(lengths)
    .filter(([, length]) => length !== size)
    .map(([what, length]) => `${subject.title}: ${what} is ${length} octets, sizeof(struct ${subject.struct}) is ${size}`);
}

/** `where` names the base in what it reports: the struct's, or the field's that has a base of its own. */
function baseProblems<V>(subject: StructCase<V>, base: Base<V>, where: string): string[] {
  const expected = kernelOctets(subject.struct, base.octets);
  const encoded = encodeOrExplain(subject, base.value, where);
  const { offset, size } = differingSpan(encoded, expected);
  if (size > 0) {
    const octets = (bytes: Uint8Array) => hex(bytes.subarray(offset, offset + 4));
    return [
      `${where}: the base value encodes to ${octets(encoded)}… at offset ${offset} (${fieldsAt(subject.struct, offset)}); the kernel's octets there are ${octets(expected)}…`,
    ];
  }
  const wrong = differences(decodeOrExplain(subject, expected, where, 'the base octets'), base.value);
  return wrong === '' ? [] : [`${where}: the base octets decode with ${wrong}`];
}

/** The marker set in the codec's value must change the encoding where the header puts the field, to the octets the kernel reads. */
function encodeProblems<V>(subject: StructCase<V>, name: string, marker: FieldMarker<V>): string[] {
  const field = kernel.field(subject.struct, name);
  const base = marker.base ?? subject.base;
  const where = `${subject.title}.${name}`;
  const encodedBase = encodeOrExplain(subject, base.value, where);
  const encoded = encodeOrExplain(subject, { ...base.value, ...marker.value }, where);
  const codecSpan = differingSpan(encodedBase, encoded);
  const kernelSpan = differingSpan(kernelOctets(subject.struct, base.octets), kernelOctets(subject.struct, base.octets, { [name]: marker.octets }));
  if (!isDeepStrictEqual(codecSpan, kernelSpan)) {
    return [
      `${where}: the codec encodes the marker ${describeSpan(codecSpan)}, the kernel's struct holds it ${describeSpan(kernelSpan)} (offsetof ${field.offset}, sizeof ${field.size})`,
    ];
  }
  const got = hex(encoded.subarray(field.offset, field.offset + field.size));
  const wanted = hex(Uint8Array.from(marker.octets));
  return got === wanted
    ? []
    : [`${where}: the codec encodes the marker as ${got}, the kernel reads ${wanted} (offsetof ${field.offset}, sizeof ${field.size})`];
}

/** The marker's octets written where the header puts the field must decode to the base value with that field, and nothing else, changed. */
function decodeProblems<V>(subject: StructCase<V>, name: string, marker: FieldMarker<V>): string[] {
  const field = kernel.field(subject.struct, name);
  const base = marker.base ?? subject.base;
  const where = `${subject.title}.${name}`;
  const header = `the header's ${name} is at offset ${field.offset} size ${field.size}`;
  const decoded = decodeOrExplain(subject, kernelOctets(subject.struct, base.octets, { [name]: marker.octets }), where, `the marker where ${header}`);
  const wrong = differences(decoded, { ...base.value, ...marker.value } as V);
  return wrong === '' ? [] : [`${where}: the marker written where ${header} decodes with ${wrong}`];
}

function offsetProblems<V>(subject: StructCase<V>, name: string, offset: number): string[] {
  const field = kernel.field(subject.struct, name);
  return offset === field.offset ? [] : [`${subject.title}.${name}: the codec's offset constant is ${offset}, offsetof is ${field.offset}`];
}

/** Every check of one field, its own base first when it has one. */
function fieldProblems<V>(subject: StructCase<V>, name: string, marker: FieldMarker<V>): string[] {
  const { base, decodeOnly } = marker;
  return [
    ...(base === undefined ? [] : problemsOf(() => baseProblems(subject, base, `${subject.title}.${name}`))),
    ...(decodeOnly ? [] : problemsOf(() => encodeProblems(subject, name, marker))),
    ...problemsOf(() => decodeProblems(subject, name, marker)),
  ];
}

/** One test per struct, listing every disagreement with the header at once: a moved field often moves others. */
function checkStruct<V>(subject: StructCase<V>): void {
  it(`${subject.title} is laid out as the header declares`, () => {
    const problems = [
      ...problemsOf(() => lengthProblems(subject)),
      ...problemsOf(() => baseProblems(subject, subject.base, subject.title)),
      ...Object.entries(subject.fields).flatMap(([name, marker]) => fieldProblems(subject, name, marker)),
      ...Object.entries(subject.offsetConstants ?? {}).flatMap(([name, offset]) => problemsOf(() => offsetProblems(subject, name, offset))),
    ];
    if (problems.length > 0) assert.fail(problems.join('\n'));
  });
}

const NO_TTLS: number[] = Array(MAXVIFS).fill(0);

function ttlsWith(vif: number, ttl: number): number[] {
  return NO_TTLS.map((zero, index) => (index === vif ? ttl : zero));
}

/** The bits of an if_set word with one bit in each of its octets, the word's first and last among them. */
const IFSET_BITS = [0, 9, 18, 31];
const IFSET_WORD = IFSET_BITS.reduce((word, bit) => word + 2 ** bit, 0);

/** The MIFs that IFSET_WORD stands for as the if_set's word `word`. */
function mifsOfWord(word: number): number[] {
  return IFSET_BITS.map((bit) => 32 * word + bit);
}
const LAST_IFSET_WORD = IF_SETSIZE / 32 - 1;

const vifctlBase: vifctl.VifCtl = { vif: 0, flags: 0, threshold: 0, rateLimit: 0, local: { kind: 'address', address: '0.0.0.0' }, remoteAddress: '0.0.0.0' };

checkStruct({
  struct: 'vifctl',
  title: 'vifctl',
  codec: vifctl,
  lengthConstant: vifctl.VIFCTL_LENGTH,
  base: { value: vifctlBase, octets: {} },
  fields: {
    vifc_vifi: { value: { vif: U16 }, octets: hostOrder(U16, 2) },
    // BYTE leaves VIFF_USE_IFINDEX clear, so the union stays an address on both sides.
    vifc_flags: { value: { flags: BYTE }, octets: [BYTE] },
    vifc_threshold: { value: { threshold: BYTE }, octets: [BYTE] },
    vifc_rate_limit: { value: { rateLimit: U32 }, octets: hostOrder(U32, 4) },
    vifc_lcl_addr: { value: { local: { kind: 'address', address: IPV4.text } }, octets: IPV4.octets },
    // The union's other arm: read as an ifindex when the flags hold VIFF_USE_IFINDEX.
    vifc_lcl_ifindex: {
      base: {
        value: { ...vifctlBase, flags: VIFF_USE_IFINDEX, local: { kind: 'ifindex', ifindex: 0 } },
        octets: { vifc_flags: [kernel.constant('VIFF_USE_IFINDEX')] },
      },
      value: { local: { kind: 'ifindex', ifindex: U32 } },
      octets: hostOrder(U32, 4),
    },
    vifc_rmt_addr: { value: { remoteAddress: IPV4.text }, octets: IPV4.octets },
  },
});

checkStruct({
  struct: 'mfcctl',
  title: 'mfcctl',
  codec: mfcctl,
  lengthConstant: mfcctl.MFCCTL_LENGTH,
  base: { value: { origin: '0.0.0.0', group: '0.0.0.0', parent: 0, ttls: NO_TTLS, packets: 0, bytes: 0, wrongIf: 0, expire: 0 }, octets: {} },
  fields: {
    mfcc_origin: { value: { origin: IPV4.text }, octets: IPV4.octets },
    mfcc_mcastgrp: { value: { group: IPV4.text }, octets: IPV4.octets },
    mfcc_parent: { value: { parent: U16 }, octets: hostOrder(U16, 2) },
    // The TTL array is probed at its ends: its first and last VIF.
    'mfcc_ttls[0]': { value: { ttls: ttlsWith(0, BYTE) }, octets: [BYTE] },
    [`mfcc_ttls[${MAXVIFS - 1}]`]: { value: { ttls: ttlsWith(MAXVIFS - 1, BYTE) }, octets: [BYTE] },
    mfcc_pkt_cnt: { value: { packets: U32 }, octets: hostOrder(U32, 4) },
    mfcc_byte_cnt: { value: { bytes: U32 }, octets: hostOrder(U32, 4) },
    mfcc_wrong_if: { value: { wrongIf: U32 }, octets: hostOrder(U32, 4) },
    mfcc_expire: { value: { expire: U32 }, octets: hostOrder(U32, 4) },
  },
});

checkStruct({
  struct: 'igmpmsg',
  title: 'igmpmsg',
  codec: igmpmsg,
  lengthConstant: igmpmsg.IGMPMSG_LENGTH,
  base: { value: { type: 0, vif: 0, source: '0.0.0.0', group: '0.0.0.0' }, octets: {} },
  fields: {
    // The codec writes the unused fields and im_mbz as zeros and reads nothing from them:
    // decoding must ignore a marker there. parseUpcall finds im_mbz by its offset constant.
    unused1: { value: {}, octets: hostOrder(U32, 4), decodeOnly: true },
    unused2: { value: {}, octets: hostOrder(U32, 4), decodeOnly: true },
    im_msgtype: { value: { type: BYTE }, octets: [BYTE] },
    im_mbz: { value: {}, octets: [BYTE], decodeOnly: true },
    // The codec's VIF is 16 bits wide: its low octet is im_vif, its high one im_vif_hi.
    im_vif: { value: { vif: BYTE }, octets: [BYTE] },
    im_vif_hi: { value: { vif: BYTE << 8 }, octets: [BYTE] },
    im_src: { value: { source: IPV4.text }, octets: IPV4.octets },
    im_dst: { value: { group: IPV4.text }, octets: IPV4.octets },
  },
  offsetConstants: { im_mbz: igmpmsg.IGMPMSG_MBZ_OFFSET },
});

checkStruct({
  struct: 'ip_mreqn',
  title: 'ip_mreqn',
  codec: ipMreqn,
  lengthConstant: ipMreqn.IP_MREQN_LENGTH,
  base: { value: { group: '0.0.0.0', address: '0.0.0.0', ifindex: 0 }, octets: {} },
  fields: {
    imr_multiaddr: { value: { group: IPV4.text }, octets: IPV4.octets },
    imr_address: { value: { address: IPV4.text }, octets: IPV4.octets },
    imr_ifindex: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
  },
});

// In the RFC 3678 structs, each address is a sockaddr_storage that the kernel reads as a
// sockaddr_in or sockaddr_in6 by its family: the family is in every base (a storage without
// it does not decode), and the address is probed where that sockaddr puts it. The rest of
// each storage is zeros in the base octets.

checkStruct({
  struct: 'group_source_req',
  title: 'group_source_req (IPv4)',
  codec: groupSourceReq,
  lengthConstant: GROUP_SOURCE_REQ_LENGTH,
  base: {
    value: { ifindex: 0, group: '0.0.0.0', source: '0.0.0.0' },
    octets: { 'gsr_group.ss_family': AF_INET, 'gsr_source.ss_family': AF_INET },
  },
  fields: {
    gsr_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
    'gsr_group.sin_addr': { value: { group: IPV4.text }, octets: IPV4.octets },
    'gsr_source.sin_addr': { value: { source: IPV4.text }, octets: IPV4.octets },
  },
});

// glibc's group_filter has room for one source, so its sizeof is GROUP_FILTER_SIZE(1): the
// bases hold one source. gf_numsrc is in the bases (1) rather than probed, since another
// count changes the struct's length. gf_fmode's marker is MCAST_INCLUDE, the one value
// besides MCAST_EXCLUDE (0) that the codecs take: its zero octets do not change, so encoding
// shows only where its low octet goes, and decoding checks the whole field.

checkStruct<GroupFilter>({
  struct: 'group_filter',
  title: 'group_filter (IPv4)',
  codec: groupFilter,
  base: {
    value: { ifindex: 0, group: '0.0.0.0', mode: 'exclude', sources: ['0.0.0.0'] },
    octets: {
      'gf_group.ss_family': AF_INET,
      gf_fmode: hostOrder(kernel.constant('MCAST_EXCLUDE'), 4),
      gf_numsrc: hostOrder(1, 4),
      'gf_slist[0].ss_family': AF_INET,
    },
  },
  fields: {
    gf_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
    'gf_group.sin_addr': { value: { group: IPV4.text }, octets: IPV4.octets },
    gf_fmode: { value: { mode: 'include' }, octets: hostOrder(kernel.constant('MCAST_INCLUDE'), 4) },
    'gf_slist[0].sin_addr': { value: { sources: [IPV4.text] }, octets: IPV4.octets },
  },
});

checkStruct({
  struct: 'mif6ctl',
  title: 'mif6ctl',
  codec: mif6ctl,
  lengthConstant: mif6ctl.MIF6CTL_LENGTH,
  base: { value: { mif: 0, flags: 0, threshold: 0, ifindex: 0, rateLimit: 0 }, octets: {} },
  fields: {
    mif6c_mifi: { value: { mif: U16 }, octets: hostOrder(U16, 2) },
    mif6c_flags: { value: { flags: BYTE }, octets: [BYTE] },
    vifc_threshold: { value: { threshold: BYTE }, octets: [BYTE] },
    mif6c_pifi: { value: { ifindex: U16 }, octets: hostOrder(U16, 2) },
    vifc_rate_limit: { value: { rateLimit: U32 }, octets: hostOrder(U32, 4) },
  },
});

checkStruct({
  struct: 'mf6cctl',
  title: 'mf6cctl',
  codec: mf6cctl,
  lengthConstant: mf6cctl.MF6CCTL_LENGTH,
  base: {
    value: { origin: '::', group: '::', parent: 0, oifs: [] },
    octets: { 'mf6cc_origin.sin6_family': AF_INET6, 'mf6cc_mcastgrp.sin6_family': AF_INET6 },
  },
  fields: {
    'mf6cc_origin.sin6_addr': { value: { origin: IPV6.text }, octets: IPV6.octets },
    'mf6cc_mcastgrp.sin6_addr': { value: { group: IPV6.text }, octets: IPV6.octets },
    mf6cc_parent: { value: { parent: U16 }, octets: hostOrder(U16, 2) },
    // The if_set is probed by its first and last word (MIF 0 and 31 are in the first). The
    // codec encodes no MIF from MAXMIFS (32) on, since the kernel reads none, so the last word
    // is checked by decoding only.
    'mf6cc_ifset.ifs_bits[0]': { value: { oifs: mifsOfWord(0) }, octets: hostOrder(IFSET_WORD, 4) },
    [`mf6cc_ifset.ifs_bits[${LAST_IFSET_WORD}]`]: { value: { oifs: mifsOfWord(LAST_IFSET_WORD) }, octets: hostOrder(IFSET_WORD, 4), decodeOnly: true },
  },
});

checkStruct({
  struct: 'mrt6msg',
  title: 'mrt6msg',
  codec: mrt6msg,
  lengthConstant: mrt6msg.MRT6MSG_LENGTH,
  base: { value: { type: 0, mif: 0, source: '::', group: '::' }, octets: {} },
  fields: {
    // The codec writes im6_mbz and im6_pad as zeros and reads nothing from them: decoding must
    // ignore a marker there. parseUpcall6 finds im6_mbz by its offset constant.
    im6_mbz: { value: {}, octets: [BYTE], decodeOnly: true },
    im6_msgtype: { value: { type: BYTE }, octets: [BYTE] },
    im6_mif: { value: { mif: U16 }, octets: hostOrder(U16, 2) },
    im6_pad: { value: {}, octets: hostOrder(U32, 4), decodeOnly: true },
    im6_src: { value: { source: IPV6.text }, octets: IPV6.octets },
    im6_dst: { value: { group: IPV6.text }, octets: IPV6.octets },
  },
  offsetConstants: { im6_mbz: mrt6msg.MRT6MSG_MBZ_OFFSET },
});

checkStruct({
  struct: 'ipv6_mreq',
  title: 'ipv6_mreq',
  codec: ipv6Mreq,
  lengthConstant: IPV6_MREQ_LENGTH,
  base: { value: { group: '::', ifindex: 0 }, octets: {} },
  fields: {
    ipv6mr_multiaddr: { value: { group: IPV6.text }, octets: IPV6.octets },
    ipv6mr_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
  },
});

checkStruct({
  struct: 'group_req',
  title: 'group_req (IPv6)',
  codec: groupReq6,
  lengthConstant: GROUP_REQ6_LENGTH,
  base: { value: { ifindex: 0, group: '::' }, octets: { 'gr_group.ss_family': AF_INET6 } },
  fields: {
    gr_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
    'gr_group.sin6_addr': { value: { group: IPV6.text }, octets: IPV6.octets },
  },
});

checkStruct({
  struct: 'group_source_req',
  title: 'group_source_req (IPv6)',
  codec: groupSourceReq6,
  lengthConstant: GROUP_SOURCE_REQ6_LENGTH,
  base: {
    value: { ifindex: 0, group: '::', source: '::' },
    octets: { 'gsr_group.ss_family': AF_INET6, 'gsr_source.ss_family': AF_INET6 },
  },
  fields: {
    gsr_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
    'gsr_group.sin6_addr': { value: { group: IPV6.text }, octets: IPV6.octets },
    'gsr_source.sin6_addr': { value: { source: IPV6.text }, octets: IPV6.octets },
  },
});

checkStruct<GroupFilter6>({
  struct: 'group_filter',
  title: 'group_filter (IPv6)',
  codec: groupFilter6,
  base: {
    value: { ifindex: 0, group: '::', mode: 'exclude', sources: ['::'] },
    octets: {
      'gf_group.ss_family': AF_INET6,
      gf_fmode: hostOrder(kernel.constant('MCAST_EXCLUDE'), 4),
      gf_numsrc: hostOrder(1, 4),
      'gf_slist[0].ss_family': AF_INET6,
    },
  },
  fields: {
    gf_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
    'gf_group.sin6_addr': { value: { group: IPV6.text }, octets: IPV6.octets },
    gf_fmode: { value: { mode: 'include' }, octets: hostOrder(kernel.constant('MCAST_INCLUDE'), 4) },
    'gf_slist[0].sin6_addr': { value: { sources: [IPV6.text] }, octets: IPV6.octets },
  },
});

it("group_filter's lengths are GROUP_FILTER_SIZE's", () => {
  const size = (sources: number) => kernel.constant(`GROUP_FILTER_SIZE(${sources})`);
  for (const sources of [0, 1]) {
    const ipv4 = groupFilter.encodingLength({ ifindex: 0, group: '0.0.0.0', mode: 'include', sources: Array(sources).fill('0.0.0.0') });
    const ipv6 = groupFilter6.encodingLength({ ifindex: 0, group: '::', mode: 'include', sources: Array(sources).fill('::') });
    assert.equal(ipv4, size(sources), `group_filter (IPv4): encodingLength of ${sources} sources is not GROUP_FILTER_SIZE(${sources})`);
    assert.equal(ipv6, size(sources), `group_filter (IPv6): encodingLength of ${sources} sources is not GROUP_FILTER_SIZE(${sources})`);
  }
  assert.equal(GROUP_FILTER_BASE_LENGTH, size(0), 'group_filter (IPv4): GROUP_FILTER_BASE_LENGTH is not GROUP_FILTER_SIZE(0)');
  assert.equal(GROUP_FILTER6_BASE_LENGTH, size(0), 'group_filter (IPv6): GROUP_FILTER6_BASE_LENGTH is not GROUP_FILTER_SIZE(0)');
});
