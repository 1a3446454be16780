/**
 * Typed wrapper of member.py: a long-running multicast group member inside a lab host.
 * Each method sends one command and resolves when member.py acknowledges it, i.e. after
 * the setsockopt call returned (the kernel sends its IGMP message shortly after: about
 * 10 ms for a join, see docs/architecture.md, "The test lab").
 */
import type { ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { Host, Lab } from './lab.js';

const MEMBER_PY = fileURLToPath(new URL('./member.py', import.meta.url));

export class MemberError extends Error {
  override readonly name = 'MemberError';
  constructor(
    readonly command: string,
    /** errno name from the kernel (EADDRINUSE, EINVAL, ...) or a member.py code. */
    readonly code: string,
    message: string,
  ) {
    super(`${command}: ${code} ${message}`);
  }
}

interface Pending {
  command: string;
  /** With the answer's line. */
  resolve: (line: string) => void;
  reject: (error: Error) => void;
}

/** What member.py needs of the host it runs in: a lab host, or an OVS pod. */
export type MemberHost = Pick<Host, 'name' | 'ns' | 'iface' | 'address'>;

export interface MemberOptions {
  /** Interface for plain joins (default: the host's interface). */
  iface?: string;
  /**
   * Bind each group's socket to this UDP port, so that it receives the group's datagrams to it (count() tells how
   * many).
   */
  port?: number;
  /** Called with each command as it is sent (e.g. to narrate a demo). */
  onCommand?: (command: string) => void;
}

export class Member {
  private readonly pending: Pending[] = [];
  private closed: Error | undefined;
  private stderr = '';

  private constructor(
    readonly host: MemberHost,
    private readonly child: ChildProcess,
    private readonly options: MemberOptions,
  ) {}

  /** Starts member.py in `host`'s namespace and waits for it to be ready. */
  static async start(lab: Lab, host: MemberHost, options: MemberOptions = {}): Promise<Member> {
    const port = options.port === undefined ? [] : ['--port', String(options.port)];
    const argv = ['python3', '-u', MEMBER_PY, '--addr', host.address, '--iface', options.iface ?? host.iface, ...port];
    const child = lab.spawn(host.ns, argv);
    const member = new Member(host, child, options);
    const ready = new Promise<void>((resolve, reject) => {
      member.pending.push({ command: 'start', resolve: () => resolve(), reject });
    });
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      member.stderr = (member.stderr + chunk).slice(-4000);
    });
    const lines = createInterface({ input: child.stdout! });
    lines.on('line', (line) => member.onLine(line));
    child.once('exit', (code, signal) => {
      member.fail(new Error(`member.py in ${host.ns} exited (${signal ?? code}): ${member.stderr.trim()}`));
    });
    child.once('error', (error) => member.fail(error));
    child.stdin!.on('error', () => undefined); // EPIPE after exit: reported through 'exit'
    await ready;
    return member;
  }

  private onLine(line: string): void {
    const waiting = this.pending.shift();
    if (!waiting) return;
    if (line === 'ready' || line.startsWith('ok ')) {
      waiting.resolve(line);
      return;
    }
    const match = /^err (.*?): (\S+) ?(.*)$/.exec(line);
    waiting.reject(
      match ? new MemberError(waiting.command, match[2]!, match[3]!) : new MemberError(waiting.command, 'EPROTO', line),
    );
  }

  private fail(error: Error): void {
    this.closed ??= error;
    for (const waiting of this.pending.splice(0)) waiting.reject(error);
  }

  private async send(...words: string[]): Promise<void> {
    await this.ask(...words);
  }

  /** Sends one command; resolves with member.py's answer line. */
  private ask(...words: string[]): Promise<string> {
    const command = words.join(' ');
    if (this.closed) return Promise.reject(this.closed);
    if (words.some((word) => !/^[\w.:-]+$/.test(word))) {
      return Promise.reject(new RangeError(`bad member command ${JSON.stringify(command)}`));
    }
    this.options.onCommand?.(command);
    return new Promise<string>((resolve, reject) => {
      this.pending.push({ command, resolve, reject });
      this.child.stdin!.write(`${command}\n`);
    });
  }

  /** IP_ADD_MEMBERSHIP (any-source join; IGMPv3: CHANGE_TO_EXCLUDE {}). */
  join(group: string, iface?: string): Promise<void> {
    return iface === undefined ? this.send('join', group) : this.send('join', group, iface);
  }

  /** IP_DROP_MEMBERSHIP (IGMPv2 leave; IGMPv3: CHANGE_TO_INCLUDE {}). */
  leave(group: string): Promise<void> {
    return this.send('leave', group);
  }

  /** IP_ADD_SOURCE_MEMBERSHIP (IGMPv3: ALLOW_NEW_SOURCES {source}). */
  joinSource(group: string, source: string): Promise<void> {
    return this.send('join-source', group, source);
  }

  /** IP_DROP_SOURCE_MEMBERSHIP (IGMPv3: BLOCK_OLD_SOURCES {source}). */
  dropSource(group: string, source: string): Promise<void> {
    return this.send('drop-source', group, source);
  }

  /** IP_BLOCK_SOURCE after a plain join (IGMPv3: BLOCK_OLD_SOURCES {source}). */
  block(group: string, source: string): Promise<void> {
    return this.send('block', group, source);
  }

  /** IP_UNBLOCK_SOURCE (IGMPv3: ALLOW_NEW_SOURCES {source}). */
  unblock(group: string, source: string): Promise<void> {
    return this.send('unblock', group, source);
  }

  /**
   * Sends `igmp` (a whole IGMP message, checksum included as given) to `dst` from a raw
   * IGMP socket: TTL 1, Router Alert unless `routerAlert: false`. For queries and
   * malformed messages no kernel sends by itself.
   */
  sendIgmp(dst: string, igmp: Uint8Array, options: { routerAlert?: boolean } = {}): Promise<void> {
    const hex = Buffer.from(igmp).toString('hex');
    return options.routerAlert === false ? this.send('send-igmp', dst, hex, 'noRA') : this.send('send-igmp', dst, hex);
  }

  /**
   * With the `port` option: how many datagrams `group`'s socket received since the last
   * count (or the join), only those tagged `tag` (payload `<tag> ...`) if given.
   */
  async count(group: string, tag?: string): Promise<number> {
    const line = await (tag === undefined ? this.ask('count', group) : this.ask('count', group, tag));
    const n = Number(line.slice(line.lastIndexOf(' ') + 1));
    if (!Number.isInteger(n)) throw new MemberError(`count ${group}`, 'EPROTO', line);
    return n;
  }

  /** Closes every socket (the kernel leaves every group) and waits for member.py to exit. */
  async quit(): Promise<void> {
    if (this.closed) return;
    const exited = new Promise<void>((resolve) => {
      if (this.child.exitCode !== null || this.child.signalCode !== null) resolve();
      else this.child.once('exit', () => resolve());
    });
    await this.send('quit').catch(() => undefined);
    this.child.stdin!.end();
    await exited;
  }
}
