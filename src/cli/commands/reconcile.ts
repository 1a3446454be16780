/**
 * `mcastctl reconcile -f FILE`: make the node match its declared multicast state (static
 * OVS groups and kernel routes), for cron. Reads everything first, shows the difference,
 * applies the smallest set of changes (not with --dry-run), and exits 0 when in sync,
 * 2 when drift was found, 1 when a change failed. What the daemon learned is left alone.
 */
import type { Command } from 'commander';
import {
  planGroupReconcile,
  planRouteReconcile,
  type GroupDrift,
  type RouteDrift,
  type RouteState,
  type StrayGroupDrift,
} from '../../domain/reconcile-plan.js';
import { RunLock } from '../../runtime/run-lock.js';
import { type AddressFamily, addressFamily } from '../../wire/ip-address.js';
import { checkRoute, installRoute, NO_ROUTER_WARNING, uninstallRoute } from '../../controllers/static/static-routes.js';
import { ControlClient, DEFAULT_CONTROL_SOCKET } from '../../transport/control/control-client.js';
import { parseControlSocket } from '../../transport/control/socket-path.js';
import type { RouteView } from '../../transport/control/daemon-view.js';
import { ExitCode, McastError, messageOf, UnavailableError, UsageError } from '../../errors.js';
import {
  type ForwardingCacheRow,
  MULTICAST_ROUTING,
  type RoutingInterfaceRow,
} from '../../transport/multicast-routing.js';
import { BridgeClient } from '../../adapters/ovs/bridge-client.js';
import { showBytes } from '../../runtime/regular-file.js';
import type { GroupMembership } from '../../domain/pipeline/multicast-pipeline.js';
import type { PipelineChange } from '../../domain/pipeline/plan.js';
import {
  DEFAULT_MAX_STATE_FILE_BYTES,
  parseFileSize,
  readDeclaredState,
} from '../../domain/declared-state/declared-state.js';
import { addOvsOptions, ovsSettings, type OvsFlags } from '../options/ovs-options.js';
import { Output } from '../render/output.js';

interface ReconcileFlags extends OvsFlags {
  file?: string;
  maxFileSize?: string;
  dryRun?: boolean;
  json?: boolean;
  quiet?: boolean;
  controlSocket?: string;
  daemon: boolean;
  lockFile?: string;
}

const DEFAULT_LOCK_FILE = '/run/mcastctl/reconcile.lock';
/** Changes sent to OVS in one batch (one barrier each); the progress bar moves per batch. */
const BATCH_CHANGES = 2_000;
/** A reconcile this large shows a progress bar on a terminal. */
const PROGRESS_FROM = 2_000;

type Drift = GroupDrift | StrayGroupDrift | RouteDrift;
type Result = 'planned' | 'applied' | 'failed';

export function registerReconcile(program: Command): void {
  const command = program
    .command('reconcile')
    .summary('make the node match its declared multicast state (static OVS groups, kernel routes); exit 2 on drift')
    .description(
      'Read the declared state (-f FILE, the format install -f reads), read what the node has (our OVS ' +
        "flows and groups, the kernel's multicast routes), show the difference and repair it with the " +
        'smallest set of changes. Exit 0 when in sync, 2 when drift was found (repaired, or only shown with ' +
        '--dry-run), 1 when a change failed. Groups the daemon learned, its routes, and flows of other ' +
        'controllers are never touched. Runs never overlap (--lock-file).',
    )
    .requiredOption('-f, --file <file>', 'the declared state (YAML or JSON: groups and routes)')
    .option(
      '--max-file-size <size>',
      `the largest FILE read: 64M, 1G (default ${showBytes(DEFAULT_MAX_STATE_FILE_BYTES).replace(' MiB', 'M')})`,
    )
    .option('--dry-run', 'show the drift, change nothing')
    .option('--json', 'print the drift and what was done as one JSON document')
    .option('-q, --quiet', 'print nothing when in sync (drift and errors are still printed)')
    .option(
      '--control-socket <path>',
      `the daemon's control socket, to leave its learned routes alone (default ${DEFAULT_CONTROL_SOCKET})`,
      parseControlSocket,
    )
    .option('--no-daemon', 'do not ask the daemon (when none runs here)')
    .option('--lock-file <path>', `the lock that keeps two runs apart (default ${DEFAULT_LOCK_FILE})`);
  addOvsOptions(command).addHelpText(
    'after',
    `
Examples:
  mcastctl reconcile -f /etc/mcastctl/state.yaml --dry-run
  mcastctl reconcile -f /etc/mcastctl/state.yaml --quiet        (from cron)

A crontab line, every 5 minutes, mail only when something drifted or failed:
  */5 * * * * root mcastctl reconcile -f /etc/mcastctl/state.yaml --quiet

See mcastctl-reconcile(1), also for a systemd timer.`,
  );
  command.action(async (flags: ReconcileFlags) => {
    const output = new Output({ json: flags.json === true });
    await reconcile(flags, output);
  });
}

