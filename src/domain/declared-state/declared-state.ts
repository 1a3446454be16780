/**
 * The declared multicast state of a node: the file `install -f` applies and `reconcile`
 * makes true. YAML (or JSON, which YAML reads too):
 *
 *   groups:
 *     - group: 239.1.2.3
 *       ports: [pod-a, pod-b, 7]        # interface names or OpenFlow port numbers
 *     - {group: 232.1.1.1, source: 10.0.0.5, ports: [pod-a]}   # an OVS (S,G) entry
 *     - {group: ff3e::8000:1, ports: [pod-a]}                  # IPv6 too (canonical text out)
 *     - {group: ff3e::8000:1, source: 2001:db8::5, ports: [7]}
 *   routes:                             # static kernel (S,G) routes, IPv4 or IPv6
 *     - {group: 239.1.2.3, source: 10.0.0.5, iif: eth0, oifs: [gw0]}
 *
 * Every problem is a UsageError naming the file and line, found before anything is
 * changed. The file is read whole, up to a limit (DEFAULT_MAX_STATE_FILE_BYTES, or
 * --max-file-size): a regular file only, never a FIFO or a device. Anchors and aliases
 * are refused, and so is nesting deeper than MAX_YAML_DEPTH (see safe-yaml.ts).
 *
 * One parse, js-yaml's (10,000 groups in about 0.1 s), which also records where the
 * entries of the lists begin and end: a message names the line of a node deep in an
 * entry by parsing that entry's text alone, never the whole file a second time.
 */
import { quoteInput, UsageError } from '../../errors.js';
import { readRegularFile, showBytes } from '../../runtime/regular-file.js';
import { type GroupAddress, parseSourceAddress, type SourceAddress } from '../../wire/ip-address.js';
import { forwardingKey } from '../pipeline/forwarding-key.js';
import { checkGroupAddress, checkSourceGroupFamily, parsePortRef, type PortRef } from './group-address.js';
import { loadYaml, MAX_YAML_DEPTH, yamlSyntaxError, YamlShapeError, type LoadedYaml } from '../../runtime/safe-yaml.js';

export interface DeclaredGroup {
  group: GroupAddress;
  /** Present: the (S,G) entry of `group` for this source, beside (or without) the group's own (*,G) entry. */
  source?: SourceAddress;
  ports: PortRef[];
  /** Where it is declared (`file:line`), for messages; computed only when asked. */
  where: () => string;
}

