/**
 * The daemon's interface store: which ports of the bridge are pods (Antrea's interface
 * store, fed here by an OVSDB monitor of the bridge's interfaces). A pod port is one a
 * CNI plugin registered: its Interface row has `external_ids:pod-name`. Only pod ports
 * are snooped and queried; the gateway is found by name.
 */
import type { InterfaceChanges, InterfaceRow } from './vswitch.js';
import type { PortView } from '../../transport/control/daemon-view.js';

/** How OVSDB numbers the bridge's own internal port. */
const OVSDB_LOCAL_OFPORT = 65534;

export interface PodPortChanges {
  /** Pod ports that appeared (or got their ofport). */
  added: PortView[];
  /** Pod ports that went away (or lost their ofport, or changed it: then also in added). */
  removed: PortView[];
  /** The gateway port changed (appeared, went, or got another ofport). */
  gatewayChanged: boolean;
}

export class PodPorts {
  private byOfport = new Map<number, PortView>();
  private gatewayPort: PortView | undefined;

  constructor(private readonly gatewayName: string | undefined) {}

  /** Takes the bridge's interfaces as they are now and says what changed for the daemon. */
  update(changes: Pick<InterfaceChanges, 'interfaces'>): PodPortChanges {
    const next = new Map<number, PortView>();
    let gateway: PortView | undefined;
    for (const row of changes.interfaces.values()) {
      const view = portViewOf(row);
      if (view === undefined) continue;
      if (row.name === this.gatewayName) gateway = view;
      else if (view.pod !== undefined) next.set(view.ofport, view);
    }
    const added = [...next.values()].filter((view) => !samePort(this.byOfport.get(view.ofport), view));
    const removed = [...this.byOfport.values()].filter((view) => !samePort(next.get(view.ofport), view));
    const gatewayChanged = !samePort(this.gatewayPort, gateway);
    this.byOfport = next;
    this.gatewayPort = gateway;
    return { added, removed, gatewayChanged };
  }

  get gateway(): PortView | undefined {
    return this.gatewayPort;
  }

  /** The pod port with this number, if it is one. */
  pod(ofport: number): PortView | undefined {
    return this.byOfport.get(ofport);
  }

  /** Any port we know of by number: a pod or the gateway. */
  view(ofport: number): PortView | undefined {
    return this.byOfport.get(ofport) ?? (this.gatewayPort?.ofport === ofport ? this.gatewayPort : undefined);
  }

  byName(name: string): PortView | undefined {
    for (const view of this.byOfport.values()) if (view.name === name) return view;
    return undefined;
  }

  get pods(): PortView[] {
    return [...this.byOfport.values()].sort((a, b) => a.ofport - b.ofport);
  }

  get size(): number {
    return this.byOfport.size;
  }
}

function portViewOf(row: InterfaceRow): PortView | undefined {
  if (row.ofport === undefined || row.ofport <= 0 || row.ofport === OVSDB_LOCAL_OFPORT) return undefined;
  const pod = row.external_ids['pod-name'];
  const namespace = row.external_ids['pod-namespace'];
  return { ofport: row.ofport, name: row.name, ...(pod === undefined ? {} : { pod: namespace === undefined ? pod : `${namespace}/${pod}` }) };
}

function samePort(a: PortView | undefined, b: PortView | undefined): boolean {
  return a?.ofport === b?.ofport && a?.name === b?.name && a?.pod === b?.pod;
}
