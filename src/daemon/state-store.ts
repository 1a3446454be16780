/**
 * The daemon's learned membership on disk (`<state dir>/state.json`), so that a restart
 * resumes forwarding at once instead of waiting a query interval for every member to
 * report again.
 *
 * Saving is atomic (a temporary file, fsync, rename over the old one, fsync of the
 * directory): a crash leaves the old state or the new one, never half of either. Saves
 * are serialised; saves that arrive while one is being written are merged into one
 * write of the latest state. Loading never fails for bad content: an unusable file is
 * moved aside (`state.json.corrupt-<epoch ms>`) and reported as a warning.
 */
import { mkdir, open, readdir, readFile, rename, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { ExitCode, isSystemError, McastError } from '../errors.js';
import { isMulticastIPv4, parseIPv4 } from '../wire/ipv4-address.js';

export interface SavedMember {
  portName: string;
  /**
   * `namespace/name` of the pod on that port then: a member is restored only to the same
   * pod, never to another pod whose port got the same name while the daemon was down.
   */
  pod?: string;
  host: string;
  mode: 'include' | 'exclude';
  sources: string[];
  compatibility: 1 | 2 | 3;
  /** Epoch milliseconds. */
  lastReportAt: number;
}

export interface SavedGroup {
  group: string;
  members: SavedMember[];
}

export interface SavedState {
  version: 1;
  /** Epoch milliseconds. */
  savedAt: number;
  bridge: string;
  groups: SavedGroup[];
}

export interface StateStoreOptions {
  dir: string;
}

export const STATE_FILE = 'state.json';

interface QueuedSave {
  state: SavedState;
  done: Promise<void>;
}

export class StateStore {
  readonly dir: string;
  readonly file: string;
  /** The write under way (or the last one), resolved or not. */
  private writing: Promise<void> = Promise.resolve();
  /** The save waiting for `writing` to finish; later saves replace its state. */
  private queued: QueuedSave | undefined;

  constructor(options: StateStoreOptions) {
    this.dir = options.dir;
    this.file = join(options.dir, STATE_FILE);
  }

  /**
   * The saved state: `{}` when there is none, `{ warning }` when the file was unusable
   * (it has been moved aside). Throws McastError 'io' only when the file cannot be read.
   */
  async load(): Promise<{ state?: SavedState; warning?: string }> {
    let text: string;
    try {
      text = await readFile(this.file, 'utf8');
    } catch (error) {
      if (isSystemError(error) && error.code === 'ENOENT') return {};
      throw ioFailure(`cannot read the daemon state ${this.file}`, error);
    }
    await this.removeLeftovers();
    let problem: string;
    try {
      return { state: parseSavedState(JSON.parse(text)) };
    } catch (error) {
      problem = error instanceof Error ? error.message : String(error);
    }
    const aside = `${this.file}.corrupt-${Date.now()}`;
    try {
      await rename(this.file, aside);
    } catch (error) {
      throw ioFailure(`the daemon state ${this.file} is unusable (${problem}) and cannot be moved aside`, error);
    }
    return { warning: `the daemon state ${this.file} is unusable (${problem}): moved to ${aside}; starting with no learned memberships` };
  }

  /** Writes `state` atomically. Concurrent calls are serialised; the last state given wins. */
  save(state: SavedState): Promise<void> {
    // A bug upstream must not write a file the next start would throw away.
    try {
      parseSavedState(state);
    } catch (error) {
      return Promise.reject(new McastError('internal', `refusing to save an invalid daemon state: ${error instanceof Error ? error.message : String(error)}`));
    }
    if (this.queued !== undefined) {
      this.queued.state = state;
      return this.queued.done;
    }
    const entry: QueuedSave = { state, done: Promise.resolve() };
    entry.done = this.writing
      .catch(() => undefined)
      .then(() => {
        if (this.queued === entry) this.queued = undefined;
        return this.write(entry.state);
      });
    this.queued = entry;
    this.writing = entry.done;
    return entry.done;
  }

  private async write(state: SavedState): Promise<void> {
    const tmp = `${this.file}.tmp-${process.pid}`;
    try {
      await mkdir(this.dir, { recursive: true, mode: 0o700 });
      const handle = await open(tmp, 'w', 0o600);
      try {
        await handle.writeFile(JSON.stringify(state) + '\n', 'utf8');
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(tmp, this.file);
    } catch (error) {
      await unlink(tmp).catch(() => undefined);
      throw ioFailure(`cannot save the daemon state to ${this.file}`, error);
    }
    // The rename is durable once the directory is: without this a power cut can lose it.
    try {
      const directory = await open(this.dir, 'r');
      try {
        await directory.sync();
      } finally {
        await directory.close();
      }
    } catch (error) {
      // Some file systems refuse fsync on a directory (EINVAL); the file itself is complete.
      if (!(isSystemError(error) && (error.code === 'EINVAL' || error.code === 'EISDIR'))) throw ioFailure(`cannot sync the state directory ${this.dir}`, error);
    }
  }

  /** Temporary files of a daemon that died while saving (never this process's: a save may be under way). */
  private async removeLeftovers(): Promise<void> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch {
      return;
    }
    const ours = `${STATE_FILE}.tmp-${process.pid}`;
    for (const name of names) {
      if (name.startsWith(`${STATE_FILE}.tmp-`) && name !== ours) await unlink(join(this.dir, name)).catch(() => undefined);
    }
  }
}

function ioFailure(what: string, error: unknown): McastError {
  const code = isSystemError(error) ? error.code : error instanceof Error ? error.message : String(error);
  const hint =
    code === 'EACCES' || code === 'EPERM' ? 'the daemon runs as root; check the owner and mode of --state-dir' : code === 'ENOSPC' ? 'the file system is full' : 'check --state-dir';
  return new McastError('io', `${what}: ${code}`, ExitCode.Failure, { hint, cause: error });
}

/** Checks every field; throws an Error naming the first bad one. Returns a copy with only the known fields. */
export function parseSavedState(value: unknown): SavedState {
  const root = object(value, 'the file');
  if (root.version !== 1) throw new Error(`version ${JSON.stringify(root.version)} is not 1`);
  const savedAt = epochMs(root.savedAt, 'savedAt');
  if (typeof root.bridge !== 'string' || root.bridge === '') throw new Error('bridge is not a non-empty string');
  if (!Array.isArray(root.groups)) throw new Error('groups is not an array');
  const seen = new Set<string>();
  const groups = root.groups.map((item, index): SavedGroup => {
    const where = `groups[${index}]`;
    const group = object(item, where);
    if (typeof group.group !== 'string' || !isMulticastIPv4(group.group)) throw new Error(`${where}.group ${JSON.stringify(group.group)} is not an IPv4 multicast address`);
    if (seen.has(group.group)) throw new Error(`${where}.group ${group.group} appears twice`);
    seen.add(group.group);
    if (!Array.isArray(group.members)) throw new Error(`${where}.members is not an array`);
    return { group: group.group, members: group.members.map((member, memberIndex) => parseMember(member, `${where}.members[${memberIndex}]`)) };
  });
  return { version: 1, savedAt, bridge: root.bridge, groups };
}

function parseMember(value: unknown, where: string): SavedMember {
  const member = object(value, where);
  if (typeof member.portName !== 'string' || member.portName === '') throw new Error(`${where}.portName is not a non-empty string`);
  if (!isUnicast(member.host)) throw new Error(`${where}.host ${JSON.stringify(member.host)} is not an IPv4 unicast address`);
  if (member.mode !== 'include' && member.mode !== 'exclude') throw new Error(`${where}.mode ${JSON.stringify(member.mode)} is not include or exclude`);
  if (!Array.isArray(member.sources)) throw new Error(`${where}.sources is not an array`);
  member.sources.forEach((source, index) => {
    if (!isUnicast(source)) throw new Error(`${where}.sources[${index}] ${JSON.stringify(source)} is not an IPv4 unicast address`);
  });
  if (member.compatibility !== 1 && member.compatibility !== 2 && member.compatibility !== 3) throw new Error(`${where}.compatibility ${JSON.stringify(member.compatibility)} is not 1, 2 or 3`);
  if (member.pod !== undefined && (typeof member.pod !== 'string' || member.pod === '')) throw new Error(`${where}.pod is not a non-empty string`);
  return {
    portName: member.portName,
    ...(member.pod === undefined ? {} : { pod: member.pod as string }),
    host: member.host,
    mode: member.mode,
    sources: [...(member.sources as string[])],
    compatibility: member.compatibility,
    lastReportAt: epochMs(member.lastReportAt, `${where}.lastReportAt`),
  };
}

function object(value: unknown, where: string): Record<string, unknown> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Error(`${where} is not a JSON object`);
  return value as Record<string, unknown>;
}

function epochMs(value: unknown, where: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < 0) throw new Error(`${where} ${JSON.stringify(value)} is not a time (epoch milliseconds)`);
  return value;
}

/** A dotted quad that is not multicast (hosts and sources; 0.0.0.0 is allowed for a v1/v2 host that reported without an address). */
function isUnicast(value: unknown): value is string {
  return typeof value === 'string' && parseIPv4(value) !== undefined && !isMulticastIPv4(value);
}
