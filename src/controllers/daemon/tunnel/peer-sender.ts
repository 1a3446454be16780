/**
 * What tunnel mode sends to its peers, and how: the frames (an IGMPv3 report of this
 * node's groups, a general query asking a peer for its full state), the IPv4
 * identification numbers they carry, their seal with a cluster key, and the send itself, which counts what went out and
 * what the switch refused, and tells the metrics and the watchers.
 *
 * Apart from the exchange (./peer-exchange.ts), which decides when and to whom: this
 * module never decides, so what a frame holds can be read without the timers and peers.
 * Nothing here throws: a send the switch refuses is counted and logged.
 */
import { messageOf } from '../../../errors.js';
import type { PeerReport } from '../../../domain/peers/announcer.js';
import { encodeReportFrame } from '../../../domain/peers/report-packet.js';
import { FALLBACK_SOURCE_MAC } from '../../../packet/ethernet.js';
import { encodeFloatCode } from '../../../packet/igmp/float-code.js';
import { encodeFrame } from '../../../packet/query-frame.js';
import type { PeerMessageNotice, PeerReportRecord } from '../../../transport/control/daemon-view.js';
import type { WarningLimiter } from '../../../runtime/warning-limiter.js';
import type { HostAddress } from '../../../wire/ip-address.js';
import type { PeerExchangeCounters } from './peer-counters.js';
import type { PeerSealing } from './peer-sealing.js';
import type { ControllerLogger } from '../loop/ports.js';

/** What sending needs of the loop: the switch's tunnel, the log, and whoever counts or follows the messages. */
export interface PeerSendPort {
  /** Sends `frame` into the tunnel once per peer (a PACKET_OUT with set_field:PEER->tun_dst,output:TUN). */
  sendToPeers(frame: Uint8Array, peers: readonly HostAddress[]): Promise<{ sent: number; refused: Error[] }>;
  logger: ControllerLogger;
  /** Told of every message from a peer (in) and every one sent to peers (out, once per peer), for the metrics. */
  onMessage?: (peer: HostAddress, direction: 'in' | 'out', type: 'report' | 'query') => void;
  /**
   * Whoever follows the messages (`snoop --daemon`): a notice is built only while `listened()`, once per message (not
   * per peer).
   */
  watchers?: { listened(): boolean; publish(notice: PeerMessageNotice): void };
}

export interface PeerSenderOptions {
  port: PeerSendPort;
  /** This node's --node-address: the source of the IGMP it sends. */
  nodeAddress: HostAddress;
  /** The source MAC of what it sends (the gateway's), when there is one. */
  sourceMac: () => string | undefined;
  /** How often each peer gets the full state: the interval a query tells the peers (its QQIC). */
  refreshIntervalMs: number;
  /** The exchange's counters: what was sent, and the send errors. */
  counters: PeerExchangeCounters;
  /** The exchange's warning limiter: a failing send is logged at most once per its interval. */
  warnings: WarningLimiter;
  /** Seals each frame (once, whatever the number of peers) when there are cluster keys. */
  sealing: PeerSealing;
}

/** One message to peers: a report of this node's groups, or a general query. */
export type PeerMessage = { kind: 'query' } | { kind: 'report'; report: PeerReport };

/** Where general queries go (RFC 3376 §4.1.12). */
const ALL_SYSTEMS = '224.0.0.1';
/** How long a peer may take to answer our query: it answers at once, so 1 s is ample. */
const QUERY_MAX_RESPONSE_TENTHS = 10;

export class PeerSender {
  private identification = Math.floor(Math.random() * 0x10000);

  constructor(private readonly options: PeerSenderOptions) {}

  /** Hands one frame to the switch for each peer; what it refuses is counted and logged, never thrown. */
  send(message: PeerMessage, peers: readonly HostAddress[]): void {
    if (peers.length === 0) return;
    const { nodeAddress, sealing } = this.options;
    const frame = sealing.seal(
      message.kind === 'report' ? this.reportFrame(message.report) : this.generalQueryFrame(),
      nodeAddress,
    );
    const { port, counters, warnings } = this.options;
    // Built now (the peers may change before the switch answers), published once all of them got it.
    const notice: PeerMessageNotice | undefined = !(port.watchers?.listened() ?? false)
      ? undefined
      : message.kind === 'report'
        ? { type: 'peer-report', direction: 'out', peers: [...peers], records: recordsOf(message.report) }
        : { type: 'peer-query', direction: 'out', peers: [...peers] };
    const counted = message.kind === 'report' ? 'reports' : 'queries';
    const failed = (count: number, error: string): void => {
      counters.sendErrors += count;
      warnings.warn(port.logger, 'send', 'sending to peers failed', {
        kind: message.kind,
        peers: peers.length,
        error,
      });
    };
    port.sendToPeers(frame, peers).then(
      ({ sent, refused }) => {
        counters.sent[counted] += sent;
        // Which peers the switch refused it for is not told: all are counted when all went.
        if (refused.length === 0) for (const peer of peers) port.onMessage?.(peer, 'out', message.kind);
        if (refused.length === 0 && sent > 0 && notice !== undefined) port.watchers?.publish(notice);
        if (refused.length > 0) failed(refused.length, messageOf(refused[0]));
      },
      (error: unknown) => failed(peers.length, messageOf(error)),
    );
  }

  private reportFrame(report: PeerReport): Uint8Array {
    return encodeReportFrame(
      { report, source: this.options.nodeAddress, identification: this.nextIdentification() },
      this.sourceMac(),
    );
  }

  private generalQueryFrame(): Uint8Array {
    const message = {
      kind: 'query' as const,
      version: 3 as const,
      group: '0.0.0.0',
      maxRespCode: encodeFloatCode(QUERY_MAX_RESPONSE_TENTHS),
      sFlag: false,
      qrv: 2,
      qqic: encodeFloatCode(Math.round(this.options.refreshIntervalMs / 1000)),
      sources: [],
    };
    return encodeFrame(
      { message, src: this.options.nodeAddress, dst: ALL_SYSTEMS, identification: this.nextIdentification() },
      this.sourceMac(),
    );
  }

  private sourceMac(): string {
    return this.options.sourceMac() ?? FALLBACK_SOURCE_MAC;
  }

  private nextIdentification(): number {
    this.identification = (this.identification + 1) & 0xffff;
    return this.identification;
  }
}

/** A report's records as the event stream shows them: the sources are left out (a peer's records name none). */
export function recordsOf(report: PeerReport): PeerReportRecord[] {
  return report.records.map((record) => ({ type: record.type, group: record.group }));
}