/** Prints the report; throws (through the one exit path) for drift (2) and failures (1). */
async function reconcile(flags: ReconcileFlags, output: Output): Promise<void> {
  // The flags, then everything the file says, are checked first: a bad one changes nothing (exit 64).
  if (flags.lockFile === '')
    throw new UsageError('--lock-file takes a path, not ""', { hint: `the default is ${DEFAULT_LOCK_FILE}` });
  const maxBytes =
    flags.maxFileSize === undefined
      ? DEFAULT_MAX_STATE_FILE_BYTES
      : parseFileSize('--max-file-size', flags.maxFileSize);
  const declared = await readDeclaredState(flags.file!, maxBytes);
  for (const route of declared.routes) {
    try {
      checkRoute(route);
    } catch (error) {
      if (error instanceof UsageError) throw new UsageError(`${route.where()}: ${error.message}`, { code: error.code });
      throw error;
    }
  }
  const { target, pipeline } = ovsSettings(flags);
  const daemonRoutes = flags.daemon
    ? await daemonLearnedRoutes(flags.controlSocket ?? DEFAULT_CONTROL_SOCKET)
    : undefined;

  const lock =
    flags.dryRun === true
      ? undefined
      : await RunLock.acquire(flags.lockFile ?? DEFAULT_LOCK_FILE, 'mcastctl reconcile');
  let opened: BridgeClient | undefined;
  try {
    opened = await BridgeClient.open(target, { pipeline });
    const bridge = opened;
    const memberships: GroupMembership[] = declared.groups.map((entry) => ({
      group: entry.group,
      ...(entry.source === undefined ? {} : { source: entry.source }),
      ports: entry.ports.map((ref) => bridge.resolvePort(ref, entry.where).ofport),
    }));
    const installed = await bridge.readInstalled();
    const groupPlan = planGroupReconcile({
      pipeline: bridge.pipeline,
      installed: installed.pipeline,
      foreignFlows: installed.foreignFlows,
      declared: memberships,
    });
    const declaredFamilies = new Set(declared.routes.map((route) => addressFamily(route.group) ?? 'ipv4'));
    const kernelRoutes = await readKernelRoutes(declaredFamilies);
    const actualRoutes = kernelRoutes.routes;
    // The router's entries: those the daemon lists when it answers; when it was not asked
    // (or another router runs), those on a router's own interfaces (readKernelRoutes).
    const routerKeys = new Set((daemonRoutes ?? []).map((route) => `${route.source}>${route.group}`));
    if (daemonRoutes === undefined) for (const key of kernelRoutes.onRouterInterfaces) routerKeys.add(key);
    // Static routes forward only while a router holds MRT_INIT (MRT6_INIT) here: in every family routes are declared
    // for.
    const routerActive = [...(declaredFamilies.size > 0 ? declaredFamilies : ['ipv4' as const])].every(
      (family) => kernelRoutes.routerActive[family],
    );
    const routerRoutes = actualRoutes.filter((route) => routerKeys.has(`${route.source}>${route.group}`));
    const routePlan = planRouteReconcile(
      declared.routes.map(({ source, group, iif, oifs }) => ({ source, group, iif, oifs })),
      actualRoutes,
      routerRoutes,
    );

    const drift: Drift[] = [...groupPlan.drift, ...routePlan.drift];
    const results = new Map<Drift, { result: Result; error?: string }>();
    for (const entry of drift) results.set(entry, { result: 'planned' });
    let lost: UnavailableError | undefined;
    if (flags.dryRun !== true && drift.length > 0) {
      // A missing privilege for the routes must stop the run before OVS is changed.
      for (const family of new Set(routePlan.drift.map((entry) => addressFamily(entry.group) ?? 'ipv4')))
        MULTICAST_ROUTING[family].openStatic().close();
      lost = await applyGroupDrift(bridge, groupPlan.drift, results, output);
      for (const entry of routePlan.drift) results.set(entry, await applyRouteDrift(entry));
    }
    const conflicts = [
      ...groupPlan.conflicts.map(({ group, source, problem }) => ({
        object: 'group',
        key: forwardingLabel(group, source),
        problem,
      })),
      ...routePlan.conflicts.map(({ source, group, problem }) => ({
        object: 'route',
        key: `(${source}, ${group})`,
        problem,
      })),
    ];
    const failed = [...results.values()].some((entry) => entry.result === 'failed') || conflicts.length > 0;
    const report = {
      bridge: target.bridge,
      dryRun: flags.dryRun === true,
      inSync: drift.length === 0 && conflicts.length === 0,
      drift: drift.map((entry) => ({ ...describeDrift(entry, bridge), ...results.get(entry)! })),
      conflicts,
      routerActive,
      inSyncGroups: groupPlan.inSync,
      inSyncRoutes: routePlan.inSync,
      leftAlone: {
        learnedGroups: groupPlan.learnedGroups.length,
        daemonRoutes: routerRoutes.length,
        foreignFlows: installed.foreignFlows.length,
      },
      daemon: daemonRoutes === undefined ? (flags.daemon ? 'not running' : 'not asked') : 'running',
    };
    print(output, report, flags);
    if (lost !== undefined) throw lost;
    const failures = report.drift.filter((row) => row.result === 'failed').length;
    if (failed) {
      const what = [
        failures > 0 ? `${failures} change${failures === 1 ? '' : 's'} failed` : '',
        conflicts.length > 0
          ? `${conflicts.length} declared object${conflicts.length === 1 ? '' : 's'} in conflict`
          : '',
      ]
        .filter(Boolean)
        .join(', ');
      throw new McastError('refused', `reconcile: ${what} (see ${output.json ? 'the JSON document' : 'above'})`);
    }
    // Drift (found, and repaired unless --dry-run) is no failure, but scripts act on it: exit 2, no message.
    if (drift.length > 0) throw new McastError('drift', '', { exitCode: ExitCode.Drift });
  } finally {
    await opened?.close();
    lock?.release();
  }
}

