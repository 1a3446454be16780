/**
 * Querying the ports of an OVS bridge: the query (IGMP or MLD) goes to each queried port
 * (the pod ports, or every port but the bridge's LOCAL one) as a PACKET_OUT, and
 * short-lived flows send every membership message of the queried family that enters
 * from those ports to us as a PACKET_IN, so each answer comes with the port, and so the
 * pod, it came from.
 *
 * While the probe flows are in place the reports of the queried ports reach nobody else
 * on the bridge (OVS sends a PACKET_IN to every controller that asks for them, so a
 * snooping controller still hears them). That is on purpose: an IGMPv1/v2 or MLDv1 host
 * that hears another member's report for its group keeps quiet (RFC 2236 §3, RFC 2710
 * §4), so only a querier that keeps the reports to itself hears every member. The flows
 * carry a hard timeout, so they go away by themselves if this process dies.
 */
import { randomInt } from 'node:crypto';
import { McastError, UnavailableError, UsageError } from '../../errors.js';
import { BridgeClient } from '../ovs/bridge-client.js';
import type { BridgePort } from '../ovs/bridge-ports.js';
import type { OvsTarget } from '../ovs/locations.js';
import { LinkType } from '../../packet/pcap/link-type.js';
import type { MulticastFamily } from '../../domain/family/multicast-family.js';
import type { PipelineConfig } from '../../domain/pipeline/config.js';
import type { FlowEntry } from '../../domain/pipeline/multicast-pipeline.js';
import type { PipelineChange } from '../../domain/pipeline/plan.js';
import { decodeFrame, ipLocator } from '../../packet/frame-decoder.js';
import * as queryPacket from '../../packet/query-frame.js';
import { isMldQueryPacket, type AnyQueryPacket } from '../../packet/query-frame.js';
import { eui64LinkLocal } from '../../wire/ipv6-address.js';
import {
  ownIPv4Address,
  ownIPv6LinkLocal,
  systemClock,
  type Clock,
  type HeardMembership,
  type LinkPort,
  type QueryLink,
} from './query-link.js';

/** OpenFlow's hard_timeout is 16 bits of seconds. */
export const MAX_PROBE_SECONDS = 0xffff;

export interface BridgeLinkOptions {
  target: OvsTarget;
  pipeline: PipelineConfig;
  /** The family the run queries: only its membership messages are sent to us. */
  family: MulticastFamily;
  /** How long the probe flows may live at most (the run's whole length, plus a margin). */
  probeSeconds: number;
  /** Query every port but LOCAL, not only the pod ports. */
  allPorts: boolean;
  clock?: Clock;
}

export class BridgeLink implements QueryLink {
  readonly name: { bridge: string };
  readonly ownAddress: string | undefined;
  readonly ownLinkLocal: string | undefined;
  /** The ports a query goes to. */
  readonly ports: readonly BridgePort[];
  private probes: FlowEntry[] = [];
  private closed = false;
  private frames = 0;

  private constructor(
    private readonly bridge: BridgeClient,
    private readonly options: BridgeLinkOptions,
    private readonly clock: Clock,
  ) {
    this.name = { bridge: bridge.bridge };
    // The bridge's internal interface, when it lives in this namespace with an address.
    this.ownAddress = ownIPv4Address(bridge.bridge);
    // Else the address the bridge's MAC would form by itself: listeners take MLD queries
    // from a link-local source only (RFC 3810 §5.1.14), and a switch has none of its own.
    this.ownLinkLocal = ownIPv6LinkLocal(bridge.bridge) ?? macLinkLocal(bridge.localMac);
    this.ports = options.allPorts ? bridge.memberPorts : bridge.memberPorts.filter((port) => port.pod !== undefined);
  }

