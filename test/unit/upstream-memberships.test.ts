/**
 * UpstreamMemberships on injected sockets: which socket options go to the kernel for each
 * (group, uplink) as its filter is first set, changed, left and widened past
 * net.ipv4.igmp_max_msf. Each call is recorded as the option it stands for.
 */
import assert from 'node:assert/strict';
import { describe, test } from '../helpers/node-test.js';

import type { McastError } from '../../src/errors.js';
import type { SourceFilter } from '../../src/domain/membership/source-filter.js';
import {
  type MembershipSocket,
  UpstreamFilterWidened,
  UpstreamMemberships,
} from '../../src/adapters/upstream-memberships.js';
import { MrouteError } from '../../src/protocol/mroute/mroute-error.js';
import type { Membership, SourceFilterSetting, SourceMembership } from '../../src/transport/router-socket.js';
import { sourceAddress, type SourceAddress } from '../../src/wire/ip-address.js';

const GROUP = '232.1.1.1';
const UPLINK = 4;
const [S1, S2, S3] = ['10.0.0.1', '10.0.0.2', '10.0.0.3'].map(sourceAddress) as [
  SourceAddress,
  SourceAddress,
  SourceAddress,
];

function include(...sources: SourceAddress[]): SourceFilter {
  return { mode: 'include', sources: new Set(sources) };
}
function exclude(...sources: SourceAddress[]): SourceFilter {
  return { mode: 'exclude', sources: new Set(sources) };
}

class RecordingSocket implements MembershipSocket {
  readonly calls: string[] = [];
  /** The next calls of these options throw MrouteError with that errno. */
  readonly failNext = new Map<string, string>();
  closed = false;

  constructor(private readonly log: string[]) {}

  joinGroup(options: Membership): void {
    this.record('IP_ADD_MEMBERSHIP', `${options.group}@${options.ifindex}`);
  }
  leaveGroup(options: Membership): void {
    this.record('IP_DROP_MEMBERSHIP', `${options.group}@${options.ifindex}`);
  }
  joinSourceGroup(options: SourceMembership): void {
    this.record('MCAST_JOIN_SOURCE_GROUP', `${options.group}@${options.ifindex} ${options.source}`);
  }
  setSourceFilter(options: SourceFilterSetting): void {
    this.record('MCAST_MSFILTER', `${options.group}@${options.ifindex} ${options.mode} {${options.sources.join(',')}}`);
  }
  onError(_listener: (error: McastError) => void): void {}
  close(): void {
    this.closed = true;
  }

  private record(option: string, detail: string): void {
    const errno = this.failNext.get(option);
    if (errno !== undefined) {
      this.failNext.delete(option);
      throw new MrouteError(`${option}: ${errno}`, errno);
    }
    const call = `${option} ${detail}`;
    this.calls.push(call);
    this.log.push(call);
  }
}

function setup(options: { perSocket?: number; maxSources?: number } = {}) {
  const log: string[] = [];
  const sockets: RecordingSocket[] = [];
  const notices: McastError[] = [];
  const memberships = new UpstreamMemberships({
    perSocket: options.perSocket ?? 20,
    maxSources: options.maxSources ?? 10,
    onFailure: (error) => assert.fail(error.message),
    onError: (error) => notices.push(error),
    openSocket: () => {
      const socket = new RecordingSocket(log);
      sockets.push(socket);
      return socket;
    },
  });
  /** The calls since the last take. */
  const take = (): string[] => log.splice(0);
  return { memberships, sockets, notices, take };
}

