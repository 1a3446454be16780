/**
 * `mcastctl reconcile` as the end-to-end tests run and read it on a lab node: the command in
 * the node's namespace with its OVS environment, its JSON report, our groups as ovs-ofctl
 * shows them, and the declared state file with the bad files made from it. The OVS side
 * (test/e2e/reconcile.test.ts) and the kernel routes (test/routing/reconcile-routes.test.ts)
 * are tested with the same node layout and the same files.
 */
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { type CliResult, mcastctl } from './cli.js';
import { waitUntil } from './lab.js';
import type { OvsNode, OvsPod, Receiver } from './ovs.js';

/** Our OVS group id for a group address: 0x10000000 + its low 28 bits. */
export function groupId(group: string): number {
  const value = group.split('.').reduce((sum, octet) => sum * 256 + Number(octet), 0);
  return 0x10000000 + (value & 0x0fffffff);
}

/** The cookie of a group's flow: prefix 0x4d43, kind 03, flag byte (01 learned), the address. */
export function groupCookie(group: string, learned = false): string {
  const hex = group
    .split('.')
    .map((octet) => Number(octet).toString(16).padStart(2, '0'))
    .join('');
  return `0x4d4303${learned ? '01' : '00'}${hex}`;
}

export interface DriftRow {
  object: 'group' | 'stray-group' | 'route';
  key: string;
  action: 'add' | 'remove' | 'change';
  detail: string;
  before?: { ports?: string[]; iif?: string; oifs?: string[] };
  after?: { ports?: string[]; iif?: string; oifs?: string[] };
  result: 'planned' | 'applied' | 'failed';
  error?: string;
}

export interface Report {
  bridge: string;
  dryRun: boolean;
  inSync: boolean;
  drift: DriftRow[];
  conflicts: { object: string; key: string; problem: string }[];
  routerActive: boolean;
  inSyncGroups: number;
  inSyncRoutes: number;
  leftAlone: { learnedGroups: number; daemonRoutes: number; foreignFlows: number };
  daemon: string;
}

export function parseReport(result: CliResult): Report {
  try {
    return JSON.parse(result.stdout) as Report;
  } catch {
    throw new Error(
      `stdout is not one JSON document (exit ${result.code}): ${result.stdout.slice(0, 500)}\nstderr: ${result.stderr}`,
    );
  }
}

/** Our group flows and groups: { group: sorted output ports } read from ovs-ofctl. */
export async function ourGroups(node: OvsNode): Promise<Record<string, number[]>> {
  const { flows, groups } = await node.switchState();
  const result: Record<string, number[]> = {};
  for (const line of flows) {
    const match = /^cookie=0x4d4303[0-9a-f]{10}, .*nw_dst=([\d.]+) actions=group:(\d+)$/.exec(line);
    if (match === null) continue;
    const groupLine = groups.find((entry) => entry.startsWith(`group_id=${match[2]},`));
    result[match[1]!] =
      groupLine === undefined
        ? []
        : [...groupLine.matchAll(/bucket=actions=output:(\d+)/g)].map((m) => Number(m[1])).sort((a, b) => a - b);
  }
  return result;
}

export const noStack = (result: CliResult) =>
  assert.doesNotMatch(result.stderr, /\n\s+at /, `no stack trace: ${result.stderr}`);

/** `mcastctl ARGS` in a node's namespace, against its OVS, its daemon's control socket and a run lock of its own. */
export type ReconcileCli = (...args: string[]) => Promise<CliResult>;

export function reconcileCli(node: OvsNode, options: { controlSocket: string; lockFile: string }): ReconcileCli {
  return (...args) =>
    mcastctl(
      [
        ...args,
        '--ovs-rundir',
        node.rundir,
        '--control-socket',
        options.controlSocket,
        '--lock-file',
        options.lockFile,
      ],
      {
        ns: node.ns,
        env: node.env,
        timeoutMs: 20_000,
      },
    );
}

/**
 * The node's gateway gw0 at `${subnet}.1/24` and three pods `${prefix}1` to `${prefix}3` at `${subnet}.11` to `.13`.
 */
export async function gatewayAndPods(node: OvsNode, prefix: string, subnet: string): Promise<OvsPod[]> {
  await node.addGateway({ address: `${subnet}.1/24` });
  const pods: OvsPod[] = [];
  for (let i = 1; i <= 3; i++) pods.push(await node.addPod(`${prefix}${i}`, { address: `${subnet}.${10 + i}/24` }));
  return pods;
}

/**
 * `member` joins `group`; once the daemon has programmed the group for it, `sender` sends
 * the group 5 datagrams. Resolves with the member's receiver.
 */
export async function learnedGroupWithTraffic(
  node: OvsNode,
  group: string,
  port: number,
  member: OvsPod,
  sender: OvsPod,
): Promise<Receiver> {
  const receiver = await member.listen(group, port);
  await waitUntil(
    'the daemon to program the learned group',
    async () => ((await ourGroups(node))[group] ?? []).includes(member.ofport),
    10_000,
  );
  await sender.send(group, port, 5, { intervalMs: 20 });
  return receiver;
}

export interface DeclaredGroup {
  group: string;
  /** Port names. */
  ports: string[];
}

export interface DeclaredRoute {
  group: string;
  source: string;
  iif: string;
  oifs: string[];
}

