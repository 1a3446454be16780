/**
 * Remote membership in tunnel mode: which peers (other nodes, by their configured address) want which groups, learned
 * from the IGMPv3 reports they send through the tunnel. A peer that wants a group gets a tunnel bucket in that group's
 * OVS group.
 *
 * Soft state, as a router keeps its members (RFC 3376 §6): a record that asserts a membership makes the peer a member
 * and sets its deadline `timeoutMs` on; a peer that stops refreshing a group loses it when the deadline passes, so a
 * node that died or left the cluster without a word stops getting traffic. The record semantics are the ones a router
 * applies to one host with no source filtering (the data path forwards per group, whatever the source): EXCLUDE
 * records, and INCLUDE or ALLOW with a source, mean "send me the group"; INCLUDE {} means "stop" and takes effect at
 * once; BLOCK never makes a member of a peer that is not one, nor ends one that is.
 *
 * Bounded as the pods' groups are: a new group past one peer's limit is refused, and so is one new to the node once it
 * holds maxGroups (local groups and those only peers want, each one OVS group); what is there stays.
 *
 * Pure: time is passed in (milliseconds on one monotonic clock), and every mutation returns the groups whose peers
 * changed, which the caller syncs to the switch.
 */
import type { MembershipRecord } from '../membership/membership-table.js';
import {
  addressOrderKey,
  compareOrderKeys,
  type GroupAddress,
  type HostAddress,
  isLinkScopeGroup,
} from '../../wire/ip-address.js';
import { DeadlineHeap } from './deadline-heap.js';

export interface RemoteMembersSettings {
  /** How long a (peer, group) lasts after the last record that asserted it; also how long a silent peer stays up. */
  timeoutMs: number;
  /** Groups one peer may be a member of: past it, new groups are refused (what the peer has stays). */
  maxGroupsPerPeer: number;
}

export interface RemoteMembersOptions extends RemoteMembersSettings {
  /** The configured peers: records from any other address change nothing. */
  peers: Iterable<HostAddress>;
  /** The node's limit of groups (maxGroups), read at each new group (a reload may change it); absent: none. */
  maxGroups?: () => number;
  /** Told of every new group a limit refused. */
  onRefusal?: (refusal: RemoteRefusal) => void;
}

/** A new group a peer asked for past a limit: its own (`peer-groups`) or the node's (`node-groups`). */
export interface RemoteRefusal {
  peer: HostAddress;
  group: GroupAddress;
  limit: number;
  reason: 'peer-groups' | 'node-groups';
}

/** The peers of `group` changed: give it exactly these tunnel buckets (none: no remote members). */
export interface RemoteMembersEffect {
  group: GroupAddress;
  peers: HostAddress[];
}

/** `unknown`: nothing heard since the daemon started; `up`: heard within the timeout; `down`: silent longer. */
export type PeerState = 'unknown' | 'up' | 'down';

export interface RemoteMembersView {
  /** Every configured peer, sorted by address. */
  peers: { address: HostAddress; state: PeerState; lastContact: number | null; members: number }[];
  /** Every group with remote members, sorted; members by peer. */
  groups: { group: GroupAddress; members: { peer: HostAddress; lastRefresh: number | null; expiresInMs: number }[] }[];
}

interface RemoteEntry {
  peer: HostAddress;
  group: GroupAddress;
  /** When a record last asserted it; undefined for a seed not yet confirmed. */
  lastRefreshAt: number | undefined;
  deadline: number;
  /** The key of its one live node in the deadline heap: never later than `deadline`. */
  queuedAt: number;
}

interface PeerEntry {
  lastContact: number | undefined;
  groups: Set<GroupAddress>;
}

const newPeer = (): PeerEntry => ({ lastContact: undefined, groups: new Set() });

export class RemoteMembers {
  private settings: RemoteMembersSettings;
  private readonly peers = new Map<HostAddress, PeerEntry>();
  /** group → peer → membership */
  private readonly groups = new Map<GroupAddress, Map<HostAddress, RemoteEntry>>();
  private readonly deadlines = new DeadlineHeap<RemoteEntry>();
  /** The groups with local members (setLocal), and how many of them peers want too. */
  private readonly localGroups = new Set<GroupAddress>();
  private sharedCount = 0;
  private refusedCount = 0;
  private liveCount = 0;

