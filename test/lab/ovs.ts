/**
 * A lab node with its own Open vSwitch (docs/architecture.md, "The test lab"): a network namespace that
 * runs a private `ovsdb-server` and `ovs-vswitchd` (user-space datapath, so no kernel
 * module is needed) with bridge `br-int`, and pods: namespaces with one veth into that
 * bridge, registered in OVSDB the way CNI plugins register them.
 *
 * Isolation from the machine's own OVS: every daemon gets `--pidfile`, `--unixctl`,
 * `--log-file` and `--remote` paths under the lab's scratch directory, and every OVS tool
 * runs with OVS_RUNDIR/OVS_DBDIR/OVS_LOGDIR/OVS_SYSCONFDIR pointing there *and* an
 * explicit `--db`/socket argument, so nothing ever falls back to /var/run/openvswitch.
 *
 * The daemons run in the foreground (not `--detach`) as lab children (`lab.spawn`), inside
 * the node's namespace: `lab.destroy()` kills them, also when a test fails, and a crashed
 * run's daemons die with its namespaces when the next lab sweeps. Their unix sockets live
 * in the file system, so this process reaches them from any namespace.
 */
import type { ChildProcess, SpawnOptions } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { isIPv4, isIPv6 } from 'node:net';
import {
  parseCidr,
  parseCidr6,
  run,
  sleep,
  type ExecOptions,
  type ExecResult,
  type Lab,
  type LinuxBridge,
} from './lab.js';
import { enableIpv6, waitForDad } from './mld-hosts.js';

const OVS_SCHEMA = '/usr/share/openvswitch/vswitch.ovsschema';
/** sun_path is 108 octets, NUL included. */
const MAX_UNIX_PATH = 107;
const DEFAULT_START_TIMEOUT_MS = 20_000;
/** Pod side of every pod's veth, as CNI plugins name it. */
const POD_IFACE = 'eth0';

export interface OvsNodeOptions {
  /** Bridge name (default `br-int`). */
  bridge?: string;
  /** How long each daemon and the bridge may take to come up (default 20 s). */
  startTimeoutMs?: number;
}

export interface OvsPodOptions {
  /** The pod's address, CIDR (e.g. `10.1.0.11/24`). */
  address: string;
  /**
   * Default gateway (default: the node's gateway port address if addGateway() ran, else a device route out of eth0).
   */
  gateway?: string;
  /** MAC of eth0 (default: the kernel's random one). */
  mac?: string;
  /** Kubernetes namespace written to external_ids:pod-namespace (default `default`). */
  podNamespace?: string;
  /** `force_igmp_version` of eth0 (default: the kernel's, i.e. v3). */
  igmpVersion?: 1 | 2 | 3;
  /**
   * An IPv6 address too, CIDR (e.g. `fd00:10::11/64`): IPv6 is switched on for eth0 and
   * lo (the lab keeps it off elsewhere), and addPod resolves once DAD has passed for it
   * and for the link-local address. Default route via the gateway's address6, if it has one.
   */
  address6?: string;
  /** `force_mld_version` of eth0, with address6 (default: the kernel's, i.e. v2). */
  mldVersion?: 1 | 2;
  /** Leave transmit checksum offload on (default off: docs/architecture.md, "Open vSwitch"). */
  txOffload?: boolean;
}

/** A UDP datagram a pod's receiver got. */
export interface Datagram {
  from: string;
  fromPort: number;
  /** The payload as text (senders here send ASCII: `<tag> <sequence>`). */
  payload: string;
}

/** Sequence numbers of datagrams tagged `tag` (payload `<tag> <n>`). */
export function sequences(datagrams: readonly Datagram[], tag: string): number[] {
  return datagrams.flatMap((datagram) => {
    const [t, n] = datagram.payload.split(' ');
    return t === tag && n !== undefined ? [Number(n)] : [];
  });
}

/** Sequence numbers in 0..count-1 that are missing. */
export function missingSequences(received: readonly number[], count: number): number[] {
  const got = new Set(received);
  return Array.from({ length: count }, (_, i) => i).filter((i) => !got.has(i));
}

export interface SendOptions {
  /** Payload prefix (default: the pod's name); datagram i carries `<tag> <i>`. */
  tag?: string;
  /** Pause between datagrams (default 10 ms). */
  intervalMs?: number;
  /** IP_MULTICAST_TTL (default 1). */
  ttl?: number;
}

/** A socket that joined a group in a pod (IP_ADD_MEMBERSHIP): its kernel sent a report. */
export interface Receiver {
  /** The address listened on: the group joined (or a unicast address bound). */
  readonly group: string;
  readonly port: number;
  /** Datagrams so far. */
  readonly received: readonly Datagram[];
  /** Closes the socket (the kernel leaves the group) and resolves with every datagram received. */
  stop(): Promise<Datagram[]>;
}

export interface OvsPod {
  /** The lab-local name given to addPod (also external_ids:pod-name). */
  readonly name: string;
  readonly node: OvsNode;
  /** The pod's namespace. */
  readonly ns: string;
  /** The pod's interface, inside `ns` (`eth0`). */
  readonly iface: string;
  /** The bridge port: the node-side end of the veth. */
  readonly port: string;
  /** OpenFlow port number of `port`. */
  readonly ofport: number;
  readonly address: string;
  readonly prefixLength: number;
  /** The IPv6 address given as address6 (without the prefix length, RFC 5952 form); undefined for an IPv4-only pod. */
  readonly address6: string | undefined;
  readonly prefixLength6: number | undefined;
  /** eth0's link-local address (past DAD), with address6. */
  readonly linkLocal6: string | undefined;
  /** MAC of the pod's interface. */
  readonly mac: string;
  /**
   * Joins `group` with a UDP socket bound to `port`; resolves once the join call returned.
   * An IPv6 group (or address) takes an IPv6 socket joined on eth0.
   */
  listen(group: string, port: number): Promise<Receiver>;
  /** listen(), wait `durationMs`, stop(). */
  receive(group: string, port: number, durationMs: number): Promise<Datagram[]>;
  /** Sends `count` UDP datagrams to group:port out of eth0; resolves when all are sent. */
  send(group: string, port: number, count: number, options?: SendOptions): Promise<void>;
}