/** The (S,G) entries the running daemon added, or undefined when no daemon answers here. */
async function daemonLearnedRoutes(path: string): Promise<RouteView[] | undefined> {
  let client: ControlClient;
  try {
    client = await ControlClient.connect(path);
  } catch (error) {
    if (error instanceof UnavailableError) return undefined; // no daemon: every route is static
    throw error;
  }
  try {
    return await client.request<RouteView[]>('routes');
  } finally {
    client.close();
  }
}

/**
 * Sends the group changes in batches (a progress bar on a terminal when there are many).
 * Returns the error if the connection to OVS was lost part-way: the rows not confirmed
 * are marked failed, so that the report still says what was done.
 */
async function applyGroupDrift(
  bridge: BridgeClient,
  drift: ReadonlyArray<GroupDrift | StrayGroupDrift>,
  results: Map<Drift, { result: Result; error?: string }>,
  output: Output,
): Promise<UnavailableError | undefined> {
  const changes: PipelineChange[] = [];
  const owner: Array<GroupDrift | StrayGroupDrift> = [];
  for (const entry of drift) {
    for (const change of entry.changes) {
      changes.push(change);
      owner.push(entry);
    }
  }
  const progress =
    changes.length >= PROGRESS_FROM && process.stderr.isTTY && !output.json
      ? await progressBar(changes.length)
      : undefined;
  const errors = new Map<Drift, string>();
  let lost: UnavailableError | undefined;
  for (let start = 0; start < changes.length; start += BATCH_CHANGES) {
    const batch = changes.slice(start, start + BATCH_CHANGES);
    let refused: ReadonlyMap<number, Error>;
    try {
      refused = await bridge.apply(batch);
    } catch (error) {
      if (!(error instanceof UnavailableError)) throw error;
      lost = new UnavailableError(`${error.message}, after ${start} of ${changes.length} changes were confirmed`, {
        hint: 'run reconcile again once OVS is back: it repairs what still differs',
        cause: error,
      });
      for (const entry of owner.slice(start))
        if (!errors.has(entry)) errors.set(entry, 'not confirmed: the connection to OVS was lost');
      break;
    }
    for (const [index, error] of refused)
      if (!errors.has(owner[start + index]!)) errors.set(owner[start + index]!, error.message);
    progress?.update(Math.min(changes.length, start + BATCH_CHANGES));
  }
  progress?.done();
  for (const entry of drift) {
    const error = errors.get(entry);
    results.set(entry, error === undefined ? { result: 'applied' } : { result: 'failed', error });
  }
  return lost;
}

