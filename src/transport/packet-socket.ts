/**
 * Live capture of the frames crossing one Linux interface, in and out, through an
 * AF_PACKET socket of the native addon (native/packet_socket.c, loaded by
 * src/runtime/native-addon.ts).
 *
 * Why not a raw IPPROTO_IGMP socket: the kernel hands it IGMP only for groups this host
 * has joined, while `snoop` must show every report on the wire, as `tcpdump -i IF igmp`.
 *
 * Kernel and privilege failures leave this module as the project's typed errors:
 * PermissionError (exit 77), UsageError 'no-such-interface' (exit 64), McastError 'io'.
 */

import { McastError, PermissionError, UsageError, isSystemError, quoteInput } from '../errors.js';
import { DEFAULT_SNAPLEN } from '../packet/pcap/format.js';
import { LinkType } from '../packet/pcap/link-type.js';
import { ArphrdType, SllPacketType } from '../packet/sll/packet-type.js';
import type { BpfInstruction, CaptureLinkType } from '../packet/bpf.js';
import { nativePart } from '../runtime/native-addon.js';

/** One frame as the kernel delivered it. */
export interface CapturedFrame {
  /** The captured bytes, link-layer header first; at most `snaplen` of them. */
  data: Buffer;
  /** Kernel receive timestamp (SO_TIMESTAMPNS), seconds and nanoseconds of wall-clock time. */
  tsSec: number;
  tsNsec: number;
  /** The frame's length on the wire; larger than `data.length` when the snaplen cut it. */
  originalLength: number;
  /** 'out' for frames this host sent on the interface (PACKET_OUTGOING), 'in' for the rest. */
  direction: 'in' | 'out';
}

export interface PacketCaptureOptions {
  /** Interface name, as in `ip link`. */
  iface: string;
  /**
   * Kernel filter. A function receives the interface's link type (known only once the
   * socket exists) and returns the program: `filter: igmpFilter`. It is attached before
   * the socket receives its first frame, so no unfiltered frame gets through.
   */
  filter?: readonly BpfInstruction[] | ((linkType: CaptureLinkType) => readonly BpfInstruction[]);
  /** Bytes kept of each frame. Default 262144, like tcpdump: whole frames. */
  snaplen?: number;
  /** Put the interface in promiscuous mode while open (default true, like tcpdump). */
  promiscuous?: boolean;
  /** Socket receive buffer; a larger one rides out bursts. Default: the kernel's. */
  receiveBufferBytes?: number;
}

export interface CaptureStats {
  /** Frames that passed the filter since open, including the dropped ones (tcpdump's "received by filter"). */
  received: number;
  /** Frames that passed the filter but were dropped because the receive buffer was full. */
  dropped: number;
}

/** The addon's surface: see the comment at the top of native/packet_socket.c. */
type NativeInstruction = [code: number, jt: number, jf: number, k: number];
interface NativeOpenOptions {
  promiscuous: boolean;
  snaplen: number;
  receiveBufferBytes?: number;
  filter?: (hardwareType: number) => NativeInstruction[] | undefined;
}
interface NativePacketSocket {
  readonly ifindex: number;
  /** ARPHRD_* of the interface. */
  readonly hardwareType: number;
  readonly snaplen: number;
  readonly hardwareAddress: string;
  send(frame: Uint8Array, protocol: number): number;
  start(
    onFrame: (data: Buffer, tsSec: number, tsNsec: number, originalLength: number, packetType: number) => void,
    onError: (error: Error) => void,
  ): void;
  stats(): { packets: number; drops: number };
  close(): void;
}
interface NativeBinding {
  open(ifname: string, options: NativeOpenOptions): NativePacketSocket;
}

/** ARPHRD_* (linux/if_arp.h) → pcap link type, for the interface kinds whose frames we can decode. */
const LINK_TYPE_OF_HARDWARE = new Map<number, CaptureLinkType>([
  [ArphrdType.ETHER, LinkType.ETHERNET], // Ethernet, veth, bridges, OVS internal ports
  [ArphrdType.LOOPBACK, LinkType.ETHERNET], // lo carries an Ethernet header with zero addresses
  [ArphrdType.NONE, LinkType.RAW], // tun and other devices that carry bare IP
  [ArphrdType.RAWIP, LinkType.RAW], // bare IP too (e.g. some cellular modems)
]);

/** Linux accepts up to IFNAMSIZ-1 = 15 bytes, and neither '/' nor whitespace (dev_valid_name). */
function validateInterfaceName(iface: string): void {
  if (iface.length === 0 || Buffer.byteLength(iface) > 15 || /[/\s:]/.test(iface) || iface === '.' || iface === '..') {
    throw new UsageError(`invalid interface name ${quoteInput(iface)}: 1 to 15 characters, no '/', ':' or whitespace`);
  }
}

