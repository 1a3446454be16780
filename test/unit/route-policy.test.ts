/** The route policy: decisions from upcalls, memberships and counters, with an injected clock. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { RoutePolicy } from '../../src/domain/route-policy.js';
import { groupAddress, sourceAddress } from '../../src/wire/ip-address.js';
import { parseIpPrefix, type IpPrefix } from '../../src/domain/policy/ip-prefix.js';

function prefix(text: string): IpPrefix {
  const parsed = parseIpPrefix(text);
  if (!parsed.ok) throw new Error(parsed.reason);
  return parsed.prefix;
}

function policy(now: { value: number }) {
  return new RoutePolicy({ gatewayVif: 0, uplinkVifs: [1, 2], idleTimeoutMs: 60_000, clock: () => now.value });
}

describe('RoutePolicy', () => {
  it('outbound: from the gateway to every multicast interface, members or not', () => {
    const decision = policy({ value: 0 }).onNoCache(
      { vif: 0, source: sourceAddress('10.1.0.11'), group: groupAddress('239.1.2.3') },
      false,
    );
    assert.deepEqual(decision, {
      action: 'add',
      source: sourceAddress('10.1.0.11'),
      group: groupAddress('239.1.2.3'),
      iif: 0,
      oifs: [1, 2],
    });
  });
  it('inbound: from a multicast interface to the gateway only while the group has local members, else to nowhere', () => {
    const p = policy({ value: 0 });
    assert.deepEqual(
      p.onNoCache({ vif: 2, source: sourceAddress('192.0.2.9'), group: groupAddress('239.1.2.3') }, true),
      {
        action: 'add',
        source: sourceAddress('192.0.2.9'),
        group: groupAddress('239.1.2.3'),
        iif: 2,
        oifs: [0],
      },
    );
    assert.deepEqual(
      p.onNoCache({ vif: 2, source: sourceAddress('192.0.2.9'), group: groupAddress('239.9.9.9') }, false),
      {
        action: 'add',
        source: sourceAddress('192.0.2.9'),
        group: groupAddress('239.9.9.9'),
        iif: 2,
        oifs: [],
      },
    );
    assert.deepEqual(p.inboundOifs(sourceAddress('192.168.50.100'), true), [0]);
    assert.equal(p.isInbound(2), true);
    assert.equal(p.isInbound(0), false);
  });
  it('tunnelled sources (the cluster pods): routed out from the gateway, never in from an uplink, members or not', () => {
    const p = new RoutePolicy({
      gatewayVif: 0,
      uplinkVifs: [1],
      idleTimeoutMs: 60_000,
      tunnelledSources: [prefix('10.20.0.0/16'), prefix('10.99.1.0/24')],
      clock: () => 0,
    });
    const group = groupAddress('239.1.2.3');
    const inbound = (source: string) => p.onNoCache({ vif: 1, source: sourceAddress(source), group }, true);
    assert.deepEqual(inbound('10.20.2.11'), {
      action: 'add',
      source: sourceAddress('10.20.2.11'),
      group,
      iif: 1,
      oifs: [],
    });
    assert.deepEqual(inbound('10.99.1.255'), {
      action: 'add',
      source: sourceAddress('10.99.1.255'),
      group,
      iif: 1,
      oifs: [],
    });
    // Just outside either block: an outside source, to the gateway as ever.
    assert.deepEqual(inbound('10.21.0.1'), {
      action: 'add',
      source: sourceAddress('10.21.0.1'),
      group,
      iif: 1,
      oifs: [0],
    });
    assert.deepEqual(inbound('10.99.2.0'), {
      action: 'add',
      source: sourceAddress('10.99.2.0'),
      group,
      iif: 1,
      oifs: [0],
    });
    assert.deepEqual(p.inboundOifs(sourceAddress('10.20.9.9'), true), []);
    // A local pod's own traffic (from the gateway) still goes out of the uplinks.
    assert.deepEqual(p.onNoCache({ vif: 0, source: sourceAddress('10.20.1.11'), group }, false), {
      action: 'add',
      source: sourceAddress('10.20.1.11'),
      group,
      iif: 0,
      oifs: [1],
    });
  });
  it('tunnelled IPv6 sources: a block of the cluster keeps its sources from being routed in, an IPv4 block says nothing of IPv6', () => {
    const p = new RoutePolicy({
      gatewayVif: 0,
      uplinkVifs: [1],
      idleTimeoutMs: 60_000,
      tunnelledSources: [prefix('10.20.0.0/16'), prefix('fd20::/16')],
      clock: () => 0,
    });
    const group = groupAddress('ff1e::1');
    const inbound = (source: string) => p.onNoCache({ vif: 1, source: sourceAddress(source), group }, true);
    assert.deepEqual(inbound('fd20:2::b'), {
      action: 'add',
      source: sourceAddress('fd20:2::b'),
      group,
      iif: 1,
      oifs: [],
    });
    assert.deepEqual(inbound('fd21::b'), { action: 'add', source: sourceAddress('fd21::b'), group, iif: 1, oifs: [0] });
    // 10.20.0.0/16's point on the line is IPv4's: the IPv6 address that embeds it is outside.
    assert.deepEqual(p.inboundOifs(sourceAddress('::ffff:10.20.1.1'), true), [0]);
    assert.equal(p.isTunnelled(sourceAddress('fd20:0:ffff::1')), true);
  });
  it('ignores a VIF that is neither gateway nor uplink, and refuses a gateway that is also an uplink', () => {
    assert.equal(
      policy({ value: 0 }).onNoCache(
        { vif: 7, source: sourceAddress('10.1.0.11'), group: groupAddress('239.1.2.3') },
        true,
      ).action,
      'ignore',
    );
    assert.throws(
      () => new RoutePolicy({ gatewayVif: 1, uplinkVifs: [1], idleTimeoutMs: 1, clock: () => 0 }),
      RangeError,
    );
  });
  it('removes an entry whose packet count has not moved for the idle time, and only that one', () => {
    const now = { value: 0 };
    const p = policy(now);
    p.onNoCache({ vif: 0, source: sourceAddress('10.1.0.11'), group: groupAddress('239.1.2.3') }, false);
    p.onNoCache({ vif: 0, source: sourceAddress('10.1.0.12'), group: groupAddress('239.1.2.3') }, false);
    const counters = (a: number, b: number) => [
      { source: sourceAddress('10.1.0.11'), group: groupAddress('239.1.2.3'), packets: a },
      { source: sourceAddress('10.1.0.12'), group: groupAddress('239.1.2.3'), packets: b },
    ];
    now.value = 30_000;
    assert.deepEqual(p.expireIdle(counters(5, 0)), []);
    now.value = 60_000; // the second has not moved for 60 s; the first moved at 30 s
    assert.deepEqual(p.expireIdle(counters(5, 0)), [
      { source: sourceAddress('10.1.0.12'), group: groupAddress('239.1.2.3') },
    ]);
    now.value = 89_999;
    assert.deepEqual(p.expireIdle(counters(5, 0).slice(0, 1)), []);
    now.value = 90_000;
    assert.deepEqual(p.expireIdle(counters(5, 0).slice(0, 1)), [
      { source: sourceAddress('10.1.0.11'), group: groupAddress('239.1.2.3') },
    ]);
  });
});