interface KernelRoutes {
  /** Per family: some socket holds MRT_INIT (MRT6_INIT) here. */
  routerActive: Record<AddressFamily, boolean>;
  /** The resolved entries of both families, interfaces by name. */
  routes: RouteState[];
  /** Keys (`source>group`) of entries whose incoming interface is a running router's own (not static). */
  onRouterInterfaces: Set<string>;
}

/**
 * The kernel's multicast entries of both families. Unresolved entries (no incoming
 * interface yet: the kernel waits for the router) are nobody's routes. An entry on a
 * VIF (MIF) that is gone is static: its router stopped, and only a static entry outlives
 * it. A family without tables (no CONFIG_IP_MROUTE, CONFIG_IPV6_MROUTE) is fine unless
 * routes of it are declared.
 */
async function readKernelRoutes(declaredFamilies: ReadonlySet<AddressFamily>): Promise<KernelRoutes> {
  const result: KernelRoutes = {
    routerActive: { ipv4: false, ipv6: false },
    routes: [],
    onRouterInterfaces: new Set(),
  };
  for (const family of ['ipv4', 'ipv6'] as const) {
    const kernel = MULTICAST_ROUTING[family];
    let tables: [RoutingInterfaceRow[], ForwardingCacheRow[]];
    try {
      tables = await Promise.all([kernel.readInterfaces(), kernel.readRoutes()]);
    } catch (error) {
      if (!(error instanceof McastError) || error.code !== 'no-multicast-routing') throw error;
      // Routes declared for a family the kernel cannot route: the error says which and why.
      if (declaredFamilies.has(family)) throw error;
      continue;
    }
    const [interfaces, rows] = tables;
    const active = kernel.routerActive();
    result.routerActive[family] = active;
    const names = new Map(interfaces.map((row) => [row.index, row.name]));
    const statics = new Set(interfaces.filter((row) => row.static).map((row) => row.index));
    const name = (index: number) => names.get(index) ?? `${kernel.interfaceWord}${index}`;
    for (const row of rows) {
      if (row.iif < 0) continue;
      result.routes.push({ source: row.source, group: row.group, iif: name(row.iif), oifs: row.oifs.map(name).sort() });
      if (active && names.has(row.iif) && !statics.has(row.iif))
        result.onRouterInterfaces.add(`${row.source}>${row.group}`);
    }
  }
  return result;
}

async function applyRouteDrift(entry: RouteDrift): Promise<{ result: Result; error?: string }> {
  try {
    if (entry.action === 'remove') await uninstallRoute(entry);
    else await installRoute(entry.after!);
    return { result: 'applied' };
  } catch (error) {
    if (error instanceof McastError && error.exitCode === ExitCode.NoPermission) throw error;
    return { result: 'failed', error: messageOf(error) };
  }
}

interface DriftRow {
  object: 'group' | 'stray-group' | 'route';
  key: string;
  action: string;
  detail: string;
  before?: unknown;
  after?: unknown;
}

function describeDrift(entry: Drift, bridge: BridgeClient): DriftRow {
  const port = (ofport: number) => bridge.portByNumber(ofport)?.name ?? String(ofport);
  switch (entry.object) {
    case 'group':
      return {
        object: 'group',
        key: forwardingLabel(entry.group, entry.source),
        action: entry.action,
        detail: entry.detail,
        before: { ports: entry.before.map(port) },
        after: { ports: entry.after.map(port) },
      };
    case 'stray-group':
      return {
        object: 'stray-group',
        key: `0x${entry.groupId.toString(16)}`,
        action: entry.action,
        detail: entry.detail,
      };
    case 'route':
      return {
        object: 'route',
        key: `(${entry.source}, ${entry.group})`,
        action: entry.action,
        detail: entry.detail,
        ...(entry.before === undefined ? {} : { before: { iif: entry.before.iif, oifs: entry.before.oifs } }),
        ...(entry.after === undefined ? {} : { after: { iif: entry.after.iif, oifs: entry.after.oifs } }),
      };
  }
}