  constructor(private readonly options: RemoteMembersOptions) {
    this.settings = { timeoutMs: options.timeoutMs, maxGroupsPerPeer: options.maxGroupsPerPeer };
    for (const peer of options.peers) this.peers.set(peer, newPeer());
  }

  /** New settings (a reload): a timeout counts from each membership's next refresh, a limit for new groups. */
  reconfigure(settings: RemoteMembersSettings): void {
    this.settings = { ...settings };
  }

  /**
   * A report from `peer`, its records' addresses checked. Any message is contact, also a report of no records (a node
   * with no groups sends one as its heartbeat).
   */
  apply(peer: HostAddress, records: readonly MembershipRecord[], now: number): RemoteMembersEffect[] {
    const state = this.peers.get(peer);
    if (state === undefined) return [];
    state.lastContact = now;
    return this.changing((touch) => {
      for (const record of records) {
        if (isLinkScopeGroup(record.group)) continue;
        const verdict = verdictOf(record);
        if (verdict === 'ignore') continue;
        touch(record.group, peer);
        if (verdict === 'member')
          this.assert(peer, state, record.group, { lastRefreshAt: now, deadline: now + this.settings.timeoutMs });
        else this.remove(peer, record.group);
      }
    });
  }

  /** Whether `address` is a configured peer (a message from any other is dropped before it gets here). */
  isPeer(address: HostAddress): boolean {
    return this.peers.has(address);
  }

  /** The peer leaves every group at once (it stays configured: what it sends next counts again). */
  removePeer(peer: HostAddress): RemoteMembersEffect[] {
    const state = this.peers.get(peer);
    return state === undefined ? [] : this.changing((touch) => this.leaveAll(peer, state, touch));
  }

  /** A new peer list (a reload): peers no longer in it lose their groups at once; new ones start unknown. */
  setPeers(peers: Iterable<HostAddress>): RemoteMembersEffect[] {
    const wanted = new Set(peers);
    const effects = this.changing((touch) => {
      for (const [peer, state] of this.peers) {
        if (wanted.has(peer)) continue;
        this.leaveAll(peer, state, touch);
        this.peers.delete(peer);
      }
    });
    for (const peer of wanted) if (!this.peers.has(peer)) this.peers.set(peer, newPeer());
    return effects;
  }

  /**
   * A membership found on the switch at start (a tunnel bucket the daemon had installed before it restarted), kept
   * until `deadline` unless the peer confirms it. Not contact; never refused for the node (the switch holds it).
   */
  seed(peer: HostAddress, group: GroupAddress, deadline: number): RemoteMembersEffect[] {
    const state = this.peers.get(peer);
    if (state === undefined || isLinkScopeGroup(group)) return [];
    return this.changing((touch) => {
      touch(group, peer);
      this.assert(peer, state, group, { lastRefreshAt: undefined, deadline });
    });
  }

  /** Ends the memberships whose deadline is `now` or earlier. */
  expire(now: number): RemoteMembersEffect[] {
    return this.changing((touch) => {
      for (;;) {
        const entry = this.liveEarliest();
        if (entry === undefined || entry.deadline > now) return;
        this.deadlines.pop();
        touch(entry.group, entry.peer);
        this.remove(entry.peer, entry.group);
      }
    });
  }

  /** A group gained its first local member or lost its last: it counts against maxGroups once, peers' or not. */
  setLocal(group: GroupAddress, hasMembers: boolean): void {
    if (this.localGroups.has(group) === hasMembers) return;
    if (hasMembers) this.localGroups.add(group);
    else this.localGroups.delete(group);
    if (this.groups.has(group)) this.sharedCount += hasMembers ? 1 : -1;
  }

  /** The node's groups, each one OVS group: those with local members and those only peers want. */
  get nodeGroupCount(): number {
    return this.localGroups.size + this.peerOnlyGroupCount;
  }

  /** The groups only peers want (no local member): the node's groups that its table of local members leaves out. */
  get peerOnlyGroupCount(): number {
    return this.groups.size - this.sharedCount;
  }