function validateOptions(options: PacketCaptureOptions): void {
  validateInterfaceName(options.iface);
  const { snaplen, receiveBufferBytes } = options;
  if (snaplen !== undefined && (!Number.isInteger(snaplen) || snaplen < 1 || snaplen > DEFAULT_SNAPLEN)) {
    throw new UsageError(`invalid snaplen ${snaplen}: an integer from 1 to ${DEFAULT_SNAPLEN}`);
  }
  if (
    receiveBufferBytes !== undefined &&
    (!Number.isInteger(receiveBufferBytes) || receiveBufferBytes < 1 || receiveBufferBytes > 0x7fffffff)
  ) {
    throw new UsageError(`invalid receive buffer size ${receiveBufferBytes}: a positive number of bytes`);
  }
}

/** Turns a system error of the addon into the project's typed error for that cause. */
function captureError(iface: string, error: unknown): unknown {
  if (error instanceof McastError || !isSystemError(error)) return error;
  switch (error.code) {
    case 'EPERM':
    case 'EACCES':
      return new PermissionError(
        `cannot capture on ${iface}: ${error.code} (packet capture needs CAP_NET_RAW; run as root or grant it: setcap cap_net_raw+ep $(which node))`,
        { cause: error },
      );
    case 'ENODEV':
    case 'ENXIO':
      return new UsageError(
        `cannot capture on ${iface}: no such interface (${error.code}; list them with \`ip link\`)`,
        {
          code: 'no-such-interface',
          cause: error,
        },
      );
    default:
      return new McastError(
        'io',
        `cannot capture on ${iface}: ${error.code} (${error.syscall ?? 'system call'} failed: ${error.message})`,
        {
          cause: error,
        },
      );
  }
}

/** Errors while capturing: the interface may go down (ENETDOWN) or disappear (ENODEV). */
function runtimeError(iface: string, error: unknown): McastError {
  if (isSystemError(error) && (error.code === 'ENODEV' || error.code === 'ENXIO')) {
    return new McastError(
      'no-such-interface',
      `capture on ${iface} stopped: the interface was removed (${error.code})`,
      { cause: error },
    );
  }
  if (isSystemError(error) && error.code === 'ENETDOWN') {
    return new McastError(
      'io',
      `capture on ${iface}: the interface is down (ENETDOWN); frames arrive again once it is up`,
      {
        cause: error,
      },
    );
  }
  const mapped = captureError(iface, error);
  return mapped instanceof McastError ? mapped : new McastError('internal', String(mapped), { cause: mapped });
}

/** Errors of send(): the same interface, seen from the sending side. */
function sendError(iface: string, length: number, error: unknown): McastError {
  if (!isSystemError(error))
    return error instanceof McastError ? error : new McastError('internal', String(error), { cause: error });
  switch (error.code) {
    case 'EAGAIN':
    case 'ENOBUFS':
      return new McastError('busy', `cannot send on ${iface} now: ${error.code} (the device queue is full)`, {
        cause: error,
      });
    case 'ENETDOWN':
      return new McastError('io', `cannot send on ${iface}: the interface is down (ENETDOWN)`, {
        hint: `ip link set ${iface} up`,
        cause: error,
      });
    case 'EMSGSIZE':
      return new McastError('io', `cannot send on ${iface}: a frame of ${length} octets exceeds its MTU (EMSGSIZE)`, {
        cause: error,
      });
    case 'ENODEV':
    case 'ENXIO':
      return new McastError('no-such-interface', `cannot send on ${iface}: the interface was removed (${error.code})`, {
        cause: error,
      });
    default:
      return new McastError('io', `cannot send on ${iface}: ${error.code} (${error.message})`, { cause: error });
  }
}

function toNative(program: readonly BpfInstruction[]): NativeInstruction[] {
  return program.map(({ code, jt, jf, k }) => [code, jt, jf, k]);
}

/**
 * A packet socket bound to one interface. Frames queue in the kernel from `open()` on and
 * are delivered once a listener is added; from then the capture keeps the process alive
 * until `close()`, like a listening server.
 */
export class PacketCapture {
  readonly iface: string;
  readonly ifindex: number;
  /** pcap LINKTYPE of `CapturedFrame.data`: 1 (Ethernet) or 101 (raw IPv4). */
  readonly linkType: CaptureLinkType;
  /** The interface's MAC address ("aa:bb:cc:dd:ee:ff"), or undefined for a link without one (tun). */
  readonly hardwareAddress: string | undefined;
  readonly #socket: NativePacketSocket;
  readonly #frameListeners: Array<(frame: CapturedFrame) => void> = [];
  readonly #errorListeners: Array<(error: McastError) => void> = [];
  #started = false;
  #closed = false;

