/** `mcastctl status`: what the running daemon is doing, read over its control socket. */
import type { Command } from 'commander';
import { ControlClient, DEFAULT_CONTROL_SOCKET } from '../../transport/control/control-client.js';
import type {
  DaemonStatus,
  GroupPolicyView,
  QuerierView,
  IgmpMeterView,
  IgmpRefusals,
  PeerView,
  PortView,
  TunnelView,
} from '../../transport/control/daemon-view.js';
import { parseControlSocket } from '../../transport/control/socket-path.js';
import { Output } from '../render/output.js';

interface StatusFlags {
  controlSocket: string;
  json?: boolean;
}

export function registerStatus(program: Command): void {
  program
    .command('status')
    .summary('show what the running mcastctl daemon is doing')
    .description(
      'Ask the running daemon (over its control socket) for its state: its OVS connections, whether it routes multicast in the kernel, how many pod ports, groups, members and routes it has, in tunnel mode its peers with their state, last contact and drops, and its counters since it started. Needs root (the control socket is root-only).',
    )
    .option(
      '--control-socket <path>',
      "the daemon's control socket (a path; relative to the working directory)",
      parseControlSocket,
      DEFAULT_CONTROL_SOCKET,
    )
    .option('--json', 'print one JSON document')
    .addHelpText(
      'after',
      '\nExit status: 0 done; 64 bad --control-socket; 69 the daemon is not reachable; 77 not root. See mcastctl-status(1).',
    )
    .action(async (flags: StatusFlags) => {
      const output = new Output({ json: flags.json === true });
      const client = await ControlClient.connect(flags.controlSocket);
      let status: DaemonStatus;
      try {
        status = await client.request<DaemonStatus>('status');
      } finally {
        client.close();
      }
      if (output.json) {
        output.document(status);
        return;
      }
      printStatus(status, output);
      output.flush();
    });
}

function printStatus(status: DaemonStatus, output: Output): void {
  const style = output.style;
  const state = (value: 'connected' | 'disconnected') =>
    value === 'connected' ? style.green(value) : style.red(value);
  const counters = status.counters;
  const igmp = Object.entries(counters.igmpMessages)
    .filter(([, count]) => count > 0)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([type, count]) => `${type} ${count}`)
    .join(', ');
  const routing = status.mrouteActive
    ? `${style.green('active')}${status.multicastInterfaces.length > 0 ? `, interfaces ${status.multicastInterfaces.join(', ')}` : ''}${status.gateway === undefined ? '' : `, gateway ${describePortView(status.gateway)}`}`
    : style.dim('off (no --multicast-interfaces or --gateway)');
  const lines: Array<[string, string]> = [
    [
      'daemon',
      `mcastctl ${status.version}, pid ${status.pid}, up ${formatDuration(status.uptimeSeconds * 1000)} (since ${status.startedAt})`,
    ],
    ['bridge', status.bridge],
    ['openflow', state(status.openflow)],
    ['ovsdb', state(status.ovsdb)],
    ['kernel routing', routing],
    ['pod ports', String(status.podPorts)],
    ['groups', `${status.groups} (${status.members} member${status.members === 1 ? '' : 's'})`],
    ['pending syncs', status.pendingSyncs > 0 ? style.yellow(String(status.pendingSyncs)) : '0'],
    ['routes', String(status.routes)],
    ['packet-ins', String(counters.packetIns)],
    ['IGMP messages', igmp === '' ? '0' : igmp],
    ['ignored (not pod)', String(counters.ignoredNonPod)],
    ...(status.igmpRefused === undefined
      ? []
      : [['IGMP refused', describeRefusals(status.igmpRefused, style)] as [string, string]]),
    ...(status.igmpMeter === undefined
      ? []
      : [['IGMP meters', describeMeters(status.igmpMeter, style)] as [string, string]]),
    ...(status.groupPolicy === undefined
      ? []
      : [['group policy', describePolicy(status.groupPolicy, style)] as [string, string]]),
    ...(status.tunnel === undefined ? [] : tunnelLines(status.tunnel, style, Date.now())),
    [
      'syncs',
      `${counters.syncs}${counters.syncErrors > 0 ? style.red(` (${counters.syncErrors} failed)`) : ' (0 failed)'}`,
    ],
    ['replays', String(counters.replays)],
    ['queries sent', String(counters.queriesSent)],
    ...(status.querier === undefined ? [] : [['querier', describeQuerier(status.querier)] as [string, string]]),
    ['state dir', status.stateDir],
    ['control socket', status.controlSocket],
    ['metrics', status.metricsAddress === undefined ? style.dim('off') : `http://${status.metricsAddress}/metrics`],
  ];
  const width = Math.max(...lines.map(([key]) => key.length)) + 1;
  for (const [key, value] of lines) output.line(`${`${key}:`.padEnd(width)}  ${value}`);
}

/**
 * `tun0 (7), node 192.168.60.11, 2 peers (1 up, 1 down); dropped unknown-peer 3`, the peer keys, then a line per peer
 * (with its own drops).
 */
