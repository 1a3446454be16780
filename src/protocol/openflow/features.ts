/**
 * OFPT_FEATURES_REPLY (OpenFlow 1.3.5 §7.3.1), 32 octets:
 *
 *   header | datapath_id(8) | n_buffers(4) | n_tables | auxiliary_id | pad(2) | capabilities(4) | reserved(4)
 *
 * (OpenFlow 1.3 dropped the port list that 1.0 appended: ports come by multipart PORT_DESC.)
 */
import { readMessageHeader, writeHeader } from './header.js';
import { outputBuffer, readU32BE, readU64BE, writeU32Field, writeU64Field, writeU8Field } from '../../wire/bytes.js';

export interface FeaturesReply {
  type: 'FEATURES_REPLY';
  xid: number;
  datapathId: bigint;
  nBuffers: number;
  nTables: number;
  auxiliaryId: number;
  /**
   * `ofp_capabilities` bits (FLOW_STATS 1, TABLE_STATS 2, PORT_STATS 4, GROUP_STATS 8, IP_REASM 32, QUEUE_STATS 64,
   * PORT_BLOCKED 256).
   */
  capabilities: number;
  reserved: number;
}

const LENGTH = 32;

export function encodingLength(_message: FeaturesReply): number {
  return LENGTH;
}

export function encode(message: FeaturesReply, buf?: Uint8Array, offset = 0): Uint8Array {
  const out = outputBuffer(LENGTH, buf, offset, 'FEATURES_REPLY');
  writeHeader(out, offset, 'FEATURES_REPLY', LENGTH, message.xid);
  writeU64Field(out, offset + 8, message.datapathId, 'datapath_id');
  writeU32Field(out, offset + 16, message.nBuffers, 'n_buffers');
  writeU8Field(out, offset + 20, message.nTables, 'n_tables');
  writeU8Field(out, offset + 21, message.auxiliaryId, 'auxiliary_id');
  out.fill(0, offset + 22, offset + 24);
  writeU32Field(out, offset + 24, message.capabilities, 'capabilities');
  writeU32Field(out, offset + 28, message.reserved, 'reserved');
  return out;
}

export function decode(bytes: Uint8Array, start = 0, end = bytes.length): FeaturesReply {
  const header = readMessageHeader(bytes, start, end, 'FEATURES_REPLY', LENGTH);
  return {
    type: 'FEATURES_REPLY',
    xid: header.xid,
    datapathId: readU64BE(bytes, start + 8),
    nBuffers: readU32BE(bytes, start + 16),
    nTables: bytes[start + 20]!,
    auxiliaryId: bytes[start + 21]!,
    capabilities: readU32BE(bytes, start + 24),
    reserved: readU32BE(bytes, start + 28),
  };
}

/** The datapath id as OVS prints it: 16 hex digits. */
export function formatDatapathId(datapathId: bigint): string {
  return datapathId.toString(16).padStart(16, '0');
}