export interface GatewayOptions {
  /** Interface name of the internal port, in the node's namespace (default `gw0`). */
  name?: string;
  /** The node's address on the pod network, CIDR (e.g. `10.10.1.1/24`). */
  address: string;
  /** An IPv6 address too, CIDR (e.g. `fd00:10::1/64`); resolves once it has passed DAD. */
  address6?: string;
}

/** The node's gateway: an OVS internal port (a tap device in the node's namespace with the netdev datapath). */
export interface OvsGateway {
  readonly name: string;
  readonly ofport: number;
  /** Without the prefix length. */
  readonly address: string;
  readonly prefixLength: number;
  /** The IPv6 address given as address6, without the prefix length. */
  readonly address6: string | undefined;
  readonly mac: string;
  /** Its ifindex in the node's namespace. */
  readonly ifindex: number;
}

export interface UplinkOptions {
  /**
   * Lab suffix of the node-side interface (default `<node name>u`, or `u<n>` if that does not fit or is taken); the
   * full name is `lab.ifname(suffix)`.
   */
  name?: string;
  /** The node's address on the underlay, CIDR (e.g. `192.168.50.11/24`). */
  address: string;
  /** An IPv6 address too (CIDR): IPv6 on for the uplink, resolved after DAD. */
  address6?: string;
  /** Leave transmit checksum offload on (default off on both ends). */
  txOffload?: boolean;
}

/** A veth from the node's namespace into an underlay Linux bridge; not an OVS port. */
export interface Uplink {
  /** Node-side interface (in the node's namespace). */
  readonly name: string;
  /** Underlay-side interface: a port of `bridge` (in `bridge.ns`). */
  readonly peer: string;
  readonly bridge: LinuxBridge;
  readonly address: string;
  readonly prefixLength: number;
  /** The IPv6 address given as address6, without the prefix length. */
  readonly address6: string | undefined;
  readonly mac: string;
  readonly ifindex: number;
}

interface Daemon {
  name: 'ovsdb-server' | 'ovs-vswitchd';
  child: ChildProcess;
  /** The last few KiB of its stderr (console logging is at level err). */
  stderr: () => string;
  exited: Promise<void>;
}

/** Pods' bridge-port suffixes taken in each lab, so that names never repeat within one. */
const takenSuffixes = new WeakMap<Lab, Set<string>>();

export class OvsNode {
  readonly bridge: string;
  /** OVS_RUNDIR: sockets and pidfiles. */
  readonly rundir: string;
  readonly dbdir: string;
  readonly logdir: string;
  readonly sysconfdir: string;
  /** `unix:<rundir>/db.sock` */
  readonly dbEndpoint: string;
  /** `unix:<rundir>/<bridge>.mgmt` */
  readonly openflowEndpoint: string;
  /** Environment for OVS tools (OVS_RUNDIR and friends), on top of this process's. */
  readonly env: Readonly<Record<string, string>>;
  readonly pods: OvsPod[] = [];
  /** The gateway port, once addGateway() ran. */
  gateway: OvsGateway | undefined;
  /** Uplinks, in the order addUplink() made them. */
  readonly uplinks: Uplink[] = [];
  private routing: Promise<void> | undefined;
  private ovsdb: Daemon | undefined;
  private vswitchd: Daemon | undefined;
  private readonly startTimeoutMs: number;
  private syncCount = 0;

  private constructor(
    readonly lab: Lab,
    /** The lab-local name given to start(). */
    readonly name: string,
    readonly ns: string,
    options: OvsNodeOptions,
  ) {
    this.bridge = options.bridge ?? 'br-int';
    this.startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
    const base = lab.file(`ovs-${name}`);
    this.rundir = join(base, 'run');
    this.dbdir = join(base, 'db');
    this.logdir = join(base, 'log');
    this.sysconfdir = join(base, 'etc');
    const mgmt = join(this.rundir, `${this.bridge}.mgmt`);
    if (mgmt.length > MAX_UNIX_PATH) throw new RangeError(`${mgmt} is too long for a unix socket path`);
    this.dbEndpoint = `unix:${join(this.rundir, 'db.sock')}`;
    this.openflowEndpoint = `unix:${mgmt}`;
    this.env = {
      OVS_RUNDIR: this.rundir,
      OVS_DBDIR: this.dbdir,
      OVS_LOGDIR: this.logdir,
      OVS_SYSCONFDIR: this.sysconfdir,
    };
  }

  /**
   * Creates namespace `mcl<id>-<name>`, starts ovsdb-server and ovs-vswitchd in it and
   * adds the bridge (datapath_type=netdev); resolves once `<bridge>.mgmt` exists.
   */
  static async start(lab: Lab, name: string, options: OvsNodeOptions = {}): Promise<OvsNode> {
    const ns = await lab.namespace(name);
    const node = new OvsNode(lab, name, ns, options);
    for (const dir of [node.rundir, node.dbdir, node.logdir, node.sysconfdir]) mkdirSync(dir, { recursive: true });
    await run(['ovsdb-tool', 'create', node.dbFile, OVS_SCHEMA]);
    await node.startOvsdb();
    await node.vsctl('--no-wait', 'init');
    await node.startVswitchd();
    await node.vsctl('add-br', node.bridge, '--', 'set', 'bridge', node.bridge, 'datapath_type=netdev');
    await node.waitFor(node.mgmtPath, 'the bridge management socket', node.vswitchd);
    return node;
  }

