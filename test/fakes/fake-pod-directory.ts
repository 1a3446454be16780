/** The bridge's ports as a pod directory would tell them (PodDirectory), changed by the test. */
import { type DirectoryPort, type PodDirectory, podName } from '../../src/domain/pods/pod-directory.js';

export class FakePodDirectory implements PodDirectory {
  connected = true;
  closed = false;
  private readonly byName = new Map<string, DirectoryPort>();
  private readonly changeListeners: Array<(ports: readonly DirectoryPort[], resync: boolean) => void> = [];
  private readonly reconnectListeners: Array<() => void> = [];
  private readonly disconnectListeners: Array<(error: Error) => void> = [];

  /**
   * A port on the bridge; a pod's when `pod` is given (`namespace/name` or `name`), with
   * addresses when `ipAddress` is (`10.1.0.2`, `10.1.0.2/24`, a comma-separated list). One
   * named `tun...` is what a node's tunnel port is (Geneve, options:remote_ip=flow); any
   * other a system device (type ''). setInterface changes either.
   */
  addPort(name: string, ofport: number, pod?: string, ipAddress?: string): this {
    const [namespace, podText] = pod?.includes('/') === true ? pod.split('/') : [undefined, pod];
    const addresses = ipAddress?.split(',').map((item) => item.trim().replace(/\/\d+$/, ''));
    const kind: Pick<DirectoryPort, 'type' | 'options'> = name.startsWith('tun')
      ? { type: 'geneve', options: { remote_ip: 'flow' } }
      : { type: '', options: {} };
    this.byName.set(name, {
      name,
      ofport,
      ...(podText === undefined ? {} : { pod: podName(namespace, podText) }),
      ...(addresses === undefined ? {} : { addresses }),
      ...kind,
    });
    this.emit(false);
    return this;
  }

  /** Changes what kind of port `name` is (`ovs-vsctl set Interface`). */
  setInterface(name: string, columns: { type: string; options?: Record<string, string> }): this {
    const port = this.byName.get(name);
    if (port === undefined) throw new Error(`no port ${name} on the fake bridge`);
    this.byName.set(name, { ...port, type: columns.type, options: columns.options ?? {} });
    this.emit(false);
    return this;
  }

  removePort(name: string): void {
    this.byName.delete(name);
    this.emit(false);
  }

  ports(): readonly DirectoryPort[] {
    return [...this.byName.values()];
  }

  onChange(listener: (ports: readonly DirectoryPort[], resync: boolean) => void): void {
    this.changeListeners.push(listener);
  }

  onDisconnected(listener: (error: Error) => void): void {
    this.disconnectListeners.push(listener);
  }

  onReconnected(listener: () => void): void {
    this.reconnectListeners.push(listener);
  }

  /** The directory's source came back: it resyncs, then says it reconnected. */
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
    const snapshot = this.ports();
    for (const listener of this.changeListeners) listener(snapshot, resync);
  }
}