/** Most drift rows a human table shows. */
const TABLE_ROWS = 50;

function print(
  output: Output,
  report: {
    bridge: string;
    dryRun: boolean;
    inSync: boolean;
    drift: Array<DriftRow & { result: Result; error?: string }>;
    conflicts: Array<{ object: string; key: string; problem: string }>;
    routerActive: boolean;
    inSyncGroups: number;
    inSyncRoutes: number;
    leftAlone: { learnedGroups: number; daemonRoutes: number; foreignFlows: number };
    daemon: string;
  },
  flags: ReconcileFlags,
): void {
  if (output.json) {
    output.document(report);
    return;
  }
  if (report.inSync && flags.quiet === true) return;
  const style = output.style;
  const count = (n: number, noun: string) => `${n} ${noun}${n === 1 ? '' : 's'}`;
  const { learnedGroups, daemonRoutes, foreignFlows } = report.leftAlone;
  const summary = `${count(report.inSyncGroups, 'group')} and ${count(report.inSyncRoutes, 'route')} as declared; left alone: ${count(learnedGroups, 'group')} the daemon learned, ${count(daemonRoutes, 'route')} of its own, ${count(foreignFlows, 'flow')} of other controllers`;
  const routes =
    report.drift.some((row) => row.object === 'route' && row.action !== 'remove') || report.inSyncRoutes > 0;
  if (report.inSync) {
    output.line(`in sync: ${summary}`);
    output.flush();
    if (routes && !report.routerActive) output.warn(NO_ROUTER_WARNING);
    return;
  }
  if (report.drift.length > 0) {
    const action = (row: DriftRow & { result: Result; error?: string }) =>
      row.action === 'add'
        ? style.green(row.action)
        : row.action === 'remove'
          ? style.red(row.action)
          : style.yellow(row.action);
    const result = (row: DriftRow & { result: Result; error?: string }) =>
      row.result === 'failed'
        ? style.red(`failed: ${row.error ?? ''}`)
        : row.result === 'applied'
          ? 'repaired'
          : style.dim('not applied (--dry-run)');
    output.table({
      head: ['Object', 'Key', 'Drift', 'Detail', 'Result'],
      rows: report.drift.slice(0, TABLE_ROWS).map((row) => [row.object, row.key, action(row), row.detail, result(row)]),
    });
    if (report.drift.length > TABLE_ROWS)
      output.line(style.dim(`... and ${report.drift.length - TABLE_ROWS} more (--json lists every one)`));
  }
  for (const conflict of report.conflicts)
    output.warn(`${conflict.object} ${conflict.key} not reconciled: ${conflict.problem}`);
  if (routes && !report.routerActive) output.warn(NO_ROUTER_WARNING);
  const applied = report.drift.filter((row) => row.result === 'applied').length;
  const failed = report.drift.filter((row) => row.result === 'failed').length;
  output.line(
    report.dryRun
      ? `drift: ${report.drift.length} difference${report.drift.length === 1 ? '' : 's'} (dry run: nothing changed); ${summary}`
      : `drift: ${report.drift.length} difference${report.drift.length === 1 ? '' : 's'}, ${applied} repaired${failed > 0 ? `, ${failed} failed` : ''}; ${summary}`,
  );
  output.flush();
}

/**
 * `[#####.....] 1200/5000 changes` on stderr, redrawn in place (cli-progress; loaded only
 * when a reconcile is large enough to show it).
 */
async function progressBar(total: number): Promise<{ update(done: number): void; done(): void }> {
  const { SingleBar } = (await import('cli-progress')).default;
  const bar = new SingleBar({
    format: '[{bar}] {value}/{total} changes',
    barsize: 30,
    barCompleteChar: '#',
    barIncompleteChar: '.',
    stream: process.stderr,
    hideCursor: false,
  });
  bar.start(total, 0);
  return { update: (done) => bar.update(done), done: () => bar.stop() };
}

/** A group entry as reconcile's report names it: the group, or `(S, G)` for a per-source entry. */
function forwardingLabel(group: string, source: string | undefined): string {
  return source === undefined ? group : `(${source}, ${group})`;
}