describe('first join', () => {
  test('INCLUDE of one source: a source-specific join only, never a (*,G) membership', () => {
    const { memberships, take } = setup();
    memberships.join(GROUP, UPLINK, include(S1));
    assert.deepEqual(take(), [`MCAST_JOIN_SOURCE_GROUP ${GROUP}@4 10.0.0.1`]);
  });

  test('INCLUDE of more: the join with the first source, then one filter with all of them', () => {
    const { memberships, take } = setup();
    memberships.join(GROUP, UPLINK, include(S3, S1, S2));
    assert.deepEqual(take(), [
      `MCAST_JOIN_SOURCE_GROUP ${GROUP}@4 10.0.0.1`,
      `MCAST_MSFILTER ${GROUP}@4 include {10.0.0.1,10.0.0.2,10.0.0.3}`,
    ]);
  });

  test('any source (no filter, or EXCLUDE {}): IP_ADD_MEMBERSHIP only', () => {
    const { memberships, take } = setup();
    memberships.join(GROUP, UPLINK);
    memberships.join('239.1.1.1', UPLINK, exclude());
    assert.deepEqual(take(), [`IP_ADD_MEMBERSHIP ${GROUP}@4`, 'IP_ADD_MEMBERSHIP 239.1.1.1@4']);
  });

  test('EXCLUDE of some: IP_ADD_MEMBERSHIP, then the filter', () => {
    const { memberships, take } = setup();
    memberships.join(GROUP, UPLINK, exclude(S2));
    assert.deepEqual(take(), [`IP_ADD_MEMBERSHIP ${GROUP}@4`, `MCAST_MSFILTER ${GROUP}@4 exclude {10.0.0.2}`]);
  });

  test('the kernel per-socket limit reached sooner than counted: the join goes to another socket', () => {
    const { memberships, sockets, take } = setup();
    memberships.join('239.1.1.1', UPLINK);
    sockets[0]!.failNext.set('MCAST_JOIN_SOURCE_GROUP', 'ENOBUFS');
    memberships.join(GROUP, UPLINK, include(S1));
    assert.equal(sockets.length, 2);
    assert.deepEqual(sockets[1]!.calls, [`MCAST_JOIN_SOURCE_GROUP ${GROUP}@4 10.0.0.1`]);
    take();
    memberships.leave(GROUP, UPLINK);
    assert.deepEqual(sockets[1]!.calls.at(-1), `IP_DROP_MEMBERSHIP ${GROUP}@4`);
  });

  test('a filter refused after the join: the join is kept, a retry sends only the filter', () => {
    const { memberships, sockets, take } = setup();
    memberships.join('239.1.1.1', UPLINK);
    take();
    sockets[0]!.failNext.set('MCAST_MSFILTER', 'ENOBUFS');
    assert.throws(() => memberships.join(GROUP, UPLINK, include(S1, S2)), MrouteError);
    assert.deepEqual(take(), [`MCAST_JOIN_SOURCE_GROUP ${GROUP}@4 10.0.0.1`]);
    assert.deepEqual(memberships.filterOf(GROUP, UPLINK), include(S1));
    memberships.join(GROUP, UPLINK, include(S1, S2));
    assert.deepEqual(take(), [`MCAST_MSFILTER ${GROUP}@4 include {10.0.0.1,10.0.0.2}`]);
  });
});

describe('changes', () => {
  test('an unchanged filter sends nothing', () => {
    const { memberships, take } = setup();
    memberships.join(GROUP, UPLINK, include(S1, S2));
    take();
    memberships.join(GROUP, UPLINK, include(S2, S1));
    memberships.join('239.1.1.1', UPLINK);
    take();
    memberships.join('239.1.1.1', UPLINK);
    memberships.join('239.1.1.1', UPLINK, exclude());
    assert.deepEqual(take(), []);
  });

  test('a source added, or a mode change: one MSFILTER with the whole new filter', () => {
    const { memberships, take } = setup();
    memberships.join(GROUP, UPLINK, include(S1));
    take();
    memberships.join(GROUP, UPLINK, include(S1, S3));
    assert.deepEqual(take(), [`MCAST_MSFILTER ${GROUP}@4 include {10.0.0.1,10.0.0.3}`]);
    memberships.join(GROUP, UPLINK, exclude(S2));
    assert.deepEqual(take(), [`MCAST_MSFILTER ${GROUP}@4 exclude {10.0.0.2}`]);
    memberships.join(GROUP, UPLINK);
    assert.deepEqual(take(), [`MCAST_MSFILTER ${GROUP}@4 exclude {}`]);
    memberships.join(GROUP, UPLINK, include(S2));
    assert.deepEqual(take(), [`MCAST_MSFILTER ${GROUP}@4 include {10.0.0.2}`]);
  });

  test('leave: IP_DROP_MEMBERSHIP whatever the filter; a second leave sends nothing; a rejoin starts over', () => {
    const { memberships, take } = setup();
    memberships.join(GROUP, UPLINK, include(S1, S2));
    take();
    memberships.leave(GROUP, UPLINK);
    memberships.leave(GROUP, UPLINK);
    assert.deepEqual(take(), [`IP_DROP_MEMBERSHIP ${GROUP}@4`]);
    assert.equal(memberships.filterOf(GROUP, UPLINK), undefined);
    memberships.join(GROUP, UPLINK, include(S2));
    assert.deepEqual(take(), [`MCAST_JOIN_SOURCE_GROUP ${GROUP}@4 10.0.0.2`]);
  });

  test('a leave the kernel finds already done (EADDRNOTAVAIL) counts as done', () => {
    const { memberships, sockets, take } = setup();
    memberships.join(GROUP, UPLINK, include(S1));
    take();
    sockets[0]!.failNext.set('IP_DROP_MEMBERSHIP', 'EADDRNOTAVAIL');
    memberships.leave(GROUP, UPLINK);
    assert.equal(memberships.filterOf(GROUP, UPLINK), undefined);
  });

  test('each uplink has its own membership', () => {
    const { memberships, take } = setup();
    memberships.join(GROUP, 4, include(S1));
    memberships.join(GROUP, 5, include(S1));
    memberships.join(GROUP, 4, include(S1));
    assert.deepEqual(take(), [
      `MCAST_JOIN_SOURCE_GROUP ${GROUP}@4 10.0.0.1`,
      `MCAST_JOIN_SOURCE_GROUP ${GROUP}@5 10.0.0.1`,
    ]);
  });
});

