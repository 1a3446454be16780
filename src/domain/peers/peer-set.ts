/**
 * The peers of tunnel mode: the other nodes this one shares group membership with. A
 * peer is a unicast IPv4 node address; the list comes from a flag ("a,b,c") or a file
 * (one address a line with # comments, or a YAML list of strings).
 *
 * Normalised so that one peer is one tunnel bucket and nothing loops back: entries are
 * deduplicated by canonical address, this node's own addresses are dropped (a bucket to
 * ourselves would send every datagram back in), and the count is capped, since every
 * peer is a 48-octet bucket in the group's first OVS group (1,363 fit; 1,000 are allowed).
 * Every problem is a UsageError; those of a file name it and the line: `FILE:LINE: what`.
 * A file's text is quoted only where it is an address or nearly one: a path given by
 * mistake (a key, /etc/shadow) must not have its lines copied into the daemon's log.
 */
import { quoteInput, UsageError } from '../../errors.js';
import { loadYaml, type LoadedYaml, unquotedYamlError } from '../../runtime/safe-yaml.js';
import {
  addressOrderKey,
  compareOrderKeys,
  type HostAddress,
  hostAddress,
  parseSourceAddress,
} from '../../wire/ip-address.js';
import { parseIPv4 } from '../../wire/ipv4-address.js';

/** The most peers after normalisation. */
export const MAX_PEERS = 1_000;

/** A peer list after normalisation. */
export interface PeerSet {
  /** Unique, sorted by address, without this node's own addresses. */
  peers: readonly HostAddress[];
  /** Entries given more than once (each address once), for a warning. */
  duplicates: readonly HostAddress[];
  /** This node's addresses that the list held, dropped. */
  droppedSelf: readonly HostAddress[];
}

export interface PeerListOptions {
  /** This node's own addresses (its --node-address and every local IPv4 address): never peers. */
  localAddresses: ReadonlySet<string>;
}

const FILE_HINT =
  'a peers file holds one IPv4 address a line (# starts a comment), or a YAML list of strings such as [192.168.60.11, 192.168.60.12]';

/**
 * Said of a file's line that is no address, in place of the line: a path given by mistake
 * (a key, /etc/shadow) must not have its first line copied into the daemon's log.
 */
const LINE_NOT_SHOWN = 'the line is not shown, in case the file is no peers file';

/** Digits and dots, at most a dotted quad's length: an address mistyped, shown to be mended. */
const ADDRESS_LIKE = /^(?=.*\.)[0-9.]{1,15}$/;

/**
 * An entry that is no peer address, or undefined when it is one. `fromFile`: a line that
 * is not even address-like is not quoted (LINE_NOT_SHOWN); an address, or a mistyped one, is.
 */
function addressProblem(text: string, fromFile: boolean): string | undefined {
  if (text === '') return 'an empty entry';
  const value = parseIPv4(text);
  if (value === undefined)
    return fromFile && !ADDRESS_LIKE.test(text)
      ? `not an IPv4 address (a dotted quad such as 192.168.60.11); ${LINE_NOT_SHOWN}`
      : `${quoteInput(text)} is not an IPv4 address (a dotted quad such as 192.168.60.11)`;
  if (parseSourceAddress(text) === undefined)
    return `${quoteInput(text)} is not a unicast address: a peer is a node's own address`;
  if (value >>> 24 === 127) return `${quoteInput(text)} is a loopback address: a peer is another node's address`;
  return undefined;
}

/** Collects entries into a PeerSet; `refuse` makes the error of an entry (with its place). */
class PeerCollector {
  private readonly unique = new Set<HostAddress>();
  private readonly duplicates = new Set<HostAddress>();
  private readonly droppedSelf = new Set<HostAddress>();

  constructor(
    private readonly options: PeerListOptions,
    private readonly refuse: (message: string) => UsageError,
    private readonly fromFile: boolean,
  ) {}

  add(text: string): void {
    const problem = addressProblem(text, this.fromFile);
    if (problem !== undefined) throw this.refuse(problem);
    // parseIPv4 takes only the strict dotted quad, so the text is already the canonical one.
    const peer = hostAddress(text);
    if (this.options.localAddresses.has(peer)) {
      this.droppedSelf.add(peer);
      return;
    }
    if (this.unique.has(peer)) {
      this.duplicates.add(peer);
      return;
    }
    if (this.unique.size >= MAX_PEERS)
      throw this.refuse(`more than ${MAX_PEERS} peers (each is a tunnel bucket of every group)`);
    this.unique.add(peer);
  }

