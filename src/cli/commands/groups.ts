/** `mcastctl groups`: who is in which multicast group, as the running daemon has learned it. */
import type { Command } from 'commander';
import { ControlClient, DEFAULT_CONTROL_SOCKET } from '../../transport/control/control-client.js';
import type { DaemonStatus, GroupView, IgmpRefusals, TrafficStatsView } from '../../transport/control/daemon-view.js';
import { quoteInput, UsageError } from '../../errors.js';
import { parseGroupAddress } from '../../wire/ip-address.js';
import { parseControlSocket } from '../../transport/control/socket-path.js';
import { Output } from '../render/output.js';
import { sourceReceiverLines } from '../render/group-sources.js';
import { printPodTraffic } from '../render/pod-traffic.js';
import { printClusterGroups } from '../render/cluster-groups.js';
import { type ClusterView, clusterViewOf } from '../../transport/control/cluster-view.js';
import { describePortView, describeRefusals, formatDuration } from './status.js';

interface GroupsFlags {
  controlSocket: string;
  json?: boolean;
  stats?: boolean;
  cluster?: boolean;
}

export function registerGroups(program: Command): void {
  program
    .command('groups')
    .summary('list the multicast groups and members the running daemon has learned')
    .description(
      'Ask the running daemon (over its control socket) for its group state: each group with its member ports (and pods), the reporting hosts, their IGMP version, source filter, when they last reported and when they expire unless they report again, and in tunnel mode the peers (other nodes) with members; then the IGMP it refused (limits, group policy, spoofing), by reason and port. Needs root (the control socket is root-only).',
    )
    .argument('[group]', 'only this group (an IPv4 or IPv6 multicast address)')
    .option(
      '--control-socket <path>',
      "the daemon's control socket (a path; relative to the working directory)",
      parseControlSocket,
      DEFAULT_CONTROL_SOCKET,
    )
    .option(
      '--json',
      'print one JSON document (an array of groups; with --stats, the traffic counters; with --cluster, the cluster view)',
    )
    .option(
      '--stats',
      "what each pod received from and sent to each group, from OVS's counters (sent only with the daemon's trafficCounters on)",
    )
    .option(
      '--cluster',
      'tunnel mode: each group across the nodes, the peers with members (their state, last report, expiry) and the local pods',
    )
    .addHelpText(
      'after',
      '\nExit status: 0 done (also when the group has no members); 64 bad group or --control-socket, or --cluster on a daemon not in tunnel mode; 69 the daemon is not reachable; 77 not root. See mcastctl-groups(1).',
    )
    .action(async (group: string | undefined, flags: GroupsFlags) => {
      const output = new Output({ json: flags.json === true });
      // The daemon names groups in canonical text (RFC 5952 for IPv6): compare in it.
      const only = group === undefined ? undefined : parseGroupAddress(group);
      if (group !== undefined && only === undefined) {
        throw new UsageError(`${quoteInput(group)} is not a multicast address (224.0.0.0/4 or ff00::/8)`, {
          code: 'bad-address',
        });
      }
      if (flags.stats === true && flags.cluster === true) throw new UsageError('give --stats or --cluster, not both');
      if (flags.stats === true) {
        await printStats({ socket: flags.controlSocket, output, ...(only === undefined ? {} : { only }) });
        return;
      }
      if (flags.cluster === true) {
        await printCluster({ socket: flags.controlSocket, output, ...(only === undefined ? {} : { only }) });
        return;
      }
      const client = await ControlClient.connect(flags.controlSocket);
      let groups: GroupView[];
      let refused: IgmpRefusals | undefined;
      try {
        groups = await client.request<GroupView[]>('groups');
        // For the human view of every group, a last line: the IGMP the daemon refused (the JSON stays the array of
        // groups).
        if (!output.json && group === undefined) refused = (await client.request<DaemonStatus>('status')).igmpRefused;
      } finally {
        client.close();
      }
      if (only !== undefined) groups = groups.filter((view) => view.group === only);
      if (output.json) {
        output.document(groups);
        return;
      }
      printGroups(groups, output, Date.now(), only);
      if (refused !== undefined) output.line(`IGMP refused: ${describeRefusals(refused, output.style)}`);
      output.flush();
    });
}

