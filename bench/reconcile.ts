/**
 * `mcastctl reconcile` on a lab node's real OVS: a dry run over
 * 10,000 declared groups (target: at most 1 s), and repairing 1,000 drifted groups
 * (target: at most 2 s). Both are the whole command's wall time, process start included,
 * run inside the node's namespace as cron would run it there.
 *
 * The node has 8 member ports: OVS internal ports with the external_ids a CNI plugin
 * writes (cheaper to make than pods; the CLI resolves ports by name from OVSDB either way).
 * The declared file: 10,000 groups × 4 ports. The drift, induced with ovs-ofctl bundles:
 * 500 groups with a bucket removed (mod-group), 250 flows deleted (the OVS group stays, no
 * flow reaches it), 250 OVS groups deleted (OVS deletes the flows that use them too).
 *
 *   node --import tsx bench/reconcile.ts [groups] [drifted]    (root; `npm run build` first: it runs dist/)
 *
 * Environment: BENCH_RECONCILE_GROUPS (10,000), BENCH_RECONCILE_DRIFT (1,000),
 * BENCH_RECONCILE_RUNS (dry runs timed, 5), BENCH_RECONCILE_PROFILE=DIR writes a
 * --cpu-prof of the timed dry run and repair there.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { MCASTCTL_BIN, REPO_ROOT } from '../test/lab/cli.js';
import { Lab } from '../test/lab/lab.js';
import { OvsNode } from '../test/lab/ovs.js';

const PORTS = 8;
const PORTS_PER_GROUP = 4;

export interface ReconcileBenchOptions {
  groups?: number;
  drifted?: number;
  dryRuns?: number;
  /** Directory for --cpu-prof files of the timed runs. */
  profileDir?: string;
}

export interface ReconcileFigures {
  groups: number;
  drifted: number;
  /** The first run, from an empty bridge (every group added): informative. */
  initialSeconds: number;
  /** Wall time of each dry run over the in-sync node. */
  dryRunSeconds: number[];
  /** The dry run over the drifted node (it must list exactly the drift). */
  driftDryRunSeconds: number;
  repairSeconds: number;
  /** Drift the repair reported, by action. */
  repairedByAction: Record<string, number>;
}

function groupAddress(index: number): string {
  return `239.${20 + (index >> 16)}.${(index >> 8) & 0xff}.${index & 0xff}`;
}

function groupId(index: number): number {
  return (
    0x10000000 +
    ((((239 << 24) >>> 0) + ((20 + (index >> 16)) << 16) + (((index >> 8) & 0xff) << 8) + (index & 0xff)) & 0x0fffffff)
  );
}

interface Report {
  inSync: boolean;
  inSyncGroups: number;
  drift: { object: string; key: string; action: string; result: string }[];
}