  result(): PeerSet {
    return { peers: sorted(this.unique), duplicates: sorted(this.duplicates), droppedSelf: sorted(this.droppedSelf) };
  }
}

function sorted(addresses: Iterable<HostAddress>): HostAddress[] {
  return [...addresses]
    .map((address) => ({ address, key: addressOrderKey(address) }))
    .sort((a, b) => compareOrderKeys(a.key, b.key))
    .map(({ address }) => address);
}

/**
 * A flag's value, "a,b,c" (blanks around entries allowed). An empty value is no peers;
 * `flag` (e.g. "--peers") begins every message.
 */
export function parsePeerList(value: string, flag: string, options: PeerListOptions): PeerSet {
  let entry = 0;
  const collector = new PeerCollector(
    options,
    (message) => new UsageError(`${flag}: entry ${entry}: ${message}`, { code: 'bad-address' }),
    false,
  );
  if (value.trim() === '') return collector.result();
  for (const text of value.split(',')) {
    entry += 1;
    collector.add(text.trim());
  }
  return collector.result();
}

/** A peers file's text, either format (module comment); `origin` (its path) begins every message. */
export function parsePeersFile(text: string, origin: string, options: PeerListOptions): PeerSet {
  return isYamlList(text) ? parseYamlList(text, origin, options) : parseLines(text, origin, options);
}

/** Whether the first line with content opens a YAML list (`- x`, `[x, y]`) or a document (`---`). */
function isYamlList(text: string): boolean {
  for (const line of text.split(/\r\n|\r|\n/)) {
    const content = withoutComment(line);
    if (content !== '') return content.startsWith('-') || content.startsWith('[');
  }
  return false;
}

function withoutComment(line: string): string {
  const hash = line.indexOf('#');
  return (hash < 0 ? line : line.slice(0, hash)).trim();
}

function parseLines(text: string, origin: string, options: PeerListOptions): PeerSet {
  let line = 0;
  const refuse = (message: string) =>
    new UsageError(`${origin}:${line}: ${message}`, { code: 'bad-file', hint: FILE_HINT });
  const collector = new PeerCollector(options, refuse, true);
  // A byte order mark is no part of the first address.
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  for (const raw of body.split(/\r\n|\r|\n/)) {
    line += 1;
    const content = withoutComment(raw);
    if (content === '') continue;
    if (/\s/.test(content)) throw refuse(`more than one word: one address a line; ${LINE_NOT_SHOWN}`);
    collector.add(content);
  }
  return collector.result();
}

function parseYamlList(text: string, origin: string, options: PeerListOptions): PeerSet {
  let loaded: LoadedYaml;
  try {
    loaded = loadYaml(text, { filename: origin });
  } catch (error) {
    // Not yet known to be a peers file: where and what, never the text (a path given by mistake).
    const unquoted = unquotedYamlError(error);
    if (unquoted === undefined) throw error;
    const at = unquoted.line === undefined ? origin : `${origin}:${unquoted.line}`;
    const column = unquoted.column === undefined ? '' : ` at column ${unquoted.column}`;
    const message = unquoted.shape === undefined ? `not valid YAML${column}: ${unquoted.reason}` : unquoted.reason;
    throw new UsageError(`${at}: ${message}`, { code: 'bad-file', hint: FILE_HINT });
  }
  const document = loaded.document;
  let index = 0;
  const collector = new PeerCollector(
    options,
    (message) =>
      new UsageError(`${origin}:${loaded.lineOf([index])}: ${message}`, { code: 'bad-file', hint: FILE_HINT }),
    true,
  );
  if (document === null || document === undefined) return collector.result();
  if (!Array.isArray(document))
    throw new UsageError(`${origin}:${loaded.lineOf([])}: the file must be a list of addresses`, {
      code: 'bad-file',
      hint: FILE_HINT,
    });
  for (; index < document.length; index++) {
    const entry: unknown = document[index];
    if (typeof entry !== 'string') {
      const what =
        entry === null
          ? 'an empty entry'
          : typeof entry === 'object'
            ? 'a list or mapping'
            : `a ${typeof entry}, not a string`;
      throw new UsageError(`${origin}:${loaded.lineOf([index])}: ${what}: each entry is an address`, {
        code: 'bad-file',
        hint: FILE_HINT,
      });
    }
    collector.add(entry.trim());
  }
  return collector.result();
}
