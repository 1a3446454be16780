/**
 * One daemon per bridge, whatever their control sockets and metrics ports: two daemons
 * programming one bridge would undo each other's groups. OVS itself holds the ownership,
 * as an OVSDB lock (RFC 7047 §4.1.8) named after the bridge: ovsdb-server grants it to
 * one connection at a time and frees it when that connection closes, however the holder
 * died, so there is no stale lock to clear.
 *
 * A lock carries no name of its holder, so the holder also writes who it is into the
 * bridge's `external_ids:mcastctl-daemon` (guarded by the lock in the same transaction),
 * and a refused daemon quotes it. The key is removed on a clean stop; one left by a
 * crash is only ever read while the lock is held, by which time its new holder has
 * written its own.
 */
import { McastError, ExitCode, messageOf } from '../../errors.js';
import type { OvsdbClient } from '../../transport/ovsdb/client.js';
import { DAEMON_HOLDER_KEY, VSWITCH_DB } from './ovs-constants.js';
import { isOvsdbMap } from '../../protocol/ovsdb/datum.js';

/**
 * The lock's name: an OVSDB <id> (letters, digits, `_`), so every other octet of the
 * bridge's name is written `_XX` in hexadecimal (and `_` itself, so that no two bridges
 * share a name).
 */
function bridgeLockName(bridge: string): string {
  const encoded = [...Buffer.from(bridge, 'utf8')]
    .map((octet) =>
      /[A-Za-z0-9]/.test(String.fromCharCode(octet))
        ? String.fromCharCode(octet)
        : `_${octet.toString(16).padStart(2, '0')}`,
    )
    .join('');
  return `mcastctl_${encoded}`;
}

export interface BridgeLockOptions {
  client: OvsdbClient;
  bridge: string;
  /** Who this daemon is, for the message another daemon prints: pid, host, control socket. */
  holder: string;
}

export class BridgeLock {
  readonly name: string;

  private constructor(private readonly options: BridgeLockOptions) {
    this.name = bridgeLockName(options.bridge);
  }

  /**
   * Takes the bridge's lock and names this daemon as its holder; throws McastError
   * 'busy' (exit 69) naming the daemon that holds it.
   */
  static async acquire(options: BridgeLockOptions): Promise<BridgeLock> {
    const lock = new BridgeLock(options);
    if (!(await options.client.lock(lock.name))) {
      // Queued by the server: take the request back, so that this daemon, which is
      // about to exit, is never granted the lock late.
      await options.client.unlock(lock.name).catch(() => undefined);
      const holder = await lock.currentHolder().catch(() => undefined);
      throw new McastError(
        'busy',
        `another mcastctl daemon is running on bridge ${options.bridge}${holder === undefined ? '' : ` (${holder})`}: ` +
          `it holds the OVSDB lock ${lock.name} at ${options.client.endpoint.text}`,
        {
          exitCode: ExitCode.Unavailable,
          hint: 'one daemon per bridge: stop the other one first (mcastctl status --control-socket PATH shows it)',
        },
      );
    }
    await lock.writeHolder();
    return lock;
  }

  /**
   * After OVSDB reconnected (the server forgot the lock with the old connection): takes
   * it again. False when another daemon has taken it meanwhile: this one must stop.
   */
  async reacquire(): Promise<boolean> {
    if (!(await this.options.client.lock(this.name))) {
      await this.options.client.unlock(this.name).catch(() => undefined);
      return false;
    }
    await this.writeHolder();
    return true;
  }

  /** Removes the holder's name (if still ours) and gives the lock back. Never throws. */
  async release(): Promise<void> {
    const { client, bridge } = this.options;
    try {
      await client.transact(VSWITCH_DB, [
        { op: 'assert', lock: this.name },
        {
          op: 'mutate',
          table: 'Bridge',
          where: [['name', '==', bridge]],
          mutations: [['external_ids', 'delete', [DAEMON_HOLDER_KEY]]],
        },
      ]);
      await client.unlock(this.name);
    } catch {
      // The connection is gone: the server has freed the lock already.
    }
  }

  private async writeHolder(): Promise<void> {
    const { client, bridge, holder } = this.options;
    try {
      await client.transact(VSWITCH_DB, [
        { op: 'assert', lock: this.name },
        {
          op: 'mutate',
          table: 'Bridge',
          where: [['name', '==', bridge]],
          mutations: [['external_ids', 'delete', [DAEMON_HOLDER_KEY]]],
        },
        {
          op: 'mutate',
          table: 'Bridge',
          where: [['name', '==', bridge]],
          mutations: [['external_ids', 'insert', { map: [[DAEMON_HOLDER_KEY, holder]] }]],
        },
      ]);
    } catch (error) {
      throw new McastError(
        'io',
        `cannot name this daemon in bridge ${bridge}'s external_ids:${DAEMON_HOLDER_KEY}: ${messageOf(error)}`,
        {
          cause: error,
        },
      );
    }
  }

  private async currentHolder(): Promise<string | undefined> {
    const [{ rows }] = await this.options.client.transact(VSWITCH_DB, [
      { op: 'select', table: 'Bridge', where: [['name', '==', this.options.bridge]], columns: ['external_ids'] },
    ]);
    const ids = rows[0]?.['external_ids'];
    if (ids === undefined || !isOvsdbMap(ids)) return undefined;
    const entry = ids.map.find(([key]) => key === DAEMON_HOLDER_KEY);
    return entry === undefined ? undefined : String(entry[1]);
  }
}
