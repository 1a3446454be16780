/**
 * The machinery of test/e2e/kernel-structs.test.ts: the layout of the kernel's structs as
 * this machine's headers declare them (test/fixtures/kernel-structs.c, compiled by gcc and
 * run), and the checks of one codec against it, one test per struct. See that file for
 * what each check holds a codec to.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { endianness, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import { it } from './node-test.js';

const LAYOUT_PROGRAM = fileURLToPath(new URL('../fixtures/kernel-structs.c', import.meta.url));
const SETUP_HINT =
  'run scripts/setup.sh: it installs g++, which brings gcc, and with it linux-libc-dev, the kernel headers';

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
      if (kind === 'size' && words.length === 2)
        this.#structs.set(words[0]!, { size: Number(words[1]), fields: new Map() });
      else if (kind === 'field' && words.length === 4)
        this.struct(words[0]!).fields.set(words[1]!, { offset: Number(words[2]), size: Number(words[3]) });
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
      execFileSync('gcc', ['-std=c11', '-o', program, LAYOUT_PROGRAM], {
        encoding: 'utf8',
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 60_000,
      });
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

let layout: KernelLayout | undefined;

/** The structs and constants of this machine's headers, read on the first call. */
export function kernelLayout(): KernelLayout {
  layout ??= readKernelLayout();
  return layout;
}

/** An integer's octets as the kernel reads it: in this machine's byte order. */
export function hostOrder(value: number, size: 2 | 4): number[] {
  const octets = new DataView(new ArrayBuffer(size));
  const little = endianness() === 'LE';
  if (size === 2) octets.setUint16(0, value, little);
  else octets.setUint32(0, value, little);
  return [...new Uint8Array(octets.buffer)];
}

interface StructCodec<V> {
  encode(value: V): Uint8Array;
  decode(bytes: Uint8Array): V;
  encodingLength(value: V): number;
}

/**
 * A codec value and the same content as the octets of the kernel's fields (by their header names); fields not named are
 * zero.
 */
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
  const names = [...kernelLayout().struct(struct).fields]
    .filter(([, field]) => offset >= field.offset && offset < field.offset + field.size)
    .map(([name]) => name);
  return names.length === 0 ? 'no field: padding' : names.join(', ');
}

/** The struct's octets as the kernel lays them out: zeros, with each named field's octets at its offset. */
function kernelOctets(struct: string, ...fieldOctets: Record<string, number[]>[]): Uint8Array {
  const out = new Uint8Array(kernelLayout().struct(struct).size);
  for (const [name, octets] of fieldOctets.flatMap((fields) => Object.entries(fields))) {
    const field = kernelLayout().field(struct, name);
    if (octets.length !== field.size)
      throw new Error(`${struct}.${name}: the test gives ${octets.length} octets for a field of sizeof ${field.size}`);
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
  const { size } = kernelLayout().struct(subject.struct);
  const lengths = {
    encodingLength: subject.codec.encodingLength(subject.base.value),
    'the encoding': encodeOrExplain(subject, subject.base.value, subject.title).length,
    ...(subject.lengthConstant === undefined ? {} : { 'the length constant': subject.lengthConstant }),
  };
  return Object.entries(lengths)
    .filter(([, length]) => length !== size)
    .map(
      ([what, length]) => `${subject.title}: ${what} is ${length} octets, sizeof(struct ${subject.struct}) is ${size}`,
    );
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

/**
 * The marker set in the codec's value must change the encoding where the header puts the field, to the octets the
 * kernel reads.
 */
function encodeProblems<V>(subject: StructCase<V>, name: string, marker: FieldMarker<V>): string[] {
  const field = kernelLayout().field(subject.struct, name);
  const base = marker.base ?? subject.base;
  const where = `${subject.title}.${name}`;
  const encodedBase = encodeOrExplain(subject, base.value, where);
  const encoded = encodeOrExplain(subject, { ...base.value, ...marker.value }, where);
  const codecSpan = differingSpan(encodedBase, encoded);
  const kernelSpan = differingSpan(
    kernelOctets(subject.struct, base.octets),
    kernelOctets(subject.struct, base.octets, { [name]: marker.octets }),
  );
  if (!isDeepStrictEqual(codecSpan, kernelSpan)) {
    return [
      `${where}: the codec encodes the marker ${describeSpan(codecSpan)}, the kernel's struct holds it ${describeSpan(kernelSpan)} (offsetof ${field.offset}, sizeof ${field.size})`,
    ];
  }
  const got = hex(encoded.subarray(field.offset, field.offset + field.size));
  const wanted = hex(Uint8Array.from(marker.octets));
  return got === wanted
    ? []
    : [
        `${where}: the codec encodes the marker as ${got}, the kernel reads ${wanted} (offsetof ${field.offset}, sizeof ${field.size})`,
      ];
}

/**
 * The marker's octets written where the header puts the field must decode to the base value with that field, and
 * nothing else, changed.
 */
function decodeProblems<V>(subject: StructCase<V>, name: string, marker: FieldMarker<V>): string[] {
  const field = kernelLayout().field(subject.struct, name);
  const base = marker.base ?? subject.base;
  const where = `${subject.title}.${name}`;
  const header = `the header's ${name} is at offset ${field.offset} size ${field.size}`;
  const decoded = decodeOrExplain(
    subject,
    kernelOctets(subject.struct, base.octets, { [name]: marker.octets }),
    where,
    `the marker where ${header}`,
  );
  const wrong = differences(decoded, { ...base.value, ...marker.value } as V);
  return wrong === '' ? [] : [`${where}: the marker written where ${header} decodes with ${wrong}`];
}

function offsetProblems<V>(subject: StructCase<V>, name: string, offset: number): string[] {
  const field = kernelLayout().field(subject.struct, name);
  return offset === field.offset
    ? []
    : [`${subject.title}.${name}: the codec's offset constant is ${offset}, offsetof is ${field.offset}`];
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
export function checkStruct<V>(subject: StructCase<V>): void {
  it(`${subject.title} is laid out as the header declares`, () => {
    const problems = [
      ...problemsOf(() => lengthProblems(subject)),
      ...problemsOf(() => baseProblems(subject, subject.base, subject.title)),
      ...Object.entries(subject.fields).flatMap(([name, marker]) => fieldProblems(subject, name, marker)),
      ...Object.entries(subject.offsetConstants ?? {}).flatMap(([name, offset]) =>
        problemsOf(() => offsetProblems(subject, name, offset)),
      ),
    ];
    if (problems.length > 0) assert.fail(problems.join('\n'));
  });
}
