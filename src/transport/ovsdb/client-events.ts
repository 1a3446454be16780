/**
 * What an OvsdbClient tells its listeners about its connection (typed EventEmitter events).
 */

export type OvsdbClientState = 'connected' | 'reconnecting' | 'closed';

interface DisconnectedEvent {
  readonly error: Error;
  readonly willReconnect: boolean;
}

interface ReconnectingEvent {
  /** 1 for the first attempt after a drop. */
  readonly attempt: number;
  readonly delayMs: number;
  /** Why the connection dropped, or why the previous attempt failed. */
  readonly error: Error;
}

interface ReconnectedEvent {
  readonly attempts: number;
  /** Monitors re-established (their callbacks got `resync` before this event). */
  readonly monitors: readonly string[];
}

interface MonitorErrorEvent {
  readonly monitorId: string;
  /** Why the monitor could not be re-established after a reconnection; it has been dropped. */
  readonly error: Error;
}

export type OvsdbClientEvents = {
  disconnected: [event: DisconnectedEvent];
  reconnecting: [event: ReconnectingEvent];
  reconnected: [event: ReconnectedEvent];
  monitorError: [event: MonitorErrorEvent];
  /** The server granted a lock requested earlier (`lock` returned false). */
  locked: [lockId: string];
  /** Another client stole a lock this one held. */
  stolen: [lockId: string];
  /** After close(), or after a drop with reconnection off. */
  closed: [];
};
