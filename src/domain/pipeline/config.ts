/**
 * Where and how the multicast pipeline lives on a bridge that may carry other traffic:
 * its table, its priorities, the cookie that marks every flow as ours, and the range of
 * OVS group ids it owns. Everything is configurable so that two controllers (or two
 * instances of this one) can share a bridge without touching each other's entries.
 */
import { UsageError } from '../../errors.js';

interface PipelinePriorities {
  /**
   * IGMP → the controller (the daemon's snooping): from any port at this priority, from
   * a pod port through its meter one above, and from a port `query` listens on two above.
   */
  igmp: number;
  /** Multicast a pod may not send (the group policy) → dropped; above every forwarding flow. */
  sendPolicy: number;
  /** 224.0.0.0/24 (link-local control traffic) → flooded, never snooped. */
  linkLocal: number;
  /** A group with members on this node → its OVS group. */
  group: number;
  /** Any other multicast → the gateway port, so that receivers outside still get it. */
  unknownGroup: number;
  /**
   * Tunnel mode only (absent: DEFAULT_TUNNEL_PRIORITIES): a group's traffic from the tunnel
   * or the gateway → its local pods (see tunnel-layout.ts).
   */
  ingress?: number;
  /**
   * Tunnel mode: other multicast from the tunnel → dropped; above linkLocal, so other nodes' link-local traffic does
   * not flood.
   */
  tunnelDrop?: number;
  /**
   * Tunnel mode: other multicast from the gateway → dropped; below linkLocal, so the node's own link-local traffic
   * still floods.
   */
  gatewayDrop?: number;
  /**
   * Tunnel mode: one source's traffic of a group from the tunnel or the gateway → the pods
   * that want that source; above ingress (absent: see sourcePriorities).
   */
  sourceIngress?: number;
  /**
   * One source's traffic of a group (an (S,G) entry) → its own OVS group; above group (absent: see sourcePriorities).
   */
  sourceGroup?: number;
}

/** The priorities of tunnel mode's flows when the configuration gives none. */
export const DEFAULT_TUNNEL_PRIORITIES = Object.freeze({ ingress: 270, tunnelDrop: 260, gatewayDrop: 245 });

/** The tunnel-mode priorities of `priorities`, each given or its default. */
export function tunnelPriorities(priorities: PipelinePriorities): {
  ingress: number;
  tunnelDrop: number;
  gatewayDrop: number;
} {
  return {
    ingress: priorities.ingress ?? DEFAULT_TUNNEL_PRIORITIES.ingress,
    tunnelDrop: priorities.tunnelDrop ?? DEFAULT_TUNNEL_PRIORITIES.tunnelDrop,
    gatewayDrop: priorities.gatewayDrop ?? DEFAULT_TUNNEL_PRIORITIES.gatewayDrop,
  };
}

/**
 * The priorities of the (S,G) flows when the configuration gives none and the defaults fit between their neighbours.
 */
export const DEFAULT_SOURCE_PRIORITIES = Object.freeze({ sourceIngress: 275, sourceGroup: 210 });

/**
 * The (S,G) priorities of `priorities`, each given or its default. A default that does not
 * fit between its neighbours (a configuration written before the (S,G) flows, with the
 * tunnel priorities moved) becomes the one just above its lower neighbour, so that such a
 * configuration stays valid wherever there is room.
 */
export function sourcePriorities(priorities: PipelinePriorities): { sourceIngress: number; sourceGroup: number } {
  const { ingress, gatewayDrop } = tunnelPriorities(priorities);
  const below = Math.max(priorities.group, priorities.unknownGroup);
  const fits = (value: number, lower: number, upper: number): number =>
    value > lower && value < upper ? value : lower + 1;
  return {
    sourceIngress:
      priorities.sourceIngress ?? fits(DEFAULT_SOURCE_PRIORITIES.sourceIngress, ingress, priorities.sendPolicy),
    sourceGroup: priorities.sourceGroup ?? fits(DEFAULT_SOURCE_PRIORITIES.sourceGroup, below, gatewayDrop),
  };
}