  /** When `expire()` next has something to do, or undefined when no peer is a member of anything. */
  nextDeadline(): number | undefined {
    return this.liveEarliest()?.deadline;
  }

  /** The groups that have at least one remote member. */
  groupsWithMembers(): GroupAddress[] {
    return [...this.groups.keys()];
  }

  /** The peers that are members of `group`, sorted by address. */
  peersOf(group: GroupAddress): HostAddress[] {
    const members = this.groups.get(group);
    return members === undefined ? [] : sortedAddresses(members.keys());
  }

  /** Whether the peer was heard within the timeout; `unknown` also for an address that is no peer. */
  stateOf(peer: HostAddress, now: number): PeerState {
    const lastContact = this.peers.get(peer)?.lastContact;
    if (lastContact === undefined) return 'unknown';
    return now - lastContact >= this.settings.timeoutMs ? 'down' : 'up';
  }

  /** When the peer was last heard from, on the caller's clock. */
  lastContactOf(peer: HostAddress): number | undefined {
    return this.peers.get(peer)?.lastContact;
  }

  /** New groups the limits refused since the start. */
  get refused(): number {
    return this.refusedCount;
  }

  /** Every (peer, group) membership. */
  get memberCount(): number {
    return this.liveCount;
  }

  view(now: number): RemoteMembersView {
    const peers = sortedAddresses(this.peers.keys()).map((address) => {
      const { lastContact, groups } = this.peers.get(address)!;
      return { address, state: this.stateOf(address, now), lastContact: lastContact ?? null, members: groups.size };
    });
    const memberView = ({ peer, lastRefreshAt, deadline }: RemoteEntry) => {
      return { peer, lastRefresh: lastRefreshAt ?? null, expiresInMs: Math.max(0, deadline - now) };
    };
    const groups = sortedAddresses(this.groups.keys()).map((group) => {
      const members = this.groups.get(group)!;
      return { group, members: sortedAddresses(members.keys()).map((peer) => memberView(members.get(peer)!)) };
    });
    return { peers, groups };
  }

  /** Makes the peer a member (or refreshes it); a new group past the node's or the peer's limit is refused. */
  private assert(
    peer: HostAddress,
    state: PeerEntry,
    group: GroupAddress,
    timing: { lastRefreshAt: number | undefined; deadline: number },
  ): void {
    let members = this.groups.get(group);
    const existing = members?.get(peer);
    if (existing !== undefined) {
      if (timing.lastRefreshAt !== undefined) existing.lastRefreshAt = timing.lastRefreshAt;
      // A seed never shortens what a record gave; a record sets the deadline from now.
      existing.deadline =
        timing.lastRefreshAt === undefined ? Math.max(existing.deadline, timing.deadline) : timing.deadline;
      // A later deadline waits in the heap at the earlier key (liveEarliest moves it on then);
      // an earlier one, after a reload shortened the timeout, needs a node of its own.
      if (existing.deadline < existing.queuedAt) this.queue(existing);
      return;
    }
    // A seed is a group the switch holds already (and comes before the local groups are told): never new to the node.
    const isNew = members === undefined && timing.lastRefreshAt !== undefined && !this.localGroups.has(group);
    const nodeLimit = isNew ? this.options.maxGroups?.() : undefined;
    const nodeFull = nodeLimit !== undefined && this.nodeGroupCount >= nodeLimit;
    if (nodeFull || state.groups.size >= this.settings.maxGroupsPerPeer) {
      const limit = nodeFull ? nodeLimit : this.settings.maxGroupsPerPeer;
      this.refusedCount += 1;
      this.options.onRefusal?.({ peer, group, limit, reason: nodeFull ? 'node-groups' : 'peer-groups' });
      return;
    }
    if (members === undefined) {
      members = new Map();
      this.groups.set(group, members);
      if (this.localGroups.has(group)) this.sharedCount += 1;
    }
    const entry: RemoteEntry = {
      peer,
      group,
      lastRefreshAt: timing.lastRefreshAt,
      deadline: timing.deadline,
      queuedAt: timing.deadline,
    };
    members.set(peer, entry);
    state.groups.add(group);
    this.liveCount += 1;
    this.queue(entry);
  }

