/** Remote membership in tunnel mode: record semantics, expiry, peer lists, seeds, limits, views. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import type { MembershipRecord } from '../../src/domain/membership/membership-table.js';
import { type RemoteRefusal, RemoteMembers, type RemoteMembersEffect } from '../../src/domain/peers/remote-members.js';
import {
  type GroupAddress,
  groupAddress,
  type HostAddress,
  hostAddress,
  sourceAddress,
} from '../../src/wire/ip-address.js';

const P1 = hostAddress('192.168.60.12');
const P2 = hostAddress('192.168.60.13');
const P3 = hostAddress('192.168.60.9');
const G1 = groupAddress('239.1.1.1');
const G2 = groupAddress('239.1.1.2');
const TIMEOUT = 70_000;

function members(
  options: { peers?: HostAddress[]; maxGroupsPerPeer?: number; onRefusal?: (refusal: RemoteRefusal) => void } = {},
) {
  return new RemoteMembers({
    peers: options.peers ?? [P1, P2, P3],
    timeoutMs: TIMEOUT,
    maxGroupsPerPeer: options.maxGroupsPerPeer ?? 100,
    ...(options.onRefusal === undefined ? {} : { onRefusal: options.onRefusal }),
  });
}
const record = (type: MembershipRecord['type'], group: GroupAddress, sources: string[] = []): MembershipRecord => ({
  type,
  group,
  sources: sources.map(sourceAddress),
});
const effect = (group: GroupAddress, peers: HostAddress[]): RemoteMembersEffect => ({ group, peers });

describe('RemoteMembers', () => {
  it('EXCLUDE records make the peer a member; a repeat is a refresh with no effect', () => {
    const remote = members();
    assert.deepEqual(remote.apply(P1, [record('CHANGE_TO_EXCLUDE_MODE', G1)], 1_000), [effect(G1, [P1])]);
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_EXCLUDE', G1)], 2_000), []);
    assert.deepEqual(remote.apply(P2, [record('MODE_IS_EXCLUDE', G1), record('MODE_IS_EXCLUDE', G2)], 2_000), [
      effect(G1, [P1, P2]),
      effect(G2, [P2]),
    ]);
    // Sorted by address, not by text: .9 before .12.
    assert.deepEqual(remote.apply(P3, [record('MODE_IS_EXCLUDE', G1)], 2_000), [effect(G1, [P3, P1, P2])]);
    assert.deepEqual(remote.peersOf(G1), [P3, P1, P2]);
    assert.deepEqual(remote.peersOf(groupAddress('239.9.9.9')), []);
  });

  it('INCLUDE and ALLOW with sources make a member; INCLUDE {} removes at once; BLOCK and ALLOW {} change nothing', () => {
    const remote = members();
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_INCLUDE', G1, ['10.9.0.1'])], 1_000), [effect(G1, [P1])]);
    assert.deepEqual(remote.apply(P1, [record('CHANGE_TO_INCLUDE_MODE', G2, ['10.9.0.1'])], 1_000), [effect(G2, [P1])]);
    assert.deepEqual(remote.apply(P2, [record('ALLOW_NEW_SOURCES', G1, ['10.9.0.1'])], 1_000), [effect(G1, [P1, P2])]);
    assert.deepEqual(remote.apply(P3, [record('ALLOW_NEW_SOURCES', G1)], 1_000), []);
    assert.deepEqual(remote.apply(P3, [record('BLOCK_OLD_SOURCES', G1, ['10.9.0.1'])], 1_000), []);
    assert.deepEqual(
      remote.apply(P1, [record('BLOCK_OLD_SOURCES', G1, ['10.9.0.1'])], 1_000),
      [],
      'BLOCK does not end a membership',
    );
    assert.deepEqual(remote.apply(P1, [record('CHANGE_TO_INCLUDE_MODE', G1)], 1_500), [effect(G1, [P2])]);
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_INCLUDE', G2)], 1_500), [effect(G2, [])]);
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_INCLUDE', G2)], 1_500), [], 'leaving what it is not in');
  });

  it('records that cancel out within one report give no effect', () => {
    const remote = members();
    assert.deepEqual(
      remote.apply(P1, [record('CHANGE_TO_EXCLUDE_MODE', G1), record('CHANGE_TO_INCLUDE_MODE', G1)], 1_000),
      [],
    );
    remote.apply(P1, [record('MODE_IS_EXCLUDE', G2)], 1_000);
    assert.deepEqual(
      remote.apply(P1, [record('CHANGE_TO_INCLUDE_MODE', G2), record('CHANGE_TO_EXCLUDE_MODE', G2)], 1_000),
      [],
    );
    assert.deepEqual(remote.peersOf(G2), [P1]);
  });

  it('ignores link-local groups and addresses that are no configured peer', () => {
    const remote = members();
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_EXCLUDE', groupAddress('224.0.0.251'))], 1_000), []);
    assert.deepEqual(remote.apply(hostAddress('192.168.60.99'), [record('MODE_IS_EXCLUDE', G1)], 1_000), []);
    assert.equal(remote.stateOf(hostAddress('192.168.60.99'), 1_000), 'unknown');
    assert.deepEqual(remote.seed(P1, groupAddress('224.0.0.251'), 5_000), []);
    assert.deepEqual(remote.view(1_000).groups, []);
  });

  it('a membership expires timeoutMs after the last record that asserted it', () => {
    const remote = members();
    remote.apply(P1, [record('MODE_IS_EXCLUDE', G1), record('MODE_IS_EXCLUDE', G2)], 1_000);
    remote.apply(P2, [record('MODE_IS_EXCLUDE', G1)], 5_000);
    assert.equal(remote.nextDeadline(), 1_000 + TIMEOUT);
    // P1 refreshes G1 only: its G2 keeps the old deadline.
    remote.apply(P1, [record('MODE_IS_EXCLUDE', G1)], 30_000);
    assert.equal(remote.nextDeadline(), 1_000 + TIMEOUT);
    assert.deepEqual(remote.expire(1_000 + TIMEOUT - 1), []);
    assert.deepEqual(remote.expire(1_000 + TIMEOUT), [effect(G2, [])]);
    assert.equal(remote.nextDeadline(), 5_000 + TIMEOUT);
    assert.deepEqual(remote.expire(5_000 + TIMEOUT), [effect(G1, [P1])]);
    assert.equal(remote.nextDeadline(), 30_000 + TIMEOUT);
    assert.deepEqual(remote.expire(1_000_000), [effect(G1, [])]);
    assert.equal(remote.nextDeadline(), undefined);
    assert.equal(remote.memberCount, 0);
  });

  it('an empty table has no deadline and expires nothing', () => {
    const remote = members();
    assert.equal(remote.nextDeadline(), undefined);
    assert.deepEqual(remote.expire(1_000), []);
    assert.deepEqual(remote.view(0), {
      peers: [
        { address: P3, state: 'unknown', lastContact: null, members: 0 },
        { address: P1, state: 'unknown', lastContact: null, members: 0 },
        { address: P2, state: 'unknown', lastContact: null, members: 0 },
      ],
      groups: [],
    });
  });

  it('peer state: unknown before contact, up within the timeout, down after; any report is contact', () => {
    const remote = members();
    assert.equal(remote.stateOf(P1, 0), 'unknown');
    assert.deepEqual(remote.apply(P1, [], 1_000), [], 'a report of no records is a heartbeat');
    assert.equal(remote.lastContactOf(P1), 1_000);
    assert.equal(remote.stateOf(P1, 1_000 + TIMEOUT - 1), 'up');
    assert.equal(remote.stateOf(P1, 1_000 + TIMEOUT), 'down');
    remote.apply(P1, [], 100_000);
    assert.equal(remote.stateOf(P1, 100_000), 'up');
    assert.equal(remote.stateOf(P2, 100_000), 'unknown');
  });

  it('removePeer ends its memberships at once; it stays configured', () => {
    const remote = members();
    remote.apply(P1, [record('MODE_IS_EXCLUDE', G1), record('MODE_IS_EXCLUDE', G2)], 1_000);
    remote.apply(P2, [record('MODE_IS_EXCLUDE', G1)], 1_000);
    assert.deepEqual(remote.removePeer(P1), [effect(G1, [P2]), effect(G2, [])]);
    assert.deepEqual(remote.removePeer(P1), []);
    assert.deepEqual(remote.removePeer(hostAddress('192.168.60.99')), []);
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_EXCLUDE', G2)], 2_000), [effect(G2, [P1])]);
    // The heap's node of the ended G1 membership is dropped, not expired twice.
    assert.equal(remote.nextDeadline(), 1_000 + TIMEOUT);
    assert.deepEqual(remote.expire(1_000 + TIMEOUT), [effect(G1, [])]);
  });

  it('setPeers drops the peers no longer listed at once and adds new ones as unknown', () => {
    const remote = members({ peers: [P1, P2] });
    remote.apply(P1, [record('MODE_IS_EXCLUDE', G1)], 1_000);
    remote.apply(P2, [record('MODE_IS_EXCLUDE', G1), record('MODE_IS_EXCLUDE', G2)], 1_000);
    assert.deepEqual(remote.setPeers([P1, P3]), [effect(G1, [P1]), effect(G2, [])]);
    assert.deepEqual(remote.apply(P2, [record('MODE_IS_EXCLUDE', G2)], 2_000), [], 'no longer a peer');
    assert.equal(remote.stateOf(P3, 2_000), 'unknown');
    assert.deepEqual(remote.apply(P3, [record('MODE_IS_EXCLUDE', G2)], 2_000), [effect(G2, [P3])]);
    assert.deepEqual(remote.setPeers([P1, P3]), [], 'the same list changes nothing');
    assert.equal(remote.lastContactOf(P1), 1_000, 'a kept peer keeps its contact');
  });

  it('seed keeps a membership from the switch until its deadline, unless a record confirms it', () => {
    const remote = members();
    assert.deepEqual(remote.seed(P1, G1, 71_000), [effect(G1, [P1])]);
    assert.deepEqual(remote.seed(P2, G1, 71_000), [effect(G1, [P1, P2])]);
    assert.deepEqual(remote.seed(hostAddress('192.168.60.99'), G1, 71_000), [], 'not a configured peer');
    assert.equal(remote.stateOf(P1, 1_000), 'unknown', 'a seed is no contact');
    assert.deepEqual(remote.view(1_000).groups, [
      {
        group: G1,
        members: [
          { peer: P1, lastRefresh: null, expiresInMs: 70_000 },
          { peer: P2, lastRefresh: null, expiresInMs: 70_000 },
        ],
      },
    ]);
    // P1 confirms: its deadline comes from the record; P2 stays silent and goes at the seed's deadline.
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_EXCLUDE', G1)], 2_000), []);
    assert.deepEqual(remote.expire(71_000), [effect(G1, [P1])]);
    assert.equal(remote.nextDeadline(), 2_000 + TIMEOUT);
  });

  it('a seed never shortens a deadline a record gave', () => {
    const remote = members();
    remote.apply(P1, [record('MODE_IS_EXCLUDE', G1)], 1_000);
    assert.deepEqual(remote.seed(P1, G1, 10_000), []);
    assert.deepEqual(remote.expire(10_000), []);
    assert.equal(remote.nextDeadline(), 1_000 + TIMEOUT);
  });

  it('refuses new groups past the per-peer limit and counts them; refreshes still pass', () => {
    const refusals: RemoteRefusal[] = [];
    const remote = members({ maxGroupsPerPeer: 1, onRefusal: (refusal) => refusals.push(refusal) });
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_EXCLUDE', G1), record('MODE_IS_EXCLUDE', G2)], 1_000), [
      effect(G1, [P1]),
    ]);
    assert.deepEqual(refusals, [{ peer: P1, group: G2, limit: 1, reason: 'peer-groups' }]);
    assert.equal(remote.refused, 1);
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_EXCLUDE', G1)], 2_000), []);
    assert.equal(remote.refused, 1);
    assert.deepEqual(remote.seed(P1, G2, 50_000), []);
    assert.equal(remote.refused, 2);
    // Another peer has its own limit.
    assert.deepEqual(remote.apply(P2, [record('MODE_IS_EXCLUDE', G2)], 2_000), [effect(G2, [P2])]);
    // Leaving makes room.
    remote.apply(P1, [record('CHANGE_TO_INCLUDE_MODE', G1)], 3_000);
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_EXCLUDE', G2)], 3_000), [effect(G2, [P1, P2])]);
    // A lowered limit ends nothing.
    remote.reconfigure({ timeoutMs: TIMEOUT, maxGroupsPerPeer: 0 });
    assert.deepEqual(remote.peersOf(G2), [P1, P2]);
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_EXCLUDE', G1)], 4_000), []);
  });

  it("the node's limit counts local groups and those only peers want: one more is refused, a leave makes room", () => {
    const refusals: RemoteRefusal[] = [];
    let maxGroups = 3;
    const remote = new RemoteMembers({
      peers: [P1, P2],
      timeoutMs: TIMEOUT,
      maxGroupsPerPeer: 100,
      maxGroups: () => maxGroups,
      onRefusal: (refusal) => refusals.push(refusal),
    });
    const [G3, G4, G5] = [groupAddress('239.1.1.3'), groupAddress('239.1.1.4'), groupAddress('239.1.1.5')];
    const join = (peer: HostAddress, group: GroupAddress, at = 1_000) =>
      remote.apply(peer, [record('MODE_IS_EXCLUDE', group)], at);
    remote.setLocal(G1, true);
    remote.setLocal(G2, true);
    // G2 is local already: no new group for the node. G3 is the third; G4 one too many.
    assert.deepEqual(
      remote.apply(
        P1,
        [G2, G3, G4].map((group) => record('MODE_IS_EXCLUDE', group)),
        1_000,
      ),
      [effect(G2, [P1]), effect(G3, [P1])],
    );
    assert.equal(remote.nodeGroupCount, 3);
    assert.deepEqual(refusals, [{ peer: P1, group: G4, limit: 3, reason: 'node-groups' }]);
    // A group another peer has is no new group either; nor is a refresh.
    assert.deepEqual(join(P2, G3), [effect(G3, [P1, P2])]);
    assert.deepEqual(join(P1, G3, 2_000), []);
    assert.equal(remote.refused, 1);
    // G2 loses its local member but peers still want it: the node holds as many groups.
    remote.setLocal(G2, false);
    assert.equal(remote.nodeGroupCount, 3);
    assert.equal(remote.peerOnlyGroupCount, 2);
    assert.deepEqual(join(P2, G4), []);
    // A peer's leave of the last peer-only group makes room.
    remote.apply(P1, [record('CHANGE_TO_INCLUDE_MODE', G2)], 3_000);
    assert.equal(remote.nodeGroupCount, 2);
    assert.deepEqual(join(P2, G4, 3_000), [effect(G4, [P2])]);
    // A local join of a group peers want adds nothing; the limit is read at each new group.
    remote.setLocal(G4, true);
    assert.equal(remote.nodeGroupCount, 3);
    maxGroups = 4;
    assert.deepEqual(join(P1, G5, 4_000), [effect(G5, [P1])]);
    // Lowered, it ends nothing.
    maxGroups = 1;
    assert.deepEqual(remote.groupsWithMembers().length, 3);
    assert.deepEqual(join(P1, G2, 4_000), []);
    assert.deepEqual(refusals.at(-1), { peer: P1, group: G2, limit: 1, reason: 'node-groups' });
    assert.equal(remote.refused, 3);
    // Expiry frees the peers' groups as a leave does.
    remote.expire(4_000 + TIMEOUT);
    assert.equal(remote.nodeGroupCount, 2, 'G1 and G4 stay local');
  });

  it("a seed is never refused for the node's limit: the switch holds its group already", () => {
    const remote = new RemoteMembers({ peers: [P1], timeoutMs: TIMEOUT, maxGroupsPerPeer: 100, maxGroups: () => 1 });
    remote.setLocal(G1, true);
    assert.deepEqual(remote.seed(P1, G2, 50_000), [effect(G2, [P1])]);
    assert.equal(remote.nodeGroupCount, 2);
    assert.equal(remote.refused, 0);
    // Confirmed by the peer, it stays; a new group is refused.
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_EXCLUDE', G2)], 1_000), []);
    assert.deepEqual(remote.peersOf(G2), [P1]);
    assert.deepEqual(remote.apply(P1, [record('MODE_IS_EXCLUDE', groupAddress('239.1.1.9'))], 1_000), []);
    assert.equal(remote.refused, 1);
  });

  it('view shows peers and groups sorted, with contact, refresh and time left', () => {
    const remote = members();
    remote.apply(P2, [record('MODE_IS_EXCLUDE', G2)], 1_000);
    remote.apply(P1, [record('MODE_IS_EXCLUDE', G2), record('MODE_IS_EXCLUDE', G1)], 2_000);
    assert.deepEqual(remote.view(100_000), {
      peers: [
        { address: P3, state: 'unknown', lastContact: null, members: 0 },
        { address: P1, state: 'down', lastContact: 2_000, members: 2 },
        { address: P2, state: 'down', lastContact: 1_000, members: 1 },
      ],
      groups: [
        { group: G1, members: [{ peer: P1, lastRefresh: 2_000, expiresInMs: 0 }] },
        {
          group: G2,
          members: [
            { peer: P1, lastRefresh: 2_000, expiresInMs: 0 },
            { peer: P2, lastRefresh: 1_000, expiresInMs: 0 },
          ],
        },
      ],
    });
    assert.equal(remote.view(3_000).groups[0]!.members[0]!.expiresInMs, 69_000);
  });

  it('stays bounded when a peer flaps a group, and expires correctly after many refreshes', () => {
    const remote = members();
    for (let at = 0; at < 10_000; at++) {
      remote.apply(P1, [record('CHANGE_TO_EXCLUDE_MODE', G1)], at);
      remote.apply(P1, [record('CHANGE_TO_INCLUDE_MODE', G1)], at);
      remote.apply(P2, [record('MODE_IS_EXCLUDE', G2)], at);
    }
    assert.deepEqual(remote.peersOf(G1), []);
    assert.equal(remote.nextDeadline(), 9_999 + TIMEOUT);
    assert.deepEqual(remote.expire(9_998 + TIMEOUT), []);
    assert.deepEqual(remote.expire(9_999 + TIMEOUT), [effect(G2, [])]);
  });

  it('a reload that shortens the timeout takes effect from the next refresh', () => {
    const remote = members();
    remote.apply(P1, [record('MODE_IS_EXCLUDE', G1)], 0);
    remote.reconfigure({ timeoutMs: 5_000, maxGroupsPerPeer: 100 });
    assert.equal(remote.nextDeadline(), TIMEOUT, 'what a record gave stands');
    remote.apply(P1, [record('MODE_IS_EXCLUDE', G1)], 1_000);
    assert.equal(remote.nextDeadline(), 6_000);
    assert.deepEqual(remote.expire(6_000), [effect(G1, [])]);
    assert.equal(remote.nextDeadline(), undefined, 'the older node is dropped, not expired again');
    assert.equal(remote.stateOf(P1, 6_000), 'down');
  });

  it('isPeer: the configured peers only', () => {
    const remote = members();
    assert.equal(remote.isPeer(P1), true);
    assert.equal(remote.isPeer(hostAddress('192.168.60.99')), false);
  });
});
