/** `mcastctl install`: forward multicast groups to member ports on an OVS bridge. */
import type { Command } from 'commander';
import { installGroups, type StaticGroup, type StaticGroupsOutcome } from '../../controllers/static/static-groups.js';
import { quoteInput, UsageError } from '../../errors.js';
import { BridgeClient } from '../../adapters/ovs/bridge-client.js';
import { showBytes } from '../../runtime/regular-file.js';
import { checkRoute, installRoute } from '../../controllers/static/static-routes.js';
import {
  DEFAULT_MAX_STATE_FILE_BYTES,
  parseFileSize,
  readDeclaredState,
  type DeclaredRoute,
} from '../../domain/declared-state/declared-state.js';
import {
  checkGroupAddress,
  checkSourceAddress,
  checkSourceGroupFamily,
  parsePortRef,
} from '../../domain/declared-state/group-address.js';
import { printGroupResults } from '../render/group-results.js';
import { printRouteResult } from '../render/route-results.js';
import { Output } from '../render/output.js';
import { addOvsOptions, ovsSettings, type OvsFlags } from '../options/ovs-options.js';

interface InstallFlags extends OvsFlags {
  ports?: string;
  file?: string;
  maxFileSize?: string;
  json?: boolean;
  source?: string;
  iif?: string;
  oif?: string;
}

export function registerInstall(program: Command): void {
  const command = program
    .command('install')
    .summary('forward multicast groups to member ports on an OVS bridge')
    .description(
      'Program the bridge so that traffic to each group reaches exactly its member ports: an OVS group ' +
        '(type ALL) with one bucket per member and a flow that sends the group to it. Adds missing groups, ' +
        'updates groups whose members differ, and leaves the rest untouched: installing the same thing twice ' +
        'changes nothing. With --source S, only traffic from S to the group goes to those ports: an (S,G) entry, ' +
        "which takes precedence over the group's own entry for that source. Everything is checked before anything changes.",
    )
    .argument(
      '[group]',
      'the multicast group, e.g. 239.1.2.3 or ff3e::8000:1 (no link-scope group: 224.0.0.0/24, ff02::/16)',
    )
    .option('--ports <list>', 'member ports, by name or OpenFlow port number: p1,p2,7')
    .option('-f, --file <file>', 'install every group of a declared-state file (YAML or JSON)')
    .option(
      '--max-file-size <size>',
      `the largest -f FILE read: 64M, 1G (default ${showBytes(DEFAULT_MAX_STATE_FILE_BYTES).replace(' MiB', 'M')})`,
    )
    .option('--json', 'print the result as one JSON document')
    .option(
      '--source <address>',
      "only traffic from source S (of the group's family): with --ports an OVS (S,G) entry; with --iif and --oif a kernel (S,G) route instead",
    )
    .option('--iif <name>', 'the route: the interface traffic from S to GROUP comes in on')
    .option('--oif <list>', 'the route: the interfaces it goes out of: if1,if2');
  addOvsOptions(command).addHelpText(
    'after',
    `
Examples:
  mcastctl install 239.1.2.3 --ports pod-a,pod-b
  mcastctl install 232.1.1.1 --source 10.0.0.5 --ports pod-a   (an OVS (S,G) entry)
  mcastctl install ff3e::8000:1 --ports pod-a,7
  mcastctl install ff3e::8000:1 --source 2001:db8::5 --ports pod-a   (IPv6 (S,G))
  mcastctl install -f groups.yaml --bridge br-int
  mcastctl install 239.1.2.3 --source 10.0.0.5 --iif eth0 --oif gw0   (a kernel route)
  mcastctl install ff3e::8000:1 --source 2001:db8::5 --iif eth0 --oif gw0   (an IPv6 kernel route)

File format (also what reconcile reads):
  groups:
    - group: 239.1.2.3
      ports: [pod-a, pod-b, 7]
    - {group: 232.1.1.1, source: 10.0.0.5, ports: [pod-a]}
    - {group: ff3e::8000:1, source: 2001:db8::5, ports: [7]}

See mcastctl-install(1) for the pipeline and the OVS options.`,
  );
  command.action(async (group: string | undefined, flags: InstallFlags) => {
    const output = new Output({ json: flags.json === true });
    // --iif/--oif make a kernel route; --source without them narrows the OVS entry of --ports to one source.
    if (flags.iif !== undefined || flags.oif !== undefined) {
      await installStaticRoute(group, flags, output);
      return;
    }
    const { groups, routes } = await declaredState(group, flags);
    // Every route is checked (addresses, interfaces) before any change, OVS or kernel.
    for (const route of routes) withWhere(route.where, () => checkRoute(route));
    const { target, pipeline } = ovsSettings(flags);
    let outcome: StaticGroupsOutcome = { groups: [], otherFailures: [] };
    if (groups.length > 0) {
      const bridge = await BridgeClient.open(target, { pipeline });
      try {
        outcome = await installGroups(bridge, groups);
      } finally {
        await bridge.close();
      }
    }
    const routeResults = [];
    for (const route of routes)
      routeResults.push({
        route: { group: route.group, source: route.source, iif: route.iif, oifs: route.oifs },
        ...(await installRoute(route)),
      });
    printGroupResults(output, target.bridge, outcome, routeResults);
  });
}