  private get dbFile(): string {
    return join(this.dbdir, 'conf.db');
  }

  private get dbSocketPath(): string {
    return this.dbEndpoint.slice('unix:'.length);
  }

  private get mgmtPath(): string {
    return this.openflowEndpoint.slice('unix:'.length);
  }

  /** Pids of the daemons now running (undefined while one is down). */
  get pids(): { ovsdbServer: number | undefined; vswitchd: number | undefined } {
    const live = (daemon: Daemon | undefined) =>
      daemon && daemon.child.exitCode === null && daemon.child.signalCode === null ? daemon.child.pid : undefined;
    return { ovsdbServer: live(this.ovsdb), vswitchd: live(this.vswitchd) };
  }

  // --- tools -----------------------------------------------------------------------------

  /** Runs an OVS tool with this node's environment; resolves with its stdout. */
  async tool(argv: readonly string[], options: { timeoutMs?: number } = {}): Promise<string> {
    const env = Object.entries(this.env).map(([key, value]) => `${key}=${value}`);
    const result = await run(['env', ...env, ...argv], { timeoutMs: options.timeoutMs ?? 30_000 });
    return result.stdout;
  }

  /**
   * Runs argv inside the node's namespace with the node's OVS environment (OVS_RUNDIR and
   * friends), e.g. `node.exec(['ovs-ofctl', 'dump-flows', 'br-int'])` or `node.exec(['ip', 'mroute'])`.
   */
  exec(argv: readonly string[], options: ExecOptions = {}): Promise<ExecResult> {
    const env = Object.entries(this.env).map(([key, value]) => `${key}=${value}`);
    return this.lab.exec(this.ns, ['env', ...env, ...argv], options);
  }

  /**
   * Starts a long-running process inside the node's namespace with the node's OVS
   * environment on top of this process's (and `options.env` on top of that). A lab child:
   * `lab.destroy()` kills it.
   */
  spawn(argv: readonly string[], options: SpawnOptions = {}): ChildProcess {
    return this.lab.spawn(this.ns, argv, { ...options, env: { ...process.env, ...this.env, ...options.env } });
  }

  /**
   * UDP sockets in the node's own namespace. Multicast joins and sends go through the
   * interface with `interfaceAddress` (default: the gateway's address, i.e. towards the
   * pods; pass an uplink's address for the underlay). IPv6 ones go through the gateway.
   */
  udp(interfaceAddress: string | undefined = this.gateway?.address): UdpEndpoint {
    return udpEndpoint(this.lab, this.ns, {
      name: this.name,
      ...(interfaceAddress === undefined ? {} : { interfaceAddress }),
      ...(this.gateway === undefined ? {} : { interfaceName: this.gateway.name }),
    });
  }

  /** `ovs-vsctl --db=<dbEndpoint> --timeout=20 <args>` */
  vsctl(...args: string[]): Promise<string> {
    return this.tool(['ovs-vsctl', `--db=${this.dbEndpoint}`, '--timeout=20', ...args]);
  }

  /**
   * `ovs-ofctl -O OpenFlow13 <args>`. A bridge-name argument resolves to
   * `$OVS_RUNDIR/<bridge>.mgmt`, i.e. this node's (env).
   */
  ofctl(...args: string[]): Promise<string> {
    return this.tool(['ovs-ofctl', '-O', 'OpenFlow13', ...args]);
  }

  /**
   * The bridge's flows and groups as ovs-ofctl shows them, sorted, without the fields
   * that change by themselves (durations, ages, counters): equal before and after means
   * nothing was changed.
   */
  async switchState(): Promise<{ flows: string[]; groups: string[] }> {
    const flows = (await this.ofctl('dump-flows', this.bridge))
      .split('\n')
      .filter((line) => line.includes('cookie='))
      .map((line) =>
        line.trim().replace(/ duration=[^,]+,| n_packets=\d+,| n_bytes=\d+,| idle_age=\d+,| hard_age=\d+,/g, ''),
      )
      .sort();
    const groups = (await this.ofctl('dump-groups', this.bridge))
      .split('\n')
      .filter((line) => line.includes('group_id='))
      .map((line) => line.trim())
      .sort();
    return { flows, groups };
  }

  /** `ovs-appctl -t <rundir>/ovs-vswitchd.ctl <args>` (e.g. `ofproto/trace`). */
  appctl(...args: string[]): Promise<string> {
    return this.tool(['ovs-appctl', '-t', join(this.rundir, 'ovs-vswitchd.ctl'), ...args]);
  }

  // --- daemons ---------------------------------------------------------------------------

  private async startOvsdb(): Promise<void> {
    rmSync(this.dbSocketPath, { force: true });
    this.ovsdb = this.spawnDaemon('ovsdb-server', [
      this.dbFile,
      `--remote=punix:${this.dbSocketPath}`,
      `--pidfile=${join(this.rundir, 'ovsdb-server.pid')}`,
      `--unixctl=${join(this.rundir, 'ovsdb-server.ctl')}`,
      `--log-file=${join(this.logdir, 'ovsdb-server.log')}`,
    ]);
    await this.waitFor(this.dbSocketPath, 'db.sock', this.ovsdb);
  }

