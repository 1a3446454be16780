/**
 * Where each message from the switch goes, kept apart from the connection's lifecycle so
 * that the routing reads in one place. While a handshake waits for HELLO, everything goes
 * to its HelloWaiter. After that a message in another version than 1.3 is a protocol error,
 * the switch's ECHO_REQUESTs are answered at once, errors and replies settle the request
 * with their xid (requests.ts), and the rest becomes an event of the connection.
 */
import type { EventEmitter } from 'node:events';
import * as codec from '../../protocol/openflow/message.js';
import type { OpenFlowMessage } from '../../protocol/openflow/message.js';
import { describeOfpVersion, OFP13_VERSION } from '../../protocol/openflow/message-type.js';
import type { OpenFlowConnectionEvents } from './connection-types.js';
import type { HelloWaiter } from './handshake.js';
import type { OpenFlowLink } from './link.js';
import type { OpenFlowRequests } from './requests.js';

export interface InboundContext {
  readonly requests: OpenFlowRequests;
  /** The HELLO waiter of the handshake under way, if any. */
  readonly helloWaiter: () => HelloWaiter | undefined;
  /** The link the connection uses now: an older link's ECHO_REQUEST gets no answer. */
  readonly currentLink: () => OpenFlowLink | undefined;
  /** The connection, whose events report what no request took. */
  readonly events: Pick<EventEmitter<OpenFlowConnectionEvents>, 'emit'>;
}

export class InboundRouter {
  constructor(private readonly context: InboundContext) {}

  /** One framed message's bytes, as `link` received them. */
  receive(bytes: Uint8Array, link: OpenFlowLink): void {
    const { requests, events } = this.context;
    let message: OpenFlowMessage;
    try {
      message = codec.decode(bytes);
    } catch (error) {
      this.onUndecodable(bytes, error instanceof Error ? error : new Error(String(error)));
      return;
    }
    const helloWaiter = this.context.helloWaiter();
    if (helloWaiter?.waiting) {
      helloWaiter.onMessage(message);
      return;
    }
    if (bytes[0] !== OFP13_VERSION) {
      this.onUndecodable(
        bytes,
        new Error(`${message.type} in version ${describeOfpVersion(bytes[0]!)} on an OpenFlow 1.3 connection`),
      );
      return;
    }
    switch (message.type) {
      case 'ECHO_REQUEST':
        if (link === this.context.currentLink())
          link.write([{ type: 'ECHO_REPLY', xid: message.xid, data: message.data }], [message.xid]);
        return;
      case 'ERROR': {
        const unclaimed = requests.onError(message);
        if (unclaimed) events.emit('switch-error', unclaimed);
        return;
      }
      case 'HELLO':
        return; // a repeated HELLO carries nothing new
    }
    if (requests.onReply(message)) return;
    if (message.type === 'PACKET_IN') events.emit('packet-in', message);
    else events.emit('message', message);
  }

  private onUndecodable(bytes: Uint8Array, error: Error): void {
    if (!this.context.requests.onUndecodable(bytes, error)) this.context.events.emit('protocol-error', error);
  }
}