/** Runs a check, prefixing its UsageError with where the entry was declared. */
function withWhere<T>(where: () => string, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof UsageError)
      throw new UsageError(`${where()}: ${error.message}`, {
        code: error.code,
        ...(error.hint === undefined ? {} : { hint: error.hint }),
      });
    throw error;
  }
}

/** The groups (and routes) asked for, from the command line or a file: checked before anything is touched. */
async function declaredState(
  group: string | undefined,
  flags: InstallFlags,
): Promise<{ groups: StaticGroup[]; routes: DeclaredRoute[] }> {
  if (flags.file !== undefined) {
    if (group !== undefined || flags.ports !== undefined || flags.source !== undefined) {
      throw new UsageError('give either GROUP [--source S] --ports LIST or -f FILE, not both');
    }
    const maxBytes =
      flags.maxFileSize === undefined
        ? DEFAULT_MAX_STATE_FILE_BYTES
        : parseFileSize('--max-file-size', flags.maxFileSize);
    return readDeclaredState(flags.file, maxBytes);
  }
  if (flags.maxFileSize !== undefined) throw new UsageError('--max-file-size goes with -f FILE');
  if (group === undefined) throw new UsageError('install needs GROUP --ports LIST, or -f FILE');
  if (flags.ports === undefined) {
    if (flags.source !== undefined) {
      throw new UsageError(
        `install ${quoteInput(group)} --source S needs --ports LIST (an OVS (S,G) entry) or --iif IF --oif LIST (a kernel route)`,
      );
    }
    throw new UsageError(`install ${quoteInput(group)} needs --ports LIST (names or OpenFlow port numbers)`);
  }
  const ports = flags.ports.split(',').map((text) => parsePortRef(text, '--ports'));
  const address = checkGroupAddress(group, 'GROUP');
  const source = flags.source === undefined ? undefined : checkSourceAddress(flags.source, '--source');
  if (source !== undefined) checkSourceGroupFamily(source, address, '--source');
  const entry: StaticGroup = {
    group: address,
    ...(source === undefined ? {} : { source }),
    ports,
    where: () => '--ports',
  };
  return { groups: [entry], routes: [] };
}

/** `install GROUP --source S --iif IF --oif IF2,...`: a static kernel (S,G) route. */
async function installStaticRoute(group: string | undefined, flags: InstallFlags, output: Output): Promise<void> {
  if (flags.ports !== undefined || flags.file !== undefined || flags.maxFileSize !== undefined) {
    throw new UsageError('a route (--source, --iif, --oif) and OVS ports (--ports, -f) go in separate commands');
  }
  if (group === undefined || flags.source === undefined || flags.iif === undefined || flags.oif === undefined) {
    throw new UsageError('a kernel route needs GROUP --source S --iif IF --oif IF2[,IF3]');
  }
  const route = { group, source: flags.source, iif: flags.iif, oifs: flags.oif.split(',').map((name) => name.trim()) };
  const result = await installRoute(route);
  printRouteResult(output, route, result);
}
