/**
 * The declared multicast state of a node: the file `install -f` applies and `reconcile`
 * makes true. YAML (or JSON, which YAML reads too):
 *
 *   groups:
 *     - group: 239.1.2.3
 *       ports: [pod-a, pod-b, 7]        # interface names or OpenFlow port numbers
 *   routes:                             # static kernel (S,G) routes
 *     - {group: 239.1.2.3, source: 10.0.0.5, iif: eth0, oifs: [gw0]}
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
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import { UsageError } from '../errors.js';
import { parseIPv4 } from '../wire/ipv4-address.js';
import { checkGroupAddress, parsePortRef, type PortRef } from './group-address.js';

export interface DeclaredGroup {
  group: string;
  ports: PortRef[];
  /** Where it is declared (`file:line`), for messages; computed only when asked. */
  where: () => string;
}

export interface DeclaredRoute {
  group: string;
  source: string;
  iif: string;
  oifs: string[];
  where: () => string;
}

export interface DeclaredState {
  groups: DeclaredGroup[];
  routes: DeclaredRoute[];
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
const ROUTE_KEYS = ['group', 'source', 'iif', 'oifs'] as const;

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
  if (document === undefined || document === null) return { groups: [], routes: [] };
  if (!isRecord(document)) throw new StateProblem([], 'the file must be a mapping with a "groups" list');
  for (const key of Object.keys(document)) {
    if (!(TOP_LEVEL_KEYS as readonly string[]).includes(key)) throw new StateProblem([key], `unknown key ${JSON.stringify(key)} (known: ${TOP_LEVEL_KEYS.join(', ')})`);
  }
  const firstIndex = new Map<string, number>();
  const groups = listAt(document, 'groups').map((item: unknown, index): DeclaredGroup => {
    const path = ['groups', index];
    const entry = parseGroupEntry(item, path);
    const first = firstIndex.get(entry.group);
    if (first !== undefined) throw new StateProblem(path, `group ${entry.group} is declared twice`, ['groups', first]);
    firstIndex.set(entry.group, index);
    return { ...entry, where: whereOf(path) };
  });
  const firstRoute = new Map<string, number>();
  const routes = listAt(document, 'routes').map((item: unknown, index): DeclaredRoute => {
    const path = ['routes', index];
    const entry = parseRouteEntry(item, path);
    const key = `(${entry.source}, ${entry.group})`;
    const first = firstRoute.get(key);
    if (first !== undefined) throw new StateProblem(path, `route ${key} is declared twice`, ['routes', first]);
    firstRoute.set(key, index);
    return { ...entry, where: whereOf(path) };
  });
  return { groups, routes };
}

/** The list under `key`, or none. */
function listAt(document: Record<string, unknown>, key: string): unknown[] {
  const list = document[key];
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new StateProblem([key], `"${key}" must be a list`);
  return list;
}

function parseRouteEntry(item: unknown, path: DocumentPath): Omit<DeclaredRoute, 'where'> {
  if (!isRecord(item)) throw new StateProblem(path, 'each route must be a mapping like {group: 239.1.2.3, source: 10.0.0.5, iif: eth0, oifs: [gw0]}');
  for (const key of Object.keys(item)) {
    if (!(ROUTE_KEYS as readonly string[]).includes(key)) throw new StateProblem([...path, key], `unknown key ${JSON.stringify(key)} in a route (known: ${ROUTE_KEYS.join(', ')})`);
  }
  for (const key of ROUTE_KEYS) if (!(key in item)) throw new StateProblem(path, `a route needs "${key}"`);
  if (typeof item.group !== 'string') throw new StateProblem([...path, 'group'], '"group" must be an address such as 239.1.2.3');
  const group = withProblemPath([...path, 'group'], () => checkGroupAddress(item.group as string, 'group'));
  const source = typeof item.source === 'string' ? parseIPv4(item.source) : undefined;
  if (source === undefined || source >>> 28 >= 0xe || source === 0) throw new StateProblem([...path, 'source'], '"source" must be a unicast host address such as 10.0.0.5');
  if (typeof item.iif !== 'string' || item.iif === '') throw new StateProblem([...path, 'iif'], '"iif" must be an interface name');
  const oifs = item.oifs;
  if (!Array.isArray(oifs) || oifs.length === 0 || !oifs.every((oif) => typeof oif === 'string' && oif !== '')) {
    throw new StateProblem([...path, 'oifs'], '"oifs" must be a non-empty list of interface names');
  }
  return { group, source: item.source as string, iif: item.iif, oifs: oifs as string[] };
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
  private document: Yaml.Document.Parsed | undefined;
  private lineCounter: Yaml.LineCounter | undefined;

  constructor(private readonly text: string) {}

  /** 1-based line of the node at `path` (of its nearest existing ancestor). */
  line(path: DocumentPath): number {
    // `yaml` is loaded only now, on the error path: it takes about 40 ms to load.
    if (this.document === undefined || this.lineCounter === undefined) {
      const yaml = createRequire(import.meta.url)('yaml') as typeof Yaml;
      this.lineCounter = new yaml.LineCounter();
      this.document = yaml.parseDocument(this.text, { lineCounter: this.lineCounter });
    }
    for (let length = path.length; length >= 0; length--) {
      const node = this.document.getIn(path.slice(0, length), true) as Yaml.Node | undefined;
      if (node?.range) return this.lineCounter.linePos(node.range[0]).line;
    }
    return 1;
  }
}