  private async startVswitchd(): Promise<void> {
    // A socket file left by a killed ovs-vswitchd looks ready but refuses connections:
    // remove it, so that its reappearance means the new process listens.
    rmSync(this.mgmtPath, { force: true });
    this.vswitchd = this.spawnDaemon('ovs-vswitchd', [
      this.dbEndpoint,
      `--pidfile=${join(this.rundir, 'ovs-vswitchd.pid')}`,
      `--unixctl=${join(this.rundir, 'ovs-vswitchd.ctl')}`,
      `--log-file=${join(this.logdir, 'ovs-vswitchd.log')}`,
    ]);
  }

  private spawnDaemon(name: Daemon['name'], args: string[]): Daemon {
    // Console logging at `err`: the log file has everything; stderr keeps what explains a failure.
    const child = this.lab.spawn(this.ns, [name, ...args, '-vconsole:err'], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, ...this.env },
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    const exited = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('exit', () => resolve());
    });
    return { name, child, stderr: () => stderr, exited };
  }

  /** Polls until `path` exists; fails early, with the daemon's stderr and log tail, if it exits. */
  private async waitFor(path: string, what: string, daemon: Daemon | undefined): Promise<void> {
    const deadline = Date.now() + this.startTimeoutMs;
    while (!existsSync(path)) {
      if (daemon && (daemon.child.exitCode !== null || daemon.child.signalCode !== null)) {
        throw new Error(
          `${daemon.name} in ${this.ns} exited (${daemon.child.signalCode ?? daemon.child.exitCode}) before ${what} appeared: ${this.diagnostics(daemon)}`,
        );
      }
      if (Date.now() > deadline) {
        throw new Error(
          `${what} (${path}) did not appear within ${this.startTimeoutMs} ms: ${daemon ? this.diagnostics(daemon) : ''}`,
        );
      }
      await sleep(20);
    }
  }

  private diagnostics(daemon: Daemon): string {
    let log = '';
    try {
      log = readFileSync(join(this.logdir, `${daemon.name}.log`), 'utf8')
        .split('\n')
        .slice(-15)
        .join('\n');
    } catch {
      // no log yet
    }
    return `${daemon.stderr().trim()}\n${log}`.trim();
  }

  private static async kill(daemon: Daemon | undefined): Promise<void> {
    if (!daemon || daemon.child.exitCode !== null || daemon.child.signalCode !== null) return;
    daemon.child.kill('SIGKILL');
    await daemon.exited;
  }

  /**
   * Kills ovs-vswitchd (SIGKILL: no cleanup, like a crash) and starts it again; resolves
   * once it has re-read OVSDB and listens on `<bridge>.mgmt` again. Every flow and group
   * is gone; the bridge's default NORMAL flow is back. Ports keep their ofports.
   */
  async restartVswitchd(): Promise<void> {
    await OvsNode.kill(this.vswitchd);
    await this.startVswitchd();
    await this.waitFor(this.mgmtPath, 'the bridge management socket', this.vswitchd);
    await this.awaitReconfigured();
  }

  /**
   * Kills ovsdb-server (SIGKILL) and starts it again on the same database file; resolves
   * once ovs-vswitchd has reconnected (it retries with backoff, up to 8 s apart).
   */
  async restartOvsdb(): Promise<void> {
    await OvsNode.kill(this.ovsdb);
    await this.startOvsdb();
    await this.awaitReconfigured();
  }

  /**
   * Resolves once ovs-vswitchd is connected to OVSDB and has applied all of it (every
   * port added). ovs-vsctl waits for ovs-vswitchd (`cur_cfg` catching up with
   * `next_cfg`) only after a transaction that changed something, so this one writes a
   * counter; read-only commands (and ovs-vsctl has no `sync`) return at once.
   */
  private async awaitReconfigured(): Promise<void> {
    await this.vsctl('set', 'Open_vSwitch', '.', `external_ids:mcl-lab-sync=${++this.syncCount}`);
  }

  // --- gateway, uplinks, routes ----------------------------------------------------------

  /**
   * The node's gateway: an OVS internal port `name` (default `gw0`) on the bridge. With the
   * netdev datapath ovs-vswitchd makes it a tap device in its own (the node's) namespace;
   * it gets `address`, is brought up, has transmit checksum offload off (as every device
   * that sends into the user-space datapath) and rp_filter 0. Turns routing on in the node
   * (see enableRouting()). Pods added afterwards use it as their default gateway.
   */
  async addGateway(options: GatewayOptions): Promise<OvsGateway> {
    if (this.gateway) throw new Error(`node ${this.name} already has gateway ${this.gateway.name}`);
    const name = options.name ?? 'gw0';
    if (!/^[A-Za-z0-9_.-]{1,15}$/.test(name)) throw new RangeError(`bad interface name ${JSON.stringify(name)}`);
    const { address, prefixLength } = parseCidr(options.address);
    const cidr6 = options.address6 === undefined ? undefined : parseCidr6(options.address6);
    await this.enableRouting();
    await this.vsctl(
      'add-port',
      this.bridge,
      name,
      '--',
      'set',
      'interface',
      name,
      'type=internal',
      'external_ids:mcl-lab-type=gateway',
    );
    const ofport = await this.ofportOf(name);
    await this.waitForLink(name);
    await this.lab.ip(this.ns, 'addr', 'add', `${address}/${prefixLength}`, 'dev', name);
    await this.lab.ip(this.ns, 'link', 'set', name, 'up');
    await this.lab.exec(this.ns, ['ethtool', '-K', name, 'tx', 'off']);
    await this.lab.sysctl(this.ns, `net.ipv4.conf.${name}.rp_filter`, 0);
    if (cidr6) await this.addIpv6(this.ns, name, cidr6, 0);
    const { mac, ifindex } = await this.linkInfo(this.ns, name);
    this.gateway = { name, ofport, address, prefixLength, address6: cidr6?.address, mac, ifindex };
    return this.gateway;
  }

  /**
   * An uplink: a veth from the node's namespace to `bridge` (an underlay Linux bridge),
   * the node side addressed with `address`, transmit checksum offload off on both ends
   * (unless `txOffload`), rp_filter 0. Not a port of the OVS bridge. Turns routing on.
   */
  async addUplink(bridge: LinuxBridge, options: UplinkOptions): Promise<Uplink> {
    const { address, prefixLength } = parseCidr(options.address);
    const suffix = reserveSuffix(this.lab, options.name ?? `${this.name}u`, options.name !== undefined);
    const name = this.lab.ifname(suffix);
    const peer = this.lab.ifname(reserveSuffix(this.lab, `${suffix}p`, false));
    await this.enableRouting();
    await this.lab.vethPair({ ns: this.ns, name }, { ns: bridge.ns, name: peer });
    await bridge.attach(peer);
    await this.lab.ip(this.ns, 'addr', 'add', `${address}/${prefixLength}`, 'dev', name);
    if (!options.txOffload) {
      await this.lab.exec(this.ns, ['ethtool', '-K', name, 'tx', 'off']);
      await this.lab.exec(bridge.ns, ['ethtool', '-K', peer, 'tx', 'off']);
    }
    await this.lab.sysctl(this.ns, `net.ipv4.conf.${name}.rp_filter`, 0);
    const cidr6 = options.address6 === undefined ? undefined : parseCidr6(options.address6);
    if (cidr6) await this.addIpv6(this.ns, name, cidr6, 0);
    const { mac, ifindex } = await this.linkInfo(this.ns, name);
    const uplink: Uplink = { name, peer, bridge, address, prefixLength, address6: cidr6?.address, mac, ifindex };
    this.uplinks.push(uplink);
    return uplink;
  }

  /**
   * `ip route add <cidr> via <via>` in the node's namespace (e.g. another node's pod subnet via its uplink address);
   * IPv4 or IPv6.
   */
  async addRoute(cidr: string, via: string): Promise<void> {
    if (cidr.includes(':')) {
      const { address, prefixLength } = parseCidr6(cidr);
      await this.lab.ip(this.ns, '-6', 'route', 'add', `${address}/${prefixLength}`, 'via', via);
      return;
    }
    const { address, prefixLength } = parseCidr(cidr);
    await this.lab.ip(this.ns, 'route', 'add', `${address}/${prefixLength}`, 'via', via);
  }

  /**
   * Makes the node a router: net.ipv4.ip_forward=1 and rp_filter 0 (all, default) in its
   * namespace, so that a packet arriving on one interface (uplink, gateway) with a source
   * the other side routes is neither dropped nor left unforwarded; IPv6 forwarding too, for
   * the interfaces that have IPv6 on. Idempotent.
   */
  enableRouting(): Promise<void> {
    return (this.routing ??= (async () => {
      await this.lab.sysctl(this.ns, 'net.ipv4.ip_forward', 1);
      await this.lab.sysctl(this.ns, 'net.ipv6.conf.all.forwarding', 1);
      for (const key of ['all', 'default']) await this.lab.sysctl(this.ns, `net.ipv4.conf.${key}.rp_filter`, 0);
    })());
  }

  /**
   * Polls until interface `name` exists in the node's namespace (an internal port's tap appears once ovs-vswitchd made
   * it).
   */
  private async waitForLink(name: string): Promise<void> {
    const deadline = Date.now() + this.startTimeoutMs;
    for (;;) {
      try {
        await this.lab.ip(this.ns, 'link', 'show', name);
        return;
      } catch (error) {
        if (Date.now() > deadline)
          throw new Error(
            `interface ${name} did not appear in ${this.ns}: ${String(error)}; see ${this.logdir}/ovs-vswitchd.log`,
          );
      }
      await sleep(50);
    }
  }

  /**
   * IPv6 on for `iface` (and lo) in `ns`, MLD forced to `mldVersion` (0: the kernel's
   * choice), `cidr` added; resolves with the link-local address once DAD has passed for
   * both. Run once the interface is up and plugged in, so that its DAD and MLD go through
   * the switch.
   */
  private async addIpv6(
    ns: string,
    iface: string,
    cidr: { address: string; prefixLength: number },
    mldVersion: 0 | 1 | 2,
  ): Promise<string> {
    await this.lab.sysctl(ns, 'net.ipv6.conf.lo.disable_ipv6', 0);
    await enableIpv6(this.lab, ns, iface, mldVersion);
    await this.lab.ip(ns, '-6', 'addr', 'add', `${cidr.address}/${cidr.prefixLength}`, 'dev', iface);
    return waitForDad(this.lab, ns, iface, [cidr.address]);
  }

  private async linkInfo(ns: string, iface: string): Promise<{ mac: string; ifindex: number }> {
    const { stdout } = await this.lab.ip(ns, '-j', 'link', 'show', iface);
    const [link] = JSON.parse(stdout) as { address?: string; ifindex?: number }[];
    if (link?.address === undefined || link.ifindex === undefined)
      throw new Error(`no MAC address or ifindex for ${iface} in ${ns}`);
    return { mac: link.address, ifindex: link.ifindex };
  }

  // --- pods ------------------------------------------------------------------------------

  /**
   * A pod: namespace `mcl<id>-<node>-<name>` whose eth0 is one end of a veth; the other
   * end is a port of the bridge, with the external_ids a CNI plugin writes. eth0 gets the
   * address, a default route, the multicast route 224.0.0.0/4 and transmit checksum
   * offload off. With `address6`, eth0 is dual-stack: IPv6 on, the address added once the
   * port is on the bridge, and addPod resolves after DAD (a duplicate fails it).
   */
  async addPod(name: string, options: OvsPodOptions): Promise<OvsPod> {
    const { address, prefixLength } = parseCidr(options.address);
    const cidr6 = options.address6 === undefined ? undefined : parseCidr6(options.address6);
    if (options.mldVersion !== undefined && cidr6 === undefined)
      throw new RangeError(`pod ${name}: mldVersion without address6`);
    const ns = await this.lab.namespace(`${this.name}-${name}`);
    const port = this.lab.ifname(this.portSuffix(name));
    // Created inside the pod's namespace with the peer moved straight into the node's,
    // so nothing ever appears in the machine's own namespace.
    await this.lab.ip(ns, 'link', 'add', POD_IFACE, 'type', 'veth', 'peer', 'name', port, 'netns', this.ns);
    if (options.mac !== undefined) await this.lab.ip(ns, 'link', 'set', POD_IFACE, 'address', options.mac);
    await this.lab.ip(ns, 'link', 'set', POD_IFACE, 'up');
    await this.lab.ip(this.ns, 'link', 'set', port, 'up');
    await this.lab.ip(ns, 'addr', 'add', `${address}/${prefixLength}`, 'dev', POD_IFACE);
    const gateway = options.gateway ?? this.gateway?.address;
    if (gateway !== undefined) await this.lab.ip(ns, 'route', 'add', 'default', 'via', gateway, 'dev', POD_IFACE);
    else await this.lab.ip(ns, 'route', 'add', 'default', 'dev', POD_IFACE);
    await this.lab.ip(ns, 'route', 'add', '224.0.0.0/4', 'dev', POD_IFACE);
    if (!options.txOffload) await this.lab.exec(ns, ['ethtool', '-K', POD_IFACE, 'tx', 'off']);
    if (options.igmpVersion !== undefined) {
      await this.lab.sysctl(ns, `net.ipv4.conf.${POD_IFACE}.force_igmp_version`, options.igmpVersion);
    }
    const mac = await this.macOf(ns, POD_IFACE);
    const podNamespace = options.podNamespace ?? 'default';
    const externalIds = {
      'ip-address': address,
      'attached-mac': mac,
      'pod-name': name,
      'pod-namespace': podNamespace,
      'iface-id': `${podNamespace}_${name}`,
    };
    await this.vsctl(
      'add-port',
      this.bridge,
      port,
      '--',
      'set',
      'interface',
      port,
      ...Object.entries(externalIds).map(([key, value]) => `external_ids:${key}="${value}"`),
    );
    const ofport = await this.ofportOf(port);
    // IPv6 last, once the port is on the bridge: DAD and the kernel's MLD go through OVS.
    let linkLocal6: string | undefined;
    if (cidr6) {
      linkLocal6 = await this.addIpv6(ns, POD_IFACE, cidr6, options.mldVersion ?? 0);
      const gateway6 = this.gateway?.address6;
      if (gateway6 !== undefined)
        await this.lab.ip(ns, '-6', 'route', 'add', 'default', 'via', gateway6, 'dev', POD_IFACE);
    }
    const pod = new LabPod(this, {
      name,
      ns,
      iface: POD_IFACE,
      port,
      ofport,
      address,
      prefixLength,
      address6: cidr6?.address,
      prefixLength6: cidr6?.prefixLength,
      linkLocal6,
      mac,
    });
    this.pods.push(pod);
    return pod;
  }

  /**
   * Removes a pod the way a CNI plugin deletes one: its port leaves the bridge first (so
   * whatever its kernel says on the way out reaches no switch), then its namespace goes,
   * the processes in it and both ends of its veth with it.
   */
  async removePod(pod: OvsPod): Promise<void> {
    const at = this.pods.indexOf(pod);
    if (at < 0) throw new Error(`${pod.name} is no pod of ${this.name}`);
    this.pods.splice(at, 1);
    await this.vsctl('del-port', this.bridge, pod.port);
    await this.lab.deleteNamespace(pod.ns);
  }

  /** The OpenFlow port number OVS gave interface `port` (waits while it is still unassigned). */
  async ofportOf(port: string): Promise<number> {
    const deadline = Date.now() + this.startTimeoutMs;
    for (;;) {
      const ofport = Number((await this.vsctl('get', 'interface', port, 'ofport')).trim());
      if (Number.isInteger(ofport) && ofport > 0) return ofport;
      if (Date.now() > deadline)
        throw new Error(`interface ${port} got no ofport (${ofport}); see ${this.logdir}/ovs-vswitchd.log`);
      await sleep(50);
    }
  }

  /** Interface external_ids, as a plain object. */
  async externalIds(port: string): Promise<Record<string, string>> {
    const text = await this.vsctl('--format=json', '--columns=external_ids', 'list', 'interface', port);
    // {"data":[[["map",[["k","v"],...]]]],"headings":["external_ids"]}
    const parsed = JSON.parse(text) as { data: [[['map', [string, string][]]]] };
    return Object.fromEntries(parsed.data[0][0][1]);
  }

  private async macOf(ns: string, iface: string): Promise<string> {
    return (await this.linkInfo(ns, iface)).mac;
  }

  /** A bridge-port suffix for pod `name`: the name itself if it fits and is free in this lab, else `o<n>`. */
  private portSuffix(name: string): string {
    return reserveSuffix(this.lab, name, false, 'o');
  }
}

