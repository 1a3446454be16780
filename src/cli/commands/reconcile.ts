/**
 * `mcastctl reconcile -f FILE`: make the node match its declared multicast state (static
 * OVS groups and kernel routes), for cron. Reads everything first, shows the difference,
 * applies the smallest set of changes (not with --dry-run), and exits 0 when in sync,
 * 2 when drift was found, 1 when a change failed. What the daemon learned is left alone.
 */
import type { Command } from 'commander';
import { planGroupReconcile, planRouteReconcile } from '../../domain/reconcile-plan.js';
import { RunLock } from '../../runtime/run-lock.js';
import { addressFamily } from '../../wire/ip-address.js';
import { checkRoute } from '../../controllers/static/static-routes.js';
import { daemonLearnedRoutes, readKernelRoutes } from '../../controllers/static/reconcile-readback.js';
import {
  applyGroupDrift,
  applyRouteDrift,
  type Drift,
  type RepairResult,
} from '../../controllers/static/reconcile-repair.js';
import { DEFAULT_CONTROL_SOCKET } from '../../transport/control/control-client.js';
import { parseControlSocket } from '../../transport/control/socket-path.js';
import { ExitCode, McastError, type UnavailableError, UsageError } from '../../errors.js';
import { MULTICAST_ROUTING } from '../../transport/multicast-routing.js';
import { BridgeClient } from '../../adapters/ovs/bridge-client.js';
import { showBytes } from '../../runtime/regular-file.js';
import type { GroupMembership } from '../../domain/pipeline/multicast-pipeline.js';
import {
  DEFAULT_MAX_STATE_FILE_BYTES,
  parseFileSize,
  readDeclaredState,
} from '../../domain/declared-state/declared-state.js';
import { addOvsOptions, ovsSettings, type OvsFlags } from '../options/ovs-options.js';
import { Output } from '../render/output.js';
import { progressBar } from '../render/progress-bar.js';
import { describeDrift, forwardingLabel, printReconcileReport } from '../render/reconcile-report.js';

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
    const results = new Map<Drift, { result: RepairResult; error?: string }>();
    for (const entry of drift) results.set(entry, { result: 'planned' });
    let lost: UnavailableError | undefined;
    if (flags.dryRun !== true && drift.length > 0) {
      // A missing privilege for the routes must stop the run before OVS is changed.
      for (const family of new Set(routePlan.drift.map((entry) => addressFamily(entry.group) ?? 'ipv4')))
        MULTICAST_ROUTING[family].openStatic().close();
      const showProgress = process.stderr.isTTY && !output.json ? progressBar : undefined;
      lost = await applyGroupDrift(bridge, groupPlan.drift, results, showProgress);
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
    printReconcileReport(output, report, flags);
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
