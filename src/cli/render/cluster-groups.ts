/**
 * `groups --cluster`'s human output: one row per node with members of a group (this node
 * with its pods, each peer with its state, last report and expiry), then the peers' line.
 */
import type { ClusterView } from '../../transport/control/cluster-view.js';
import type { PeerView } from '../../transport/control/daemon-view.js';
import { formatDuration } from '../commands/status.js';
import type { Output } from './output.js';

export function printClusterGroups(view: ClusterView, output: Output, now: number, only?: string): void {
  const style = output.style;
  const state = (peer: PeerView['state']) =>
    peer === 'up' ? style.green('up') : peer === 'down' ? style.red('down') : style.yellow('unknown');
  if (view.groups.length === 0) {
    output.line(only === undefined ? 'no multicast group has members on any node' : `${only}: no members on any node`);
  } else {
    const rows = view.groups.flatMap(({ group, nodes }) =>
      nodes.map((entry, index) => {
        const groupCell = index === 0 ? group : '';
        if (entry.self) return [groupCell, `${entry.node} (this node)`, '', entry.pods.join('\n'), '', ''];
        return [
          groupCell,
          entry.node,
          state(entry.state),
          '',
          entry.lastReport === null
            ? style.dim('restored')
            : `${formatDuration(now - Date.parse(entry.lastReport))} ago`,
          formatDuration(entry.expiresInMs),
        ];
      }),
    );
    output.table({ head: ['Group', 'Node', 'State', 'Pods', 'Last report', 'Expires in'], rows });
  }
  const peers = view.peers.map(
    (peer) =>
      `${peer.address} ${state(peer.state)}${peer.lastContact === null ? ', never heard' : `, heard ${formatDuration(now - Date.parse(peer.lastContact))} ago`}`,
  );
  output.line(`peers of ${view.node}: ${peers.length === 0 ? 'none' : peers.join('; ')}`);
  const nodes = new Set(view.groups.flatMap(({ nodes }) => nodes.map((entry) => entry.node)));
  output.line(
    `${view.groups.length} group${view.groups.length === 1 ? '' : 's'} with members on ${nodes.size} node${nodes.size === 1 ? '' : 's'}`,
  );
}