/**
 * The priorities of the sender counting rows (FlowKind.SendCounter), from the others: a
 * (*,G) row just above the group flow and below the (S,G) flows (so a source with an
 * entry of its own still takes it), an (S,G) row above the (S,G) flows and below the send
 * policy (which must drop first). Undefined where the configuration leaves no room: no
 * such rows, and the traffic that would take them is not counted by sender.
 */
export function counterPriorities(priorities: PipelinePriorities): {
  sendCounter: number | undefined;
  sourceSendCounter: number | undefined;
} {
  const { sourceGroup } = sourcePriorities(priorities);
  const gap = sourceGroup - priorities.group;
  const sourceSendCounter = Math.min(sourceGroup + 5, priorities.sendPolicy - 1);
  return {
    sendCounter: gap >= 2 ? priorities.group + Math.floor(gap / 2) : undefined,
    sourceSendCounter: sourceSendCounter > sourceGroup ? sourceSendCounter : undefined,
  };
}

export interface PipelineConfig {
  table: number;
  priorities: PipelinePriorities;
  /** The top 16 bits of every cookie we write. */
  cookiePrefix: number;
  /**
   * First OVS group id of our range: blocks of GROUP_ID_BLOCK ids, the first for the
   * head of each group's chain, the next ones for the links of chained groups (groups
   * too large for one message). group-ids.ts gives each group its slot.
   */
  groupIdBase: number;
  /**
   * The IGMP meter of pod port P is meter meterIdBase + P: the ids from meterIdBase to
   * meterIdBase + 0xffff are ours (OpenFlow port numbers are 16-bit).
   */
  meterIdBase: number;
}

export const DEFAULT_PIPELINE_CONFIG: Readonly<PipelineConfig> = Object.freeze({
  table: 0,
  priorities: Object.freeze({ igmp: 300, sendPolicy: 280, linkLocal: 250, group: 200, unknownGroup: 190 }),
  cookiePrefix: 0x4d43, // "MC"
  groupIdBase: 0x10000000,
  // OVS's user-space datapath holds 262,144 meters: the whole range fits below it.
  meterIdBase: 0x20000,
});

/** Meter ids of one range: a port number's worth. */
export const METER_ID_BLOCK = 0x10000;
/** OFPM_MAX: ids above it are reserved. */
const OFPM_MAX = 0xffff0000;

/** 2^28: a slot for each IPv4 multicast address (224.0.0.0/4). */
export const GROUP_ID_BLOCK = 0x10000000;
/** OFPG_MAX: ids above it are reserved (ALL, ANY). */
const OFPG_MAX = 0xffffff00;

