/**
 * Querying on a Linux interface: queries go out through a packet socket as whole frames
 * (so the source may be 0.0.0.0, which an IP socket would replace with the route's
 * address), and the same socket hears every IGMP and MLD message on the wire, for any
 * group, as `snoop` does. Frames sent this way never reach this host's own IP stack: its own
 * memberships do not answer.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CapturedFrame, PacketCapture } from '../../transport/packet-socket.js';
import { EtherType } from '../../packet/ethernet.js';
import { McastError } from '../../errors.js';
import { LinkType } from '../../packet/pcap/link-type.js';
import { decodeFrame, ipLocator } from '../../packet/frame-decoder.js';
import * as queryPacket from '../../packet/query-frame.js';
import { isMldQueryPacket, type AnyQueryPacket } from '../../packet/query-frame.js';
import { ownIPv4Address, ownIPv6LinkLocal, type HeardMembership, type QueryLink } from './query-link.js';

/** A full device queue (EAGAIN, ENOBUFS) usually drains within a few milliseconds. */
const BUSY_RETRY_MS = 20;

export class InterfaceLink implements QueryLink {
  readonly name: { iface: string };
  readonly ownAddress: string | undefined;
  readonly ownLinkLocal: string | undefined;
  private frames = 0;
  private closed = false;

  private constructor(private readonly capture: PacketCapture) {
    this.name = { iface: capture.iface };
    this.ownAddress = ownIPv4Address(capture.iface);
    this.ownLinkLocal = ownIPv6LinkLocal(capture.iface);
  }

  /** Opens the packet socket: PermissionError (77) without CAP_NET_RAW, UsageError (64) for no such interface. */
  static async open(iface: string): Promise<InterfaceLink> {
    // Loaded here: the addon is needed only by commands that touch a live interface.
    const { PacketCapture } = await import('../../transport/packet-socket.js');
    const { igmpFilter } = await import('../../packet/bpf.js');
    return new InterfaceLink(PacketCapture.open({ iface, filter: igmpFilter, promiscuous: true }));
  }

  async listen(onHeard: (event: HeardMembership) => void, onError: (error: McastError) => void): Promise<void> {
    const locate = ipLocator(this.capture.linkType);
    this.capture.onError((error) => {
      // A link that goes down may come back; one that is gone will not.
      if (error.code === 'no-such-interface') onError(error);
    });
    this.capture.onFrame((captured: CapturedFrame) => {
      const at = captured.tsSec * 1000 + captured.tsNsec / 1e6;
      const event = decodeFrame(locate, captured.data, { frame: ++this.frames, ts: at / 1000 });
      // Malformed IGMP or MLD is no answer; `snoop` is the tool that shows it.
      if (event?.kind === 'igmp')
        onHeard({ at, src: event.src, ipId: event.ip.identification, message: event.message });
      else if (event?.kind === 'mld') onHeard({ protocol: 'mld', at, src: event.src, message: event.message });
    });
  }

  async send(packet: AnyQueryPacket): Promise<void> {
    const ethernet = this.capture.linkType === LinkType.ETHERNET;
    let frame: Uint8Array;
    let etherType: number;
    if (isMldQueryPacket(packet)) {
      frame = ethernet
        ? queryPacket.encodeMldFrame(packet, this.capture.hardwareAddress)
        : queryPacket.encodeMld(packet);
      etherType = EtherType.IPv6;
    } else {
      frame = ethernet ? queryPacket.encodeFrame(packet, this.capture.hardwareAddress) : queryPacket.encode(packet);
      etherType = EtherType.IPv4;
    }
    try {
      this.capture.send(frame, etherType);
    } catch (error) {
      if (!(error instanceof McastError && error.code === 'busy')) throw error;
      await sleep(BUSY_RETRY_MS);
      this.capture.send(frame, etherType);
    }
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.capture.close();
  }
}
