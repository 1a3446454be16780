/**
 * Raw IP sockets (SOCK_RAW of AF_INET or AF_INET6) on the project's native addon
 * (native/raw_socket.c): what the kernel's multicast routing is spoken over, the raw
 * IPPROTO_IGMP and ICMPv6 sockets of router-socket.ts.
 *
 * Kernel failures leave as Node-shaped system errors (`code` the errno name, `errno`,
 * `syscall`): the callers turn them into the project's typed errors, which know what the
 * option meant (protocol/mroute/mroute-error.ts).
 */
import { nativePart } from '../runtime/native-addon.js';

/** One open raw socket. */
export interface RawSocket {
  /** setsockopt(fd, level, option, ...): an int, or the bytes of a struct the caller encoded. */
  setOption(level: number, option: number, value: number | Uint8Array): void;
  /**
   * Starts receiving: `onMessage` gets each datagram (an IPv4 socket's with the IP header
   * first, an IPv6 one's without it). After a receive error the socket is closed, then
   * `onError` hears why, once. From here on the socket keeps the event loop alive until
   * it is closed, like a listening server. Call it once.
   */
  listen(onMessage: (data: Buffer) => void, onError: (error: Error) => void): void;
  /** Closes the socket. Idempotent. */
  close(): void;
}

export interface RawSocketOptions {
  family: 4 | 6;
  /** IPPROTO_*: 2 (IGMP), 58 (ICMPv6). */
  protocol: number;
  /** SO_RCVBUF(FORCE) in bytes, for bursts of upcalls. Default: the kernel's. */
  receiveBufferBytes?: number;
}

/** The addon's surface: see the comment at the top of native/raw_socket.c. */
interface NativeRawSocket {
  setOption(level: number, option: number, value: number | Uint8Array): void;
  start(onMessage: (data: Buffer) => void, onError: (error: Error) => void): void;
  close(): void;
}
interface NativeRawSocketPart {
  open(family: 4 | 6, protocol: number, options: { receiveBufferBytes?: number }): NativeRawSocket;
}

/** Opens a raw socket. Throws the kernel's refusal as a system error (EPERM without CAP_NET_RAW). */
export function openRawSocket(options: RawSocketOptions): RawSocket {
  const part = nativePart<NativeRawSocketPart>('rawSocket');
  const native = part.open(
    options.family,
    options.protocol,
    options.receiveBufferBytes === undefined ? {} : { receiveBufferBytes: options.receiveBufferBytes },
  );
  return {
    setOption: (level, option, value) => native.setOption(level, option, value),
    listen: (onMessage, onError) => native.start(onMessage, onError),
    close: () => native.close(),
  };
}
