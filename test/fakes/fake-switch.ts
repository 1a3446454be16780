/**
 * A bridge over OpenFlow, in memory, as the daemon's loop sees it (SwitchPort): it keeps
 * each group's ports as OVS would, records every change that reached it, can refuse the
 * next syncs, holds groups installed statically, and emits packet-ins and reconnections.
 */
import { McastError } from '../../src/errors.js';
import type { GroupOutcome } from '../../src/domain/pipeline/plan.js';
import type { SwitchPort } from '../../src/controllers/daemon/ports.js';
import type { WantedPortEntries } from '../../src/domain/pipeline/port-entries.js';
import type { GroupAddress } from '../../src/wire/ip-address.js';

export interface AppliedGroup {
  group: GroupAddress;
  ports: number[];
  outcome: GroupOutcome;
}

export class FakeSwitch implements SwitchPort {
  connected = true;
  /** What the switch forwards now: learned groups, by group. */
  readonly groups = new Map<GroupAddress, number[]>();
  /** Groups installed statically (install, reconcile), with their ports. */
  readonly staticGroups = new Map<GroupAddress, number[]>();
  /** Every sync that changed the switch, in order. */
  readonly applied: AppliedGroup[] = [];
  /** Every installBase call: the gateway port it was given. */
  readonly baseFlows: Array<number | undefined> = [];
  /** Every frame sent out, with its ports. */
  readonly sent: Array<{ frame: Uint8Array; ports: number[] }> = [];
  /** What each pod port has of ours: its meter and send-policy drops. */
  readonly ports = new Map<number, WantedPortEntries>();
  /** Packets each port's meter dropped, as the test sets them. */
  readonly drops = new Map<number, bigint>();
  /** The switch has meters (false: like a switch without them, every port unmetered). */
  meters = true;
  refreshes = 0;
  closed = false;
  private failures = 0;
  private readonly packetInListeners: Array<(frame: Uint8Array, ofport: number | undefined) => void> = [];
  private readonly reconnectListeners: Array<() => void> = [];
  private readonly disconnectListeners: Array<(error: Error) => void> = [];

  /** The next `count` syncs that would change the switch are refused. */
  failNextSyncs(count: number): void {
    this.failures = count;
  }

  /** A group the daemon installed in an earlier run (read back by refresh). */
  preinstall(group: GroupAddress, ports: number[]): void {
    this.groups.set(group, sorted(ports));
  }

  async refresh(): Promise<void> {
    this.refreshes++;
  }

  get installedGroups(): GroupAddress[] {
    return [...this.groups.keys(), ...this.staticGroups.keys()];
  }

  get learnedGroups(): Array<{ group: GroupAddress; ports: number[] }> {
    return [...this.groups].map(([group, ports]) => ({ group, ports: [...ports] }));
  }

  async syncGroup(group: GroupAddress, ports: readonly number[]): Promise<GroupOutcome> {
    if (this.staticGroups.has(group)) {
      if (ports.length === 0) return 'absent';
      throw new McastError('conflict', `group ${group} is installed statically (mcastctl install or reconcile); the daemon leaves it alone`);
    }
    const current = this.groups.get(group);
    const wanted = sorted(ports);
    if (ports.length === 0 && current === undefined) return 'absent';
    if (current !== undefined && same(current, wanted)) return 'unchanged';
    if (this.failures > 0) {
      this.failures--;
      throw new McastError('refused', `OVS refused 2 of 2 changes for group ${group}: OFPGMFC_GROUP_EXISTS`);
    }
    const outcome: GroupOutcome = ports.length === 0 ? 'removed' : current === undefined ? 'added' : 'updated';
    if (ports.length === 0) this.groups.delete(group);
    else this.groups.set(group, wanted);
    this.applied.push({ group, ports: wanted, outcome });
    return outcome;
  }

  async installBase(gatewayOfport: number | undefined): Promise<void> {
    this.baseFlows.push(gatewayOfport);
  }

  async syncPort(ofport: number, wanted: WantedPortEntries | undefined): Promise<{ metered: boolean }> {
    const meter = this.meters ? wanted?.meter : undefined;
    if (wanted === undefined || (meter === undefined && wanted.deniedSend.length === 0)) this.ports.delete(ofport);
    else this.ports.set(ofport, { deniedSend: [...wanted.deniedSend], ...(meter === undefined ? {} : { meter: { ...meter } }) });
    return { metered: meter !== undefined };
  }

  get portsWithEntries(): number[] {
    return [...this.ports.keys()];
  }

  async meterDrops(): Promise<Map<number, bigint>> {
    return new Map([...this.drops].filter(([ofport]) => this.ports.get(ofport)?.meter !== undefined));
  }

  async sendFrame(frame: Uint8Array, ports: readonly number[]): Promise<{ sent: number; refused: Error[] }> {
    this.sent.push({ frame, ports: [...ports] });
    return { sent: ports.length, refused: [] };
  }

  onPacketIn(listener: (frame: Uint8Array, ofport: number | undefined) => void): void {
    this.packetInListeners.push(listener);
  }

  onDisconnected(listener: (error: Error) => void): void {
    this.disconnectListeners.push(listener);
  }

  onReconnected(listener: () => void): void {
    this.reconnectListeners.push(listener);
  }

  async enablePacketIn(): Promise<void> {}

  async close(): Promise<void> {
    this.closed = true;
  }

  /** A frame from `ofport`, as OVS sends it up to the controller. */
  packetIn(frame: Uint8Array, ofport: number | undefined): void {
    for (const listener of this.packetInListeners) listener(frame, ofport);
  }

  /** ovs-vswitchd restarted: the switch comes back empty (static groups are reconcile's to put back). */
  restartVswitchd(): void {
    this.connected = false;
    for (const listener of this.disconnectListeners) listener(new Error('connection reset'));
    this.groups.clear();
    this.ports.clear();
    this.connected = true;
    for (const listener of this.reconnectListeners) listener();
  }
}

function sorted(ports: readonly number[]): number[] {
  return [...ports].sort((a, b) => a - b);
}

function same(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((port, index) => port === b[index]);
}
