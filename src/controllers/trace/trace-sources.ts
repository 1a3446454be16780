/**
 * The real TraceSources: the bridge over OVSDB and OpenFlow (its BridgeClient), OVS's own
 * trace over ovs-vswitchd's unixctl socket, the daemon over its control socket, and the
 * kernel's routing tables of this namespace. Each is asked only when a stage needs it.
 */
import type { BridgeClient } from '../../adapters/ovs/bridge-client.js';
import { traceFlowText, VswitchdTracer } from '../../adapters/ovs/ofproto-trace.js';
import { McastError, PermissionError, UnavailableError } from '../../errors.js';
import { ControlClient } from '../../transport/control/control-client.js';
import type { DaemonStatus, GroupView, PortActivityView, PortQuery } from '../../transport/control/daemon-view.js';
import { MULTICAST_ROUTING } from '../../transport/multicast-routing.js';
import type { AddressFamily } from '../../wire/ip-address.js';
import type { TraceReport } from './trace-report.js';
import type { DaemonFacts, KernelFacts, TraceSources } from './trace-facts.js';

/** How long the daemon has to answer before trace goes on without it. */
const DAEMON_TIMEOUT_MS = 2000;

/**
 * The daemon's answers, or why there are none: not asked, or not reachable (a PermissionError is the user's to fix, and
 * thrown).
 */
export async function askDaemon(
  socket: string | undefined,
): Promise<
  { facts: DaemonFacts; close: () => void; state: 'reachable' } | { state: Exclude<TraceReport['daemon'], 'reachable'> }
> {
  if (socket === undefined) return { state: 'not-asked' };
  let client: ControlClient;
  try {
    client = await ControlClient.connect(socket, { timeoutMs: DAEMON_TIMEOUT_MS });
  } catch (error) {
    if (error instanceof PermissionError) throw error;
    if (error instanceof McastError) return { state: 'unreachable' };
    throw error;
  }
  try {
    const [status, groups] = await Promise.all([
      client.request<DaemonStatus>('status'),
      client.request<GroupView[]>('groups'),
    ]);
    const facts: DaemonFacts = {
      status,
      groups,
      port: async (query: PortQuery) =>
        (await client.request<PortActivityView | null>('port', { ...query })) ?? undefined,
    };
    return { facts, close: () => client.close(), state: 'reachable' };
  } catch (error) {
    client.close();
    // A daemon still starting (or gone meanwhile) counts as not there.
    if (error instanceof UnavailableError) return { state: 'unreachable' };
    throw error;
  }
}

export interface BridgeTraceSourcesOptions {
  bridge: BridgeClient;
  rundir: string;
  daemon: DaemonFacts | undefined;
  daemonState: TraceReport['daemon'];
  controlSocket: string;
  gateway: string | undefined;
  multicastInterfaces: readonly string[];
  tunnel: string | undefined;
}

/** TraceSources over a bridge client; `close` ends what it opened (the tracer's socket). */
export function bridgeTraceSources(options: BridgeTraceSourcesOptions): TraceSources & { close(): void } {
  const { bridge } = options;
  let tracer: Promise<VswitchdTracer> | undefined;
  const ports = bridge.memberPorts.map((port) => {
    const mac = bridge.macOf(port.ofport);
    return { ...port, addresses: bridge.addressesOf(port.ofport) ?? [], ...(mac === undefined ? {} : { mac }) };
  });
  return {
    bridge: bridge.bridge,
    cookiePrefix: bridge.pipeline.config.cookiePrefix,
    ports,
    async installed() {
      const { pipeline } = await bridge.readInstalled();
      return pipeline.groups.map((group) => ({
        group: group.group,
        ...(group.source === undefined ? {} : { source: group.source }),
        groupId: group.groups[0]?.groupId,
        ports: group.ports,
        ...(group.problem === undefined ? {} : { problem: group.problem }),
      }));
    },
    async ovsTrace(flow) {
      tracer ??= VswitchdTracer.open({ rundir: options.rundir, bridge: bridge.bridge });
      const opened = await tracer;
      const [text, datapathPorts] = await Promise.all([opened.trace(flow), opened.datapathPorts()]);
      return { text, datapathPorts };
    },
    daemon: options.daemon,
    daemonState: options.daemonState,
    controlSocket: options.controlSocket,
    kernel: readKernelFacts,
    gateway: options.gateway,
    multicastInterfaces: options.multicastInterfaces,
    tunnel: options.tunnel,
    flowText: traceFlowText,
    close() {
      void tracer?.then(
        (opened) => opened.close(),
        () => undefined,
      );
    },
  };
}

/**
 * This namespace's routing of `family`: its interfaces by name, its routes with names, and the joins of every
 * interface.
 */
async function readKernelFacts(family: AddressFamily): Promise<KernelFacts> {
  const kernel = MULTICAST_ROUTING[family];
  const readOr = async <T>(read: () => Promise<T[]>): Promise<T[]> => {
    try {
      return await read();
    } catch {
      return []; // no such table: a kernel without this family's multicast routing has nothing to show
    }
  };
  const [interfaces, routes, memberships] = await Promise.all([
    readOr(() => kernel.readInterfaces()),
    readOr(() => kernel.readRoutes()),
    readOr(() => kernel.readMemberships()),
  ]);
  const nameOf = (index: number) =>
    interfaces.find((row) => row.index === index)?.name ?? `${kernel.interfaceWord}${index}`;
  return {
    routerActive: kernel.routerActive(),
    interfaces: interfaces.map((row) => row.name),
    routes: routes.map((row) => ({ ...row, iif: nameOf(row.iif), oifs: row.oifs.map(nameOf) })),
    memberships,
  };
}
