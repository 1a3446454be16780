/**
 * The declared multicast state of a node: the file `install -f` applies and `reconcile`
 * makes true. YAML (or JSON, which YAML reads too):
 *
 *   groups:
 *     - group: 239.1.2.3
 *       ports: [pod-a, pod-b, 7]        # interface names or OpenFlow port numbers
 *
 * Every problem is a UsageError naming the file and line, found before anything is
 * changed.
 *
 * Two parsers, for speed: js-yaml reads the file (10,000 groups in about 0.1 s), and
 * only when something is wrong does the `yaml` package read it again, for the positions
 * of its nodes, so that the message can name the line. (`yaml` alone takes about 1 s for
 * 10,000 groups.)
 */
import jsYaml from 'js-yaml';
import { LineCounter, parseDocument, type Node } from 'yaml';
import { UsageError } from '../errors.js';
import { checkGroupAddress, parsePortRef, type PortRef } from './group-address.js';

export interface DeclaredGroup {
  group: string;
  ports: PortRef[];
  /** Where it is declared (`file:line`), for messages; computed only when asked. */
  where: () => string;
}

export interface DeclaredState {
  groups: DeclaredGroup[];
}

/** A path into the document: keys and list indexes. */
type DocumentPath = readonly (string | number)[];

/** A problem found in the document's content, before its position is known. */
class StateProblem extends Error {
  constructor(
    readonly path: DocumentPath,
    message: string,
    /** A second place the message names ("first at line N"). */
    readonly related?: DocumentPath,
  ) {
    super(message);
  }
}

const TOP_LEVEL_KEYS = ['groups', 'routes'] as const;
const GROUP_KEYS = ['group', 'ports'] as const;

export function parseDeclaredState(text: string, fileName: string): DeclaredState {
  let document: unknown;
  try {
    document = jsYaml.load(text, { filename: fileName });
  } catch (error) {
    if (error instanceof jsYaml.YAMLException) {
      // Some errors (e.g. several documents in one file) carry no position.
      const at = error.mark === undefined ? fileName : `${fileName}:${error.mark.line + 1}`;
      throw new UsageError(`${at}: not valid YAML or JSON: ${error.reason}`, { code: 'bad-file' });
    }
    throw error;
  }
  const locator = new LineLocator(text);
  try {
    return validate(document, (path) => () => `${fileName}:${locator.line(path)}`);
  } catch (error) {
    if (!(error instanceof StateProblem)) throw error;
    const message = error.related === undefined ? error.message : `${error.message} (first at line ${locator.line(error.related)})`;
    throw new UsageError(`${fileName}:${locator.line(error.path)}: ${message}`, { code: 'bad-file' });
  }
}

function validate(document: unknown, whereOf: (path: DocumentPath) => () => string): DeclaredState {
  if (document === undefined || document === null) return { groups: [] };
  if (!isRecord(document)) throw new StateProblem([], 'the file must be a mapping with a "groups" list');
  for (const key of Object.keys(document)) {
    if (!(TOP_LEVEL_KEYS as readonly string[]).includes(key)) throw new StateProblem([key], `unknown key ${JSON.stringify(key)} (known: ${TOP_LEVEL_KEYS.join(', ')})`);
  }
  if ('routes' in document) throw new StateProblem(['routes'], 'routes (kernel multicast routes) are not supported by this version of mcastctl yet');
  const list = document.groups;
  if (list === undefined || list === null) return { groups: [] };
  if (!Array.isArray(list)) throw new StateProblem(['groups'], '"groups" must be a list');
  const firstIndex = new Map<string, number>();
  const groups = list.map((item: unknown, index): DeclaredGroup => {
    const path = ['groups', index];
    const entry = parseGroupEntry(item, path);
    const first = firstIndex.get(entry.group);
    if (first !== undefined) throw new StateProblem(path, `group ${entry.group} is declared twice`, ['groups', first]);
    firstIndex.set(entry.group, index);
    return { ...entry, where: whereOf(path) };
  });
  return { groups };
}

function parseGroupEntry(item: unknown, path: DocumentPath): Omit<DeclaredGroup, 'where'> {
  if (!isRecord(item)) throw new StateProblem(path, 'each group must be a mapping like {group: 239.1.2.3, ports: [p1, p2]}');
  for (const key of Object.keys(item)) {
    if (!(GROUP_KEYS as readonly string[]).includes(key)) throw new StateProblem([...path, key], `unknown key ${JSON.stringify(key)} in a group (known: ${GROUP_KEYS.join(', ')})`);
  }
  if (!('group' in item)) throw new StateProblem(path, 'a group entry needs "group"');
  if (typeof item.group !== 'string') throw new StateProblem([...path, 'group'], '"group" must be an address such as 239.1.2.3');
  const group = withProblemPath([...path, 'group'], () => checkGroupAddress(item.group as string, 'group'));
  if (!('ports' in item)) throw new StateProblem(path, `group ${group} needs "ports"`);
  const ports = item.ports;
  if (!Array.isArray(ports) || ports.length === 0) throw new StateProblem([...path, 'ports'], '"ports" must be a non-empty list of port names or numbers');
  return {
    group,
    ports: ports.map((port: unknown, index) => {
      const portPath = [...path, 'ports', index];
      if (typeof port !== 'string' && typeof port !== 'number') throw new StateProblem(portPath, 'a port is a name or an OpenFlow port number');
      return withProblemPath(portPath, () => parsePortRef(String(port), 'port'));
    }),
  };
}

/** Runs a check that throws UsageError("what: why") and re-throws it as a StateProblem at `path`. */
function withProblemPath<T>(path: DocumentPath, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof UsageError) throw new StateProblem(path, error.message.replace(/^(group|port): /, ''));
    throw error;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Lines of document paths, from a second, position-keeping parse made on first use. */
class LineLocator {
  private document: ReturnType<typeof parseDocument> | undefined;
  private readonly lineCounter = new LineCounter();

  constructor(private readonly text: string) {}

  /** 1-based line of the node at `path` (of its nearest existing ancestor). */
  line(path: DocumentPath): number {
    this.document ??= parseDocument(this.text, { lineCounter: this.lineCounter });
    for (let length = path.length; length >= 0; length--) {
      const node = this.document.getIn(path.slice(0, length), true) as Node | undefined;
      if (node?.range) return this.lineCounter.linePos(node.range[0]).line;
    }
    return 1;
  }
}