export interface DeclaredRoute {
  group: GroupAddress;
  source: SourceAddress;
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
const GROUP_KEYS = ['group', 'source', 'ports'] as const;
const ROUTE_KEYS = ['group', 'source', 'iif', 'oifs'] as const;

/** The largest declared-state file read unless --max-file-size says otherwise: room for some 600,000 groups. */
export const DEFAULT_MAX_STATE_FILE_BYTES = 32 * 1024 * 1024;
/**
 * The largest --max-file-size, 1G. (Node.js holds at most 512 MiB of text in one string: a larger file cannot be read
 * whatever the limit.)
 */
const MAX_STATE_FILE_LIMIT_BYTES = 1024 * 1024 * 1024;

/** Reads and parses a declared-state file (install -f, reconcile -f): see parseDeclaredState. */
export async function readDeclaredState(
  path: string,
  maxBytes: number = DEFAULT_MAX_STATE_FILE_BYTES,
): Promise<DeclaredState> {
  const text = await readRegularFile(path, { what: 'declared state', maxBytes, limitSetting: '--max-file-size' });
  return parseDeclaredState(text, path);
}

/** Binary units, however written: 64M, 64MB and 64MiB are all 64 × 2^20 octets. */
const SIZE_UNITS: ReadonlyMap<string, number> = new Map([
  ...['', 'b'].map((unit) => [unit, 1] as const),
  ...['k', 'kb', 'kib'].map((unit) => [unit, 1024] as const),
  ...['m', 'mb', 'mib'].map((unit) => [unit, 1024 ** 2] as const),
  ...['g', 'gb', 'gib'].map((unit) => [unit, 1024 ** 3] as const),
]);

/** A size as --max-file-size takes it: 65536, 512K, 64M, 64MiB, 1G. Octets, from 1 KiB to 1 GiB. */
export function parseFileSize(flag: string, text: string): number {
  const match = /^([0-9]{1,13})\s*([a-z]*)$/i.exec(text.trim());
  const unit = match === null ? undefined : SIZE_UNITS.get(match[2]!.toLowerCase());
  if (match === null || unit === undefined)
    throw new UsageError(`${flag} takes a size such as 32M, 64MiB or 1G, not ${quoteInput(text)}`);
  const bytes = Number(match[1]) * unit;
  if (bytes < 1024 || bytes > MAX_STATE_FILE_LIMIT_BYTES) {
    throw new UsageError(`${flag} of ${quoteInput(text)} is not from 1K to 1G`, {
      hint: `the default is ${showBytes(DEFAULT_MAX_STATE_FILE_BYTES)}`,
    });
  }
  return bytes;
}

export function parseDeclaredState(text: string, fileName: string): DeclaredState {
  let loaded: LoadedYaml;
  try {
    loaded = loadYaml(text, { filename: fileName });
  } catch (error) {
    if (error instanceof YamlShapeError) {
      const hint =
        error.reason === 'too-deep'
          ? `a declared-state file is lists of flat entries (at most ${MAX_YAML_DEPTH} levels are read)`
          : 'write each entry out in full';
      throw new UsageError(`${fileName}:${error.line}: ${error.message}`, { code: 'bad-file', hint });
    }
    const syntax = yamlSyntaxError(error);
    if (syntax === undefined) throw error;
    // Some errors (e.g. several documents in one file) carry no position.
    const at = syntax.line === undefined ? fileName : `${fileName}:${syntax.line}`;
    throw new UsageError(`${at}: not valid YAML or JSON: ${syntax.reason}`, { code: 'bad-file' });
  }
  try {
    return validate(loaded.document, (path) => () => `${fileName}:${loaded.lineOf(path)}`);
  } catch (error) {
    if (!(error instanceof StateProblem)) throw error;
    const message =
      error.related === undefined ? error.message : `${error.message} (first at line ${loaded.lineOf(error.related)})`;
    throw new UsageError(`${fileName}:${loaded.lineOf(error.path)}: ${message}`, { code: 'bad-file' });
  }
}

function validate(document: unknown, whereOf: (path: DocumentPath) => () => string): DeclaredState {
  if (document === undefined || document === null) return { groups: [], routes: [] };
  if (!isRecord(document)) throw new StateProblem([], 'the file must be a mapping with a "groups" list');
  for (const key of Object.keys(document)) {
    if (!(TOP_LEVEL_KEYS as readonly string[]).includes(key))
      throw new StateProblem([key], `unknown key ${quoteInput(key)} (known: ${TOP_LEVEL_KEYS.join(', ')})`);
  }
  // By forwarding key: a group may be declared once for every source and once for each source of its own.
  const firstIndex = new Map<string, number>();
  const groups = listAt(document, 'groups').map((item: unknown, index): DeclaredGroup => {
    const path = ['groups', index];
    const entry = parseGroupEntry(item, path);
    const key = forwardingKey(entry);
    const first = firstIndex.get(key);
    if (first !== undefined) {
      const what = entry.source === undefined ? `group ${entry.group}` : `(${entry.source}, ${entry.group})`;
      throw new StateProblem(path, `${what} is declared twice`, ['groups', first]);
    }
    firstIndex.set(key, index);
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
  if (!isRecord(item))
    throw new StateProblem(
      path,
      'each route must be a mapping like {group: 239.1.2.3, source: 10.0.0.5, iif: eth0, oifs: [gw0]}',
    );
  for (const key of Object.keys(item)) {
    if (!(ROUTE_KEYS as readonly string[]).includes(key))
      throw new StateProblem(
        [...path, key],
        `unknown key ${quoteInput(key)} in a route (known: ${ROUTE_KEYS.join(', ')})`,
      );
  }
  for (const key of ROUTE_KEYS) if (!(key in item)) throw new StateProblem(path, `a route needs "${key}"`);
  if (typeof item.group !== 'string')
    throw new StateProblem([...path, 'group'], '"group" must be an address such as 239.1.2.3');
  const group = withProblemPath([...path, 'group'], () => checkGroupAddress(item.group as string, 'group'));
  const source = parseSourceAddressAt(item.source, [...path, 'source']);
  if (typeof item.iif !== 'string' || item.iif === '')
    throw new StateProblem([...path, 'iif'], '"iif" must be an interface name');
  const oifs = item.oifs;
  if (!Array.isArray(oifs) || oifs.length === 0 || !oifs.every((oif) => typeof oif === 'string' && oif !== '')) {
    throw new StateProblem([...path, 'oifs'], '"oifs" must be a non-empty list of interface names');
  }
  return { group, source, iif: item.iif, oifs: oifs as string[] };
}

function parseGroupEntry(item: unknown, path: DocumentPath): Omit<DeclaredGroup, 'where'> {
  if (!isRecord(item))
    throw new StateProblem(path, 'each group must be a mapping like {group: 239.1.2.3, ports: [p1, p2]}');
  for (const key of Object.keys(item)) {
    if (!(GROUP_KEYS as readonly string[]).includes(key))
      throw new StateProblem(
        [...path, key],
        `unknown key ${quoteInput(key)} in a group (known: ${GROUP_KEYS.join(', ')})`,
      );
  }
  if (!('group' in item)) throw new StateProblem(path, 'a group entry needs "group"');
  if (typeof item.group !== 'string')
    throw new StateProblem([...path, 'group'], '"group" must be an address such as 239.1.2.3');
  const group = withProblemPath([...path, 'group'], () => checkGroupAddress(item.group as string, 'group'));
  const source = 'source' in item ? parseSourceAddressAt(item.source, [...path, 'source']) : undefined;
  if (source !== undefined) withProblemPath([...path, 'source'], () => checkSourceGroupFamily(source, group, 'source'));
  if (!('ports' in item)) throw new StateProblem(path, `group ${group} needs "ports"`);
  const ports = item.ports;
  if (!Array.isArray(ports) || ports.length === 0)
    throw new StateProblem([...path, 'ports'], '"ports" must be a non-empty list of port names or numbers');
  return {
    group,
    ...(source === undefined ? {} : { source }),
    ports: ports.map((port: unknown, index) => {
      const portPath = [...path, 'ports', index];
      if (typeof port !== 'string' && typeof port !== 'number')
        throw new StateProblem(portPath, 'a port is a name or an OpenFlow port number');
      return withProblemPath(portPath, () => parsePortRef(String(port), 'port'));
    }),
  };
}

function parseSourceAddressAt(value: unknown, path: DocumentPath): SourceAddress {
  const source = typeof value === 'string' ? parseSourceAddress(value) : undefined;
  if (source === undefined) throw new StateProblem(path, '"source" must be a unicast host address such as 10.0.0.5');
  return source;
}

/** Runs a check that throws UsageError("what: why") and re-throws it as a StateProblem at `path`. */
function withProblemPath<T>(path: DocumentPath, check: () => T): T {
  try {
    return check();
  } catch (error) {
    if (error instanceof UsageError) throw new StateProblem(path, error.message.replace(/^(group|port|source): /, ''));
    throw error;
  }
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
