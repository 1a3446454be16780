/**
 * A lock so that two runs of a command (two `reconcile`s from cron and a shell) never
 * change the node at the same time.
 *
 * The lock is a listening unix socket in the abstract namespace, named after the lock
 * file's path: only one process can bind a name, and the kernel releases it when the
 * process exits, however it exits. No stale lock, no race between two runs taking over
 * a stale one, no reused pid mistaken for a live holder. (Node has no flock(2).) The
 * abstract namespace belongs to the network namespace, which is the node here. The lock
 * file itself only names the holder's pid, for the message a second run prints.
 */
import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { dirname, resolve } from 'node:path';
import { isSystemError, McastError, PermissionError, systemCodeOf } from '../errors.js';

export class RunLock {
  private constructor(
    readonly path: string,
    private readonly server: Server,
  ) {}

  /** Takes the lock, or throws McastError 'busy' (exit 1) naming the process that holds it. */
  static async acquire(path: string, what: string): Promise<RunLock> {
    const absolute = resolve(path);
    const server = createServer();
    try {
      await new Promise<void>((done, fail) => {
        server.once('error', fail);
        server.listen(lockSocketName(absolute), () => done());
      });
    } catch (error) {
      if (isSystemError(error) && error.code === 'EADDRINUSE') {
        const holder = holderOf(absolute);
        throw new McastError(
          'busy',
          `another ${what}${holder === undefined ? '' : ` (pid ${holder})`} is running: it holds ${absolute}`,
          {
            hint: 'wait for it to finish; runs never overlap',
          },
        );
      }
      throw new McastError('io', `cannot take the lock ${absolute}: ${systemCodeOf(error)}`, { cause: error });
    }
    server.unref();
    try {
      mkdirSync(dirname(absolute), { recursive: true, mode: 0o700 });
      writeFileSync(absolute, `${process.pid}\n`, { mode: 0o600 });
    } catch (error) {
      server.close();
      const code = systemCodeOf(error);
      if (code === 'EACCES' || code === 'EPERM')
        throw new PermissionError(`cannot write the lock file ${absolute}: ${code} (run as root, or set --lock-file)`);
      throw new McastError('io', `cannot write the lock file ${absolute}: ${code}`, {
        hint: 'set --lock-file to a writable place',
      });
    }
    return new RunLock(absolute, server);
  }

  release(): void {
    try {
      if (holderOf(this.path) === process.pid) unlinkSync(this.path);
    } catch {
      // already gone
    }
    this.server.close();
  }
}

/**
 * The abstract socket's name for a lock file: a hash of its path, so that any path fits.
 * (Node binds the whole sun_path, padded with NULs: another program must bind the same
 * 108 octets to see the lock.)
 */
export function lockSocketName(absolutePath: string): string {
  return `\0mcastctl-lock:${createHash('sha256').update(absolutePath).digest('hex').slice(0, 32)}`;
}

function holderOf(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}