  private constructor(iface: string, socket: NativePacketSocket, linkType: CaptureLinkType) {
    this.iface = iface;
    this.ifindex = socket.ifindex;
    this.linkType = linkType;
    this.hardwareAddress = socket.hardwareAddress === '' ? undefined : socket.hardwareAddress;
    this.#socket = socket;
  }

  /** Opens the socket. Throws UsageError (bad name, no such interface), PermissionError, McastError 'io'. */
  static open(options: PacketCaptureOptions): PacketCapture {
    validateOptions(options);
    const { iface, filter } = options;
    const native = nativePart<NativeBinding>('packetSocket');

    const nativeOptions: NativeOpenOptions = {
      promiscuous: options.promiscuous ?? true,
      snaplen: options.snaplen ?? DEFAULT_SNAPLEN,
    };
    if (options.receiveBufferBytes !== undefined) nativeOptions.receiveBufferBytes = options.receiveBufferBytes;
    // The addon asks for the filter once it knows the interface's hardware type, between
    // creating the socket and binding it (see the comment at socket() in the C code).
    nativeOptions.filter = (hardwareType) => {
      const linkType = linkTypeOf(iface, hardwareType);
      if (filter === undefined) return undefined;
      return toNative(typeof filter === 'function' ? filter(linkType) : filter);
    };

    let socket: NativePacketSocket;
    try {
      socket = native.open(iface, nativeOptions);
    } catch (error) {
      throw captureError(iface, error);
    }
    return new PacketCapture(iface, socket, linkTypeOf(iface, socket.hardwareType));
  }

  /**
   * Adds a listener for every captured frame. The first listener starts reading (frames
   * queued since `open()` come first). An exception thrown by a listener is an uncaught
   * exception, as in any Node I/O callback.
   */
  onFrame(listener: (frame: CapturedFrame) => void): void {
    if (this.#closed) throw new McastError('internal', `capture on ${this.iface} is closed`);
    this.#frameListeners.push(listener);
    this.#start();
  }

  /**
   * Adds a listener for errors while capturing: code 'io' when the link goes down (the
   * capture resumes when it comes back), 'no-such-interface' when it is deleted (the
   * capture is then closed). Without an error listener such an error is thrown as an
   * uncaught exception, like an 'error' event nobody listens to.
   */
  onError(listener: (error: McastError) => void): void {
    this.#errorListeners.push(listener);
  }

  /**
   * Transmits one whole frame of this link type (Ethernet header first, or bare IP on a
   * RAW link) carrying `etherType` (0x0800 for IPv4) out of the interface, past the IP
   * stack: no routing and no source address rewritten. This socket does not capture
   * its own frames; other captures do. Throws McastError: 'busy' when the device queue
   * is full (try again shortly), 'io' otherwise.
   */
  send(frame: Uint8Array, etherType: number): void {
    if (this.#closed) throw new McastError('internal', `capture on ${this.iface} is closed`);
    try {
      this.#socket.send(frame, etherType);
    } catch (error) {
      throw sendError(this.iface, frame.length, error);
    }
  }

  /** Kernel counters since open; still readable after close (the last values). */
  stats(): CaptureStats {
    try {
      const { packets, drops } = this.#socket.stats();
      return { received: packets, dropped: drops };
    } catch (error) {
      throw captureError(this.iface, error);
    }
  }

  /** Stops capturing and closes the socket (the interface leaves promiscuous mode). Idempotent. */
  close(): void {
    if (this.#closed) return;
    this.#closed = true;
    try {
      this.#socket.close();
    } catch (error) {
      throw captureError(this.iface, error);
    }
  }

  get closed(): boolean {
    return this.#closed;
  }

  #start(): void {
    if (this.#started) return;
    this.#started = true;
    this.#socket.start(
      (data, tsSec, tsNsec, originalLength, packetType) => {
        const frame: CapturedFrame = {
          data,
          tsSec,
          tsNsec,
          originalLength,
          direction: packetType === SllPacketType.outgoing ? 'out' : 'in',
        };
        for (const listener of this.#frameListeners) {
          listener(frame);
          if (this.#closed) break; // a listener closed the capture
        }
      },
      (nativeError) => {
        const error = runtimeError(this.iface, nativeError);
        if (error.code === 'no-such-interface') this.close();
        if (this.#errorListeners.length === 0) throw error;
        for (const listener of this.#errorListeners) listener(error);
      },
    );
  }
}

function linkTypeOf(iface: string, hardwareType: number): CaptureLinkType {
  const linkType = LINK_TYPE_OF_HARDWARE.get(hardwareType);
  if (linkType === undefined) {
    throw new UsageError(
      `cannot capture on ${iface}: unsupported link type (ARPHRD ${hardwareType}); Ethernet, loopback and raw-IP interfaces are supported`,
    );
  }
  return linkType;
}
