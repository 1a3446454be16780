/**
 * YAML from files that a user or another process wrote: the declared state of install -f
 * and reconcile -f, the daemon's --config. Both are flat (a mapping of a few keys, lists
 * of small entries), so some of YAML is refused before anything else is looked at:
 *
 * - Nesting deeper than MAX_YAML_DEPTH levels. Both YAML parsers recurse once per level,
 *   and a 2 KB file of `[[[[...]]]]` overflows the call stack. The depth is counted while
 *   js-yaml parses, and the parse stops at the first node too deep.
 * - Anchors and aliases (`&name`, `*name`). The files have no use for them, and they open
 *   the "billion laughs": a few lines whose expansion fills memory.
 * - For the daemon's configuration (`maxNodes`), more nodes (keys, values, list items)
 *   than such a file could have: the `yaml` package, which reads it again for its lines,
 *   takes some 4 µs a byte for small nodes, and time quadratic in the number of keys of
 *   a mapping (checking them for duplicates).
 *
 * The same single js-yaml pass records where the nodes near the top begin and end, so that
 * a message can name the line of any node of the document without a second parse of the
 * whole file: a deeper node is found by parsing again only the text of its entry.
 */
import jsYaml, { type EventType, type State } from 'js-yaml';

/** The deepest nesting of collections accepted (the files need 6). */
export const MAX_YAML_DEPTH = 64;

/** Why a text was refused before its content was looked at. */
export type YamlShapeReason = 'too-deep' | 'anchor' | 'too-many-nodes';

/** A text refused for its shape; `line` is 1-based. */
export class YamlShapeError extends Error {
  override readonly name = 'YamlShapeError';
  constructor(
    readonly reason: YamlShapeReason,
    readonly line: number,
    message: string,
  ) {
    super(message);
  }
}

/** Where a node is in the text: offsets, and the line (0-based) and line start of its first offset. */
interface Span {
  start: number;
  line: number;
  lineStart: number;
  end: number;
}

/** The nodes a collection was composed of, in order: four numbers a span (start, line, lineStart, end). */
interface Children {
  spans: number[];
  results: unknown[];
}

/** A parsed text, with what is needed to find the line of any of its nodes. */
export interface LoadedYaml {
  readonly document: unknown;
  /** 1-based line of the node at `path` (keys and list indexes), or of its nearest ancestor found. */
  lineOf(path: readonly (string | number)[]): number;
}

export interface LoadYamlOptions {
  /** Named in js-yaml's messages. */
  filename?: string;
  /** Refuse a text of more nodes than this (every key, value and list item is one). */
  maxNodes?: number;
}

/** Children are kept for nodes this deep or less: the root, its values, and lists below them. */
const KEEP_CHILDREN_DEPTH = 3;

/** The parts of js-yaml's parser state a listener reads (`anchor` is not in its types). */
type ParserState = State & { anchor: string | null };

/**
 * Parses `text` with js-yaml, refusing what the module comment says. Throws YamlShapeError,
 * or js-yaml's YAMLException for a syntax error.
 */
export function loadYaml(text: string, options: LoadYamlOptions = {}): LoadedYaml {
  // js-yaml drops a byte order mark itself, and its offsets would then be one off ours.
  const source = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  return new RecordingLoad(source, options).result();
}

class RecordingLoad {
  // The open nodes, by depth (index 0 unused): where each begins.
  private readonly openStart = new Int32Array(MAX_YAML_DEPTH + 1);
  private readonly openLine = new Int32Array(MAX_YAML_DEPTH + 1);
  private readonly openLineStart = new Int32Array(MAX_YAML_DEPTH + 1);
  // The children of the open nodes down to KEEP_CHILDREN_DEPTH, filled in place (one node
  // is open at each depth), copied out when a node's are kept.
  private readonly openSpans: number[][] = [];
  private readonly openResults: unknown[][] = [];
  private readonly openCount = new Int32Array(KEEP_CHILDREN_DEPTH + 1);
  private depth = 0;
  private nodes = 0;
  private root: Span | undefined;
  private readonly childrenOf = new Map<object, Children>();
  private readonly document: unknown;

  constructor(
    private readonly text: string,
    private readonly options: LoadYamlOptions,
  ) {
    for (let depth = 0; depth <= KEEP_CHILDREN_DEPTH; depth++) {
      this.openSpans.push([]);
      this.openResults.push([]);
    }
    const listener = (event: EventType, state: State) =>
      event === 'open' ? this.open(state) : this.close(state as ParserState);
    this.document = jsYaml.load(text, {
      ...(options.filename === undefined ? {} : { filename: options.filename }),
      listener,
    });
    // What was kept is in childrenOf; the scratch lists would only hold the last entries.
    this.openSpans.length = 0;
    this.openResults.length = 0;
  }

  result(): LoadedYaml {
    return { document: this.document, lineOf: (path) => this.locate(path, 0) };
  }

