/** `mcastctl trace`: where does a group stop on its way to a pod? Every stage, in order, until the first that fails. */
import { Option, type Command } from 'commander';
import { BridgeClient } from '../../adapters/ovs/bridge-client.js';
import { ovsRundir } from '../../adapters/ovs/locations.js';
import { askDaemon, bridgeTraceSources } from '../../controllers/trace/trace-sources.js';
import type { TraceRequest } from '../../controllers/trace/trace-facts.js';
import { runTrace } from '../../controllers/trace/trace-run.js';
import { ExitCode, McastError, quoteInput, UsageError } from '../../errors.js';
import { DEFAULT_CONTROL_SOCKET } from '../../transport/control/control-client.js';
import { parseControlSocket } from '../../transport/control/socket-path.js';
import { addressFamily, parseGroupAddress, parseHostAddress, parseSourceAddress } from '../../wire/ip-address.js';
import { addOvsOptions, ovsSettings, type OvsFlags } from '../options/ovs-options.js';
import { Output } from '../render/output.js';
import { traceLines } from '../render/trace-lines.js';

interface TraceFlags extends OvsFlags {
  pod: string;
  source?: string;
  from?: string;
  fromAddress?: string;
  via?: 'gateway' | 'tunnel';
  gateway?: string;
  multicastInterfaces?: string[];
  controlSocket: string;
  /** Commander's --no-daemon: false when given. */
  daemon: boolean;
  json?: boolean;
}

/** A pod as CNI plugins name it in external_ids: `namespace/name`, or a bare name where no namespace was written. */
const POD_NAME = /^(?:[A-Za-z0-9][A-Za-z0-9._-]{0,252}\/)?[A-Za-z0-9][A-Za-z0-9._-]{0,252}$/;
/** Linux's: 1 to 15 bytes, no '/', ':' or whitespace. */
const INTERFACE_NAME = /^[^/:\s]{1,15}$/;

function parsePod(flag: string, text: string): string {
  if (!POD_NAME.test(text))
    throw new UsageError(`${flag} ${quoteInput(text)} is not a pod (namespace/name)`, { code: 'bad-address' });
  return text;
}

function parseInterfaces(text: string): string[] {
  const names = text.split(',').map((name) => name.trim());
  for (const name of names) {
    if (!INTERFACE_NAME.test(name) || name === '.' || name === '..') {
      throw new UsageError(`--multicast-interfaces: ${quoteInput(name)} is not an interface name`, {
        code: 'no-such-interface',
      });
    }
  }
  return names;
}

function parseInterface(text: string): string {
  if (!INTERFACE_NAME.test(text))
    throw new UsageError(`--gateway ${quoteInput(text)} is not an interface name`, { code: 'no-such-interface' });
  return text;
}

