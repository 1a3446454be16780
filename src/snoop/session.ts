/**
 * A snoop session: frames in (from a file or a live capture), frame events out, and the
 * membership summary kept up to date. No I/O here; the `snoop` command feeds it.
 */
import { decodeFrame, ipv4Locator, type FrameEvent } from './frame-decoder.js';
import { MembershipSummary } from './membership-summary.js';

export class SnoopSession {
  readonly summary = new MembershipSummary();
  private readonly locate: ReturnType<typeof ipv4Locator>;

  /** Throws DecodeError('unsupported-link-type') for a link type it cannot decode. */
  constructor(readonly linkType: number) {
    this.locate = ipv4Locator(linkType);
  }

  /** Decodes one frame; returns its event (already counted in the summary) or undefined. */
  frame(data: Uint8Array, frame: number, ts: number): FrameEvent | undefined {
    const event = decodeFrame(this.locate, data, { frame, ts });
    if (event !== undefined) this.summary.observe(event);
    return event;
  }
}
