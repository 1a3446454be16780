/**
 * The daemon's store of pod ports (Antrea's interface store), fed by the pod directory
 * (./pod-directory.ts): a pod port is a numbered port with a pod behind it. Only pod
 * ports are snooped and queried; the gateway is found by name.
 */
import { textFamily } from '../../wire/ip-address.js';
import { type BridgePort, type DirectoryPort, samePort } from './pod-directory.js';

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

  /** Takes the bridge's ports as they are now and says what changed for the daemon. */
  update(ports: readonly DirectoryPort[]): PodPortChanges {
    const numbered = ports.flatMap((port): BridgePort[] =>
      port.ofport === undefined || port.ofport <= 0
        ? []
        : [{ ofport: port.ofport, name: port.name, ...(port.pod === undefined ? {} : { pod: port.pod }) }],
    );
    const gateway = numbered.find((port) => port.name === this.gatewayName);
    const next = new Map(
      numbered
        .filter((port) => port.pod !== undefined && port.name !== this.gatewayName)
        .map((port) => [port.ofport, port]),
    );
    const added = [...next.values()].filter((port) => !samePort(this.byOfport.get(port.ofport), port));
    const removed = [...this.byOfport.values()].filter((port) => !samePort(next.get(port.ofport), port));
    const gatewayChanged = !samePort(this.gatewayPort, gateway);
    this.byOfport = next;
    this.gatewayPort = gateway;
    this.addresses = new Map(
      ports.flatMap((port) =>
        port.ofport === undefined || port.addresses === undefined
          ? []
          : [[port.ofport, port.addresses.filter((address) => textFamily(address) === 'ipv4')] as const],
      ),
    );
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

  /**
   * The pod's IPv4 addresses (the only sources, with 0.0.0.0, its IGMP may come from), or undefined when the directory
   * does not say.
   */
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