/**
 * Reserves an interface-name suffix in `lab` (pods' bridge ports, uplinks): `wanted` if it
 * is valid, fits and is free, else (unless `exact`) `<fallback><n>`.
 */
function reserveSuffix(lab: Lab, wanted: string, exact: boolean, fallback = 'u'): string {
  let taken = takenSuffixes.get(lab);
  if (!taken) takenSuffixes.set(lab, (taken = new Set()));
  const room = 15 - lab.prefix.length;
  const usable = (suffix: string) => /^[A-Za-z0-9_-]+$/.test(suffix) && suffix.length <= room && !taken.has(suffix);
  let suffix = wanted;
  if (exact && !usable(suffix))
    throw new RangeError(`interface suffix ${JSON.stringify(wanted)} is invalid, too long for ${lab.prefix} or taken`);
  for (let n = taken.size; !usable(suffix); n++) suffix = `${fallback}${n}`;
  taken.add(suffix);
  return suffix;
}

// ---------------------------------------------------------------------------------------
// UDP sockets in any namespace (small python3 programs run inside it): pods, the node
// itself, an external host.

/**
 * argv: address port ifaddr ifname. An IPv4 address: for a multicast one, binds to it and
 * joins it (IP_ADD_MEMBERSHIP on the interface with address `ifaddr`, or if that is empty
 * on the one the multicast route picks); for a unicast one, binds to it. An IPv6 address
 * (it has a colon): an AF_INET6 socket bound to it (scope: interface `ifname`), and a
 * multicast one joined on `ifname` (IPV6_JOIN_GROUP: IPv6 has no route that picks one).
 * Prints "ready", then one JSON line per datagram, until stdin closes.
 * IP_MULTICAST_ALL=0 (IPV6_MULTICAST_ALL=0 where the kernel has it, 4.20 on): deliver
 * only the group this socket joined.
 */
