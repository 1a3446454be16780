/**
 * `npm run bench`: prints the performance figures of the tool. Benchmarks measure; they do
 * not pass or fail (the targets are printed beside the figures for the reader).
 * `npm run bench -- daemon routes` runs only the ones named (decode, snoop-read,
 * pcap-read, routes, install, daemon, reconcile, logger, flood, tunnel, seal, sources, fleet).
 *
 * One benchmark that breaks is reported and the rest still run; the exit status is 1 then.
 * The routes benchmark needs kernel multicast routing: on a kernel without, it runs in the
 * kernel lab (scripts/kernel-lab.sh), and its figures say so (an emulated machine: they
 * show the shape, not this machine's speed).
 */
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { benchDaemon, daemonOptionsFromEnv, daemonReport } from './daemon.js';
import { benchDecode } from './decode.js';
import { fleetReport } from '../test/lab/churn.js';
import { benchFleet, fleetOptionsFromEnv } from './fleet.js';
import { benchFlood, floodOptionsFromEnv, floodReport } from './flood.js';
import { benchInstall } from './install.js';
import { benchLogger } from './logger.js';
import { benchPeerSeal } from './peer-seal.js';
import { benchReconcile, reconcileOptionsFromEnv, reconcileReport } from './reconcile.js';
import { benchRoutes } from './routes.js';
import { benchSnoopRead } from './snoop-read.js';
import { benchSources, sourcesOptionsFromEnv, sourcesReport } from './sources.js';
import { benchTunnel, tunnelOptionsFromEnv, tunnelReport } from './tunnel.js';

const number = (value: number) => Math.round(value).toLocaleString('en-US');
const BENCHMARKS = [
  'decode',
  'snoop-read',
  'pcap-read',
  'routes',
  'install',
  'daemon',
  'reconcile',
  'logger',
  'flood',
  'tunnel',
  'seal',
  'sources',
  'fleet',
];
const only = process.argv.slice(2);
for (const name of only) {
  if (!BENCHMARKS.includes(name))
    throw new Error(`no benchmark ${JSON.stringify(name)}: pick from ${BENCHMARKS.join(', ')}`);
}
const selected = (name: string) => only.length === 0 || only.includes(name);
const broken: string[] = [];

