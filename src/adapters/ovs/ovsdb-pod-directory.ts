/**
 * The pod directory on OVSDB (src/domain/pods/pod-directory.ts): the bridge's Interface
 * rows, watched, as ports (./bridge-ports.ts reads a row: the pod a CNI plugin wrote in
 * external_ids, its addresses and MAC). Changes are held back until the loop listens: it
 * reads the ports as they are then, so none is missed.
 */
import type { OvsdbClient } from '../../transport/ovsdb/client.js';
import type { DirectoryPort, PodDirectory } from '../../domain/pods/pod-directory.js';
import { directoryPortOf } from './bridge-ports.js';
import type { InterfaceRow, InterfaceWatch } from './vswitch.js';

function portsOf(interfaces: ReadonlyMap<string, InterfaceRow>): DirectoryPort[] {
  return [...interfaces.values()].flatMap((row) => directoryPortOf(row) ?? []);
}

export class OvsdbPodDirectory implements PodDirectory {
  private readonly listeners: Array<(ports: readonly DirectoryPort[], resync: boolean) => void> = [];
  private watch: InterfaceWatch | undefined;

  constructor(private readonly ovsdb: OvsdbClient) {}

  /** The handler to give watchInterfaces(); `attach` the watch it returns. */
  readonly changed = (interfaces: ReadonlyMap<string, InterfaceRow>, resync: boolean): void => {
    const ports = portsOf(interfaces);
    for (const listener of this.listeners) listener(ports, resync);
  };

  attach(watch: InterfaceWatch): void {
    this.watch = watch;
  }

  get connected(): boolean {
    return this.ovsdb.state === 'connected';
  }

  ports(): readonly DirectoryPort[] {
    return portsOf(this.watch?.interfaces() ?? new Map());
  }

  onChange(listener: (ports: readonly DirectoryPort[], resync: boolean) => void): void {
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