const RECEIVER_PY = `
import json, select, socket, sys
address, port, ifaddr = sys.argv[1], int(sys.argv[2]), sys.argv[3] or "0.0.0.0"
ifname = sys.argv[4]
if ":" in address:
    ifindex = socket.if_nametoindex(ifname) if ifname else 0
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        s.setsockopt(socket.IPPROTO_IPV6, 29, 0)
    except OSError:
        pass
    s.bind((address, port, 0, ifindex))
    if address.lower().startswith("ff"):
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_JOIN_GROUP, socket.inet_pton(socket.AF_INET6, address) + ifindex.to_bytes(4, sys.byteorder))
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.setsockopt(socket.IPPROTO_IP, 49, 0)
    s.bind((address, port))
    if 224 <= int(address.split(".")[0]) <= 239:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(address) + socket.inet_aton(ifaddr))
print("ready", flush=True)
while True:
    readable, _, _ = select.select([s, sys.stdin], [], [])
    if s in readable:
        data, peer = s.recvfrom(65535)
        host, sport = peer[0], peer[1]
        print(json.dumps({"from": host, "fromPort": sport, "payload": data.decode("latin-1")}), flush=True)
    if sys.stdin in readable and not sys.stdin.readline():
        break
s.close()
`;

/**
 * argv: address port count intervalMs ttl tag ifaddr ifname. Prints "sent <count>" at the
 * end. An IPv6 address: out of interface `ifname` (IPV6_MULTICAST_IF, and the scope of a
 * link-local destination), `ttl` as IPV6_MULTICAST_HOPS.
 */
