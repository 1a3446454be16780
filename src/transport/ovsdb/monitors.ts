/**
 * The OVSDB client's monitors (RFC 7047 §4.1.5): which are active, starting and cancelling
 * them, handing each `update` notification to its callback, and re-issuing them after a
 * reconnection. Apart from the client because this bookkeeping outlives any one
 * connection, while the client's own state is about the connection.
 */
import { OvsdbError } from '../../protocol/ovsdb/errors.js';
import {
  monitorRequestsToJson,
  tableUpdatesFromJson,
  type MonitorCallback,
  type MonitorRequests,
  type MonitorUpdateReason,
  type TableUpdates,
} from '../../protocol/ovsdb/monitor.js';
import type { JsonValue } from '../../protocol/ovsdb/rpc.js';
import type { RpcConnection } from './connection.js';
import type { OvsdbRequests, RequestOptions } from './requests.js';

interface ActiveMonitor {
  readonly db: string;
  readonly requests: MonitorRequests;
  readonly callback: MonitorCallback;
  /** The server accepted it once; only then is it re-issued after a reconnection. */
  established: boolean;
}

export interface OvsdbMonitorsContext {
  readonly requests: OvsdbRequests;
  /** The client is connected now: only then does a cancel go to the server. */
  readonly connected: () => boolean;
  /** The client's connection now; undefined while there is none. */
  readonly connection: () => RpcConnection | undefined;
  /** A monitor could not be re-established after a reconnection and was dropped. */
  readonly onMonitorError: (monitorId: string, error: Error) => void;
}

export class OvsdbMonitors {
  private readonly active = new Map<string, ActiveMonitor>();

  constructor(private readonly context: OvsdbMonitorsContext) {}

  /** Starts monitor `monitorId` and resolves with its initial state (see OvsdbClient.monitor). */
  async start(
    db: string,
    monitorId: string,
    requests: MonitorRequests,
    onUpdate: MonitorCallback,
    options: RequestOptions,
  ): Promise<TableUpdates> {
    if (this.active.has(monitorId))
      throw new RangeError(`OVSDB monitor id ${JSON.stringify(monitorId)} is already in use on this client`);
    const monitor: ActiveMonitor = { db, requests, callback: onUpdate, established: false };
    this.active.set(monitorId, monitor);
    try {
      return await this.issue(monitorId, monitor, 'initial', options);
    } catch (error) {
      if (this.active.get(monitorId) === monitor) this.active.delete(monitorId);
      throw error;
    }
  }

  /** Stops a monitor: no callback after this is called. Unknown ids are ignored. */
  async cancel(monitorId: string, options: RequestOptions): Promise<void> {
    const monitor = this.active.get(monitorId);
    if (monitor === undefined) return;
    this.active.delete(monitorId);
    if (!this.context.connected() || !monitor.established) return;
    try {
      await this.context.requests.send('monitor_cancel', [monitorId], options, monitor.db, () => undefined);
    } catch (error) {
      // Gone already (e.g. never re-established after a reconnection): that is the goal.
      if (!(error instanceof OvsdbError && error.error === 'unknown monitor')) throw error;
    }
  }

  /** An `update` notification's params. Throws OvsdbDecodeError for a malformed update. */
  onUpdate(monitorId: JsonValue | undefined, updates: JsonValue | undefined): void {
    if (typeof monitorId !== 'string') return; // not one of ours: every id this client uses is a string
    const monitor = this.active.get(monitorId);
    if (monitor === undefined) return; // cancelled while the update was on its way
    this.deliver(monitor, tableUpdatesFromJson(updates, `monitor ${monitorId} update`), 'update');
  }

  /** Forgets every monitor: the client is closed for good. */
  clear(): void {
    this.active.clear();
  }

  /** Re-issues every established monitor on the new `connection`; returns the ids that are back. */
  async resync(connection: RpcConnection): Promise<string[]> {
    const resynced: string[] = [];
    const monitors = [...this.active].filter(([, monitor]) => monitor.established);
    await Promise.all(
      monitors.map(async ([monitorId, monitor]) => {
        try {
          await this.issue(monitorId, monitor, 'resync', {});
          resynced.push(monitorId);
        } catch (error) {
          if (this.context.connection() !== connection) return; // lost again: the next round retries
          const failure = error instanceof Error ? error : new Error(String(error));
          if (error instanceof OvsdbError) {
            // The server refuses it now (a table gone from the schema?): retrying cannot help.
            if (this.active.get(monitorId) === monitor) this.active.delete(monitorId);
            this.context.onMonitorError(monitorId, failure);
          } else {
            // A timeout or a bad reply: start over on a fresh connection.
            connection.close(failure);
          }
        }
      }),
    );
    return resynced;
  }

  private deliver(monitor: ActiveMonitor, updates: TableUpdates, reason: MonitorUpdateReason): void {
    try {
      monitor.callback(updates, reason);
    } catch (error) {
      process.nextTick(() => {
        throw error;
      });
    }
  }

  private issue(
    monitorId: string,
    monitor: ActiveMonitor,
    reason: MonitorUpdateReason,
    options: RequestOptions,
  ): Promise<TableUpdates> {
    const { requests } = this.context;
    const params = [monitor.db, monitorId, monitorRequestsToJson(monitor.requests)];
    return requests.send('monitor', params, options, monitor.db, (result) => {
      const initial = tableUpdatesFromJson(result, `monitor ${monitorId} initial state`);
      // Delivered here, while handling the reply, so that no update can overtake it.
      if (this.active.get(monitorId) === monitor) {
        monitor.established = true;
        this.deliver(monitor, initial, reason);
      } else {
        // cancel() came while the server was setting it up: cancel it there too.
        requests.send('monitor_cancel', [monitorId], {}, monitor.db, () => undefined).catch(() => {});
      }
      return initial;
    });
  }
}
