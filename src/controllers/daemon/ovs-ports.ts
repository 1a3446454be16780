/**
 * The real ports of the daemon's loop (see ./ports.ts) besides the bridge itself, which
 * is the bridge client's (src/adapters/ovs/bridge-client.ts): the bridge's interfaces over
 * OVSDB, this host's interfaces, and the system clock.
 */
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { systemTimers } from '../../domain/membership/work-queue.js';
import type { OvsdbClient } from '../../transport/ovsdb/client.js';
import type { InterfaceRow, InterfaceWatch } from '../../adapters/ovs/vswitch.js';
import type { DaemonClock, HostFacts, PortWatch } from './ports.js';

/**
 * The bridge's interfaces, watched over OVSDB. Changes are held back until the loop
 * listens: it reads the interfaces as they are then, so none is missed.
 */
export class OvsdbPortWatch implements PortWatch {
  private readonly listeners: Array<(interfaces: ReadonlyMap<string, InterfaceRow>, resync: boolean) => void> = [];
  private watch: InterfaceWatch | undefined;

  constructor(private readonly ovsdb: OvsdbClient) {}

  /** The handler to give watchInterfaces(); `attach` the watch it returns. */
  readonly changed = (interfaces: ReadonlyMap<string, InterfaceRow>, resync: boolean): void => {
    for (const listener of this.listeners) listener(interfaces, resync);
  };

  attach(watch: InterfaceWatch): void {
    this.watch = watch;
  }

  get connected(): boolean {
    return this.ovsdb.state === 'connected';
  }

  interfaces(): ReadonlyMap<string, InterfaceRow> {
    return this.watch?.interfaces() ?? new Map();
  }

  onChange(listener: (interfaces: ReadonlyMap<string, InterfaceRow>, resync: boolean) => void): void {
    this.listeners.push(listener);
  }

  onDisconnected(listener: (error: Error) => void): void {
    this.ovsdb.on('disconnected', (event) => listener(event.error));
  }

  onReconnected(listener: () => void): void {
    this.ovsdb.on('reconnected', () => listener());
  }

  async close(): Promise<void> {
    await Promise.allSettled([this.watch?.cancel(), this.ovsdb.close()]);
  }
}

export const systemHost: HostFacts = {
  interfaceIPv4(name) {
    const entry = networkInterfaces()[name]?.find((address) => address.family === 'IPv4');
    return entry === undefined ? undefined : { address: entry.address, mac: entry.mac };
  },
  interfaceMtu(name) {
    // An interface name is no path: anything else (a slash, dots) is not looked up.
    if (!/^[\w.-]{1,15}$/.test(name) || name === '.' || name === '..') return undefined;
    try {
      const mtu = Number(readFileSync(`/sys/class/net/${name}/mtu`, 'utf8').trim());
      return Number.isInteger(mtu) && mtu > 0 ? mtu : undefined;
    } catch {
      return undefined;
    }
  },
  interfaceHolding(address) {
    return Object.entries(networkInterfaces()).find(([, entries]) => entries?.some((entry) => entry.address === address))?.[0];
  },
};

export const systemClock: DaemonClock = {
  monotonicMs: () => performance.now(),
  wallMs: () => Date.now(),
  after: (ms, run) => systemTimers.after(ms, run),
};