/** `groups --stats`: the daemon reads the counters from the switch when asked. */
async function printStats(options: { socket: string; output: Output; only?: string }): Promise<void> {
  const { output, only } = options;
  const client = await ControlClient.connect(options.socket);
  let stats: TrafficStatsView;
  try {
    stats = await client.request<TrafficStatsView>('stats');
  } finally {
    client.close();
  }
  if (only !== undefined) stats = { ...stats, entries: stats.entries.filter((entry) => entry.group === only) };
  if (output.json) {
    output.document(stats);
    return;
  }
  printPodTraffic(output, stats);
  output.flush();
}

/** `groups --cluster`: the groups and the status's peers, put together (cluster-view.ts). */
async function printCluster(options: { socket: string; output: Output; only?: string }): Promise<void> {
  const { output, only } = options;
  const client = await ControlClient.connect(options.socket);
  let view: ClusterView | undefined;
  try {
    const [status, groups] = await Promise.all([
      client.request<DaemonStatus>('status'),
      client.request<GroupView[]>('groups'),
    ]);
    view = clusterViewOf(status, groups);
  } finally {
    client.close();
  }
  if (view === undefined)
    throw new UsageError('the daemon is not in tunnel mode: it knows of no other node', {
      hint: '--cluster needs a daemon run with --tunnel-port and its peers (mcastctl-daemon(8), TUNNEL MODE)',
    });
  if (only !== undefined) view = { ...view, groups: view.groups.filter((entry) => entry.group === only) };
  if (output.json) {
    output.document(view);
    return;
  }
  printClusterGroups(view, output, Date.now(), only);
  output.flush();
}

function printGroups(groups: readonly GroupView[], output: Output, now: number, only?: string): void {
  const style = output.style;
  const remoteOf = (view: GroupView) => view.remoteMembers ?? [];
  if (
    groups.length === 0 ||
    groups.every((view) => view.members.length === 0 && view.ports.length === 0 && remoteOf(view).length === 0)
  ) {
    output.line(only === undefined ? 'no multicast group has members' : `${only}: no members`);
    return;
  }
  const rows: string[][] = [];
  for (const view of groups) {
    const groupCell = view.synced
      ? view.group
      : `${view.group}\n${style.red(view.error === undefined ? 'not synced yet' : `sync failed: ${view.error}`)}`;
    if (view.members.length === 0 && remoteOf(view).length === 0) {
      rows.push([groupCell, view.ports.map(describePortView).join('\n') || '-', '', '', '', '', '', '']);
      continue;
    }
    view.members.forEach((member, index) => {
      const filter =
        member.mode === 'exclude' && member.sources.length === 0
          ? 'any source'
          : `${member.mode.toUpperCase()} {${member.sources.join(', ')}}`;
      const expires =
        member.leavingUntil !== undefined
          ? style.yellow(`leaving, ${formatDuration(Date.parse(member.leavingUntil) - now)}`)
          : formatDuration(Date.parse(member.expiresAt) - now);
      rows.push([
        index === 0 ? groupCell : '',
        `${member.port.name} (${member.port.ofport})`,
        member.port.pod ?? '-',
        member.host,
        `v${member.compatibility}`,
        filter,
        `${formatDuration(now - Date.parse(member.lastReportAt))} ago`,
        expires,
      ]);
    });
    // A peer (another node) with members: its copies go into the tunnel; it reports as IGMPv3, for any source.
    remoteOf(view).forEach((remote, index) => {
      rows.push([
        index === 0 && view.members.length === 0 ? groupCell : '',
        'tunnel',
        'peer',
        remote.peer,
        'v3',
        'any source',
        remote.lastRefresh === null
          ? style.dim('restored')
          : `${formatDuration(now - Date.parse(remote.lastRefresh))} ago`,
        formatDuration(remote.expiresInMs),
      ]);
    });
  }
  output.table({ head: ['Group', 'Port', 'Pod', 'Host', 'Version', 'Filter', 'Last report', 'Expires in'], rows });
  for (const line of sourceReceiverLines(groups)) output.line(line);
  const members = groups.reduce((sum, view) => sum + view.members.length, 0);
  const remote = groups.reduce((sum, view) => sum + remoteOf(view).length, 0);
  const remotePart = groups.some((view) => view.remoteMembers !== undefined)
    ? `, ${remote} remote member${remote === 1 ? '' : 's'}`
    : '';
  output.line(
    `${groups.length} group${groups.length === 1 ? '' : 's'}, ${members} member${members === 1 ? '' : 's'}${remotePart}`,
  );
}
