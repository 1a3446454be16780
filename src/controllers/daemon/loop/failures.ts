/**
 * Failures the daemon stops for: the routing socket, and the bridge lock after an OVSDB
 * reconnection (the server forgot it with the old connection, so it is taken again, or,
 * if another daemon took the bridge meanwhile, this one stops: one daemon per bridge).
 */
import { McastError, messageOf } from '../../../errors.js';
import type { BridgeLockPort } from './ports.js';

export interface RetakeOptions {
  lock: BridgeLockPort;
  bridge: string;
  fail: (error: unknown) => void;
  onFatal: (error: McastError) => void;
}

export async function retakeBridgeLock({ lock, bridge, fail, onFatal }: RetakeOptions): Promise<void> {
  let held: boolean;
  try {
    held = await lock.reacquire();
  } catch (error) {
    // The connection dropped again: the next reconnection tries again.
    fail(error);
    return;
  }
  if (held) return;
  const error = new McastError('busy', `another mcastctl daemon took bridge ${bridge} while OVSDB was unreachable`, {
    hint: 'one daemon per bridge: this one stops',
  });
  fail(error);
  onFatal(error);
}

/** The last save, at stop, failed: the daemon exits 1 (the state on disk is older than what it held). */
export function finalSaveFailure(error: unknown): McastError {
  if (error instanceof McastError) return error;
  return new McastError('io', `the final save of the daemon state failed: ${messageOf(error)}`, { cause: error });
}

/** The routing socket failed: the daemon stops, so that a restart sets routing up again. */
export function routingFailure(error: McastError): McastError {
  return new McastError(
    'io',
    `kernel multicast routing failed: ${error.message}; the kernel dropped the daemon's VIFs and routes`,
    {
      hint: 'the daemon stops so that a restart (systemd) sets routing up again',
      cause: error,
    },
  );
}
