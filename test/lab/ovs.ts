/**
 * A lab node with its own Open vSwitch (design.md, "The lab"): a network namespace that
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
import type { ChildProcess } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { parseCidr, run, sleep, type Lab } from './lab.js';

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
  /** Default gateway (default: a device route out of eth0). */
  gateway?: string;
  /** MAC of eth0 (default: the kernel's random one). */
  mac?: string;
  /** Kubernetes namespace written to external_ids:pod-namespace (default `default`). */
  podNamespace?: string;
  /** `force_igmp_version` of eth0 (default: the kernel's, i.e. v3). */
  igmpVersion?: 1 | 2 | 3;
  /** Leave transmit checksum offload on (default off: design.md, "Open vSwitch"). */
  txOffload?: boolean;
}

/** A UDP datagram a pod's receiver got. */
export interface Datagram {
  from: string;
  fromPort: number;
  /** The payload as text (senders here send ASCII: `<tag> <sequence>`). */
  payload: string;
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
  /** MAC of the pod's interface. */
  readonly mac: string;
  /** Joins `group` with a UDP socket bound to `port`; resolves once the join call returned. */
  listen(group: string, port: number): Promise<Receiver>;
  /** listen(), wait `durationMs`, stop(). */
  receive(group: string, port: number, durationMs: number): Promise<Datagram[]>;
  /** Sends `count` UDP datagrams to group:port out of eth0; resolves when all are sent. */
  send(group: string, port: number, count: number, options?: SendOptions): Promise<void>;
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
        throw new Error(`${daemon.name} in ${this.ns} exited (${daemon.child.signalCode ?? daemon.child.exitCode}) before ${what} appeared: ${this.diagnostics(daemon)}`);
      }
      if (Date.now() > deadline) {
        throw new Error(`${what} (${path}) did not appear within ${this.startTimeoutMs} ms: ${daemon ? this.diagnostics(daemon) : ''}`);
      }
      await sleep(20);
    }
  }

  private diagnostics(daemon: Daemon): string {
    let log = '';
    try {
      log = readFileSync(join(this.logdir, `${daemon.name}.log`), 'utf8').split('\n').slice(-15).join('\n');
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

  // --- pods ------------------------------------------------------------------------------

  /**
   * A pod: namespace `mcl<id>-<node>-<name>` whose eth0 is one end of a veth; the other
   * end is a port of the bridge, with the external_ids a CNI plugin writes. eth0 gets the
   * address, a default route, the multicast route 224.0.0.0/4 and transmit checksum
   * offload off.
   */
  async addPod(name: string, options: OvsPodOptions): Promise<OvsPod> {
    const { address, prefixLength } = parseCidr(options.address);
    const ns = await this.lab.namespace(`${this.name}-${name}`);
    const port = this.lab.ifname(this.portSuffix(name));
    // Created inside the pod's namespace with the peer moved straight into the node's,
    // so nothing ever appears in the machine's own namespace.
    await this.lab.ip(ns, 'link', 'add', POD_IFACE, 'type', 'veth', 'peer', 'name', port, 'netns', this.ns);
    if (options.mac !== undefined) await this.lab.ip(ns, 'link', 'set', POD_IFACE, 'address', options.mac);
    await this.lab.ip(ns, 'link', 'set', POD_IFACE, 'up');
    await this.lab.ip(this.ns, 'link', 'set', port, 'up');
    await this.lab.ip(ns, 'addr', 'add', `${address}/${prefixLength}`, 'dev', POD_IFACE);
    if (options.gateway !== undefined) await this.lab.ip(ns, 'route', 'add', 'default', 'via', options.gateway, 'dev', POD_IFACE);
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
      'add-port', this.bridge, port, '--', 'set', 'interface', port,
      ...Object.entries(externalIds).map(([key, value]) => `external_ids:${key}="${value}"`),
    );
    const ofport = await this.ofportOf(port);
    const pod = new LabPod(this, { name, ns, iface: POD_IFACE, port, ofport, address, prefixLength, mac });
    this.pods.push(pod);
    return pod;
  }

  /** The OpenFlow port number OVS gave interface `port` (waits while it is still unassigned). */
  async ofportOf(port: string): Promise<number> {
    const deadline = Date.now() + this.startTimeoutMs;
    for (;;) {
      const ofport = Number((await this.vsctl('get', 'interface', port, 'ofport')).trim());
      if (Number.isInteger(ofport) && ofport > 0) return ofport;
      if (Date.now() > deadline) throw new Error(`interface ${port} got no ofport (${ofport}); see ${this.logdir}/ovs-vswitchd.log`);
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
    const { stdout } = await this.lab.ip(ns, '-j', 'link', 'show', iface);
    const [link] = JSON.parse(stdout) as { address?: string }[];
    if (link?.address === undefined) throw new Error(`no MAC address for ${iface} in ${ns}`);
    return link.address;
  }

  /** A bridge-port suffix for pod `name`: the name itself if it fits and is free in this lab, else `o<n>`. */
  private portSuffix(name: string): string {
    let taken = takenSuffixes.get(this.lab);
    if (!taken) takenSuffixes.set(this.lab, (taken = new Set()));
    const room = 15 - this.lab.prefix.length;
    let suffix = name;
    for (let n = taken.size; !/^[A-Za-z0-9_-]+$/.test(suffix) || suffix.length > room || taken.has(suffix); n++) suffix = `o${n}`;
    taken.add(suffix);
    return suffix;
  }
}

// ---------------------------------------------------------------------------------------
// Pods and their sockets (small python3 programs run inside the pod's namespace)

/**
 * argv: group port. Joins the group (IP_ADD_MEMBERSHIP on the interface the multicast
 * route picks), prints "ready", then one JSON line per datagram, until stdin closes.
 * IP_MULTICAST_ALL=0: deliver only the group this socket joined.
 */
const RECEIVER_PY = `
import json, select, socket, sys
group, port = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.setsockopt(socket.IPPROTO_IP, 49, 0)
s.bind((group, port))
s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, socket.inet_aton(group) + socket.inet_aton("0.0.0.0"))
print("ready", flush=True)
while True:
    readable, _, _ = select.select([s, sys.stdin], [], [])
    if s in readable:
        data, (host, sport) = s.recvfrom(65535)
        print(json.dumps({"from": host, "fromPort": sport, "payload": data.decode("latin-1")}), flush=True)
    if sys.stdin in readable and not sys.stdin.readline():
        break
s.close()
`;

/** argv: group port count intervalMs ttl tag. Prints "sent <count>" at the end. */
const SENDER_PY = `
import socket, sys, time
group, port, count, interval, ttl, tag = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), float(sys.argv[4]) / 1000, int(sys.argv[5]), sys.argv[6]
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.setsockopt(socket.IPPROTO_IP, socket.IP_MULTICAST_TTL, ttl)
for i in range(count):
    if i: time.sleep(interval)
    s.sendto(f"{tag} {i}".encode(), (group, port))
print(f"sent {count}", flush=True)
`;

interface PodFields {
  name: string;
  ns: string;
  iface: string;
  port: string;
  ofport: number;
  address: string;
  prefixLength: number;
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
  readonly mac: string;

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
    this.mac = fields.mac;
  }

  async listen(group: string, port: number): Promise<Receiver> {
    checkGroupAndPort(group, port);
    const child = this.node.lab.spawn(this.ns, ['python3', '-u', '-c', RECEIVER_PY, group, String(port)]);
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
      void exited.then(() => reject(new Error(`receiver for ${group}:${port} in ${this.ns} exited: ${stderr.trim()}`)));
    });
    await ready;
    let stopping: Promise<Datagram[]> | undefined;
    return {
      group,
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

  async receive(group: string, port: number, durationMs: number): Promise<Datagram[]> {
    const receiver = await this.listen(group, port);
    await sleep(durationMs);
    return receiver.stop();
  }

  async send(group: string, port: number, count: number, options: SendOptions = {}): Promise<void> {
    checkGroupAndPort(group, port);
    const tag = options.tag ?? this.name;
    if (!/^[\w.-]+$/.test(tag)) throw new RangeError(`bad tag ${JSON.stringify(tag)}`);
    const argv = [group, String(port), String(count), String(options.intervalMs ?? 10), String(options.ttl ?? 1), tag];
    await this.node.lab.exec(this.ns, ['python3', '-c', SENDER_PY, ...argv]);
  }
}

function checkGroupAndPort(group: string, port: number): void {
  if (!/^\d+\.\d+\.\d+\.\d+$/.test(group)) throw new RangeError(`not an IPv4 group: ${JSON.stringify(group)}`);
  if (!Number.isInteger(port) || port <= 0 || port > 0xffff) throw new RangeError(`bad UDP port ${port}`);
}