export async function benchReconcile(options: ReconcileBenchOptions = {}): Promise<ReconcileFigures> {
  const count = options.groups ?? 10_000;
  const drifted = options.drifted ?? 1_000;
  if (drifted > count) throw new RangeError(`cannot drift ${drifted} of ${count} groups`);
  const lab = Lab.create();
  try {
    const node = await OvsNode.start(lab, 'rbench');
    const names = Array.from({ length: PORTS }, (_, i) => lab.ifname(`m${i}`));
    await node.vsctl(
      ...names
        .flatMap((name, i) => [
          '--',
          'add-port',
          node.bridge,
          name,
          '--',
          'set',
          'interface',
          name,
          'type=internal',
          `external_ids:pod-name=m${i}`,
          'external_ids:pod-namespace=bench',
          `external_ids:ip-address=10.8.0.${10 + i}/24`,
        ])
        .slice(1),
    );
    const ofports = await Promise.all(names.map((name) => node.ofportOf(name)));

    const file = lab.file('state.yaml');
    const members = (i: number) => Array.from({ length: PORTS_PER_GROUP }, (_, k) => (i + k) % PORTS);
    const lines = ['groups:'];
    for (let i = 0; i < count; i++)
      lines.push(
        `  - {group: ${groupAddress(i)}, ports: [${members(i)
          .map((k) => names[k])
          .join(', ')}]}`,
      );
    writeFileSync(file, lines.join('\n') + '\n');

    const lockFile = lab.file('reconcile.lock');
    if (options.profileDir !== undefined) mkdirSync(options.profileDir, { recursive: true });
    const reconcile = (extra: string[], expected: number, profile?: string): { seconds: number; report: Report } => {
      const nodeArgs =
        options.profileDir !== undefined && profile !== undefined
          ? ['--cpu-prof', '--cpu-prof-dir', options.profileDir, '--cpu-prof-name', `${profile}.cpuprofile`]
          : [];
      const argv = [
        'netns',
        'exec',
        node.ns,
        process.execPath,
        ...nodeArgs,
        MCASTCTL_BIN,
        'reconcile',
        '-f',
        file,
        '--json',
        '--ovs-rundir',
        node.rundir,
        '--control-socket',
        lab.file('none.sock'),
        '--lock-file',
        lockFile,
        ...extra,
      ];
      const started = process.hrtime.bigint();
      const result = spawnSync('ip', argv, {
        cwd: REPO_ROOT,
        encoding: 'utf8',
        maxBuffer: 1 << 30,
        env: { ...process.env, NO_COLOR: '1' },
      });
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      if (result.status !== expected)
        throw new Error(
          `mcastctl reconcile ${extra.join(' ')} exited ${result.status} (expected ${expected}): ${result.stderr}`,
        );
      return { seconds, report: JSON.parse(result.stdout) as Report };
    };

    // From an empty bridge: every group is added.
    const initial = reconcile([], 2);
    if (initial.report.drift.length !== count || initial.report.drift.some((row) => row.result !== 'applied'))
      throw new Error('the first run did not add every group');

    const dryRunSeconds: number[] = [];
    for (let run = 0; run < (options.dryRuns ?? 5); run++) {
      const dry = reconcile(['--dry-run'], 0, run === 0 ? 'dry-run' : undefined);
      if (!dry.report.inSync || dry.report.inSyncGroups !== count)
        throw new Error(`the dry run is not in sync: ${dry.report.inSyncGroups} of ${count}`);
      dryRunSeconds.push(dry.seconds);
    }

    // Drift in `drifted` groups, spread over the whole range: a bucket removed, a flow
    // deleted, or an OVS group deleted (and with it, by OVS, its flow).
    const step = Math.floor(count / drifted);
    const chosen = Array.from({ length: drifted }, (_, j) => j * step);
    const groupMods: string[] = [];
    const flowMods: string[] = [];
    const expected = new Map<string, string>();
    chosen.forEach((i, j) => {
      const kind = j % 4;
      if (kind <= 1) {
        const buckets = members(i)
          .slice(1)
          .map((k) => `bucket=actions=output:${ofports[k]}`)
          .join(',');
        groupMods.push(`modify group_id=${groupId(i)},type=all,${buckets}`);
        expected.set(groupAddress(i), 'change');
      } else if (kind === 2) {
        flowMods.push(`delete_strict table=0,priority=200,ip,nw_dst=${groupAddress(i)}`);
        expected.set(groupAddress(i), 'change'); // its OVS group is still there: reused
      } else {
        groupMods.push(`delete group_id=${groupId(i)}`);
        expected.set(groupAddress(i), 'add');
      }
    });
    writeFileSync(lab.file('group-drift.txt'), groupMods.join('\n') + '\n');
    writeFileSync(lab.file('flow-drift.txt'), flowMods.join('\n') + '\n');
    await node.ofctl('--bundle', 'add-groups', node.bridge, lab.file('group-drift.txt'));
    await node.ofctl('--bundle', 'add-flows', node.bridge, lab.file('flow-drift.txt'));

    const driftDry = reconcile(['--dry-run'], 2);
    const listed = new Map(driftDry.report.drift.map((row) => [row.key, row.action]));
    if (
      driftDry.report.drift.length !== drifted ||
      [...expected].some(([group, action]) => listed.get(group) !== action)
    ) {
      throw new Error(
        `the dry run lists ${driftDry.report.drift.length} drifted groups, expected ${drifted} (first: ${JSON.stringify(driftDry.report.drift.slice(0, 3))})`,
      );
    }

    const repair = reconcile([], 2, 'repair');
    if (repair.report.drift.length !== drifted || repair.report.drift.some((row) => row.result !== 'applied'))
      throw new Error('the repair did not apply every change');
    const repairedByAction: Record<string, number> = {};
    for (const row of repair.report.drift) repairedByAction[row.action] = (repairedByAction[row.action] ?? 0) + 1;

    const after = reconcile(['--dry-run'], 0);
    if (!after.report.inSync || after.report.inSyncGroups !== count) throw new Error('not in sync after the repair');

    return {
      groups: count,
      drifted,
      initialSeconds: initial.seconds,
      dryRunSeconds,
      driftDryRunSeconds: driftDry.seconds,
      repairSeconds: repair.seconds,
      repairedByAction,
    };
  } finally {
    await lab.destroy();
  }
}

export function reconcileReport(figures: ReconcileFigures): string[] {
  const sorted = [...figures.dryRunSeconds].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)] ?? NaN;
  const n = (value: number) => value.toLocaleString('en-US');
  return [
    `  dry run over ${n(figures.groups)} groups, in sync: median ${median.toFixed(2)} s (runs: ${figures.dryRunSeconds.map((s) => s.toFixed(2)).join(', ')})   target: at most 1 s`,
    `  repair of ${n(figures.drifted)} drifted groups (${Object.entries(figures.repairedByAction)
      .map(([action, c]) => `${c} ${action}`)
      .join(', ')}): ${figures.repairSeconds.toFixed(2)} s   target: at most 2 s`,
    `  (dry run listing that drift: ${figures.driftDryRunSeconds.toFixed(2)} s; first run adding all ${n(figures.groups)} groups: ${figures.initialSeconds.toFixed(2)} s)`,
  ];
}

export function reconcileOptionsFromEnv(env: NodeJS.ProcessEnv = process.env): ReconcileBenchOptions {
  return {
    groups: Number(env.BENCH_RECONCILE_GROUPS ?? 10_000),
    drifted: Number(env.BENCH_RECONCILE_DRIFT ?? 1_000),
    dryRuns: Number(env.BENCH_RECONCILE_RUNS ?? 5),
    ...(env.BENCH_RECONCILE_PROFILE === undefined ? {} : { profileDir: env.BENCH_RECONCILE_PROFILE }),
  };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const options = reconcileOptionsFromEnv();
  if (process.argv[2] !== undefined) options.groups = Number(process.argv[2]);
  if (process.argv[3] !== undefined) options.drifted = Number(process.argv[3]);
  console.log(reconcileReport(await benchReconcile(options)).join('\n'));
}
