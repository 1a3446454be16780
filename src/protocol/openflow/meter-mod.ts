/**
 * OFPT_METER_MOD (OpenFlow 1.3.5 §7.3.4.4):
 *
 *   header | command(2) | flags(2) | meter_id(4) | bands
 *
 * A flow sends its packets through a meter with the METER instruction (instruction.ts);
 * packets over a band's rate take that band (DROP: discarded). MODIFY replaces flags and
 * the whole band list; DELETE removes the meter and every flow that uses it.
 */
import { HEADER_LENGTH, readMessageHeader, writeHeader } from './header.js';
import * as bandList from './meter-band.js';
import type { MeterBand } from './meter-band.js';
import { outputBuffer, readU16BE, readU32BE, writeU16Field, writeU32Field } from '../../wire/bytes.js';

/** `ofp_meter_mod_command` */
export const MeterModCommand = {
  ADD: 0,
  MODIFY: 1,
  DELETE: 2,
} as const;
export type MeterModCommandName = keyof typeof MeterModCommand;

/** `ofp_meter_flags`: a bit set. KBPS or PKTPS says the unit of every band's rate. */
export const MeterFlag = {
  /** Rates in kb/s (the default when neither unit is set). */
  KBPS: 1 << 0,
  /** Rates in packets per second. */
  PKTPS: 1 << 1,
  /** Each band's burst_size applies (else the switch picks one). */
  BURST: 1 << 2,
  /** Count packets and bytes per meter and band. */
  STATS: 1 << 3,
} as const;

/** `ofp_meter`: reserved meter ids. Meters a controller adds are numbered 1..MAX. */
export const OfpMeter = {
  MAX: 0xffff0000,
  SLOWPATH: 0xfffffffd,
  CONTROLLER: 0xfffffffe,
  /** In DELETE and in stats requests: every meter. */
  ALL: 0xffffffff,
} as const;

export interface MeterMod {
  type: 'METER_MOD';
  xid: number;
  /** MeterModCommand.ADD, MODIFY or DELETE. */
  command: number;
  /** MeterFlag bits. */
  flags: number;
  meterId: number;
  bands: MeterBand[];
}

const FIXED_LENGTH = HEADER_LENGTH + 8;

/** A METER_MOD; defaults: ADD, flags PKTPS|BURST|STATS, no bands. */
export function meterMod(fields: Partial<Omit<MeterMod, 'type'>> & Pick<MeterMod, 'meterId'>): MeterMod {
  return {
    type: 'METER_MOD',
    xid: 0,
    command: MeterModCommand.ADD,
    flags: MeterFlag.PKTPS | MeterFlag.BURST | MeterFlag.STATS,
    bands: [],
    ...fields,
  };
}

const COMMAND_NAMES: ReadonlyMap<number, MeterModCommandName> = new Map(
  Object.entries(MeterModCommand).map(([name, number]) => [number, name as MeterModCommandName]),
);

export function meterModCommandName(command: number): MeterModCommandName | undefined {
  return COMMAND_NAMES.get(command);
}

export function encodingLength(message: MeterMod): number {
  return FIXED_LENGTH + bandList.encodingLength(message.bands);
}

export function encode(message: MeterMod, buf?: Uint8Array, offset = 0): Uint8Array {
  const length = encodingLength(message);
  const out = outputBuffer(length, buf, offset, 'METER_MOD');
  writeHeader(out, offset, 'METER_MOD', length, message.xid);
  writeU16Field(out, offset + 8, message.command, 'meter command');
  writeU16Field(out, offset + 10, message.flags, 'meter flags');
  writeU32Field(out, offset + 12, message.meterId, 'meter_id');
  bandList.encode(message.bands, out, offset + FIXED_LENGTH);
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): MeterMod {
  const header = readMessageHeader(bytes, start, end, 'METER_MOD', FIXED_LENGTH);
  return {
    type: 'METER_MOD',
    xid: header.xid,
    command: readU16BE(bytes, start + 8),
    flags: readU16BE(bytes, start + 10),
    meterId: readU32BE(bytes, start + 12),
    bands: bandList.decode(bytes, start + FIXED_LENGTH, end),
  };
}