/** A node's declared state: exactly three groups, so that every file made from it has the same lines. */
export interface DeclaredState {
  node: string;
  groups: readonly [DeclaredGroup, DeclaredGroup, DeclaredGroup];
  routes: readonly DeclaredRoute[];
}

/**
 * The declared state as YAML, laid out the same way for every node (the bad files name its
 * lines): the groups on lines 3 to 7, the first two as blocks and the third as a flow
 * mapping, then `routes:` on line 8 when there are routes.
 */
export function declaredStateYaml(state: DeclaredState): string {
  const [first, second, third] = state.groups;
  const route = (entry: DeclaredRoute) =>
    `  - {group: ${entry.group}, source: ${entry.source}, iif: ${entry.iif}, oifs: [${entry.oifs.join(', ')}]}`;
  return [
    `# declared multicast state of node ${state.node}`,
    'groups:',
    `  - group: ${first.group}`,
    `    ports: [${first.ports.join(', ')}]`,
    `  - group: ${second.group}`,
    `    ports: [${second.ports.join(', ')}]`,
    `  - {group: ${third.group}, ports: [${third.ports.join(', ')}]}`,
    ...(state.routes.length === 0 ? [] : ['routes:', ...state.routes.map(route)]),
    '',
  ].join('\n');
}

export interface BadStateFile {
  name: string;
  /** The file's text, and what the error on stderr must say, naming the line. */
  make(): { text: string; message: RegExp };
}

/**
 * Files that reconcile must refuse (exit 64) before it changes anything: each is the
 * declared state with one thing broken. The route cases declare `route` (broken) as the
 * only route, on line 9, so that they exist for a state that declares none. `declared` is
 * called when a file is made: the cases are named before the lab has the ports they use.
 */
export function badStateFiles(declared: () => { state: DeclaredState; route: DeclaredRoute }): BadStateFile[] {
  const edit = (text: string, index: number, change: (line: string) => string) =>
    text
      .split('\n')
      .map((line, i) => (i === index ? change(line) : line))
      .join('\n');
  const routeEdit = (state: DeclaredState, route: DeclaredRoute, change: (line: string) => string) =>
    edit(declaredStateYaml({ ...state, routes: [route] }), 8, change);
  const cases: [
    string,
    (good: string, state: DeclaredState, route: DeclaredRoute) => { text: string; message: RegExp },
  ][] = [
    [
      'a YAML syntax error',
      (good) => ({
        text: edit(good, 3, (line) => line.replace(/\]$/, '')),
        message: /bad\.yaml:\d+: not valid YAML or JSON/,
      }),
    ],
    [
      'an unknown key',
      (good) => ({
        text: edit(good, 5, (line) => line.replace('ports:', 'prots:')),
        message: /bad\.yaml:6: unknown key "prots" in a group/,
      }),
    ],
    [
      'an unknown top-level key',
      // The file ends with a newline: the added key is on the line after its last one.
      (good) => ({
        text: `${good}vlans: [1]\n`,
        message: new RegExp(`bad\\.yaml:${good.split('\n').length}: unknown key "vlans"`),
      }),
    ],
    [
      'a bad group address',
      (good, state) => ({
        text: edit(good, 4, (line) => line.replace(state.groups[1].group, '239.1.1.300')),
        message: /bad\.yaml:5: "239\.1\.1\.300" is not an IPv4 or IPv6 address/,
      }),
    ],
    [
      'a unicast group',
      (good, state) => ({
        text: edit(good, 6, (line) => line.replace(state.groups[2].group, '10.1.1.3')),
        message: /bad\.yaml:7: .*not a multicast address/,
      }),
    ],
    [
      'a bad route source',
      (_good, state, route) => ({
        text: routeEdit(state, route, (line) => line.replace(route.source, '10.9.9')),
        message: /bad\.yaml:9: "source" must be a unicast host address/,
      }),
    ],
    [
      'an unknown port',
      (good, state) => ({
        text: edit(good, 5, (line) => line.replace(/\[.*\]/, `[${state.groups[1].ports[0]}, nosuchport]`)),
        message: /bad\.yaml:5: bridge br-int has no port nosuchport/,
      }),
    ],
    [
      'an unknown route interface',
      (_good, state, route) => ({
        text: routeEdit(state, route, (line) => line.replace(route.iif, 'nosuchif0')),
        message: /bad\.yaml:9: .*nosuchif0/,
      }),
    ],
  ];
  return cases.map(([name, make]) => ({
    name,
    make: () => {
      const { state, route } = declared();
      return make(declaredStateYaml(state), state, route);
    },
  }));
}

/**
 * Writes `bad` to `path` and runs reconcile on it, as text and as --json: both refused (exit 64) naming the line, with
 * nothing on stdout.
 */
export async function assertRefused(cli: ReconcileCli, path: string, bad: BadStateFile): Promise<void> {
  const { text, message } = bad.make();
  writeFileSync(path, text);
  const result = await cli('reconcile', '-f', path);
  assert.equal(result.code, 64, `${result.stdout}\n${result.stderr}`);
  assert.match(result.stderr, message);
  noStack(result);
  assert.equal(result.stdout, '');
  const json = await cli('reconcile', '-f', path, '--json');
  assert.equal(json.code, 64, json.stderr);
  assert.equal(json.stdout, '', 'no JSON document for a usage error');
}