/** Runs one benchmark; what it throws is printed and the next one runs. */
async function bench(name: string, body: () => unknown): Promise<void> {
  if (!selected(name)) return;
  try {
    await body();
  } catch (error) {
    broken.push(name);
    console.log(
      `  the ${name} benchmark broke off: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
    );
    if (error instanceof Error && error.stack !== undefined) console.error(error.stack);
  }
}

const KERNEL_LAB = fileURLToPath(new URL('../scripts/kernel-lab.sh', import.meta.url));

/** The routes benchmark where kernel multicast routing is: here, or in the kernel lab. */
async function benchRoutesSomewhere(): Promise<void> {
  console.log(
    '\nkernel (S,G) routes: add and delete 10,000 MFC entries; routes --json with 10,000 (target: under 1 s)',
  );
  if (existsSync('/proc/net/ip_mr_vif')) {
    const routes = await benchRoutes();
    console.log(
      `  add ${number(routes.addedPerSecond)}/s, delete ${number(routes.deletedPerSecond)}/s; routes --json ${routes.routesJsonSeconds.toFixed(2)} s`,
    );
    return;
  }
  const lab = spawnSync(KERNEL_LAB, ['--status'], { encoding: 'utf8' });
  if (lab.status !== 0)
    throw new Error(`this kernel has no multicast routing, and the kernel lab is not ready: ${lab.stderr.trim()}`);
  console.log(`  this kernel has no multicast routing: measured in the kernel lab, ${lab.stdout.trim()}`);
  console.log("  (an emulated machine: the figures show the shape, not this machine's speed)");
  const run = spawnSync(
    KERNEL_LAB,
    ['--quiet', '--', process.execPath, '--import', 'tsx', fileURLToPath(import.meta.url), 'routes'],
    {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'inherit'],
    },
  );
  const figures = run.stdout.split('\n').filter((line) => line.startsWith('  add '));
  if (run.status !== 0 || figures.length === 0)
    throw new Error(`the kernel lab's run exited ${run.status}: ${run.stdout.trim().split('\n').at(-1) ?? ''}`);
  for (const line of figures) console.log(line);
}

await bench('decode', async () => {
  console.log(
    'IGMP and MLD decode, one core (target: 2,000,000 IGMPv2 reports/s, 500,000 IGMPv3 and 1,000,000 MLDv2 reports/s of 4 records × 2 sources)',
  );
  for (const figure of benchDecode())
    console.log(`  ${figure.name.padEnd(52)} ${number(figure.perSecond).padStart(12)} /s`);
});

await bench('snoop-read', async () => {
  console.log('\nsnoop --read --json > /dev/null (target: 1,000,000 messages in under 5 s)');
  const read = await benchSnoopRead();
  console.log(
    `  ${number(read.messages)} messages, ${(read.fileBytes / 1e6).toFixed(1)} MB: ${read.seconds.toFixed(2)} s (${number(read.linesPerSecond)} lines/s)`,
  );
});

await bench('pcap-read', async () => {
  console.log('\npcap reader alone (bench/pcap-read.ts)');
  const pcapRead = spawnSync(process.execPath, ['--import', 'tsx', 'bench/pcap-read.ts'], { encoding: 'utf8' });
  process.stdout.write(pcapRead.stdout.replace(/^/gm, '  '));
  if (pcapRead.status !== 0) process.stderr.write(pcapRead.stderr);
});

await bench('routes', benchRoutesSomewhere);

await bench('install', async () => {
  const installGroups = Number(process.env.BENCH_INSTALL_GROUPS ?? 10_000);
  console.log(
    `\ninstall -f of ${number(installGroups)} groups × 4 ports on a lab node's OVS, against one ovs-ofctl add-group + add-flow per group`,
  );
  console.log('  (target: at most 2 s, and at least 20 times faster; the ovs-ofctl side takes minutes)');
  const install = await benchInstall(installGroups);
  console.log(
    `  mcastctl install -f: ${install.mcastctlSeconds.toFixed(2)} s; ovs-ofctl one by one: ${install.ofctlSeconds.toFixed(1)} s; ratio ${install.ratio.toFixed(0)}×`,
  );
});

await bench('daemon', async () => {
  console.log(
    "\nmcastctl daemon on a lab node: IGMP and MLD join and leave latency at 0, 1,000 and 5,000 installed groups beside OVS's own snooping, convergence of 100 pods × 50 groups, memory, idle CPU (about 8 min)",
  );
  console.log(daemonReport(await benchDaemon(daemonOptionsFromEnv())).join('\n'));
});

await bench('reconcile', async () => {
  const options = reconcileOptionsFromEnv();
  console.log(
    `\nmcastctl reconcile on a lab node's OVS: ${number(options.groups ?? 10_000)} declared groups × 4 ports, ${number(options.drifted ?? 1_000)} of them drifted (whole command, wall time)`,
  );
  console.log(reconcileReport(await benchReconcile(options)).join('\n'));
});

await bench('seal', async () => {
  console.log('\npeer seals (HMAC-SHA-256, 32 octets a message), one core: what a keyed message costs each way');
  for (const figure of benchPeerSeal())
    console.log(
      `  ${figure.name.padEnd(30)} ${String(figure.octets).padStart(5)} octets: seal ${figure.sealMicroseconds.toFixed(1)} µs, open ${figure.openMicroseconds.toFixed(1)} µs`,
    );
});

await bench('logger', async () => {
  console.log(
    '\ndaemon logger, own against pino, to a stream that drops its input (the daemon needs a few thousand lines/s)',
  );
  const logger = benchLogger();
  for (const figure of logger.throughput)
    console.log(
      `  ${figure.name.padEnd(30)} ${figure.format.padEnd(4)} ${number(figure.linesPerSecond).padStart(10)} lines/s`,
    );
  for (const figure of logger.imports)
    console.log(`  ${figure.name.padEnd(30)} cold import ${figure.milliseconds.toFixed(1)} ms`);
});

await bench('flood', async () => {
  console.log(
    '\nmcastctl daemon under an IGMPv3 flood from attacker pods (about 3 min; BENCH_FLOOD_S, BENCH_FLOOD_ATTACKERS, BENCH_FLOOD_REPORTS, BENCH_FLOOD_RECORDS, BENCH_FLOOD_DAEMON_ARGS: see bench/flood.ts)',
  );
  for (const line of floodReport(await benchFlood(floodOptionsFromEnv()))) console.log(line);
});

await bench('tunnel', async () => {
  console.log(
    '\nmcastctl daemon in tunnel mode on three lab nodes: convergence after a general query, cross-node join and leave latency,' +
      ' the time to drop a dead peer (about 2 min; BENCH_TUNNEL_PODS, BENCH_TUNNEL_GROUPS, BENCH_TUNNEL_JOINS, BENCH_TUNNEL_PEER_TIMEOUT_S,' +
      ' BENCH_TUNNEL_REFRESH_S: see bench/tunnel.ts)',
  );
  for (const line of tunnelReport(await benchTunnel(tunnelOptionsFromEnv()))) console.log(line);
});

await bench('sources', async () => {
  console.log(
    '\nmcastctl daemon forwarding per source on one lab node: a source-specific join against a plain one, and the scale of' +
      ' many sources (BENCH_SOURCES_JOINS, BENCH_SOURCES_PODS, BENCH_SOURCES_GROUPS, BENCH_SOURCES_SOURCES: see bench/sources.ts)',
  );
  for (const line of sourcesReport(await benchSources(sourcesOptionsFromEnv()))) console.log(line);
});

await bench('fleet', async () => {
  console.log(
    '\nmcastctl daemon in tunnel mode on a fleet of lab nodes under membership churn: convergence, changes/s, sync latency, the final' +
      ' check (missing, stray, delivery), memory and CPU (about 4 min; BENCH_FLEET_NODES, BENCH_FLEET_PODS, BENCH_FLEET_S, BENCH_FLEET_CHANGES,' +
      ' BENCH_FLEET_POD_CHANGES, BENCH_FLEET_GROUPS_PER_POD, BENCH_FLEET_DELIVERY_GROUPS, BENCH_FLEET_QUIET_S, BENCH_FLEET_SEED: see bench/fleet.ts)',
  );
  for (const line of fleetReport(await benchFleet(fleetOptionsFromEnv()))) console.log(line);
});

if (broken.length > 0) {
  console.log(
    `\n${broken.length} benchmark${broken.length === 1 ? '' : 's'} broke off: ${broken.join(', ')} (see above)`,
  );
  process.exitCode = 1;
}