export function registerTrace(program: Command): void {
  const command = program
    .command('trace')
    .summary('follow a group to a pod through every stage, and say where it stops')
    .description(
      'Follow GROUP to the pod through every stage traffic and control meet, in order, and stop at the first that fails, saying what is wrong and what to do: ' +
        "1 the pod's port on the bridge (OVSDB); 2 its IGMP or MLD as the daemon heard it (reports of the group, refusals by a limit or the group policy, spoofing, silence); " +
        '3 its membership (filter mode and sources, whether it admits the source, when it expires); ' +
        "4 OVS: our flow and OVS group for the group, the pod's bucket in it, and OVS's own trace (ofproto/trace) of a datagram from the sender's port: does it output to the pod's port? " +
        '5 for a sender outside the node: kernel routing, the upstream join on the multicast interfaces, the (S,G) route in and its counters; ' +
        '6 for a pod sender: its send policy and the (S,G) route out. ' +
        'Stages 4 to 6 are followed for the sender --from, --from-address or --via names; without one, for every kind of sender the node can have: another pod on the node, other nodes through the tunnel (tunnel mode), hosts outside through the gateway (where the node routes multicast in). A kind the node does not carry is shown as not applicable, never as a failure, and the pod gets the group when one sender gets through. ' +
        'Without the daemon (not running, or --no-daemon), stages 2 and 3 are skipped and the rest still run. Run it on the node, as root.',
    )
    .argument('<group>', 'the multicast group (IPv4 or IPv6)')
    .requiredOption('--pod <namespace/name>', 'the pod that should receive the group', (text) =>
      parsePod('--pod', text),
    )
    .option('--source <address>', "the source to trace (default: the sender's address; else any source)")
    .option('--from <namespace/name>', 'the sender: a pod on this node', (text) => parsePod('--from', text))
    .option('--from-address <address>', "the sender: an address (a host outside the node, or a local pod's address)")
    .addOption(
      new Option(
        '--via <way>',
        'how a sender outside comes in; alone, the one sender followed (with --from-address, default: the gateway, else the tunnel)',
      ).choices(['gateway', 'tunnel']),
    )
    .option('--gateway <interface>', "the gateway port (default: the daemon's)", parseInterface)
    .option(
      '--multicast-interfaces <list>',
      "the interfaces to the outside network, comma-separated (default: the daemon's)",
      parseInterfaces,
    )
    .option(
      '--control-socket <path>',
      "the daemon's control socket (a path; relative to the working directory)",
      parseControlSocket,
      DEFAULT_CONTROL_SOCKET,
    )
    .option('--no-daemon', 'do not ask the daemon: the OVS and kernel stages only')
    .option('--json', 'print one JSON document (the stages and their facts)');
  addOvsOptions(command, { bridgeHelp: "the OVS bridge (default: the daemon's, else br-int)" }).addHelpText(
    'after',
    `
Exit status: 0 delivery would happen (from some sender the node carries, or the one named); 1 a stage blocks it (named in the output); 64 bad group, address, pod or flag; 69 OVS, or the daemon, is not reachable (the stages that could run are still shown); 77 not root.

Examples:
  mcastctl trace 239.1.2.3 --pod default/web-1                        (every sender the node carries)
  mcastctl trace 239.1.2.3 --pod default/web-1 --from default/feed-0
  mcastctl trace 232.1.1.1 --pod default/web-1 --from-address 192.168.50.100
See mcastctl-trace(1).`,
  );
  command.action(async (groupText: string, flags: TraceFlags) => {
    const output = new Output({ json: flags.json === true });
    const request = traceRequest(groupText, flags);
    const daemon = await askDaemon(flags.daemon ? flags.controlSocket : undefined);
    const status = daemon.state === 'reachable' ? daemon.facts.status : undefined;
    const { target, pipeline } = ovsSettings({
      ...flags,
      ...(flags.bridge === undefined && status !== undefined ? { bridge: status.bridge } : {}),
    });
    let bridge: BridgeClient;
    try {
      bridge = await BridgeClient.open(target, { pipeline });
    } catch (error) {
      if (daemon.state === 'reachable') daemon.close();
      throw error;
    }
    const sources = bridgeTraceSources({
      bridge,
      rundir: ovsRundir(flags),
      daemon: daemon.state === 'reachable' ? daemon.facts : undefined,
      daemonState: daemon.state,
      controlSocket: flags.controlSocket,
      gateway: flags.gateway ?? status?.gateway?.name,
      multicastInterfaces: flags.multicastInterfaces ?? status?.multicastInterfaces ?? [],
      tunnel: status?.tunnel?.port,
    });
    try {
      if (request.from !== undefined && 'pod' in request.from) {
        const sender = request.from.pod;
        if (!sources.ports.some((port) => port.pod === sender)) {
          throw new UsageError(`--from ${quoteInput(sender)}: no port of bridge ${target.bridge} belongs to that pod`, {
            code: 'no-such-interface',
            hint: 'a sender outside the node is named by --from-address',
          });
        }
      }
      const report = await runTrace(request, sources);
      if (output.json) output.document(report);
      else for (const line of traceLines(report, output.style)) output.line(line);
      output.flush();
      // The report is on stdout already: the exit code alone says the rest.
      if (report.verdict === 'blocked') throw new McastError('refused', '');
      if (daemon.state === 'unreachable') throw new McastError('unavailable', '', { exitCode: ExitCode.Unavailable });
    } finally {
      sources.close();
      if (daemon.state === 'reachable') daemon.close();
      await bridge.close();
    }
  });
}

function traceRequest(groupText: string, flags: TraceFlags): TraceRequest {
  const group = parseGroupAddress(groupText);
  if (group === undefined)
    throw new UsageError(`${quoteInput(groupText)} is not a multicast address (224.0.0.0/4 or ff00::/8)`, {
      code: 'bad-address',
    });
  const family = addressFamily(group);
  const sameFamily = (flag: string, text: string, parse: (text: string) => string | undefined): string => {
    const address = parse(text);
    if (address === undefined)
      throw new UsageError(`${flag} ${quoteInput(text)} is not a unicast address`, { code: 'bad-address' });
    if (addressFamily(address) !== family)
      throw new UsageError(`${flag} ${address} is not of the group's family (${family})`, { code: 'bad-address' });
    return address;
  };
  if (flags.from !== undefined && flags.fromAddress !== undefined)
    throw new UsageError('give --from or --from-address, not both');
  const source = flags.source === undefined ? undefined : sameFamily('--source', flags.source, parseSourceAddress);
  const from =
    flags.from !== undefined
      ? { pod: flags.from }
      : flags.fromAddress !== undefined
        ? { address: sameFamily('--from-address', flags.fromAddress, parseHostAddress) }
        : undefined;
  return {
    group,
    pod: flags.pod,
    ...(source === undefined ? {} : { source }),
    ...(from === undefined ? {} : { from }),
    ...(flags.via === undefined ? {} : { via: flags.via }),
  };
}