  /**
   * Connects to OVSDB and OpenFlow: UnavailableError (69) if OVS is not there, UsageError
   * (64) for no such bridge or a bridge with no port to query.
   */
  static async open(options: BridgeLinkOptions): Promise<BridgeLink> {
    const bridge = await BridgeClient.open(options.target, { pipeline: options.pipeline });
    const link = new BridgeLink(bridge, options, options.clock ?? systemClock);
    if (link.ports.length === 0) {
      await bridge.close();
      throw new UsageError(
        `bridge ${options.target.bridge} has no ${options.allPorts ? 'port to query' : 'pod port (an interface with external_ids pod-name)'}`,
        {
          code: 'no-such-interface',
          ...(options.allPorts ? {} : { hint: '--all-ports queries every port of the bridge' }),
        },
      );
    }
    return link;
  }

  async listen(onHeard: (event: HeardMembership) => void, onError: (error: McastError) => void): Promise<void> {
    const locate = ipLocator(LinkType.ETHERNET);
    // An opened client does not reconnect: the connection is lost once at most.
    this.bridge.onDisconnected((reason) => {
      onError(new UnavailableError(`lost the OpenFlow connection to bridge ${this.name.bridge}: ${reason.message}`));
    });
    this.bridge.onPacketIn((frame, ofport) => {
      const port = ofport === undefined ? undefined : this.bridge.portByNumber(ofport);
      const at = this.clock.now();
      const event = decodeFrame(locate, frame, { frame: ++this.frames, ts: at / 1000 });
      const where = port === undefined ? {} : { port: linkPort(port) };
      // Malformed IGMP or MLD is no answer; `snoop` is the tool that shows it.
      if (event?.kind === 'igmp')
        onHeard({ at, src: event.src, ipId: event.ip.identification, message: event.message, ...where });
      else if (event?.kind === 'mld')
        onHeard({ protocol: 'mld', at, src: event.src, message: event.message, ...where });
    });
    await this.bridge.enablePacketIn();
    const runId = randomInt(1, 0x1_0000_0000);
    const probes = this.ports.flatMap((port) =>
      this.bridge.pipeline.queryProbe(this.options.family, {
        ofport: port.ofport,
        runId,
        hardTimeoutSeconds: this.options.probeSeconds,
      }),
    );
    const refused = await this.bridge.apply(probes.map((entry): PipelineChange => ({ op: 'add-flow', entry })));
    this.probes = probes.filter((_, index) => !refused.has(index));
    const [first] = refused.values();
    if (first !== undefined) {
      onError(
        new McastError(
          'refused',
          `bridge ${this.name.bridge} refused ${refused.size} of the flows that send ${this.options.family.protocol.toUpperCase()} to mcastctl: ${first.message}`,
        ),
      );
    }
  }

  async send(packet: AnyQueryPacket): Promise<void> {
    const mac = this.bridge.localMac;
    const frame = isMldQueryPacket(packet)
      ? queryPacket.encodeMldFrame(packet, mac)
      : queryPacket.encodeFrame(packet, mac);
    const { refused, refusedPorts } = await this.bridge.sendFrame(
      frame,
      this.ports.map((port) => port.ofport),
    );
    const [first] = refused;
    if (first !== undefined) {
      const name = this.ports.find((port) => port.ofport === refusedPorts[0])?.name ?? refusedPorts[0];
      throw new McastError(
        'refused',
        `bridge ${this.name.bridge} refused to send the query to ${refused.length} port(s), e.g. ${name}: ${first.message}`,
      );
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      // A lost connection: the switch restarted (its flows are gone) or the hard timeout will do it.
      if (this.probes.length > 0 && this.bridge.connected)
        await this.bridge.apply(this.probes.map((entry): PipelineChange => ({ op: 'delete-flow', entry })));
    } finally {
      await this.bridge.close();
    }
  }
}

/** The modified-EUI-64 link-local address of `mac`, if the bridge reported one that is a MAC. */
function macLinkLocal(mac: string | undefined): string | undefined {
  if (mac === undefined) return undefined;
  try {
    return eui64LinkLocal(mac);
  } catch (error) {
    if (error instanceof RangeError) return undefined;
    throw error;
  }
}

function linkPort(port: BridgePort): LinkPort {
  return port.pod === undefined ? { name: port.name } : { name: port.name, pod: port.pod };
}
