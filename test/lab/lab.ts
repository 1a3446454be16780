/**
 * The lab: a small network of Linux network namespaces on this machine, for end-to-end
 * tests and the demo (see docs/architecture.md, "The test lab").
 *
 * Everything a lab creates lives in network namespaces named `mcl<id>-<name>` and every
 * interface it creates is named `mcl<id><suffix>`, where `<id>` is the creating process's
 * pid in base 36 followed by one sequence character. So two test files running at once
 * never collide and nothing touches the machine's own interfaces, routes or OVS. Each lab
 * is also recorded in /run/mcl-labs/mcl<id> (pid and process start time), so that a
 * crashed run's leftovers can be recognised (that process is gone) and swept, and nobody
 * else's namespaces ever are.
 *
 * Teardown always runs: `destroy()` is idempotent, and a process-wide handler destroys
 * every live lab synchronously on SIGINT, SIGTERM, SIGHUP and at process exit.
 *
 * Commands are run with execFile (argv arrays, never a shell string built from input).
 */
import { execFile, execFileSync, spawn, type ChildProcess, type SpawnOptions } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { deadline } from '../helpers/time-scale.js';
import { basename, join } from 'node:path';
import { formatIPv4, parseIPv4 } from '../../src/wire/ipv4-address.js';
import { canonicalIPv6 } from '../../src/wire/ipv6-address.js';

export const LAB_PREFIX = 'mcl';
/** IFNAMSIZ - 1. */
export const MAX_IFNAME = 15;
const NETNS_DIR = '/run/netns';
/** One file per live lab, named by its prefix: how sweepStaleLabs() knows what is a lab's. */
const REGISTRY_DIR = '/run/mcl-labs';
/** `mcl<pid base 36><one sequence char>` */
const LAB_ID_PATTERN = /^mcl[0-9a-z]{2,6}$/;

export interface ExecResult {
  stdout: string;
  stderr: string;
}

export interface ExecOptions {
  /** Kill the command after this long (default 30 s). */
  timeoutMs?: number;
  /** Written to the command's stdin. */
  input?: string;
}

export class LabCommandError extends Error {
  override readonly name = 'LabCommandError';
  constructor(
    readonly argv: readonly string[],
    readonly exitCode: number | null,
    readonly stdout: string,
    readonly stderr: string,
  ) {
    super(`lab command failed (exit ${exitCode}): ${argv.join(' ')}\n${stderr.trim()}`);
  }
}