const SENDER_PY = `
import socket, sys, time
address, port, count, interval, ttl, tag, ifaddr = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]) / 1000, int(sys.argv[5]), sys.argv[6], sys.argv[7]
ifname = sys.argv[8]
if ":" in address:
    ifindex = socket.if_nametoindex(ifname) if ifname else 0
    s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_HOPS, ttl)
    if ifindex:
        s.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_MULTICAST_IF, ifindex)
    destination = (address, port, 0, ifindex)
else:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
    if ifaddr:
        s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_IF, socket.inet_aton(ifaddr))
    destination = (address, port)
for i in range(count):
    if i: time.sleep(interval)
    s.sendto(f"{tag} {i}".encode(), destination)
print(f"sent {count}", flush=True)
`;

export interface UdpEndpointOptions {
  /** Default tag of what it sends. */
  name: string;
  /**
   * A local address: joins happen on (IP_ADD_MEMBERSHIP) and multicast leaves by
   * (IP_MULTICAST_IF) the interface that has it. Default: the interface the multicast
   * route (224.0.0.0/4) picks, which pods and hosts have; a node namespace has none.
   */
  interfaceAddress?: string;
  /**
   * The interface IPv6 sockets join on and send out of (IPv6 picks no interface for a
   * multicast group by a route): required for IPv6 groups.
   */
  interfaceName?: string;
}

/** Listening and sending UDP (multicast or unicast) from inside one namespace, with ordinary sockets. */
export interface UdpEndpoint {
  /**
   * A UDP socket bound to `address:port`: a group is joined (the kernel sends its report),
   * a unicast address (one of the namespace's own) just bound. Resolves once the socket is
   * ready.
   */
  listen(address: string, port: number): Promise<Receiver>;
  /** listen(), wait `durationMs`, stop(). */
  receive(address: string, port: number, durationMs: number): Promise<Datagram[]>;
  /** Sends `count` UDP datagrams to address:port; resolves when all are sent. */
  send(address: string, port: number, count: number, options?: SendOptions): Promise<void>;
}

