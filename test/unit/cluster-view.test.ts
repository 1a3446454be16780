/** `groups --cluster`: the cluster view put together from the status and groups views, and its human lines. */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { clusterViewOf } from '../../src/transport/control/cluster-view.js';
import type { GroupView, TunnelView } from '../../src/transport/control/daemon-view.js';
import { printClusterGroups } from '../../src/cli/render/cluster-groups.js';
import { Output } from '../../src/cli/render/output.js';
import { NO_SEAL_DROPS, sampleGroups, sampleStatus } from '../helpers/fake-daemon-view.js';

const NOW = Date.parse('2026-12-07T10:00:00.000Z');
const iso = (offsetMs: number) => new Date(NOW + offsetMs).toISOString();

const TUNNEL: TunnelView = {
  port: 'tun0',
  ofport: 9,
  nodeAddress: '192.168.60.13',
  peers: [
    { address: '192.168.60.12', state: 'up', lastContact: iso(-1000), members: 1 },
    { address: '192.168.60.11', state: 'down', lastContact: iso(-40_000), members: 1 },
    { address: '192.168.60.14', state: 'unknown', lastContact: null, members: 0 },
  ],
  drops: {
    'unknown-peer': 0,
    self: 0,
    rate: 0,
    unsupported: 0,
    malformed: 0,
    refused: 0,
    ...NO_SEAL_DROPS,
    'over-rate': 0,
  },
};

/** 239.1.2.3 with two local pods and both peers; 232.1.1.1 local only; 239.9.9.9 peer 2 only; 239.0.0.7 nobody. */
function groups(): GroupView[] {
  const [shared, local] = sampleGroups(NOW) as [GroupView, GroupView];
  return [
    {
      ...shared,
      remoteMembers: [
        { peer: '192.168.60.12', lastRefresh: iso(-2000), expiresInMs: 3000 },
        { peer: '192.168.60.11', lastRefresh: null, expiresInMs: 1000 },
      ],
    },
    local,
    {
      group: '239.9.9.9',
      ports: [],
      members: [],
      synced: true,
      remoteMembers: [{ peer: '192.168.60.12', lastRefresh: iso(-500), expiresInMs: 4500 }],
    },
    { group: '239.0.0.7', ports: [], members: [], synced: true, remoteMembers: [] },
  ];
}

describe('clusterViewOf', () => {
  it('each group with this node (its pods) first, then its peers by address, with their state; peers sorted', () => {
    const view = clusterViewOf(sampleStatus({ tunnel: TUNNEL }), groups());
    assert.deepEqual(view, {
      node: '192.168.60.13',
      peers: [TUNNEL.peers[1], TUNNEL.peers[0], TUNNEL.peers[2]],
      groups: [
        { group: '232.1.1.1', nodes: [{ node: '192.168.60.13', self: true, pods: ['default/pod-a'] }] },
        {
          group: '239.1.2.3',
          nodes: [
            { node: '192.168.60.13', self: true, pods: ['default/pod-a', 'default/pod-b'] },
            { node: '192.168.60.11', self: false, state: 'down', lastReport: null, expiresInMs: 1000 },
            { node: '192.168.60.12', self: false, state: 'up', lastReport: iso(-2000), expiresInMs: 3000 },
          ],
        },
        {
          group: '239.9.9.9',
          nodes: [{ node: '192.168.60.12', self: false, state: 'up', lastReport: iso(-500), expiresInMs: 4500 }],
        },
      ],
    });
  });

  it('a port that names no pod is shown by its name', () => {
    const [shared] = groups() as [GroupView];
    const bare = { ...shared, members: [{ ...shared.members[0]!, port: { ofport: 7, name: 'veth-x' } }] };
    const view = clusterViewOf(sampleStatus({ tunnel: TUNNEL }), [bare]);
    assert.deepEqual(view?.groups[0]?.nodes[0], { node: '192.168.60.13', self: true, pods: ['veth-x'] });
  });

  it('undefined when the daemon is not in tunnel mode', () => {
    assert.equal(clusterViewOf(sampleStatus(), groups()), undefined);
  });
});

describe('printClusterGroups', () => {
  const printed = (only?: string, every = groups()): string => {
    const chunks: string[] = [];
    const output = new Output({ json: false, stdout: { write: (chunk: string) => chunks.push(chunk) }, env: {} });
    const view = clusterViewOf(sampleStatus({ tunnel: TUNNEL }), every)!;
    printClusterGroups(
      only === undefined ? view : { ...view, groups: view.groups.filter((entry) => entry.group === only) },
      output,
      NOW,
      only,
    );
    output.flush();
    return chunks.join('');
  };

  it('a row per node, the peers with state, last report and expiry; then the peers and the count', () => {
    const text = printed();
    assert.match(text, /192\.168\.60\.13 \(this node\)/);
    assert.match(text, /default\/pod-a/);
    assert.match(text, /192\.168\.60\.11 +│ down +│ +│ restored +│ 1\.0s/);
    assert.match(text, /192\.168\.60\.12 +│ up +│ +│ 2\.0s ago +│ 3\.0s/);
    assert.match(
      text,
      /peers of 192\.168\.60\.13: 192\.168\.60\.11 down, heard 40s ago; 192\.168\.60\.12 up, heard 1\.0s ago; 192\.168\.60\.14 unknown, never heard/,
    );
    assert.match(text, /3 groups with members on 3 nodes\n$/);
  });

  it('a group with no member anywhere says so', () => {
    assert.match(printed('239.0.0.7'), /^239\.0\.0\.7: no members on any node\n/);
  });
});
