/** The router socket's typed errors: a kernel refusal by its errno name, with a hint per errno where one helps. */
import { McastError, messageOf, PermissionError } from '../../errors.js';
import { errnoOf } from './errno.js';

/**
 * A kernel refusal other than a missing privilege or the held MRT_INIT: code 'io', exit 1,
 * with the errno name (EADDRINUSE, ENOENT, ...) for callers to match on.
 */
export class MrouteError extends McastError {
  override readonly name = 'MrouteError';
  constructor(
    message: string,
    /** The errno name, when the failure was the kernel's. */
    readonly errno: string | undefined,
    options: { hint?: string; cause?: unknown } = {},
  ) {
    super('io', message, options);
  }
}

/** Per-errno hints of one operation. */
export type Hints = Partial<Record<string, string>>;

export interface MrouteErrorOptions {
  /** Per-errno hints of the operation that failed. */
  hints?: Hints;
  /** The hint of a missing privilege: it names the family's raw socket (default: IPv4's). */
  permissionHint?: string;
}

const PERMISSION_HINT = 'multicast routing needs CAP_NET_ADMIN (and CAP_NET_RAW for the raw IGMP socket): run as root';

/** Turns a raw socket's failure into the project's typed error. */
export function mrouteError(what: string, error: unknown, options: MrouteErrorOptions = {}): McastError {
  if (error instanceof McastError) return error;
  const hints = options.hints ?? {};
  const permissionHint = options.permissionHint ?? PERMISSION_HINT;
  const errno = errnoOf(error);
  // A system error's message starts with its errno name, which the message gives already.
  const message = messageOf(error);
  const detail = errno !== undefined && message.startsWith(`${errno}: `) ? message.slice(errno.length + 2) : message;
  const label = errno ?? detail;
  switch (errno) {
    case 'EPERM':
    case 'EACCES':
      return new PermissionError(`${what}: ${errno} (${hints[errno] ?? permissionHint})`, {
        hint: permissionHint,
        cause: error,
      });
    default:
      return new MrouteError(`${what}: ${label}${errno !== undefined ? ` (${detail})` : ''}`, errno, {
        ...(errno !== undefined && hints[errno] !== undefined ? { hint: hints[errno] } : {}),
        cause: error,
      });
  }
}
