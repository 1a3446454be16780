/**
 * Typed errors with stable codes.
 *
 * Two families live here:
 * - `DecodeError`: a wire codec refused its input. It never leaves the process as an
 *   exit code; `snoop` turns it into an error line and keeps going.
 * - `McastError` and its subclasses: an operation failed. The CLI's single exit path
 *   maps each class to one exit code (see `ExitCode`) and prints its message and hint.
 *
 * Callers match on `code`, never on message text.
 */

/** Exit codes of every subcommand (documented in mcastctl(1)). Values follow sysexits.h. */
export const ExitCode = {
  Ok: 0,
  Failure: 1,
  /** `reconcile` found drift (repaired, or only reported under --dry-run). */
  Drift: 2,
  /** EX_USAGE: bad flag, address, file or config; nothing was changed. */
  Usage: 64,
  /** EX_UNAVAILABLE: a required service (OVSDB, OpenFlow, the daemon) is unreachable. */
  Unavailable: 69,
  /** EX_NOPERM: a privilege (CAP_NET_RAW, CAP_NET_ADMIN) is missing. */
  NoPermission: 77,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

/** Why a codec refused a packet or file. Kebab-case; these strings appear in `--json` output. */
export type DecodeErrorCode =
  /** The data ends before a field or a declared length does. */
  | 'truncated'
  /** The IGMP (or MLD's ICMPv6) checksum does not match the message. */
  | 'bad-checksum'
  /**
   * The IP header is unusable: IPv4 version not 4, IHL below 5, total length below IHL, bad options; IPv6 version not
   * 6, payload length past the data.
   */
  | 'bad-ip-header'
  /**
   * An IPv6 extension header is malformed: its length runs past the packet, a hop-by-hop option's length past the
   * header, a hop-by-hop header not first.
   */
  | 'bad-extension-header'
  /**
   * MLD without the hop-by-hop Router Alert option that RFC 2710 §3 and RFC 3810 §5 require: a listener or router
   * ignores it.
   */
  | 'no-router-alert'
  /** The IPv4 header checksum does not match. */
  | 'bad-ip-checksum'
  /** A fragment: IGMP is never fragmented by a conforming host, and a fragment cannot be decoded alone. */
  | 'fragmented'
  /** A group address that must be multicast (or zero, for a general query) is not. */
  | 'invalid-group'
  /** A message length no version of IGMP defines (e.g. a 10-octet query, RFC 3376 §7.1). */
  | 'bad-length'
  /** A capture file whose header is not pcap, or a record whose lengths are impossible. */
  | 'bad-pcap'
  /** A capture link type this tool cannot decode. */
  | 'unsupported-link-type';

/**
 * A codec refused its input. Generic in its codes: the IGMP/pcap codecs use
 * DecodeErrorCode, other wire protocols (OVSDB's JSON, OpenFlow) their own.
 */
export class DecodeError<Code extends string = DecodeErrorCode> extends Error {
  override readonly name: string = 'DecodeError';
  readonly code: Code;
  constructor(code: Code, message: string) {
    // A decode error describes the input, not the code path: a stack trace would only
    // cost time (most of it, on a capture full of malformed frames), so none is taken.
    const limit = Error.stackTraceLimit;
    Error.stackTraceLimit = 0;
    super(message);
    Error.stackTraceLimit = limit;
    this.code = code;
  }
}

/** Stable codes of operational failures. */
export type McastErrorCode =
  | 'usage'
  | 'bad-address'
  | 'bad-file'
  | 'no-such-interface'
  | 'no-permission'
  | 'unavailable'
  /** The kernel was built without multicast routing for a family (exit 69). */
  | 'no-multicast-routing'
  | 'io'
  /** A queue is full for now (EAGAIN, ENOBUFS): trying again shortly may work. */
  | 'busy'
  /** The switch refused some of a batch of changes (each is reported). */
  | 'refused'
  /** Another controller's flow already has the match and priority of one of ours. */
  | 'conflict'
  /** Not a failure: reconcile found drift (exit 2), already reported in its output. */
  | 'drift'
  | 'internal';

export interface McastErrorOptions {
  /** What the user can do about it: shown after the message. */
  hint?: string;
  cause?: unknown;
}

/** What an McastError is made with: its exit code (default 1) besides the hint and the cause. */
export interface McastErrorInit extends McastErrorOptions {
  exitCode?: ExitCode;
}

/** Base of every operational error. `exitCode` is what the CLI exits with. */
export class McastError extends Error {
  override readonly name: string = 'McastError';
  readonly hint: string | undefined;
  readonly exitCode: ExitCode;
  constructor(
    readonly code: McastErrorCode,
    message: string,
    options: McastErrorInit = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.hint = options.hint;
    this.exitCode = options.exitCode ?? ExitCode.Failure;
  }
}

/** Bad flags, addresses, files or config. Nothing was changed. Exit 64. */
export class UsageError extends McastError {
  override readonly name = 'UsageError';
  constructor(message: string, options: McastErrorOptions & { code?: McastErrorCode } = {}) {
    super(options.code ?? 'usage', message, { ...options, exitCode: ExitCode.Usage });
  }
}

/** A privilege is missing. Exit 77. */
export class PermissionError extends McastError {
  override readonly name = 'PermissionError';
  constructor(message: string, options: McastErrorOptions = {}) {
    super('no-permission', message, { ...options, exitCode: ExitCode.NoPermission });
  }
}

/** A required service cannot be reached. Exit 69. */
export class UnavailableError extends McastError {
  override readonly name = 'UnavailableError';
  constructor(message: string, options: McastErrorOptions & { code?: 'unavailable' | 'no-multicast-routing' } = {}) {
    super(options.code ?? 'unavailable', message, { ...options, exitCode: ExitCode.Unavailable });
  }
}

/** Node's system errors carry `code` (`ENOENT`, `EPERM`, ...) and `syscall`. */
export interface SystemError extends Error {
  code: string;
  errno?: number;
  syscall?: string;
}

export function isSystemError(error: unknown): error is SystemError {
  return error instanceof Error && typeof (error as Partial<SystemError>).code === 'string';
}

/** The longest part of a user's value that a message quotes. */
const MAX_QUOTED_CHARACTERS = 64;

/**
 * A value the user gave, quoted for a message: JSON-quoted (control characters made
 * visible), and cut to a bounded prefix, so that a 10,000-character argument does not
 * come back whole on the terminal or in the journal.
 */
export function quoteInput(value: string): string {
  if (value.length <= MAX_QUOTED_CHARACTERS) return JSON.stringify(value);
  return `${JSON.stringify(value.slice(0, MAX_QUOTED_CHARACTERS))}… (${value.length} characters)`;
}

/** The message of anything thrown. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** What a message about a failed system call says of `error`: its errno name (ENOENT, EACCES, ...), or its message. */
export function systemCodeOf(error: unknown): string {
  return isSystemError(error) ? error.code : messageOf(error);
}
