/**
 * A private ovsdb-server for tests: its own temporary directory (`mcl-ovsdb-*`) holding
 * the database, socket, pidfile, unixctl socket and log. It runs as a child process,
 * never detached, and never touches /var/run/openvswitch or the system's OVS: every
 * path it uses is in its directory. No network namespace is needed, since it listens
 * only on a unix socket there.
 *
 * `stop()` kills it and `start()` starts it again on the same database and socket path
 * (to test reconnection); `destroy()` kills it and removes the directory. Handlers for
 * process exit and SIGINT, SIGTERM and SIGHUP kill every server still running and remove
 * its directory, so a failing or interrupted test leaves nothing behind.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export const VSWITCH_SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema';
const OVSDB_SERVER = '/usr/sbin/ovsdb-server';

export interface OvsdbServerOptions {
  /**
   * Also serve the remotes listed in Open_vSwitch.manager_options (Manager rows), e.g. one with an inactivity probe.
   */
  readonly managerRemotes?: boolean;
}

const liveServers = new Set<PrivateOvsdbServer>();
let handlersInstalled = false;

function installCleanupHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  process.once('exit', destroyAllSync);
  for (const [signal, number] of [
    ['SIGINT', 2],
    ['SIGTERM', 15],
    ['SIGHUP', 1],
  ] as const) {
    process.once(signal, () => {
      destroyAllSync();
      process.exit(128 + number);
    });
  }
}

function destroyAllSync(): void {
  for (const server of [...liveServers]) server.destroySync();
}

export function ovsdbServerMissing(): string | false {
  if (!existsSync(OVSDB_SERVER)) return `${OVSDB_SERVER} is not installed`;
  if (!existsSync(VSWITCH_SCHEMA)) return `${VSWITCH_SCHEMA} is missing`;
  return false;
}

export class PrivateOvsdbServer {
  readonly dir: string;
  readonly dbPath: string;
  readonly socketPath: string;
  readonly logPath: string;
  private child: ChildProcess | undefined;

  private constructor(private readonly options: OvsdbServerOptions) {
    this.dir = mkdtempSync(join(tmpdir(), 'mcl-ovsdb-'));
    this.dbPath = join(this.dir, 'conf.db');
    this.socketPath = join(this.dir, 'db.sock');
    this.logPath = join(this.dir, 'ovsdb-server.log');
  }

  /** Creates the database, starts the server and initialises the Open_vSwitch row. */
  static async create(options: OvsdbServerOptions = {}): Promise<PrivateOvsdbServer> {
    installCleanupHandlers();
    const server = new PrivateOvsdbServer(options);
    liveServers.add(server);
    try {
      await execute('ovsdb-tool', ['create', server.dbPath, VSWITCH_SCHEMA]);
      await server.start();
      await server.vsctl('init');
      return server;
    } catch (error) {
      await server.destroy();
      throw error;
    }
  }

  get endpoint(): string {
    return `unix:${this.socketPath}`;
  }

  get running(): boolean {
    return this.child !== undefined;
  }

  async start(): Promise<void> {
    if (this.child !== undefined) throw new Error('ovsdb-server is already running');
    const args = [
      this.dbPath,
      `--remote=punix:${this.socketPath}`,
      ...(this.options.managerRemotes === true ? ['--remote=db:Open_vSwitch,Open_vSwitch,manager_options'] : []),
      `--pidfile=${join(this.dir, 'ovsdb-server.pid')}`,
      `--unixctl=${join(this.dir, 'ovsdb-server.ctl')}`,
      `--log-file=${this.logPath}`,
    ];
    const child = spawn(OVSDB_SERVER, args, {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, OVS_RUNDIR: this.dir, OVS_DBDIR: this.dir },
    });
    this.child = child;
    let stderr = '';
    child.stderr?.setEncoding('utf8').on('data', (text: string) => (stderr += text));
    let exited = false;
    child.once('exit', () => {
      exited = true;
      if (this.child === child) this.child = undefined;
    });
    const deadline = Date.now() + 15_000;
    while (!(await canConnect(this.socketPath))) {
      if (exited) throw new Error(`ovsdb-server exited at start: ${stderr.trim()}\n${this.logTail()}`);
      if (Date.now() > deadline)
        throw new Error(`ovsdb-server did not open ${this.socketPath} within 15 s\n${this.logTail()}`);
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  }

  /** Kills the server (SIGKILL: no goodbye to its clients, like a crash) and waits for it to exit. */
  async stop(signal: NodeJS.Signals = 'SIGKILL'): Promise<void> {
    const child = this.child;
    if (child === undefined) return;
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    child.kill(signal);
    await exited;
  }

  async destroy(): Promise<void> {
    await this.stop();
    rmSync(this.dir, { recursive: true, force: true });
    liveServers.delete(this);
  }

  /** For exit and signal handlers, which cannot wait. */
  destroySync(): void {
    this.child?.kill('SIGKILL');
    rmSync(this.dir, { recursive: true, force: true });
    liveServers.delete(this);
  }

  /** Runs `ovs-vsctl --db=unix:<socket> --no-wait <args>` (no ovs-vswitchd: nothing would ever answer a wait). */
  vsctl(...args: string[]): Promise<string> {
    return execute('ovs-vsctl', [`--db=${this.endpoint}`, '--no-wait', '--timeout=20', ...args]);
  }

  /** Runs `ovs-appctl -t <its unixctl socket> <args>`, e.g. `memory/show`. */
  appctl(...args: string[]): Promise<string> {
    return execute('ovs-appctl', ['-t', join(this.dir, 'ovsdb-server.ctl'), '--timeout=20', ...args]);
  }

  logTail(lines = 20): string {
    if (!existsSync(this.logPath)) return '(no log)';
    return readFileSync(this.logPath, 'utf8').trimEnd().split('\n').slice(-lines).join('\n');
  }
}

function execute(file: string, args: readonly string[]): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(file, args, { timeout: 30_000, encoding: 'utf8' }, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed: ${stderr.trim() || error.message}`));
      else resolve(stdout);
    });
  });
}

/** Whether something accepts connections on the unix socket `path`. */
export function canConnect(path: string): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ path });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
