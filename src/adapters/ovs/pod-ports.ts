/**
 * The daemon's interface store: which ports of the bridge are pods (Antrea's interface
 * store, fed here by an OVSDB monitor of the bridge's interfaces), on the port model the
 * commands use too (./bridge-ports.ts). A pod port is one a CNI plugin registered: its
 * Interface row has `external_ids:pod-name`. Only pod ports are snooped and queried; the
 * gateway is found by name.
 */
import type { InterfaceChanges } from './vswitch.js';
import { BridgePorts, samePort, type BridgePort } from './bridge-ports.js';

export interface PodPortChanges {
  /** Pod ports that appeared (or got their ofport). */
  added: BridgePort[];
  /** Pod ports that went away (or lost their ofport, or changed it: then also in added). */
  removed: BridgePort[];
  /** The gateway port changed (appeared, went, or got another ofport). */
  gatewayChanged: boolean;
}

export class PodPorts {
  private byOfport = new Map<number, BridgePort>();
  private gatewayPort: BridgePort | undefined;
  private addresses: ReadonlyMap<number, readonly string[]> = new Map();

  constructor(private readonly gatewayName: string | undefined) {}

  /** Takes the bridge's interfaces as they are now and says what changed for the daemon. */
  update(changes: Pick<InterfaceChanges, 'interfaces'>): PodPortChanges {
    const ports = new BridgePorts(changes.interfaces.values());
    const gateway = ports.member(this.gatewayName);
    const next = new Map(ports.members.filter((port) => port.pod !== undefined && port.name !== this.gatewayName).map((port) => [port.ofport, port]));
    const added = [...next.values()].filter((port) => !samePort(this.byOfport.get(port.ofport), port));
    const removed = [...this.byOfport.values()].filter((port) => !samePort(next.get(port.ofport), port));
    const gatewayChanged = !samePort(this.gatewayPort, gateway);
    this.byOfport = next;
    this.gatewayPort = gateway;
    this.addresses = ports.addresses;
    return { added, removed, gatewayChanged };
  }

  get gateway(): BridgePort | undefined {
    return this.gatewayPort;
  }

  /** The pod port with this number, if it is one. */
  pod(ofport: number): BridgePort | undefined {
    return this.byOfport.get(ofport);
  }

  /** Any port we know of by number: a pod or the gateway. */
  view(ofport: number): BridgePort | undefined {
    return this.byOfport.get(ofport) ?? (this.gatewayPort?.ofport === ofport ? this.gatewayPort : undefined);
  }

  /** The pod's IPv4 addresses (external_ids ip-address), or undefined when its port does not say. */
  addressesOf(ofport: number): readonly string[] | undefined {
    return this.byOfport.has(ofport) ? this.addresses.get(ofport) : undefined;
  }

  byName(name: string): BridgePort | undefined {
    for (const port of this.byOfport.values()) if (port.name === name) return port;
    return undefined;
  }

  get pods(): BridgePort[] {
    return [...this.byOfport.values()].sort((a, b) => a.ofport - b.ofport);
  }

  get size(): number {
    return this.byOfport.size;
  }
}