function tunnelLines(tunnel: TunnelView, style: Output['style'], now: number): Array<[string, string]> {
  const dropped = (counts: Partial<Record<string, number>>): string[] =>
    Object.entries(counts)
      .filter(([, count]) => (count ?? 0) > 0)
      .map(([reason, count]) => `${reason} ${count}`);
  const byState = (['up', 'down', 'unknown'] as const)
    .map((state) => [state, tunnel.peers.filter((peer) => peer.state === state).length] as const)
    .filter(([, count]) => count > 0)
    .map(([state, count]) => `${count} ${state}`);
  const drops = dropped(tunnel.drops);
  const absent = tunnel.portProblem === undefined ? 'not on the bridge' : `unusable: ${tunnel.portProblem}`;
  const port = `${tunnel.port} (${tunnel.ofport ?? style.red(absent)})`;
  const peers = `${tunnel.peers.length} peer${tunnel.peers.length === 1 ? '' : 's'}${byState.length === 0 ? '' : ` (${byState.join(', ')})`}`;
  const head: [string, string] = [
    'tunnel',
    `${port}, node ${tunnel.nodeAddress}, ${peers}; ${drops.length === 0 ? '0 dropped' : style.yellow(`dropped ${drops.join(', ')}`)}`,
  ];
  const state = { up: style.green('up'), down: style.red('down'), unknown: style.dim('unknown') };
  const { authentication } = tunnel;
  const keys: [string, string] = [
    'peer keys',
    authentication === undefined || authentication === 'address'
      ? style.yellow('none: peers are believed by address alone')
      : `${authentication.keys[0]} seals${authentication.keys.length > 1 ? `, ${authentication.keys.slice(1).join(', ')} opens too` : ''} (${authentication.keyFile})`,
  ];
  return [
    head,
    keys,
    ...tunnel.peers.map((peer: PeerView): [string, string] => {
      const contact =
        peer.lastContact === null
          ? 'never heard from'
          : `last contact ${formatDuration(now - Date.parse(peer.lastContact))} ago`;
      const peerDrops = dropped(peer.drops ?? {});
      const drop = peerDrops.length === 0 ? '' : `; ${style.yellow(`dropped ${peerDrops.join(', ')}`)}`;
      return [
        `peer ${peer.address}`,
        `${state[peer.state]}, ${contact}, ${peer.members} group${peer.members === 1 ? '' : 's'}${drop}`,
      ];
    }),
  ];
}

/** `port-groups 3, spoofed 2 (veth-a (5) 4, veth-b (6) 1)`: the reasons, then the ports with their totals. */
export function describeRefusals(refused: IgmpRefusals, style: Output['style']): string {
  const counts = (record: Record<string, number>) => Object.entries(record).filter(([, count]) => count > 0);
  const reasons = counts(refused.total).map(([reason, count]) => `${reason} ${count}`);
  if (reasons.length === 0) return '0';
  const ports = refused.byPort.map(
    ({ port, counts: byReason }) =>
      `${describePortView(port)} ${counts(byReason).reduce((sum, [, count]) => sum + count, 0)}`,
  );
  return style.yellow(reasons.join(', ')) + (ports.length === 0 ? '' : ` (${ports.join(', ')})`);
}

/** `200/s, burst 1000, on 5 ports; 1234 dropped (veth-a (5) 1234)`, or off. */
function describeMeters(meters: IgmpMeterView, style: Output['style']): string {
  if (!meters.enabled) return style.dim('off');
  const head = `${meters.ratePerSecond}/s, burst ${meters.burst}, on ${meters.meteredPorts} port${meters.meteredPorts === 1 ? '' : 's'}`;
  if (meters.dropped === 0) return `${head}; 0 dropped`;
  const ports = meters.byPort
    .filter((entry) => entry.dropped > 0)
    .map((entry) => `${describePortView(entry.port)} ${entry.dropped}`);
  return `${head}; ${style.yellow(`${meters.dropped} dropped`)} (${ports.join(', ')})`;
}

/** `/etc/mcastctl/policy.yaml: 4 rules, read 2026-12-01T15:00:00.000Z; 2 ports denied sending`, or none. */
function describePolicy(policy: GroupPolicyView, style: Output['style']): string {
  if (policy.file === undefined) return style.dim('none (every pod may join and send to every group)');
  const capped = policy.portsSendCapped ?? 0;
  const sending =
    (policy.portsDeniedSending === 0
      ? ''
      : `; ${policy.portsDeniedSending} port${policy.portsDeniedSending === 1 ? '' : 's'} denied sending`) +
    (capped === 0 ? '' : style.yellow(` (${capped} past maxSendDenyRanges: link-local groups only)`));
  return `${policy.file}: ${policy.rules} rule${policy.rules === 1 ? '' : 's'}, read ${policy.loadedAt}${sending}`;
}

export function describePortView(port: PortView): string {
  return `${port.name} (${port.ofport})${port.pod === undefined ? '' : ` ${port.pod}`}`;
}

/** "45s", "4m12s", "2h03m", "3d04h": for ages, uptimes and timers. */
export function formatDuration(ms: number): string {
  const seconds = Math.max(0, Math.round(ms / 1000));
  if (seconds < 60) return ms > 0 && ms < 10_000 ? `${(Math.max(0, ms) / 1000).toFixed(1)}s` : `${seconds}s`;
  const pad = (value: number) => String(value).padStart(2, '0');
  if (seconds < 3600) return `${Math.floor(seconds / 60)}m${pad(seconds % 60)}s`;
  if (seconds < 86_400) return `${Math.floor(seconds / 3600)}h${pad(Math.floor((seconds % 3600) / 60))}m`;
  return `${Math.floor(seconds / 86_400)}d${pad(Math.floor((seconds % 86_400) / 3600))}h`;
}

/**
 * "election auto; other querier 10.0.0.9 (igmp) on veth-a (5), 243s more", or "election auto; the querier everywhere".
 */
function describeQuerier(querier: QuerierView): string {
  const others = querier.otherQueriers.map(
    (other) =>
      `other querier ${other.address} (${other.protocol}) on ${describePortView(other.port)}, ${formatDuration(other.expiresInMs)} more`,
  );
  const rest =
    querier.election === 'never'
      ? 'no general queries'
      : others.length > 0
        ? others.join('; ')
        : 'the querier on every pod port';
  return `election ${querier.election}; ${rest}`;
}