describe('past net.ipv4.igmp_max_msf', () => {
  test('INCLUDE of too many becomes any source, told once per group with a stable reason', () => {
    const { memberships, notices, take } = setup({ maxSources: 2 });
    memberships.join(GROUP, 4, include(S1, S2, S3));
    memberships.join(GROUP, 5, include(S1, S2, S3));
    assert.deepEqual(take(), [`IP_ADD_MEMBERSHIP ${GROUP}@4`, `IP_ADD_MEMBERSHIP ${GROUP}@5`]);
    assert.equal(notices.length, 1);
    const notice = notices[0]!;
    assert.ok(notice instanceof UpstreamFilterWidened);
    assert.equal(notice.reason, 'upstream-filter-widened');
    assert.equal(notice.group, GROUP);
    assert.match(notice.message, /igmp_max_msf \(2\)/);
    // Still too many: nothing more is told or sent.
    memberships.join(GROUP, 4, include(S1, S2, S3));
    assert.equal(notices.length, 1);
    assert.deepEqual(take(), []);
  });

  test('EXCLUDE of too many excludes only the first ones; fitting again narrows it, and a new widening is told again', () => {
    const { memberships, notices, take } = setup({ maxSources: 2 });
    memberships.join(GROUP, UPLINK, exclude(S3, S2, S1));
    assert.deepEqual(take(), [`IP_ADD_MEMBERSHIP ${GROUP}@4`, `MCAST_MSFILTER ${GROUP}@4 exclude {10.0.0.1,10.0.0.2}`]);
    assert.equal(notices.length, 1);
    memberships.join(GROUP, UPLINK, include(S3));
    assert.deepEqual(take(), [`MCAST_MSFILTER ${GROUP}@4 include {10.0.0.3}`]);
    memberships.join(GROUP, UPLINK, include(S1, S2, S3));
    assert.deepEqual(take(), [`MCAST_MSFILTER ${GROUP}@4 exclude {}`]);
    assert.equal(notices.length, 2);
  });

  test('exactly at the cap is not widened', () => {
    const { memberships, notices, take } = setup({ maxSources: 2 });
    memberships.join(GROUP, UPLINK, include(S1, S2));
    assert.deepEqual(take(), [
      `MCAST_JOIN_SOURCE_GROUP ${GROUP}@4 10.0.0.1`,
      `MCAST_MSFILTER ${GROUP}@4 include {10.0.0.1,10.0.0.2}`,
    ]);
    assert.equal(notices.length, 0);
  });
});

test('close closes every socket', () => {
  const { memberships, sockets } = setup({ perSocket: 1 });
  memberships.join(GROUP, UPLINK, include(S1));
  memberships.join('239.1.1.1', UPLINK);
  assert.equal(sockets.length, 2);
  memberships.close();
  assert.ok(sockets.every((socket) => socket.closed));
});
