/**
 * The OpenFlow handshake's HELLO exchange. We send HELLO with a version bitmap offering
 * 1.3 only; the switch's HELLO must offer 1.3 too (OVS sends a bare HELLO whose header
 * carries its highest version, 0x06 by default: 1.3 is then common when that is ≥ 0x04),
 * else the connection fails with an UnavailableError naming both sides' versions.
 */
import { UnavailableError } from '../../errors.js';
import { OFP_ERROR_TYPES } from '../../protocol/openflow/error-code.js';
import type { ErrorMessage } from '../../protocol/openflow/error-message.js';
import { OpenFlowError } from '../../protocol/openflow/errors.js';
import type { Hello } from '../../protocol/openflow/hello.js';
import type { OpenFlowMessage } from '../../protocol/openflow/message.js';
import { describeOfpVersion, OFP13_VERSION } from '../../protocol/openflow/message-type.js';
import { CONNECT_HINT } from './link.js';

const VERSION_HINT = 'allow OpenFlow 1.3 on the bridge, e.g. ovs-vsctl set bridge br-int protocols=OpenFlow13';

/** Our HELLO. */
export const HELLO: Hello = { type: 'HELLO', xid: 0, version: OFP13_VERSION, versions: [OFP13_VERSION] };

/** Waits for the switch's HELLO (or its refusal), for at most `timeoutMs`. */
export class HelloWaiter {
  readonly hello: Promise<Hello>;
  private settled = false;
  private resolveHello: (hello: Hello) => void = () => {};
  private rejectHello: (error: Error) => void = () => {};
  private readonly timer: NodeJS.Timeout;

  constructor(
    private readonly endpoint: string,
    timeoutMs: number,
  ) {
    this.hello = new Promise<Hello>((resolve, reject) => {
      this.resolveHello = resolve;
      this.rejectHello = reject;
    });
    this.timer = setTimeout(
      () =>
        this.fail(
          new UnavailableError(`OpenFlow switch at ${endpoint} sent no HELLO within ${timeoutMs} ms`, {
            hint: CONNECT_HINT,
          }),
        ),
      timeoutMs,
    );
  }

  /** Still waiting: messages go to onMessage(). */
  get waiting(): boolean {
    return !this.settled;
  }

  onMessage(message: OpenFlowMessage): void {
    if (message.type === 'HELLO') this.finish(() => this.resolveHello(message));
    else if (message.type === 'ERROR') this.fail(this.refusal(message));
    // Anything else before HELLO breaks §6.3.1; wait for the HELLO (or the timeout).
  }

  fail(error: Error): void {
    this.finish(() => this.rejectHello(error));
  }

  private finish(settle: () => void): void {
    if (this.settled) return;
    this.settled = true;
    clearTimeout(this.timer);
    settle();
  }

  private refusal(message: ErrorMessage): UnavailableError {
    const text = new TextDecoder().decode(message.data).trim();
    const error = new OpenFlowError(message, { type: 'HELLO', xid: message.xid }, this.endpoint);
    return new UnavailableError(
      `OpenFlow switch at ${this.endpoint} refused the handshake: ${error.errorName}${text ? ` (${text})` : ''}`,
      {
        hint: VERSION_HINT,
        cause: error,
      },
    );
  }
}

/**
 * OpenFlow 1.3.5 §6.3.1: with bitmaps on both sides, the highest common version; else the
 * lower of the two header versions. Without 1.3 in common, `sendError` gets the
 * HELLO_FAILED error for the switch and this throws.
 */
export function checkVersion(hello: Hello, endpoint: string, sendError: (error: ErrorMessage) => void): void {
  const speaks13 = hello.versions ? hello.versions.includes(OFP13_VERSION) : hello.version >= OFP13_VERSION;
  if (speaks13) return;
  const offered = hello.versions
    ? hello.versions.map(describeOfpVersion).join(', ')
    : `up to ${describeOfpVersion(hello.version)}`;
  const text = new TextEncoder().encode(`this controller speaks OpenFlow 1.3 only; you offer ${offered}`);
  sendError({ type: 'ERROR', xid: 0, errorType: OFP_ERROR_TYPES.HELLO_FAILED, code: 0, data: text });
  throw new UnavailableError(`OpenFlow switch at ${endpoint} does not speak OpenFlow 1.3 (it offers ${offered})`, {
    hint: VERSION_HINT,
  });
}
