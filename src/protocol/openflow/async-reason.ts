/**
 * Reasons of asynchronous messages (OpenFlow 1.3.5 §7.4.1-3), used by PACKET_IN's `reason`
 * and as bit numbers in SET_ASYNC masks (bit n set = deliver messages of reason n).
 */

export const PacketInReason = {
  /** No matching flow (table-miss flow entry). */
  NO_MATCH: 0,
  /** An OUTPUT to CONTROLLER action. */
  ACTION: 1,
  INVALID_TTL: 2,
} as const;
export type PacketInReasonName = keyof typeof PacketInReason;

export const PortStatusReason = {
  ADD: 0,
  DELETE: 1,
  MODIFY: 2,
} as const;

export const FlowRemovedReason = {
  IDLE_TIMEOUT: 0,
  HARD_TIMEOUT: 1,
  DELETE: 2,
  GROUP_DELETE: 3,
} as const;

const PACKET_IN_REASON_NAMES: readonly PacketInReasonName[] = ['NO_MATCH', 'ACTION', 'INVALID_TTL'];

export function packetInReasonName(reason: number): PacketInReasonName | undefined {
  return PACKET_IN_REASON_NAMES[reason];
}

/** A SET_ASYNC mask with the bits of `reasons` set. */
export function reasonMask(reasons: readonly number[]): number {
  let mask = 0;
  for (const reason of reasons) mask |= 1 << reason;
  return mask >>> 0;
}
