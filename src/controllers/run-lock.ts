/**
 * A lock file so that two runs of a command (two `reconcile`s from cron and a shell)
 * never change the node at the same time. The file holds the holder's pid; one left by
 * a process that died is taken over. Node has no flock(2): O_EXCL creation is the lock.
 */
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import { ExitCode, isSystemError, McastError } from '../errors.js';

export class RunLock {
  private constructor(readonly path: string) {}

  /** Takes the lock, or throws McastError 'busy' (exit 1) naming the process that holds it. */
  static acquire(path: string, what: string): RunLock {
    mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
    for (let attempt = 0; attempt < 3; attempt++) {
      try {
        writeFileSync(path, `${process.pid}\n`, { flag: 'wx', mode: 0o600 });
        return new RunLock(path);
      } catch (error) {
        if (!isSystemError(error) || error.code !== 'EEXIST') {
          throw new McastError('io', `cannot create the lock file ${path}: ${isSystemError(error) ? error.code : String(error)}`, ExitCode.Failure, { hint: 'set --lock-file to a writable place' });
        }
      }
      const holder = holderOf(path);
      if (holder !== undefined && alive(holder)) {
        throw new McastError('busy', `another ${what} (pid ${holder}) is running: it holds ${path}`, ExitCode.Failure, { hint: 'wait for it to finish; runs never overlap' });
      }
      // Left by a run that died: take it over.
      try {
        unlinkSync(path);
      } catch {
        // someone else took it over first: try again
      }
    }
    throw new McastError('busy', `cannot take the lock ${path}: other runs keep taking it`, ExitCode.Failure);
  }

  release(): void {
    try {
      if (holderOf(this.path) === process.pid) unlinkSync(this.path);
    } catch {
      // already gone
    }
  }
}

function holderOf(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return isSystemError(error) && error.code === 'EPERM';
  }
}
