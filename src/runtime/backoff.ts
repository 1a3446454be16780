/**
 * Reconnection delays: doubling from a minimum to a maximum, as OVS's own reconnect.c
 * does, so that a restarting ovsdb-server or ovs-vswitchd is found quickly and a dead one
 * is not hammered. Shared by the OVSDB and OpenFlow clients.
 */

export interface BackoffOptions {
  /** The first delay. Default 100 ms. */
  readonly minDelayMs?: number;
  /** The cap. Default 5 s. */
  readonly maxDelayMs?: number;
}

const DEFAULT_MIN_DELAY_MS = 100;
const DEFAULT_MAX_DELAY_MS = 5_000;

/** The delay before reconnection attempt `attempt` (0-based). */
export function backoffDelay(attempt: number, options: BackoffOptions = {}): number {
  const min = options.minDelayMs ?? DEFAULT_MIN_DELAY_MS;
  const max = Math.max(min, options.maxDelayMs ?? DEFAULT_MAX_DELAY_MS);
  // 2^attempt overflows to Infinity long after it passes any sane cap; min() handles both.
  return Math.min(max, min * 2 ** Math.min(attempt, 52));
}