/** Runs argv (no shell). Resolves with its output; rejects with LabCommandError. */
export function run(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
  const [file, ...args] = argv;
  if (file === undefined) throw new RangeError('empty argv');
  return new Promise((resolve, reject) => {
    const child = execFile(
      file,
      args,
      { timeout: deadline(options.timeoutMs ?? 30_000), maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (error, stdout, stderr) => {
        if (error) {
          const code = typeof error.code === 'number' ? error.code : null;
          reject(new LabCommandError(argv, code, stdout, stderr || error.message));
        } else resolve({ stdout, stderr });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

function runSync(argv: readonly string[]): string | undefined {
  const [file, ...args] = argv;
  if (file === undefined) return undefined;
  try {
    return execFileSync(file, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'], timeout: 10_000 });
  } catch {
    return undefined;
  }
}

/** Milliseconds to the centiseconds (USER_HZ clock_t) that `ip link ... type bridge` takes. */
function centiseconds(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) throw new RangeError(`bad interval: ${ms} ms`);
  return String(Math.round(ms / 10));
}

// ---------------------------------------------------------------------------------------
// Addresses

export interface Cidr {
  address: string;
  prefixLength: number;
}

export function parseCidr(text: string): Cidr {
  const [address = '', length = ''] = text.split('/');
  const prefixLength = Number(length);
  if (parseIPv4(address) === undefined || !/^\d{1,2}$/.test(length) || prefixLength > 32) {
    throw new RangeError(`not an IPv4 CIDR: ${JSON.stringify(text)}`);
  }
  return { address, prefixLength };
}

/** An IPv6 CIDR (e.g. `fd00:10::11/64`); the address comes back in RFC 5952 form, as `ip -6` prints it. */
export function parseCidr6(text: string): Cidr {
  const [address = '', length = '', ...rest] = text.split('/');
  const canonical = canonicalIPv6(address);
  const prefixLength = Number(length);
  if (canonical === undefined || rest.length > 0 || !/^\d{1,3}$/.test(length) || prefixLength > 128) {
    throw new RangeError(`not an IPv6 CIDR: ${JSON.stringify(text)}`);
  }
  return { address: canonical, prefixLength };
}

/** The `index`th address of `cidr`'s network (index 1 = network + 1). */
function nthAddress(cidr: Cidr, index: number): string {
  const base = parseIPv4(cidr.address)!;
  const mask = cidr.prefixLength === 0 ? 0 : (0xffffffff << (32 - cidr.prefixLength)) >>> 0;
  const size = 2 ** (32 - cidr.prefixLength);
  if (index <= 0 || index >= size - 1)
    throw new RangeError(`no address #${index} in ${cidr.address}/${cidr.prefixLength}`);
  return formatIPv4(((base & mask) >>> 0) + index);
}

// ---------------------------------------------------------------------------------------
// Bridges and hosts

export interface LinuxBridgeOptions {
  /** mcast_snooping (default true, as the kernel). */
  snooping?: boolean;
  /** mcast_querier (default false, as the kernel). */
  querier?: boolean;
  /** mcast_igmp_version: the querier speaks IGMPv2 unless this is 3. */
  igmpVersion?: 2 | 3;
  /** mcast_mld_version: the querier speaks MLDv1 unless this is 2 (its MLD queries need IPv6 on the bridge device). */
  mldVersion?: 1 | 2;
  /** mcast_router of the bridge device itself: 0 never, 1 learn (default), 2 always. */
  router?: 0 | 1 | 2;
  /**
   * mcast_query_use_ifaddr: queries come from the bridge's address rather than 0.0.0.0. Default: true when `address` is
   * set.
   */
  queryUseIfaddr?: boolean;
  queryIntervalMs?: number;
  queryResponseIntervalMs?: number;
  startupQueryIntervalMs?: number;
  startupQueryCount?: number;
  lastMemberIntervalMs?: number;
  lastMemberCount?: number;
  membershipIntervalMs?: number;
  querierIntervalMs?: number;
}

export interface NewLinuxBridgeOptions extends LinuxBridgeOptions {
  /**
   * An address for the bridge device (CIDR); hosts on the bridge get addresses from its network and use it as their
   * gateway.
   */
  address?: string;
  /** The network hosts on this bridge are numbered in (CIDR; default: that of `address`, else 10.77.0.0/24). */
  network?: string;
}

/** The `ip link ... type bridge` arguments for `options` (only those set). */
export function bridgeArgs(options: LinuxBridgeOptions): string[] {
  const args: string[] = [];
  const flag = (name: string, value: boolean | undefined) => {
    if (value !== undefined) args.push(name, value ? '1' : '0');
  };
  const time = (name: string, ms: number | undefined) => {
    if (ms !== undefined) args.push(name, centiseconds(ms));
  };
  const count = (name: string, n: number | undefined) => {
    if (n !== undefined) {
      if (!Number.isInteger(n) || n < 0) throw new RangeError(`bad ${name}: ${n}`);
      args.push(name, String(n));
    }
  };
  flag('mcast_snooping', options.snooping);
  count('mcast_igmp_version', options.igmpVersion);
  count('mcast_mld_version', options.mldVersion);
  count('mcast_router', options.router);
  flag('mcast_query_use_ifaddr', options.queryUseIfaddr);
  time('mcast_query_interval', options.queryIntervalMs);
  time('mcast_query_response_interval', options.queryResponseIntervalMs);
  time('mcast_startup_query_interval', options.startupQueryIntervalMs);
  count('mcast_startup_query_count', options.startupQueryCount);
  time('mcast_last_member_interval', options.lastMemberIntervalMs);
  count('mcast_last_member_count', options.lastMemberCount);
  time('mcast_membership_interval', options.membershipIntervalMs);
  time('mcast_querier_interval', options.querierIntervalMs);
  // Last: turning the querier on starts its startup queries with the settings above.
  flag('mcast_querier', options.querier);
  return args;
}

export class LinuxBridge {
  /** Next host number on this bridge's network (.11, .12, ...). */
  private nextHost = 11;
  /** Hosts' default gateway when the bridge itself has no address (e.g. a hub behind a querier). */
  gateway: string | undefined;
  constructor(
    readonly lab: Lab,
    readonly ns: string,
    readonly name: string,
    /** The bridge device's own address, if it has one. */
    readonly cidr: Cidr | undefined,
    /** The network hosts on this bridge are numbered in. */
    readonly network: Cidr,
  ) {}

  get address(): string | undefined {
    return this.cidr?.address;
  }

  /** Changes multicast settings (`ip link set ... type bridge ...`), e.g. `{ igmpVersion: 2 }`. */
  async set(options: LinuxBridgeOptions): Promise<void> {
    const args = bridgeArgs(options);
    if (args.length > 0) await this.lab.ip(this.ns, 'link', 'set', this.name, 'type', 'bridge', ...args);
  }

  /** Makes `ifname` (in the bridge's namespace) a port of this bridge and brings it up. */
  async attach(ifname: string): Promise<void> {
    await this.lab.ip(this.ns, 'link', 'set', ifname, 'master', this.name, 'up');
  }

  /** The next unused host address on this bridge's network. */
  allocateAddress(): Cidr {
    return { address: nthAddress(this.network, this.nextHost++), prefixLength: this.network.prefixLength };
  }
}

export interface HostOptions {
  bridge: LinuxBridge;
  /** CIDR; default: the next free address of the bridge's network. */
  address?: string;
  /** Default gateway; default: the bridge's address if it has one, else a device route. */
  gateway?: string;
  /** force_igmp_version for the host's interface. */
  igmpVersion?: 1 | 2 | 3;
  /** Leave transmit checksum offload on (default: off, see docs/architecture.md, "Open vSwitch"). */
  txOffload?: boolean;
}

export interface Host {
  /** The lab-local name given to `host()`. */
  name: string;
  ns: string;
  /** The host's interface (in `ns`). */
  iface: string;
  /** The bridge port that is the other end of the host's veth (in `bridge.ns`). */
  port: string;
  address: string;
  prefixLength: number;
  bridge: LinuxBridge;
}

export interface IgmpSegment {
  ns: string;
  /** The snooping bridge that queries (when its querier is on). */
  querier: LinuxBridge;
  /** Where hosts attach (snooping off: it floods). Hosts' gateway default: the querier's address. */
  hub: LinuxBridge;
  /** The querier's port towards the hub: every IGMP message of the segment crosses it once. */
  tap: string;
}

export interface VethEnd {
  ns: string;
  /** Full interface name (use `lab.ifname(suffix)`). */
  name: string;
}

export interface TcpdumpOptions {
  /** A pcap filter expression as argv words, e.g. ['igmp']. */
  filter?: string[];
  /** Resolve once tcpdump listens; reject after this long (default 10 s). */
  startTimeoutMs?: number;
}

export interface Tcpdump {
  file: string;
  process: ChildProcess;
  /** Stops tcpdump (SIGINT, then SIGTERM/SIGKILL if it lingers), resolves when it has exited and flushed `file`. */
  stop(): Promise<void>;
  /** tcpdump's stderr so far (its closing lines tell packets captured/dropped). */
  stderr(): string;
}

export interface LabOptions {
  /** Remove other, dead processes' labs first (default true). */
  sweep?: boolean;
  /**
   * Destroy every lab and exit (128 + signal number) on SIGINT, SIGTERM and SIGHUP
   * (default true). A program that handles these signals itself (to stop gracefully, then
   * call destroy()) passes false; labs are still destroyed at process exit.
   */
  handleSignals?: boolean;
  /** Keep `dir` (captures) after destroy (default: env MCL_KEEP_ARTIFACTS is set). */
  keepArtifacts?: boolean;
}

// ---------------------------------------------------------------------------------------
// Process-wide registry and signal handling

const liveLabs = new Set<Lab>();
let sequence = 0;
let exitHandlerInstalled = false;
let signalHandlersInstalled = false;

const SIGNAL_NUMBERS = { SIGHUP: 1, SIGINT: 2, SIGTERM: 15 } as const;

function installHandlers(signals: boolean): void {
  if (!exitHandlerInstalled) {
    exitHandlerInstalled = true;
    process.on('exit', destroyAllSync);
  }
  if (!signals || signalHandlersInstalled) return;
  signalHandlersInstalled = true;
  for (const [signal, number] of Object.entries(SIGNAL_NUMBERS)) {
    process.on(signal as NodeJS.Signals, () => {
      destroyAllSync();
      process.exit(128 + number);
    });
  }
}

function destroyAllSync(): void {
  for (const lab of [...liveLabs]) lab.destroySync();
}

/**
 * A process's start time in clock ticks since boot (field 22 of /proc/<pid>/stat): with the pid, it names one process
 * for good.
 */
function processStartTicks(pid: number): number | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) may hold spaces and parentheses: split after the last ')'.
    const ticks = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
    return Number.isFinite(ticks) ? ticks : undefined;
  } catch {
    return undefined;
  }
}

/** What the registry file of a lab says: who made it, and its scratch directory. */
interface RegistryEntry {
  pid: number;
  startTicks: number;
  dir?: string;
}

function readRegistry(prefix: string): RegistryEntry | undefined {
  try {
    const entry = JSON.parse(readFileSync(join(REGISTRY_DIR, prefix), 'utf8')) as Partial<RegistryEntry>;
    if (typeof entry.pid !== 'number' || typeof entry.startTicks !== 'number') return undefined;
    return {
      pid: entry.pid,
      startTicks: entry.startTicks,
      ...(typeof entry.dir === 'string' ? { dir: entry.dir } : {}),
    };
  } catch {
    return undefined;
  }
}

/** Whether the lab `prefix` belongs to a live process: its pid runs and is the same process (not a reused pid). */
function ownerAlive(prefix: string): boolean {
  const entry = readRegistry(prefix);
  if (!entry) return false;
  if (entry.pid === process.pid) return [...liveLabs].some((lab) => lab.prefix === prefix);
  return processStartTicks(entry.pid) === entry.startTicks;
}

function listNamespaces(): string[] {
  try {
    return readdirSync(NETNS_DIR);
  } catch {
    return [];
  }
}

/** Kills every process left in namespace `ns` (by pid) and deletes it. Synchronous. */
function removeNamespaceSync(ns: string): void {
  const pids = runSync(['ip', 'netns', 'pids', ns]) ?? '';
  for (const pid of pids.split(/\s+/).filter(Boolean)) {
    try {
      process.kill(Number(pid), 'SIGKILL');
    } catch {
      // already gone
    }
  }
  runSync(['ip', 'netns', 'del', ns]);
}

/** Removes a dead lab `prefix`: its namespaces, its scratch directory and its registry file. */
function removeLabSync(prefix: string): string[] {
  const removed = listNamespaces().filter((name) => name.startsWith(`${prefix}-`));
  for (const ns of removed) removeNamespaceSync(ns);
  const dir = readRegistry(prefix)?.dir;
  if (dir !== undefined && basename(dir).startsWith(`${prefix}-`)) rmSync(dir, { recursive: true, force: true });
  rmSync(join(REGISTRY_DIR, prefix), { force: true });
  return removed;
}

/**
 * Deletes the namespaces (and kills the processes in them) of labs whose creating process
 * is dead: leftovers of crashed or killed runs. Only labs recorded in the registry
 * (/run/mcl-labs, one file per lab) are considered, so namespaces that other tools made,
 * whatever their names, are never touched; labs of live processes (another test file
 * running right now) are left alone. Returns the namespaces removed.
 */
export function sweepStaleLabs(): string[] {
  let prefixes: string[];
  try {
    prefixes = readdirSync(REGISTRY_DIR).filter((name) => LAB_ID_PATTERN.test(name));
  } catch {
    return [];
  }
  return prefixes.filter((prefix) => !ownerAlive(prefix)).flatMap(removeLabSync);
}

// ---------------------------------------------------------------------------------------

export class Lab {
  /** `<pid base 36><sequence char>`, unique among live processes. */
  readonly id: string;
  /** `mcl<id>`: every namespace and interface name starts with it. */
  readonly prefix: string;
  /** Scratch directory for captures and logs; removed by destroy() unless kept. */
  readonly dir: string;
  private readonly keepArtifacts: boolean;
  private readonly namespaces: string[] = [];
  private readonly children = new Set<ChildProcess>();
  private destroying: Promise<void> | undefined;
  private destroyedSync = false;

  private constructor(options: LabOptions) {
    installHandlers(options.handleSignals ?? true);
    if (options.sweep ?? true) sweepStaleLabs();
    const taken = new Set([...liveLabs].map((lab) => lab.id));
    const pid = process.pid.toString(36);
    let id: string;
    do {
      id = pid + (sequence++ % 36).toString(36);
    } while (taken.has(id));
    this.id = id;
    this.prefix = `${LAB_PREFIX}${id}`;
    // A lab with our prefix can only be a dead process's whose pid we now have.
    if (existsSync(join(REGISTRY_DIR, this.prefix))) removeLabSync(this.prefix);
    this.dir = mkdtempSync(join(tmpdir(), `${this.prefix}-`));
    this.keepArtifacts = options.keepArtifacts ?? Boolean(process.env.MCL_KEEP_ARTIFACTS);
    mkdirSync(REGISTRY_DIR, { recursive: true, mode: 0o700 });
    const entry: RegistryEntry = { pid: process.pid, startTicks: processStartTicks(process.pid) ?? -1 };
    // A kept directory is not the sweeper's to remove either.
    if (!this.keepArtifacts) entry.dir = this.dir;
    writeFileSync(join(REGISTRY_DIR, this.prefix), `${JSON.stringify(entry)}\n`);
    liveLabs.add(this);
  }

  /** A new lab. Must run as root (network namespaces). */
  static create(options: LabOptions = {}): Lab {
    if (process.getuid?.() !== 0) throw new Error('the lab needs root (network namespaces, veths, bridges)');
    return new Lab(options);
  }

  get destroyed(): boolean {
    return this.destroying !== undefined || this.destroyedSync;
  }

  private assertLive(): void {
    if (this.destroyed) throw new Error(`lab ${this.prefix} is destroyed`);
  }

  /**
   * Full interface name for `suffix`: `mcl<id><suffix>`, at most 15 characters (suffixes of up to 6 characters always
   * fit).
   */
  ifname(suffix: string): string {
    const name = `${this.prefix}${suffix}`;
    if (!/^[A-Za-z0-9_-]+$/.test(suffix) || name.length > MAX_IFNAME) {
      throw new RangeError(
        `interface name ${JSON.stringify(name)} is not a valid name of at most ${MAX_IFNAME} characters`,
      );
    }
    return name;
  }

  /** Path of a scratch file in the lab's directory. */
  file(name: string): string {
    return join(this.dir, name);
  }

  // --- commands --------------------------------------------------------------------------

  /** Runs argv inside namespace `ns`. */
  exec(ns: string, argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    this.assertLive();
    return run(['ip', 'netns', 'exec', ns, ...argv], options);
  }

  /** `ip -n <ns> <args>`. */
  ip(ns: string, ...args: string[]): Promise<ExecResult> {
    this.assertLive();
    return run(['ip', '-n', ns, ...args]);
  }

  /** `sysctl -w key=value` inside namespace `ns`. */
  async sysctl(ns: string, key: string, value: string | number): Promise<void> {
    await this.exec(ns, ['sysctl', '-q', '-w', `${key}=${value}`]);
  }

  /**
   * Starts a long-running process inside `ns` (stdio piped unless told otherwise). It is
   * killed by destroy() if still running.
   */
  spawn(ns: string, argv: readonly string[], options: SpawnOptions = {}): ChildProcess {
    this.assertLive();
    // `ip netns exec` execs the command itself, so the child's pid is the command's.
    const child = spawn('ip', ['netns', 'exec', ns, ...argv], { stdio: 'pipe', ...options });
    this.children.add(child);
    child.once('exit', () => this.children.delete(child));
    child.once('error', () => this.children.delete(child));
    return child;
  }

  // --- topology --------------------------------------------------------------------------

  /** Creates namespace `mcl<id>-<name>` with lo up and IPv6 off (no MLD/ND noise); returns its full name. */
  async namespace(name: string): Promise<string> {
    this.assertLive();
    if (!/^[A-Za-z0-9_-]{1,40}$/.test(name)) throw new RangeError(`bad namespace name ${JSON.stringify(name)}`);
    const ns = `${this.prefix}-${name}`;
    if (this.namespaces.includes(ns)) throw new Error(`namespace ${ns} exists in this lab`);
    await run(['ip', 'netns', 'add', ns]);
    this.namespaces.push(ns);
    await this.ip(ns, 'link', 'set', 'lo', 'up');
    await this.sysctl(ns, 'net.ipv6.conf.all.disable_ipv6', 1);
    await this.sysctl(ns, 'net.ipv6.conf.default.disable_ipv6', 1);
    return ns;
  }

  /**
   * Deletes namespace `ns` of this lab before the lab's end (e.g. a pod going away):
   * kills every process still in it, then deletes it, and with it its interfaces.
   */
  async deleteNamespace(ns: string): Promise<void> {
    this.assertLive();
    const at = this.namespaces.indexOf(ns);
    if (at < 0) throw new Error(`namespace ${ns} is not one of lab ${this.prefix}'s`);
    const { stdout } = await run(['ip', 'netns', 'pids', ns]);
    for (const pid of stdout.split(/\s+/).filter(Boolean)) {
      try {
        process.kill(Number(pid), 'SIGKILL');
      } catch {
        // already gone
      }
    }
    await run(['ip', 'netns', 'del', ns]);
    this.namespaces.splice(at, 1);
  }

  /** A veth pair from `a` to `b`, created inside a's namespace (never in the machine's own), both ends up. */
  async vethPair(a: VethEnd, b: VethEnd): Promise<void> {
    for (const end of [a, b]) {
      if (!end.name.startsWith(this.prefix) || end.name.length > MAX_IFNAME) {
        throw new RangeError(
          `interface ${JSON.stringify(end.name)} must start with ${this.prefix} and fit ${MAX_IFNAME} characters`,
        );
      }
    }
    await this.ip(a.ns, 'link', 'add', a.name, 'type', 'veth', 'peer', 'name', b.name, 'netns', b.ns);
    await this.ip(a.ns, 'link', 'set', a.name, 'up');
    await this.ip(b.ns, 'link', 'set', b.name, 'up');
  }

  /**
   * A host behind a router, on a veth of its own: `/24` addresses on both ends, the
   * host's default route and multicast route via the router, transmit checksum offload
   * off on both ends (with it on, UDP leaves a veth with its checksum unfilled: docs/architecture.md).
   */
  async routedLink(router: VethEnd & { address: string }, host: VethEnd & { address: string }): Promise<void> {
    await this.vethPair(router, host);
    await this.ip(router.ns, 'addr', 'add', `${router.address}/24`, 'dev', router.name);
    await this.ip(host.ns, 'addr', 'add', `${host.address}/24`, 'dev', host.name);
    await this.ip(host.ns, 'route', 'add', 'default', 'via', router.address, 'dev', host.name);
    await this.ip(host.ns, 'route', 'add', '224.0.0.0/4', 'dev', host.name);
    for (const end of [router, host]) await this.exec(end.ns, ['ethtool', '-K', end.name, 'tx', 'off']);
  }

  /**
   * A Linux bridge `mcl<id><name>` in `ns`, up, with the given multicast settings, e.g.
   * `{ snooping: true, querier: true, igmpVersion: 3, queryIntervalMs: 2000 }`.
   */
  async linuxBridge(ns: string, name: string, options: NewLinuxBridgeOptions = {}): Promise<LinuxBridge> {
    const ifname = this.ifname(name);
    // The querier is switched on last, once the bridge has its address and is up, so that
    // its startup queries carry that address.
    const { address, network, querier, ...settings } = options;
    const cidr = address === undefined ? undefined : parseCidr(address);
    if (cidr && settings.queryUseIfaddr === undefined) settings.queryUseIfaddr = true;
    await this.ip(ns, 'link', 'add', ifname, 'type', 'bridge', ...bridgeArgs(settings));
    if (cidr) await this.ip(ns, 'addr', 'add', `${cidr.address}/${cidr.prefixLength}`, 'dev', ifname);
    await this.ip(ns, 'link', 'set', ifname, 'up');
    const bridge = new LinuxBridge(this, ns, ifname, cidr, parseCidr(network ?? address ?? '10.77.0.0/24'));
    if (querier !== undefined) await bridge.set({ querier });
    return bridge;
  }

  /**
   * An IGMP segment whose every message can be seen in one place: in namespace `ns`, a
   * querier bridge (`<name>q`, snooping on, with `address` and the given settings) whose
   * only port (`<name>up`) leads to a hub (`<name>h`: a bridge with snooping off, which
   * floods every multicast frame to all its ports and to itself). Hosts attach to the hub.
   * Every report and leave of every host, and every query the querier sends (general,
   * group-specific, group-and-source-specific), crosses `tap` exactly once, and the hub
   * device sees them all too. (On a single snooping bridge no such place exists: its own
   * group-specific queries go out of member ports only, never up to the bridge device.)
   *
   * The querier is left off unless `querier.querier` is true: turn it on with
   * `querier.set({ querier: true })` once captures run, to catch its startup queries.
   */
  async igmpSegment(
    ns: string,
    options: { name?: string; address: string; querier: LinuxBridgeOptions },
  ): Promise<IgmpSegment> {
    const name = options.name ?? 's';
    const querier = await this.linuxBridge(ns, `${name}q`, {
      snooping: true,
      ...options.querier,
      address: options.address,
    });
    const hub = await this.linuxBridge(ns, `${name}h`, { snooping: false, network: options.address });
    const tap = this.ifname(`${name}up`);
    const hubPort = this.ifname(`${name}dn`);
    await this.vethPair({ ns, name: tap }, { ns, name: hubPort });
    await querier.attach(tap);
    await hub.attach(hubPort);
    hub.gateway = querier.address;
    return { ns, querier, hub, tap };
  }

  /**
   * A host: namespace `mcl<id>-<name>` with one veth into `bridge` (host side
   * `mcl<id><name>`, bridge side `mcl<id><name>p`), an address, a default route, a
   * multicast route (224.0.0.0/4 dev <iface>) and transmit checksum offload off.
   */
  async host(name: string, options: HostOptions): Promise<Host> {
    const { bridge } = options;
    const iface = this.ifname(name);
    const port = this.ifname(`${name}p`);
    const cidr = options.address === undefined ? bridge.allocateAddress() : parseCidr(options.address);
    const ns = await this.namespace(name);
    await this.vethPair({ ns, name: iface }, { ns: bridge.ns, name: port });
    await bridge.attach(port);
    await this.ip(ns, 'addr', 'add', `${cidr.address}/${cidr.prefixLength}`, 'dev', iface);
    const gateway = options.gateway ?? bridge.address ?? bridge.gateway;
    if (gateway !== undefined) await this.ip(ns, 'route', 'add', 'default', 'via', gateway, 'dev', iface);
    else await this.ip(ns, 'route', 'add', 'default', 'dev', iface);
    await this.ip(ns, 'route', 'add', '224.0.0.0/4', 'dev', iface);
    if (!options.txOffload) await this.exec(ns, ['ethtool', '-K', iface, 'tx', 'off']);
    const host: Host = { name, ns, iface, port, address: cidr.address, prefixLength: cidr.prefixLength, bridge };
    if (options.igmpVersion !== undefined) await this.forceIgmpVersion(host, options.igmpVersion);
    return host;
  }

  /** `net.ipv4.conf.<iface>.force_igmp_version` (0 = let the host follow its queriers). */
  async forceIgmpVersion(host: Pick<Host, 'ns' | 'iface'>, version: 0 | 1 | 2 | 3): Promise<void> {
    await this.sysctl(host.ns, `net.ipv4.conf.${host.iface}.force_igmp_version`, version);
  }

  // --- capture ---------------------------------------------------------------------------

  /**
   * Starts `tcpdump -i iface -w file` inside `ns` and resolves once it is really
   * listening (it says "listening on" on stderr). Packets are written as they come (-U).
   */
  async startTcpdump(ns: string, iface: string, file: string, options: TcpdumpOptions = {}): Promise<Tcpdump> {
    // --immediate-mode: without it libpcap holds packets in the ring until a block fills
    // or times out, and a tcpdump stopped right after traffic loses them.
    const argv = [
      'tcpdump',
      '-n',
      '-i',
      iface,
      '--immediate-mode',
      '-U',
      '-s',
      '0',
      '-Z',
      'root',
      '-w',
      file,
      ...(options.filter ?? []),
    ];
    const child = this.spawn(ns, argv, { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    let exited = false;
    const exit = new Promise<void>((resolve) =>
      child.once('exit', () => {
        exited = true;
        resolve();
      }),
    );
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => {
        child.kill('SIGKILL');
        reject(new Error(`tcpdump on ${ns}/${iface} did not start listening: ${stderr.trim()}`));
      }, options.startTimeoutMs ?? 10_000);
      child.stderr!.setEncoding('utf8');
      child.stderr!.on('data', (chunk: string) => {
        stderr += chunk;
        if (stderr.includes('listening on')) {
          clearTimeout(timer);
          resolve();
        }
      });
      void exit.then(() => {
        clearTimeout(timer);
        reject(new Error(`tcpdump on ${ns}/${iface} exited: ${stderr.trim()}`));
      });
    });
    let stopping: Promise<void> | undefined;
    return {
      file,
      process: child,
      stderr: () => stderr,
      stop: () =>
        (stopping ??= (async () => {
          if (exited) return;
          // SIGINT makes tcpdump flush and print its statistics.
          for (const [signal, waitMs] of [
            ['SIGINT', 3000],
            ['SIGTERM', 2000],
            ['SIGKILL', 2000],
          ] as const) {
            child.kill(signal);
            if (await Promise.race([exit.then(() => true), sleep(waitMs).then(() => false)])) return;
          }
        })()),
    };
  }

  // --- teardown --------------------------------------------------------------------------

  /** Kills what the lab started and deletes its namespaces (and with them every interface). Idempotent. */
  destroy(): Promise<void> {
    if (this.destroyedSync && this.destroying === undefined) return Promise.resolve();
    return (this.destroying ??= this.teardown());
  }

  private async teardown(): Promise<void> {
    try {
      // Gently first: tcpdump flushes, members leave their groups.
      await Promise.all(
        [...this.children].map(async (child) => {
          if (child.exitCode !== null || child.signalCode !== null) return;
          const exit = new Promise<void>((resolve) => child.once('exit', () => resolve()));
          child.kill('SIGTERM');
          if (!(await Promise.race([exit.then(() => true), sleep(2000).then(() => false)]))) {
            child.kill('SIGKILL');
            await Promise.race([exit, sleep(2000)]);
          }
        }),
      );
    } finally {
      this.destroySync();
    }
  }

  /**
   * Every namespace of this lab, newest first: those it made, and any with its prefix (e.g. one whose creation was
   * interrupted).
   */
  private ownNamespaces(): string[] {
    const listed = listNamespaces().filter(
      (name) => name.startsWith(`${this.prefix}-`) && !this.namespaces.includes(name),
    );
    return [...this.namespaces].reverse().concat(listed);
  }

  /**
   * destroy() for signal and exit handlers: synchronous, best effort. Kills what the lab
   * started and every process left in its namespaces, deletes the namespaces, its scratch
   * directory (unless kept) and its registry entry.
   */
  destroySync(): void {
    if (this.destroyedSync) return;
    this.destroyedSync = true;
    for (const child of this.children) {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
    for (const ns of this.ownNamespaces()) removeNamespaceSync(ns);
    this.namespaces.length = 0;
    if (!this.keepArtifacts) rmSync(this.dir, { recursive: true, force: true });
    rmSync(join(REGISTRY_DIR, this.prefix), { force: true });
    liveLabs.delete(this);
  }
}

/**
 * Polls `probe` every `everyMs` until it gives a value (not undefined or false), and
 * returns it; a probe that throws is asked again. Past `hostTimeoutMs` (stretched by the
 * machine's time scale: a deadline, not a measure), throws saying what
 * was awaited and the probe's last error.
 */
export async function waitUntil<T>(
  what: string,
  probe: () => Promise<T | undefined | false>,
  hostTimeoutMs = 10_000,
  everyMs = 50,
): Promise<T> {
  const timeoutMs = deadline(hostTimeoutMs);
  const until = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await probe();
      if (value !== undefined && value !== false) return value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > until)
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${what}${last === undefined ? '' : `: ${String(last)}`}`,
      );
    await sleep(everyMs);
  }
}

/**
 * Sends one datagram at a time until one has arrived: afterwards the kernel routes along
 * its path exist. A kernel holds only 4 packets of an (S,G) it has no route for while the
 * router adds one, and drops the rest uncounted (a slow machine loses some every time), so
 * a test that counts every datagram of a routed flow first primes it, with datagrams
 * whose tag (`prime<round>`) it does not count.
 */
export async function primeRoutedFlow(
  what: string,
  send: (tag: string) => Promise<unknown>,
  receiver: { readonly received: readonly { payload: string }[] },
): Promise<void> {
  let round = 0;
  await waitUntil(`a first datagram ${what}`, async () => {
    round += 1;
    await send(`prime${round}`);
    await sleep(100);
    return receiver.received.some((datagram) => datagram.payload.startsWith('prime'));
  });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
