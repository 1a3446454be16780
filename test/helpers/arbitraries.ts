/**
 * fast-check arbitraries for fuzzing the packet decoders: random frames, and mutations of
 * known frames. Mutations are plain records applied in order, so fast-check can shrink a
 * failing frame by dropping edits, picking an earlier seed frame, and moving positions
 * and values toward zero.
 */
import fc from 'fast-check';

/** Byte values that sit on boundaries or mean something to the decoders (IGMP types, IPv4 version and IHL). */
const INTERESTING_BYTES = [0, 1, 0x7f, 0x80, 0xff, 0x22, 0x11, 0x45, 0x02] as const;

/** One edit of a frame. Positions are taken modulo the frame's length at the time of the edit. */
export type FrameMutation =
  | { kind: 'flip-bit'; at: number; bit: number }
  | { kind: 'set-byte'; at: number; value: number }
  | { kind: 'truncate'; keep: number }
  | { kind: 'extend'; bytes: Uint8Array }
  | { kind: 'write-uint16'; at: number; value: number }
  | { kind: 'mark-ipv4-igmp' };

/** Writes the IPv4 ethertype and the IGMP protocol number, so that the frame's bytes reach the IGMP codec. */
function markIpv4Igmp(frame: Buffer): void {
  if (frame.length <= 24) return;
  frame[12] = 0x08;
  frame[13] = 0x00;
  frame[23] = 2;
}

export const frameMutation: fc.Arbitrary<FrameMutation> = fc.oneof(
  fc.record({ kind: fc.constant('truncate' as const), keep: fc.nat() }),
  fc.record({ kind: fc.constant('flip-bit' as const), at: fc.nat(), bit: fc.integer({ min: 0, max: 7 }) }),
  fc.record({ kind: fc.constant('set-byte' as const), at: fc.nat(), value: fc.constantFrom(...INTERESTING_BYTES) }),
  fc.record({ kind: fc.constant('extend' as const), bytes: fc.uint8Array({ maxLength: 39, size: 'max' }) }),
  // Counts and lengths are 16-bit fields: a big value in one is the classic overrun.
  fc.record({ kind: fc.constant('write-uint16' as const), at: fc.nat(), value: fc.integer({ min: 0, max: 0xffff }) }),
  fc.constant({ kind: 'mark-ipv4-igmp' as const }),
);

/** `base` with `mutations` applied in order; `base` itself is left alone. */
export function applyMutations(base: Uint8Array, mutations: readonly FrameMutation[]): Buffer {
  let frame = Buffer.from(base);
  for (const mutation of mutations) {
    switch (mutation.kind) {
      case 'flip-bit':
        if (frame.length) frame[mutation.at % frame.length]! ^= 1 << mutation.bit;
        break;
      case 'set-byte':
        if (frame.length) frame[mutation.at % frame.length] = mutation.value;
        break;
      case 'truncate':
        frame = frame.subarray(0, mutation.keep % (frame.length + 1));
        break;
      case 'extend':
        frame = Buffer.concat([frame, mutation.bytes]);
        break;
      case 'write-uint16':
        if (frame.length > 2) frame.writeUInt16BE(mutation.value, mutation.at % (frame.length - 1));
        break;
      case 'mark-ipv4-igmp':
        markIpv4Igmp(frame);
        break;
    }
  }
  return frame;
}

/** One of `seeds` with one to four mutations. */
export function mutatedFrame(seeds: readonly Buffer[]): fc.Arbitrary<Buffer> {
  return fc
    .tuple(fc.constantFrom(...seeds), fc.array(frameMutation, { minLength: 1, maxLength: 4 }))
    .map(([base, mutations]) => applyMutations(base, mutations));
}

/**
 * Random bytes, up to 119 of them; most (seven in ten) of those long enough carry the IPv4
 * ethertype and the IGMP protocol, and some of those an IPv4 header with options (IHL 6).
 */
export const randomFrame: fc.Arbitrary<Buffer> = fc
  .tuple(
    fc.uint8Array({ maxLength: 119, size: 'max' }),
    fc.oneof(
      { arbitrary: fc.constant('raw' as const), weight: 30 },
      { arbitrary: fc.constant('ipv4-igmp' as const), weight: 49 },
      { arbitrary: fc.constant('ipv4-options-igmp' as const), weight: 21 },
    ),
  )
  .map(([bytes, header]) => {
    const frame = Buffer.from(bytes);
    if (header !== 'raw' && frame.length > 24) {
      markIpv4Igmp(frame);
      frame[14] = header === 'ipv4-options-igmp' ? 0x46 : 0x45;
    }
    return frame;
  });

/**
 * A fast-check reporter for properties over one frame: fast-check's own report (seed, path,
 * the smallest counterexample) with that frame in hex, which is how captures are read.
 */
export function reportWithFrameHex(details: fc.RunDetails<[Buffer]>): void {
  if (!details.failed) return;
  const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
  const [counterexample] = details.counterexample ?? [];
  const shown =
    counterexample === undefined ? '' : `\nFrame (${counterexample.length} bytes): ${counterexample.toString('hex')}`;
  throw new Error(`${fc.defaultReportMessage(details) ?? 'property failed'}${shown}\nGot error: ${error}`);
}
