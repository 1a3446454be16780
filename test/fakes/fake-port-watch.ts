/** The bridge's interfaces as OVSDB would report them (PortWatch), changed by the test. */
import type { InterfaceRow } from '../../src/adapters/ovs/vswitch.js';
import type { PortWatch } from '../../src/controllers/daemon/ports.js';

export class FakePortWatch implements PortWatch {
  connected = true;
  closed = false;
  private readonly rows = new Map<string, InterfaceRow>();
  private readonly changeListeners: Array<(interfaces: ReadonlyMap<string, InterfaceRow>, resync: boolean) => void> = [];
  private readonly reconnectListeners: Array<() => void> = [];
  private readonly disconnectListeners: Array<(error: Error) => void> = [];

  /**
   * A port on the bridge; a pod's when `pod` is given (`namespace/name` or `name`), with
   * external_ids ip-address when `ipAddress` is (`10.1.0.2`, `10.1.0.2/24`, a list). One
   * named `tun...` is what a node's tunnel port is (Geneve, options:remote_ip=flow); any
   * other a system device (type ''). setInterface changes either.
   */
  addPort(name: string, ofport: number, pod?: string, ipAddress?: string): this {
    const [namespace, podName] = pod?.includes('/') === true ? pod.split('/') : [undefined, pod];
    const externalIds: Record<string, string> = {};
    if (podName !== undefined) externalIds['pod-name'] = podName;
    if (namespace !== undefined) externalIds['pod-namespace'] = namespace;
    if (ipAddress !== undefined) externalIds['ip-address'] = ipAddress;
    const kind: Pick<InterfaceRow, 'type' | 'options'> = name.startsWith('tun')
      ? { type: 'geneve', options: { remote_ip: 'flow' } }
      : { type: '', options: {} };
    this.rows.set(`uuid-${name}`, { uuid: `uuid-${name}`, name, ofport, external_ids: externalIds, ...kind, mac_in_use: undefined });
    this.emit(false);
    return this;
  }

  /** Changes the type and options of the port `name` (`ovs-vsctl set Interface`). */
  setInterface(name: string, columns: { type: string; options?: Record<string, string> }): this {
    const row = this.rows.get(`uuid-${name}`);
    if (row === undefined) throw new Error(`no port ${name} on the fake bridge`);
    this.rows.set(row.uuid, { ...row, type: columns.type, options: columns.options ?? {} });
    this.emit(false);
    return this;
  }

  removePort(name: string): void {
    this.rows.delete(`uuid-${name}`);
    this.emit(false);
  }

  interfaces(): ReadonlyMap<string, InterfaceRow> {
    return new Map(this.rows);
  }

  onChange(listener: (interfaces: ReadonlyMap<string, InterfaceRow>, resync: boolean) => void): void {
    this.changeListeners.push(listener);
  }

  onDisconnected(listener: (error: Error) => void): void {
    this.disconnectListeners.push(listener);
  }

  onReconnected(listener: () => void): void {
    this.reconnectListeners.push(listener);
  }

  /** ovsdb-server came back: the monitor resyncs, then the client says it reconnected. */
  reconnect(): void {
    this.connected = false;
    for (const listener of this.disconnectListeners) listener(new Error('connection reset'));
    this.connected = true;
    this.emit(true);
    for (const listener of this.reconnectListeners) listener();
  }

  async close(): Promise<void> {
    this.closed = true;
  }

  private emit(resync: boolean): void {
    const snapshot = this.interfaces();
    for (const listener of this.changeListeners) listener(snapshot, resync);
  }
}