  private open(state: State): void {
    const depth = ++this.depth;
    // Refused on the way down, before the parser's recursion goes deeper.
    if (depth > MAX_YAML_DEPTH)
      throw new YamlShapeError('too-deep', state.line + 1, `nested deeper than ${MAX_YAML_DEPTH} levels`);
    this.openStart[depth] = state.position;
    this.openLine[depth] = state.line;
    this.openLineStart[depth] = state.lineStart;
    if (depth <= KEEP_CHILDREN_DEPTH) this.openCount[depth] = 0;
  }

  private close(state: ParserState): void {
    const depth = this.depth;
    const start = this.openStart[depth]!;
    if (state.anchor !== null) {
      const at = this.text.indexOf(`&${state.anchor}`, start);
      const line = this.openLine[depth]! + (at < 0 ? 0 : countLineBreaks(this.text, start, at));
      throw new YamlShapeError(
        'anchor',
        line + 1,
        `an anchor (&${shortName(state.anchor)}): anchors and aliases (&name, *name) are not allowed here`,
      );
    }
    this.nodes += 1;
    const { maxNodes } = this.options;
    if (maxNodes !== undefined && this.nodes > maxNodes) {
      throw new YamlShapeError(
        'too-many-nodes',
        this.openLine[depth]! + 1,
        `more than ${maxNodes} keys, values and list items`,
      );
    }
    const result: unknown = state.result;
    if (depth <= KEEP_CHILDREN_DEPTH) {
      const count = this.openCount[depth]!;
      // A node that only wraps another (js-yaml composes some collections one level down
      // and passes them up) has the inner node's result, and the inner node's children.
      if (
        count > 0 &&
        typeof result === 'object' &&
        result !== null &&
        (depth <= 2 || Array.isArray(result)) &&
        !this.childrenOf.has(result)
      ) {
        this.childrenOf.set(result, {
          spans: this.openSpans[depth]!.slice(0, count * 4),
          results: this.openResults[depth]!.slice(0, count),
        });
      }
    }
    this.depth = depth - 1;
    if (depth === 1) {
      this.root = { start, line: this.openLine[1]!, lineStart: this.openLineStart[1]!, end: state.position };
    } else if (depth - 1 <= KEEP_CHILDREN_DEPTH) {
      const parent = depth - 1;
      const index = this.openCount[parent]!;
      const spans = this.openSpans[parent]!;
      spans[index * 4] = start;
      spans[index * 4 + 1] = this.openLine[depth]!;
      spans[index * 4 + 2] = this.openLineStart[depth]!;
      spans[index * 4 + 3] = state.position;
      this.openResults[parent]![index] = result;
      this.openCount[parent] = index + 1;
    }
  }

  /** 1-based line of `path` in this text, whose first line is line `lineOffset` + 1 of the file. */
  locate(path: readonly (string | number)[], lineOffset: number): number {
    let span = this.root;
    if (span === undefined) return lineOffset + 1;
    let node: unknown = this.document;
    let line = contentStart(this.text, span).line;
    for (let index = 0; index < path.length; index++) {
      if (typeof node !== 'object' || node === null) break;
      const children = this.childrenOf.get(node);
      if (children === undefined) {
        // Not recorded this deep: parse the text of this node alone, and go on in it.
        if (span === this.root) break;
        const inner = reparse(this.text, span, this.options);
        return inner === undefined ? lineOffset + line + 1 : inner.locate(path.slice(index), lineOffset + span.line);
      }
      const step = path[index]!;
      if (Array.isArray(node)) {
        if (
          typeof step !== 'number' ||
          children.results.length !== node.length ||
          !Object.is(children.results[step], node[step])
        )
          break;
        span = spanAt(children, step);
        line = contentStart(this.text, span).line;
        node = node[step];
      } else {
        const value = (node as Record<string, unknown>)[String(step)];
        const pair = findPair(children, String(step), value);
        if (pair === undefined) break;
        const keySpan = spanAt(children, pair);
        span = spanAt(children, pair + 1);
        const valueStart = contentStart(this.text, span);
        // An empty value (`key:`) has no line of its own: the key's.
        line =
          valueStart.offset < Math.min(span.end, this.text.length)
            ? valueStart.line
            : contentStart(this.text, keySpan).line;
        node = value;
      }
    }
    return lineOffset + line + 1;
  }
}

/** The text of one node alone, at the same columns, parsed; undefined if it does not parse alone. */
function reparse(text: string, span: Span, options: LoadYamlOptions): RecordingLoad | undefined {
  const slice = ' '.repeat(span.start - span.lineStart) + text.slice(span.start, span.end);
  try {
    return new RecordingLoad(slice, { ...options, filename: undefined });
  } catch {
    return undefined;
  }
}

function spanAt(children: Children, index: number): Span {
  const at = index * 4;
  const { spans } = children;
  return { start: spans[at]!, line: spans[at + 1]!, lineStart: spans[at + 2]!, end: spans[at + 3]! };
}

/**
 * Index of the key node of `key` among a mapping's children (key, value, key, value, ...),
 * checked against the value the document has, or undefined when they do not line up (an
 * explicit key without a value, a merge key).
 */
