/**
 * The Linux cooked-capture link-layer headers, what libpcap writes for captures on the
 * "any" device: `sll` (LINKTYPE_LINUX_SLL, 16 octets) and `sll2` (LINKTYPE_LINUX_SLL2,
 * 20 octets), each with `encode`, `decode` and `encodingLength`.
 */
export * as sll from './sll.js';
export * as sll2 from './sll2.js';
export type { SllHeader } from './sll.js';
export type { Sll2Header } from './sll2.js';
export { SllPacketType, sllPacketTypeName, ArphrdType, type SllPacketTypeName } from './packet-type.js';
export { SLL_ADDRESS_FIELD_LENGTH } from './address.js';
