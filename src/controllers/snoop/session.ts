/**
 * A snoop session: frames in (from a file or a live capture), frame events out, and the
 * membership summary kept up to date. No I/O here; the `snoop` command feeds it.
 */
import { decodeFrame, ipLocator, type FrameEvent } from '../../packet/frame-decoder.js';
import { MembershipSummary } from '../../domain/membership-summary.js';

export interface SnoopSessionOptions {
  linkType: number;
  /** Keep the membership summary (off when nobody will print it: --json, --no-summary). */
  summarize: boolean;
}

export class SnoopSession {
  readonly summary = new MembershipSummary();
  private readonly locate: ReturnType<typeof ipLocator>;
  private readonly summarize: boolean;

  /** Throws DecodeError('unsupported-link-type') for a link type it cannot decode. */
  constructor(options: SnoopSessionOptions) {
    this.locate = ipLocator(options.linkType);
    this.summarize = options.summarize;
  }

  /** Decodes one frame; returns its event (already in the summary, when kept) or undefined. */
  frame(data: Uint8Array, frame: number, ts: number): FrameEvent | undefined {
    const event = decodeFrame(this.locate, data, { frame, ts });
    if (event !== undefined && this.summarize) this.summary.observe(event);
    return event;
  }
}
