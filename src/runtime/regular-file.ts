/**
 * Reading a file that a user or another process names: configuration, declared state,
 * the daemon's own state. Such a file must be a regular file of bounded size, read
 * without blocking: a FIFO would hang the command (open waits for a writer), /dev/zero
 * would grow it without end, and a symlink planted in a shared directory could point
 * anywhere. Every refusal is a typed error with a reason, so that each caller decides
 * what it means (a usage error for a flag's file, "unusable, moved aside" for state).
 */
import { constants as BUFFER_LIMITS } from 'node:buffer';
import { constants } from 'node:fs';
import { type FileHandle, open } from 'node:fs/promises';
import { isSystemError, systemCodeOf, UsageError } from '../errors.js';

export interface ReadRegularFileOptions {
  /** What the file is, for messages: "config", "declared state". */
  what: string;
  /** The most octets accepted; a larger file is refused before it is read. */
  maxBytes: number;
  /** Refuse a symbolic link as the last component of the path (O_NOFOLLOW). */
  noFollow?: boolean;
  /** Where the limit is set, for the message ("--max-file-size"); none when it is fixed. */
  limitSetting?: string;
  /** A secret: refused when its group or others may read or write it (mode past 0600). */
  secret?: boolean;
}

/**
 * Why a file was refused. `bad-content` is never given by readRegularFile: a caller that read the
 * text gives it to a file that is not what it reads it as (a pidfile without a pid).
 */
export type FileRefusal =
  | 'not-found'
  | 'permission'
  | 'not-regular'
  | 'symlink'
  | 'too-large'
  | 'shared'
  | 'not-text'
  | 'io'
  | 'bad-content';

/** A file that cannot be read as asked. Exit 64: nothing was changed because of it. */
export class FileRefusedError extends UsageError {
  constructor(
    readonly reason: FileRefusal,
    readonly path: string,
    message: string,
    hint?: string,
  ) {
    super(message, { code: 'bad-file', ...(hint === undefined ? {} : { hint }) });
  }
}

/** Octets as messages write them: 512 bytes, 64 KiB, 32 MiB. */
export function showBytes(bytes: number): string {
  if (bytes >= 1024 * 1024 && bytes % (1024 * 1024) === 0) return `${bytes / (1024 * 1024)} MiB`;
  if (bytes >= 1024 && bytes % 1024 === 0) return `${bytes / 1024} KiB`;
  return `${bytes} bytes`;
}

const SYSTEM_REASONS: Readonly<Record<string, { reason: FileRefusal; text: string }>> = {
  ENOENT: { reason: 'not-found', text: 'no such file' },
  ENOTDIR: { reason: 'not-found', text: 'a part of the path is not a directory' },
  EACCES: { reason: 'permission', text: 'permission denied' },
  EPERM: { reason: 'permission', text: 'permission denied' },
  ELOOP: { reason: 'symlink', text: 'a symbolic link, which is refused here' },
  EISDIR: { reason: 'not-regular', text: 'a directory, not a file' },
};

/** The kind of a file that is not regular, as `ls -l` would say it. */
function kindOf(stats: {
  isDirectory(): boolean;
  isFIFO(): boolean;
  isCharacterDevice(): boolean;
  isBlockDevice(): boolean;
  isSocket(): boolean;
}): string {
  if (stats.isDirectory()) return 'a directory';
  if (stats.isFIFO()) return 'a FIFO (named pipe)';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return 'not a regular file';
}

/**
 * The file's text (UTF-8). Opened non-blocking, so that a FIFO is refused at once rather
 * than waited on; checked to be a regular file on the open descriptor (no race with a
 * swap of the path); read up to `maxBytes` and never more, even if it grows meanwhile.
 */
export async function readRegularFile(path: string, options: ReadRegularFileOptions): Promise<string> {
  const { what, maxBytes } = options;
  const refuse = (reason: FileRefusal, text: string, hint?: string) =>
    new FileRefusedError(reason, path, `cannot read ${what} ${path}: ${text}`, hint);
  const flags = constants.O_RDONLY | constants.O_NONBLOCK | (options.noFollow === true ? constants.O_NOFOLLOW : 0);
  let handle: FileHandle;
  try {
    handle = await open(path, flags);
  } catch (error) {
    const known = isSystemError(error) ? SYSTEM_REASONS[error.code] : undefined;
    if (known !== undefined) throw refuse(known.reason, `${(error as { code: string }).code} (${known.text})`);
    throw refuse('io', systemCodeOf(error));
  }
  try {
    const stats = await handle.stat();
    if (!stats.isFile()) throw refuse('not-regular', `${kindOf(stats)}: only a regular file is read here`);
    if (options.secret === true && (stats.mode & 0o077) !== 0) {
      const mode = (stats.mode & 0o777).toString(8).padStart(4, '0');
      throw refuse('shared', `mode ${mode}: a secret's group and others must have no access`, `chmod 600 ${path}`);
    }
    const limitHint = options.limitSetting === undefined ? undefined : `raise the limit with ${options.limitSetting}`;
    const tooLarge = (size: string) =>
      refuse('too-large', `${size}, over the limit of ${showBytes(maxBytes)}`, limitHint);
    if (stats.size > maxBytes) throw tooLarge(showBytes(stats.size));
    // Read to the end, but never past one octet over the limit: a file may grow after the
    // stat, and some (in /proc) report no size at all.
    const chunks: Buffer[] = [];
    let length = 0;
    let chunkSize = Math.min(maxBytes + 1, Math.max(stats.size + 1, 64 * 1024));
    while (length <= maxBytes) {
      const chunk = Buffer.allocUnsafe(Math.min(chunkSize, maxBytes + 1 - length));
      const { bytesRead } = await handle.read(chunk, 0, chunk.length, null);
      if (bytesRead === 0) break;
      chunks.push(chunk.subarray(0, bytesRead));
      length += bytesRead;
      chunkSize = Math.min(chunkSize * 2, 16 * 1024 * 1024);
    }
    const buffer = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks, length);
    if (length > maxBytes) throw tooLarge('larger than when it was opened');
    // The largest string V8 holds: a file past it cannot be text to this process.
    if (length > BUFFER_LIMITS.MAX_STRING_LENGTH) throw tooLarge(`${showBytes(length)}, more than a string can hold`);
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(buffer.subarray(0, length));
    } catch {
      throw refuse('not-text', 'not UTF-8 text');
    }
  } catch (error) {
    if (error instanceof FileRefusedError) throw error;
    throw refuse('io', systemCodeOf(error));
  } finally {
    await handle.close();
  }
}