/** A UdpEndpoint for namespace `ns` (e.g. an external host's, or a node's with `interfaceAddress`). */
export function udpEndpoint(lab: Lab, ns: string, options: UdpEndpointOptions): UdpEndpoint {
  return {
    listen: (address, port) => listenUdp(lab, ns, address, port, options),
    receive: async (address, port, durationMs) => {
      const receiver = await listenUdp(lab, ns, address, port, options);
      await sleep(durationMs);
      return receiver.stop();
    },
    send: (address, port, count, sendOptions = {}) => sendUdp(lab, ns, address, port, count, options, sendOptions),
  };
}

async function listenUdp(
  lab: Lab,
  ns: string,
  address: string,
  port: number,
  endpoint: UdpEndpointOptions,
): Promise<Receiver> {
  const { interfaceAddress } = endpoint;
  checkAddressAndPort(address, port);
  if (interfaceAddress !== undefined && !isIPv4(interfaceAddress))
    throw new RangeError(`not an IPv4 interface address: ${JSON.stringify(interfaceAddress)}`);
  const child = lab.spawn(ns, [
    'python3',
    '-u',
    '-c',
    RECEIVER_PY,
    address,
    String(port),
    interfaceAddress ?? '',
    interfaceNameFor(address, endpoint),
  ]);
  const received: Datagram[] = [];
  let stderr = '';
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => (stderr = (stderr + chunk).slice(-4000)));
  child.stdin!.on('error', () => undefined); // EPIPE after exit: reported through 'exit'
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<void>((resolve, reject) => {
    createInterface({ input: child.stdout! }).on('line', (line) => {
      if (line === 'ready') resolve();
      else received.push(JSON.parse(line) as Datagram);
    });
    void exited.then(() => reject(new Error(`receiver for ${address}:${port} in ${ns} exited: ${stderr.trim()}`)));
  });
  await ready;
  let stopping: Promise<Datagram[]> | undefined;
  return {
    group: address,
    port,
    received,
    stop: () =>
      (stopping ??= (async () => {
        child.stdin!.end();
        if (!(await Promise.race([exited.then(() => true), sleep(3000).then(() => false)]))) {
          child.kill('SIGKILL');
          await exited;
        }
        return [...received];
      })()),
  };
}

async function sendUdp(
  lab: Lab,
  ns: string,
  address: string,
  port: number,
  count: number,
  endpoint: UdpEndpointOptions,
  options: SendOptions,
): Promise<void> {
  const { interfaceAddress } = endpoint;
  checkAddressAndPort(address, port);
  if (interfaceAddress !== undefined && !isIPv4(interfaceAddress))
    throw new RangeError(`not an IPv4 interface address: ${JSON.stringify(interfaceAddress)}`);
  if (!Number.isInteger(count) || count < 0) throw new RangeError(`bad count ${count}`);
  const tag = options.tag ?? endpoint.name;
  if (!/^[\w.-]+$/.test(tag)) throw new RangeError(`bad tag ${JSON.stringify(tag)}`);
  const argv = [
    address,
    String(port),
    String(count),
    String(options.intervalMs ?? 10),
    String(options.ttl ?? 1),
    tag,
    interfaceAddress ?? '',
    interfaceNameFor(address, endpoint),
  ];
  await lab.exec(ns, ['python3', '-c', SENDER_PY, ...argv]);
}

interface PodFields {
  name: string;
  ns: string;
  iface: string;
  port: string;
  ofport: number;
  address: string;
  prefixLength: number;
  address6: string | undefined;
  prefixLength6: number | undefined;
  linkLocal6: string | undefined;
  mac: string;
}

class LabPod implements OvsPod {
  readonly name: string;
  readonly ns: string;
  readonly iface: string;
  readonly port: string;
  readonly ofport: number;
  readonly address: string;
  readonly prefixLength: number;
  readonly address6: string | undefined;
  readonly prefixLength6: number | undefined;
  readonly linkLocal6: string | undefined;
  readonly mac: string;
  private readonly udp: UdpEndpoint;

  constructor(
    readonly node: OvsNode,
    fields: PodFields,
  ) {
    this.name = fields.name;
    this.ns = fields.ns;
    this.iface = fields.iface;
    this.port = fields.port;
    this.ofport = fields.ofport;
    this.address = fields.address;
    this.prefixLength = fields.prefixLength;
    this.address6 = fields.address6;
    this.prefixLength6 = fields.prefixLength6;
    this.linkLocal6 = fields.linkLocal6;
    this.mac = fields.mac;
    this.udp = udpEndpoint(node.lab, fields.ns, { name: fields.name, interfaceName: fields.iface });
  }

  listen(group: string, port: number): Promise<Receiver> {
    return this.udp.listen(group, port);
  }

  receive(group: string, port: number, durationMs: number): Promise<Datagram[]> {
    return this.udp.receive(group, port, durationMs);
  }

  send(group: string, port: number, count: number, options: SendOptions = {}): Promise<void> {
    return this.udp.send(group, port, count, options);
  }
}

/** The interface an IPv6 socket for `address` uses ('' for IPv4: the scripts ignore it there). */
function interfaceNameFor(address: string, endpoint: UdpEndpointOptions): string {
  if (!isIPv6(address)) return '';
  const name = endpoint.interfaceName;
  if (name === undefined || !/^[A-Za-z0-9_.-]{1,15}$/.test(name))
    throw new RangeError(
      `IPv6 ${address} needs an interface name (UdpEndpointOptions.interfaceName), got ${JSON.stringify(name)}`,
    );
  return name;
}

function checkAddressAndPort(address: string, port: number): void {
  if (!isIPv4(address) && !isIPv6(address))
    throw new RangeError(`not an IPv4 or IPv6 address: ${JSON.stringify(address)}`);
  if (!Number.isInteger(port) || port <= 0 || port > 0xffff) throw new RangeError(`bad UDP port ${port}`);
}
