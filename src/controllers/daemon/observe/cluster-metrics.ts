/**
 * Tunnel mode's view of the cluster in the metrics, read from the status and groups views
 * at each scrape: whether each peer is up, and which peers are members of which group (the
 * series of `mcastctl groups --cluster`). The group and peer pairs are bounded: at most
 * CLUSTER_MEMBER_SERIES series, the groups taken in address order; the pairs left out are
 * counted in a gauge of their own, so that a dashboard knows the list is partial.
 */
import { Gauge, type Registry } from 'prom-client';
import type { DaemonView } from '../../../transport/control/daemon-view.js';
import { compareAddresses } from '../../../wire/ip-address.js';

/** The most (group, peer) series a scrape shows: a few peers times the groups a dashboard can use. */
export const CLUSTER_MEMBER_SERIES = 1024;

export function registerClusterMetrics(view: DaemonView, registers: Registry[]): void {
  new Gauge({
    name: 'mcastctl_peer_up',
    help: 'Tunnel mode: 1 for a peer (another node) heard within the peer timeout, 0 for one silent longer or never heard, by peer.',
    labelNames: ['peer'],
    registers,
    collect() {
      this.reset();
      for (const peer of view.status().tunnel?.peers ?? [])
        this.set({ peer: peer.address }, peer.state === 'up' ? 1 : 0);
    },
  });
  let uncounted = 0;
  new Gauge({
    name: 'mcastctl_peer_group_member',
    help: `Tunnel mode: 1 for each peer with members of a group, by group and peer (at most ${CLUSTER_MEMBER_SERIES} series, the groups in address order).`,
    labelNames: ['group', 'peer'],
    registers,
    collect() {
      this.reset();
      uncounted = 0;
      if (view.status().tunnel === undefined) return;
      let series = 0;
      for (const group of [...view.groups()].sort((a, b) => compareAddresses(a.group, b.group))) {
        for (const member of group.remoteMembers ?? []) {
          if (series < CLUSTER_MEMBER_SERIES) {
            this.set({ group: group.group, peer: member.peer }, 1);
            series++;
          } else {
            uncounted++;
          }
        }
      }
    },
  });
  new Gauge({
    name: 'mcastctl_peer_group_member_uncounted',
    help: 'Tunnel mode: (group, peer) memberships past the series limit of mcastctl_peer_group_member, left out of it.',
    registers,
    collect() {
      this.set(uncounted);
    },
  });
}