export function validatePipelineConfig(config: PipelineConfig): PipelineConfig {
  if (!Number.isInteger(config.table) || config.table < 0 || config.table > 254) {
    throw new UsageError(`table ${config.table} is not an OpenFlow table id (0 to 254)`);
  }
  for (const [name, priority] of Object.entries(config.priorities)) {
    if (!Number.isInteger(priority) || priority < 1 || priority > 0xffff)
      throw new UsageError(`priority ${name} ${priority} is not 1 to 65535`);
  }
  // A pod's metered IGMP flow goes one above the snooping flow and `query`'s probe two
  // above; IGMP (v3 reports go to 224.0.0.22) must reach the controller before the
  // link-local flood or a send-policy drop takes it, and the drop must come before the
  // flows that forward.
  const { igmp, sendPolicy, linkLocal, group, unknownGroup } = config.priorities;
  if (igmp > 0xfffd)
    throw new UsageError('priority igmp must be below 65534: the metered and the query flows go above it');
  if (igmp <= sendPolicy) throw new UsageError(`priority igmp (${igmp}) must be above sendPolicy (${sendPolicy})`);
  if (sendPolicy <= Math.max(linkLocal, group, unknownGroup))
    throw new UsageError(
      `priority sendPolicy (${sendPolicy}) must be above linkLocal, group and unknownGroup (${Math.max(linkLocal, group, unknownGroup)})`,
    );
  // Tunnel mode: a group's ingress flow must win over the catch-all drops, traffic from
  // the tunnel must be dropped before the link-local flood takes it and traffic from the
  // gateway after it, and both drops must come before the flows that forward (flow 200
  // would send the gateway's traffic back out to the peers).
  const { ingress, tunnelDrop, gatewayDrop } = tunnelPriorities(config.priorities);
  checkDescending([
    ['sendPolicy', sendPolicy],
    ['ingress', ingress],
    ['tunnelDrop', tunnelDrop],
    ['linkLocal', linkLocal],
    ['gatewayDrop', gatewayDrop],
    ['group and unknownGroup', Math.max(group, unknownGroup)],
  ]);
  // An (S,G) flow must win over its group's (*,G) flow of the same kind, and stay below
  // the drops and the send policy that the (*,G) flows are below too.
  const { sourceIngress, sourceGroup } = sourcePriorities(config.priorities);
  checkDescending([
    ['sendPolicy', sendPolicy],
    ['sourceIngress', sourceIngress],
    ['ingress', ingress],
  ]);
  checkDescending([
    ['gatewayDrop', gatewayDrop],
    ['sourceGroup', sourceGroup],
    ['group and unknownGroup', Math.max(group, unknownGroup)],
  ]);
  const cookieProblem = cookiePrefixProblem(config.cookiePrefix);
  if (cookieProblem !== undefined) throw new UsageError(`cookie prefix ${cookieProblem}`);
  if (groupIdBaseProblem(config.groupIdBase) !== undefined) {
    throw new UsageError(
      `group id base 0x${config.groupIdBase.toString(16)} must be a multiple of 0x10000000 from 0x10000000 to 0xe0000000`,
    );
  }
  const meterProblem = meterIdBaseProblem(config.meterIdBase);
  if (meterProblem !== undefined) throw new UsageError(`meter id base ${meterProblem}`);
  return config;
}

/** Throws UsageError at the first named priority that is not above the next one. */
function checkDescending(order: readonly (readonly [string, number])[]): void {
  for (let index = 1; index < order.length; index++) {
    const [upperName, upper] = order[index - 1]!;
    const [lowerName, lower] = order[index]!;
    if (upper <= lower) throw new UsageError(`priority ${upperName} (${upper}) must be above ${lowerName} (${lower})`);
  }
}

/**
 * What is wrong with a meter id base (1 or more, with its whole range at or below OFPM_MAX), or undefined when it is
 * right.
 */
export function meterIdBaseProblem(base: number): string | undefined {
  if (Number.isInteger(base) && base >= 1 && base + METER_ID_BLOCK - 1 <= OFPM_MAX) return undefined;
  return `${base} is not a meter id from 1 to ${OFPM_MAX - METER_ID_BLOCK + 1}`;
}

/** What is wrong with a cookie prefix (16 bits, not 0), or undefined when it is right. */
export function cookiePrefixProblem(prefix: number): string | undefined {
  if (Number.isInteger(prefix) && prefix >= 1 && prefix <= 0xffff) return undefined;
  return `0x${prefix.toString(16)} is not a 16-bit value from 0x0001 to 0xffff`;
}

/**
 * What is wrong with a group id base (a whole block, with a block above it below OFPG_MAX), or undefined when it is
 * right.
 */
export function groupIdBaseProblem(base: number): string | undefined {
  if (
    Number.isInteger(base) &&
    base % GROUP_ID_BLOCK === 0 &&
    base >= GROUP_ID_BLOCK &&
    base + GROUP_ID_BLOCK <= OFPG_MAX
  )
    return undefined;
  return `0x${base.toString(16)} is not a multiple of 0x10000000 from 0x10000000 to 0xe0000000`;
}

/** How many chained blocks fit above the base before OFPG_MAX. */
export function chainBlocks(config: PipelineConfig): number {
  return Math.floor((OFPG_MAX - config.groupIdBase) / GROUP_ID_BLOCK);
}
