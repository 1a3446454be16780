/**
 * Listening on the control socket: its directory (0700), the socket created 0600, and a
 * socket file left by a daemon that died replaced (one that answers belongs to a running
 * daemon, and is refused).
 */
import { mkdir, chmod, lstat, unlink } from 'node:fs/promises';
import { createConnection, createServer, type Server } from 'node:net';
import { dirname } from 'node:path';
import { isSystemError, McastError, PermissionError, systemCodeOf, UsageError } from '../../errors.js';

/** How long the stale-socket probe waits for an answer before calling the socket busy. */
const PROBE_TIMEOUT_MS = 1000;

/** A server listening on `path`, which is ready for it. */
export async function listenOn(path: string): Promise<Server> {
  await ensureDirectory(path);
  await clearStaleSocket(path);
  const server = createServer({ allowHalfOpen: false });
  await new Promise<void>((resolve, reject) => {
    const onError = (error: Error) => reject(listenFailure(error, path));
    server.once('error', onError);
    // The socket is created 0600 (umask 0177 for the bind alone), not chmod-ed after a
    // moment in which others could connect.
    const umask = process.umask(0o177);
    try {
      server.listen(path, () => {
        server.off('error', onError);
        resolve();
      });
    } finally {
      process.umask(umask);
    }
  });
  try {
    await chmod(path, 0o600);
  } catch (error) {
    await new Promise<void>((resolve) => server.close(() => resolve()));
    throw listenFailure(error, path);
  }
  return server;
}

async function ensureDirectory(path: string): Promise<void> {
  const directory = dirname(path);
  try {
    await mkdir(directory, { recursive: true, mode: 0o700 });
  } catch (error) {
    throw listenFailure(error, path, `cannot create the control socket's directory ${directory}`);
  }
}

/** A socket file left by a daemon that died is removed; one that answers belongs to a running daemon. */
async function clearStaleSocket(path: string): Promise<void> {
  let isSocket: boolean;
  try {
    isSocket = (await lstat(path)).isSocket();
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') return;
    throw listenFailure(error, path);
  }
  if (!isSocket) {
    throw new UsageError(`cannot use ${path} as the control socket: it exists and is not a socket`, {
      code: 'bad-file',
      hint: 'remove it, or set --control-socket to another path',
    });
  }
  const answer = await probe(path);
  if (answer === 'listening') {
    throw new McastError('busy', `another daemon is listening on ${path}`, {
      hint: 'stop it first (mcastctl status shows it), or give this one its own --control-socket',
    });
  }
  if (answer === 'stale') {
    try {
      await unlink(path);
    } catch (error) {
      if (!(isSystemError(error) && error.code === 'ENOENT'))
        throw listenFailure(error, path, `cannot remove the stale control socket ${path}`);
    }
  }
}

function probe(path: string): Promise<'listening' | 'stale' | 'gone'> {
  return new Promise((resolve, reject) => {
    const socket = createConnection(path);
    const done = (result: 'listening' | 'stale' | 'gone' | Error) => {
      clearTimeout(timer);
      socket.destroy();
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    // A daemon so stuck that it does not accept within a second still owns the socket.
    const timer = setTimeout(() => done('listening'), PROBE_TIMEOUT_MS);
    socket.once('connect', () => done('listening'));
    socket.once('error', (error) => {
      if (isSystemError(error) && error.code === 'ECONNREFUSED') done('stale');
      else if (isSystemError(error) && error.code === 'ENOENT') done('gone');
      else done(listenFailure(error, path));
    });
  });
}

/** Errors of a path that cannot hold a socket: a setting to correct (exit 64), not a failure. */
const UNUSABLE_PATH: Readonly<Record<string, string>> = {
  EEXIST: 'a part of the path is a file, not a directory',
  ENOTDIR: 'a part of the path is not a directory',
  ENAMETOOLONG: 'the path is too long',
  ELOOP: 'too many symbolic links',
};

function listenFailure(error: unknown, path: string, what = `cannot listen on the control socket ${path}`): McastError {
  if (error instanceof McastError) return error;
  const code = systemCodeOf(error);
  if (code === 'EACCES' || code === 'EPERM')
    return new PermissionError(`${what}: ${code}`, {
      hint: 'the daemon runs as root; or set --control-socket to a path it may create',
      cause: error,
    });
  if (code === 'EADDRINUSE')
    return new McastError('busy', `another daemon is listening on ${path}`, {
      hint: 'stop it first, or give this one its own --control-socket',
      cause: error,
    });
  // A path that cannot be a socket's (a file where a directory must be): a setting to correct.
  const unusable = UNUSABLE_PATH[code];
  if (unusable !== undefined)
    return new UsageError(`${what}: ${code} (${unusable})`, {
      code: 'bad-file',
      hint: 'set --control-socket to a path in a directory',
      cause: error,
    });
  return new McastError('io', `${what}: ${code}`, { hint: 'check --control-socket', cause: error });
}
