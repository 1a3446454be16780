/** The replies of RFC 7047 locks (§4.1.8): `lock` and `steal` answer `{"locked": <boolean>}`. */
import { OvsdbDecodeError } from './errors.js';
import type { JsonValue } from './json.js';

export function lockIdError(lockId: string): RangeError {
  return new RangeError(
    `lock name ${JSON.stringify(lockId)} is not an OVSDB id (letters, digits and _, not starting with a digit)`,
  );
}

/** Whether the server granted the lock now; throws OvsdbDecodeError for any other reply. */
export function lockedFromJson(method: string, result: JsonValue): boolean {
  if (typeof result === 'object' && result !== null && !Array.isArray(result)) {
    const locked = (result as { readonly [key: string]: JsonValue })['locked'];
    if (typeof locked === 'boolean') return locked;
  }
  throw new OvsdbDecodeError('bad-datum', `${method} returned ${JSON.stringify(result)}, not {"locked": <boolean>}`);
}
