/**
 * `--control-socket <path>`: the one parser for the flag of every client of the daemon's
 * control socket (`status`, `groups`, `snoop --daemon`, `reconcile --daemon`).
 *
 * A control socket is a unix socket path, always: the value is resolved the way the
 * daemon resolves its own `--control-socket` (path.resolve against the working
 * directory), so that `9815` names the file ./9815 on both sides and is never read as a
 * TCP port by node's net module.
 */
import { resolve as resolvePath } from 'node:path';
import { quoteInput, UsageError } from '../../errors.js';

/** sun_path holds 108 bytes, one of them the terminating NUL. */
export const MAX_SOCKET_PATH_BYTES = 107;

/** The absolute path of the control socket named by `text`; a UsageError (exit 64) when it cannot be one. */
export function parseControlSocket(text: string): string {
  if (text === '') {
    throw new UsageError("--control-socket takes the path of the daemon's control socket, not an empty string", {
      hint: 'leave the flag out for the default, or give the path the daemon was started with',
    });
  }
  if (text.includes('\0'))
    throw new UsageError(`--control-socket takes a path, not ${quoteInput(text)} (it holds a NUL byte)`);
  const path = resolvePath(text);
  const bytes = Buffer.byteLength(path);
  if (bytes > MAX_SOCKET_PATH_BYTES) {
    const resolved = path === text ? '' : ` as ${quoteInput(path)}`;
    throw new UsageError(
      `--control-socket ${quoteInput(text)} is too long for a unix socket: ${bytes} bytes${resolved}, at most ${MAX_SOCKET_PATH_BYTES}`,
      {
        hint: 'use a shorter path (the daemon refuses the same one)',
      },
    );
  }
  return path;
}