  /** Gives the entry a heap node at its deadline; its older node, if any, is dropped when it comes up. */
  private queue(entry: RemoteEntry): void {
    entry.queuedAt = entry.deadline;
    this.deadlines.push(entry.deadline, entry);
    this.compactDeadlines();
  }

  private remove(peer: HostAddress, group: GroupAddress): void {
    const members = this.groups.get(group);
    if (members === undefined || !members.delete(peer)) return;
    if (members.size === 0 && this.groups.delete(group) && this.localGroups.has(group)) this.sharedCount -= 1;
    this.liveCount -= 1;
    this.peers.get(peer)?.groups.delete(group);
  }

  /** The peer leaves every group it is in, each named to `touch` first. */
  private leaveAll(peer: HostAddress, state: PeerEntry, touch: (group: GroupAddress, peer: HostAddress) => void): void {
    for (const group of [...state.groups]) {
      touch(group, peer);
      this.remove(peer, group);
    }
  }

  /**
   * The membership with the earliest deadline, at the top of the heap. Each membership has one live node, at
   * `queuedAt`, no later than its deadline (a refresh moves the deadline on and leaves the node): a node whose
   * membership is gone, or that is not the live one, is dropped here, and a live node behind its deadline moved to it.
   */
  private liveEarliest(): RemoteEntry | undefined {
    for (;;) {
      const top = this.deadlines.peek();
      if (top === undefined) return undefined;
      const { key, value: entry } = top;
      if (this.groups.get(entry.group)?.get(entry.peer) !== entry || entry.queuedAt !== key) this.deadlines.pop();
      else if (entry.deadline !== key) {
        this.deadlines.pop();
        entry.queuedAt = entry.deadline;
        this.deadlines.push(entry.deadline, entry);
      } else return entry;
    }
  }

  /**
   * Rebuilds the heap when the nodes of ended memberships outnumber the live ones (a peer flapping joins and leaves).
   */
  private compactDeadlines(): void {
    if (this.deadlines.size <= 2 * this.liveCount + 64) return;
    this.deadlines.clear();
    for (const members of this.groups.values()) {
      for (const entry of members.values()) {
        entry.queuedAt = entry.deadline;
        this.deadlines.push(entry.deadline, entry);
      }
    }
  }

  /**
   * Runs `mutate`, which names each (group, peer) it may change before changing it, and returns the groups whose peers
   * did change, sorted. A refresh, the common case, costs no sort: only a group whose peers came or went is listed.
   */
  private changing(mutate: (touch: (group: GroupAddress, peer: HostAddress) => void) => void): RemoteMembersEffect[] {
    const before = new Map<GroupAddress, Map<HostAddress, boolean>>();
    mutate((group, peer) => {
      const peers = before.get(group) ?? before.set(group, new Map()).get(group)!;
      if (!peers.has(peer)) peers.set(peer, this.groups.get(group)?.has(peer) === true);
    });
    const changed: GroupAddress[] = [];
    for (const [group, peers] of before) {
      const members = this.groups.get(group);
      for (const [peer, wasMember] of peers) {
        if ((members?.has(peer) === true) !== wasMember) {
          changed.push(group);
          break;
        }
      }
    }
    return sortedAddresses(changed).map((group) => ({ group, peers: this.peersOf(group) }));
  }
}

/** What one record means for the peer's membership of its group. */
function verdictOf(record: MembershipRecord): 'member' | 'leave' | 'ignore' {
  switch (record.type) {
    case 'MODE_IS_EXCLUDE':
    case 'CHANGE_TO_EXCLUDE_MODE':
      return 'member';
    case 'MODE_IS_INCLUDE':
    case 'CHANGE_TO_INCLUDE_MODE':
      return record.sources.length > 0 ? 'member' : 'leave';
    case 'ALLOW_NEW_SOURCES':
      return record.sources.length > 0 ? 'member' : 'ignore';
    case 'BLOCK_OLD_SOURCES':
      return 'ignore';
  }
}

function sortedAddresses<Address extends string>(addresses: Iterable<Address>): Address[] {
  return [...addresses]
    .map((address) => ({ address, key: addressOrderKey(address) }))
    .sort((a, b) => compareOrderKeys(a.key, b.key))
    .map(({ address }) => address);
}