function findPair(children: Children, key: string, value: unknown): number | undefined {
  const { results, spans } = children;
  let length = results.length;
  // A block mapping ends where js-yaml tried for one more key and found none (before a
  // `...`, say): that try is an empty node, at the end.
  if (length % 2 !== 0 && results[length - 1] === null && spans[length * 4 - 4] === spans[length * 4 - 1]) length -= 1;
  if (length % 2 !== 0) return undefined;
  for (let index = 0; index < length; index += 2) {
    if (String(results[index]) === key && Object.is(results[index + 1], value)) return index;
  }
  return undefined;
}

/** The first offset of a node's content (past blanks, line breaks and comments), and its line (0-based). */
function contentStart(text: string, span: Span): { offset: number; line: number } {
  // js-yaml's offsets can pass the end by the line break it adds to a text without one.
  const end = Math.min(span.end, text.length);
  let offset = span.start;
  let line = span.line;
  while (offset < end) {
    const code = text.charCodeAt(offset);
    if (code === 0x20 || code === 0x09) offset += 1;
    else if (code === 0x0a) {
      offset += 1;
      line += 1;
    } else if (code === 0x0d) {
      offset += text.charCodeAt(offset + 1) === 0x0a ? 2 : 1;
      line += 1;
    } else if (code === 0x23) {
      while (offset < end && text.charCodeAt(offset) !== 0x0a && text.charCodeAt(offset) !== 0x0d) offset += 1;
    } else break;
  }
  return { offset, line };
}

/** Line breaks in text[from, to): LF, CRLF, or a lone CR, as js-yaml counts them. */
function countLineBreaks(text: string, from: number, to: number): number {
  let count = 0;
  for (let offset = from; offset < to; offset++) {
    const code = text.charCodeAt(offset);
    if (code === 0x0a || (code === 0x0d && text.charCodeAt(offset + 1) !== 0x0a)) count += 1;
  }
  return count;
}

/** An anchor's name for a message: printable, and cut short. */
function shortName(name: string): string {
  const printable = name.replace(/[\p{C}]/gu, '?');
  return printable.length <= 32 ? printable : `${printable.slice(0, 32)}…`;
}

const MAX_REASON_CHARACTERS = 160;

/** js-yaml's syntax error: the reason and the 1-based line, when it has one. */
export function yamlSyntaxError(error: unknown): { reason: string; line: number | undefined } | undefined {
  if (!(error instanceof jsYaml.YAMLException)) return undefined;
  // A reason can quote the text at fault (a tag, an alias's name): cut short.
  const quoted =
    error.reason.length <= MAX_REASON_CHARACTERS ? error.reason : `${error.reason.slice(0, MAX_REASON_CHARACTERS)}…`;
  // An alias can only name an anchor, and anchors are refused first: an alias left is one without.
  const reason = /^unidentified alias/.test(quoted)
    ? `${quoted}: anchors and aliases (&name, *name) are not allowed here`
    : quoted;
  return { reason, line: error.mark === undefined ? undefined : error.mark.line + 1 };
}

/** Where a text failed to load and why, in words that quote none of it. */
export interface UnquotedYamlError {
  /** 1-based; undefined when the parser gave no place. */
  line: number | undefined;
  column: number | undefined;
  reason: string;
  /** The shape refused, for a YamlShapeError (to choose a hint); undefined for a syntax error. */
  shape: YamlShapeReason | undefined;
}

/** js-yaml's reasons that quote nothing of the text: words, blanks and a few signs, never `"`, `:`, `!<` or `&`. */
const FIXED_REASON = /^[a-z][a-zA-Z %(),;.-]*$/;

/**
 * A YamlShapeError's or js-yaml's error without what the text says: for a file that may be
 * no YAML of the caller's at all (a path given by mistake, such as /etc/shadow), whose
 * content must not reach a terminal or a log. js-yaml's reasons that quote a tag, an alias
 * or a directive are said in general words; an anchor's name is left out. Undefined for
 * any other error.
 */
export function unquotedYamlError(error: unknown): UnquotedYamlError | undefined {
  if (error instanceof YamlShapeError) {
    const reason =
      error.reason === 'anchor' ? 'an anchor: anchors and aliases (&name, *name) are not allowed here' : error.message;
    return { line: error.line, column: undefined, reason, shape: error.reason };
  }
  if (!(error instanceof jsYaml.YAMLException)) return undefined;
  const said = error.reason;
  const reason = FIXED_REASON.test(said)
    ? said
    : /alias/.test(said)
      ? 'an alias without its anchor: anchors and aliases (&name, *name) are not allowed here'
      : /tag/.test(said)
        ? 'a tag (!name) or a %TAG directive, which is not read here'
        : 'not read as YAML';
  const mark = error.mark;
  return {
    line: mark === undefined ? undefined : mark.line + 1,
    column: mark === undefined ? undefined : mark.column + 1,
    reason,
    shape: undefined,
  };
}
