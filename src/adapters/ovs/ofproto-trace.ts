/**
 * OVS's own trace of one packet through a bridge's flows (`ofproto/trace`, asked of
 * ovs-vswitchd over its unixctl socket): the flow to trace, written in OVS's flow syntax,
 * and what of the answer decides delivery. The answer is text for people; what is read
 * here is what that text has said the same way for years:
 *
 *    0. udp,nw_dst=239.1.2.3, priority 200, cookie 0x6d63030000000000   the first rule it matched
 *   Datapath actions: 2,5                                               datapath port numbers, or "drop"
 *
 * and `dpif/show`'s "    <name> <ofport>/<datapath port>: (<type>)" lines, which turn
 * datapath port numbers back into OpenFlow ones.
 */
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { UnavailableError } from '../../errors.js';
import { FileRefusedError } from '../../runtime/regular-file.js';
import { ovsPidfilePath, readOvsPidfile } from './locations.js';
import { multicastMacForGroup, FALLBACK_SOURCE_MAC } from '../../packet/ethernet.js';
import { UnixctlClient } from '../../transport/unixctl/unixctl-client.js';
import { familyOf } from '../../domain/family/families.js';
import type { GroupAddress } from '../../wire/ip-address.js';
import { multicastMacForIPv6Group } from '../../wire/ipv6-address.js';

/** One UDP datagram to a group, as ofproto/trace takes it. */
export interface TracedPacket {
  inPort: number;
  group: GroupAddress;
  source: string;
  sourceMac?: string;
}

/**
 * The flow text of `packet`: what a sender's kernel would put on the wire (TTL or hop limit 64, both `nw_ttl` to OVS;
 * a UDP port pair).
 */
export function traceFlowText(packet: TracedPacket): string {
  const mac = packet.sourceMac ?? FALLBACK_SOURCE_MAC;
  if (familyOf(packet.group).name === 'ipv6') {
    const dst = multicastMacForIPv6Group(packet.group);
    return `udp6,in_port=${packet.inPort},dl_src=${mac},dl_dst=${dst},ipv6_src=${packet.source},ipv6_dst=${packet.group},nw_ttl=64,udp_src=40000,udp_dst=5000`;
  }
  const dst = multicastMacForGroup(packet.group);
  return `udp,in_port=${packet.inPort},dl_src=${mac},dl_dst=${dst},nw_src=${packet.source},nw_dst=${packet.group},nw_ttl=64,udp_src=40000,udp_dst=5000`;
}

/** The first rule the packet matched, as the trace names it. */
interface MatchedRule {
  table: number;
  match: string;
  priority: number;
  /** Absent for a rule with cookie 0 (the trace leaves it out). */
  cookie?: bigint;
}

export interface TraceVerdict {
  /** The "Datapath actions:" line's text ("drop" when nothing goes out). */
  datapathActions: string;
  /** The datapath ports it outputs to. */
  datapathOutputs: number[];
  /** Undefined: the packet matched no rule ("No match."). */
  firstRule: MatchedRule | undefined;
}

/** Reads the verdict out of ofproto/trace's text; undefined when the text has no "Datapath actions:" line. */
export function parseTrace(text: string): TraceVerdict | undefined {
  const actions = /^Datapath actions: (.*)$/m.exec(text);
  if (actions === null) return undefined;
  const datapathActions = actions[1]!.trim();
  // Output actions are bare port numbers; everything else (set(), push_vlan(), ...) holds '=' or letters.
  const datapathOutputs = [
    ...new Set(
      datapathActions
        .split(/[,()]/)
        .map((token) => token.trim())
        .filter((token) => /^\d+$/.test(token))
        .map(Number),
    ),
  ];
  // A catch-all rule is printed without a match: " 0. priority 0".
  const rule = /^\s*(\d+)\. (?:(.*), )?priority (\d+)(?:, cookie (0x[0-9a-fA-F]+))?\s*$/m.exec(text);
  const firstRule =
    rule === null
      ? undefined
      : {
          table: Number(rule[1]),
          match: rule[2] ?? '',
          priority: Number(rule[3]),
          ...(rule[4] === undefined ? {} : { cookie: BigInt(rule[4]) }),
        };
  return { datapathActions, datapathOutputs, firstRule };
}

/** `dpif/show`'s ports of `bridge`: the OpenFlow port of each datapath port number. */
export function parseDatapathPorts(text: string, bridge: string): Map<number, number> {
  const ports = new Map<number, number>();
  let inBridge = false;
  for (const line of text.split('\n')) {
    const header = /^ {2}(\S+):\s*$/.exec(line);
    if (header !== null) {
      inBridge = header[1] === bridge;
      continue;
    }
    const port = /^ {4}\S+ (\d+)\/(\d+):/.exec(line);
    if (inBridge && port !== null) ports.set(Number(port[2]), Number(port[1]));
  }
  return ports;
}

/**
 * ovs-vswitchd's unixctl socket in `rundir`, found as ovs-appctl finds it: `ovs-vswitchd.<pid>.ctl`,
 * the pid from its pidfile; else `ovs-vswitchd.ctl`, where it was started with `--unixctl` so.
 * A pidfile that is there but refused (a FIFO, a device, too long, no pid) gives no pid; when
 * the fixed socket is not there either, the refusal is what the error says, as its cause.
 */
export async function vswitchdControlPath(rundir: string): Promise<string> {
  const pidfile = ovsPidfilePath(rundir, 'ovs-vswitchd');
  const fixed = join(rundir, 'ovs-vswitchd.ctl');
  let pid: number | undefined;
  let refused: FileRefusedError | undefined;
  try {
    pid = await readOvsPidfile(pidfile);
  } catch (error) {
    if (!(error instanceof FileRefusedError)) throw error;
    refused = error;
  }
  const byPid = pid === undefined ? undefined : join(rundir, `ovs-vswitchd.${pid}.ctl`);
  for (const path of [byPid, fixed]) {
    if (path !== undefined && (await exists(path))) return path;
  }
  if (refused !== undefined) {
    throw new UnavailableError(`no control socket of ovs-vswitchd in ${rundir} (no ${fixed}), and ${refused.message}`, {
      hint: refused.hint ?? 'is ovs-vswitchd running? set OVS_RUNDIR or --ovs-rundir',
      cause: refused,
    });
  }
  throw new UnavailableError(`no control socket of ovs-vswitchd in ${rundir} (${byPid ?? pidfile}, ${fixed})`, {
    hint: 'is ovs-vswitchd running? set OVS_RUNDIR or --ovs-rundir',
  });
}

async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch {
    return false;
  }
}

/** The two questions trace asks ovs-vswitchd: a packet's way through the bridge, and its datapath's port numbers. */
export class VswitchdTracer {
  private constructor(
    private readonly client: UnixctlClient,
    readonly bridge: string,
  ) {}

  static async open(options: { rundir: string; bridge: string; timeoutMs?: number }): Promise<VswitchdTracer> {
    const path = await vswitchdControlPath(options.rundir);
    const client = await UnixctlClient.connect({
      path,
      ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    });
    return new VswitchdTracer(client, options.bridge);
  }

  /** The raw text of ofproto/trace for `flow`. */
  trace(flow: string): Promise<string> {
    return this.client.call('ofproto/trace', [this.bridge, flow]);
  }

  async datapathPorts(): Promise<Map<number, number>> {
    return parseDatapathPorts(await this.client.call('dpif/show', []), this.bridge);
  }

  close(): void {
    this.client.close();
  }
}
