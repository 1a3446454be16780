/**
 * The daemon's configuration file: read, checked for shape, and parsed into each key's
 * raw value with its line; the values are checked by config.ts.
 *
 * The file is a regular file of at most MAX_CONFIG_FILE_BYTES (never a FIFO or device),
 * without anchors or aliases, nested at most MAX_YAML_DEPTH levels, of at most
 * MAX_CONFIG_NODES keys, values and list items: all checked by one js-yaml pass
 * (safe-yaml.ts) before the `yaml` package, which gives the lines, reads it.
 */
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';
import type { Node } from 'yaml';
import { quoteInput, UsageError } from '../../../errors.js';
import { FileRefusedError, readRegularFile, showBytes } from '../../../runtime/regular-file.js';
import { loadYaml, MAX_YAML_DEPTH, yamlSyntaxError, YamlShapeError } from '../../../runtime/safe-yaml.js';
import { DAEMON_CONFIG_KEYS, isDaemonConfigKey, type DaemonConfigKey } from './settings.js';

/** The largest configuration file read: contrib/daemon.yaml, every key with comments, is under 4 KiB. */
export const MAX_CONFIG_FILE_BYTES = 1024 * 1024;
/**
 * The most keys, values and list items in the file: there are about 40 keys, and the kernel has
 * 32 VIFs. (The `yaml` package takes some 4 s for 1 MiB of small nodes, and checks a
 * mapping's keys for duplicates in time quadratic in their number: minutes for 100,000.)
 */
const MAX_CONFIG_NODES = 10_000;

/** Where a value came from: its default, a line of the file, or a flag. */
type Origin = { kind: 'default' } | { kind: 'file'; file: string; line: number } | { kind: 'flag'; flag: string };

/** One key's raw value, and where it came from. */
export interface GivenValue {
  value: unknown;
  origin: Origin;
  /** Lines of a YAML list's items, for errors about one of them. */
  itemLines?: number[];
}

export interface FileSettings {
  file: string;
  values: Map<DaemonConfigKey, GivenValue>;
}

/** Reads and parses the YAML file into settings with lines; values are checked later. */
export async function readConfigFile(path: string): Promise<FileSettings> {
  let text: string;
  try {
    text = await readRegularFile(path, { what: 'config', maxBytes: MAX_CONFIG_FILE_BYTES });
  } catch (error) {
    if (!(error instanceof FileRefusedError)) throw error;
    const hint =
      error.reason === 'too-large'
        ? `a configuration file holds at most ${showBytes(MAX_CONFIG_FILE_BYTES)}: is ${path} the right file? (an example with every key: contrib/daemon.yaml)`
        : 'give --config the path of a readable YAML file (an example with every key: contrib/daemon.yaml)';
    throw new FileRefusedError(error.reason, error.path, error.message, hint);
  }
  return parseConfigText(text, path);
}

/** The settings of a configuration file's text. */
function parseConfigText(text: string, file: string): FileSettings {
  // Loaded only when a file is given: `yaml` takes about 40 ms to load, and every command loads this module (through
  // the daemon's options).
  const { isMap, isNode, isScalar, isSeq, LineCounter, parseDocument, visit } = createRequire(import.meta.url)(
    'yaml',
  ) as typeof Yaml;
  const bad = (
    line: number,
    message: string,
    hint = 'see contrib/daemon.yaml and mcastctl-daemon(1), CONFIGURATION FILE',
  ) => new UsageError(`config ${file} line ${line}: ${message}`, { code: 'bad-file', hint });
  checkConfigShape(text, bad);
  const lineCounter = new LineCounter();
  let document: Yaml.Document.Parsed;
  try {
    document = parseDocument(text, { lineCounter, uniqueKeys: true });
  } catch (error) {
    // The shape was checked by js-yaml; should `yaml` still read deeper nesting into it, its stack is not the daemon's
    // end.
    if (error instanceof RangeError) throw bad(1, `nested too deeply to be read (at most ${MAX_YAML_DEPTH} levels)`);
    throw error;
  }
  const syntax = document.errors[0];
  if (syntax !== undefined) {
    const line = syntax.linePos?.[0].line ?? lineCounter.linePos(syntax.pos[0]).line;
    const first = (syntax.message.split('\n')[0] ?? syntax.message).replace(/ at line \d+, column \d+:?$/, '');
    // Some messages quote the text at fault: cut short.
    const reason = first.length <= 160 ? first : `${first.slice(0, 160)}…`;
    throw bad(line, `not valid YAML: ${reason}`);
  }
  const lineOf = (node: unknown, fallback: number): number =>
    isNode(node) && node.range ? lineCounter.linePos(node.range[0]).line : fallback;
  // js-yaml refused anchors already; where the two parsers could disagree, no alias reaches toJS().
  const aliases: Yaml.Alias[] = [];
  visit(document, {
    Alias: (_key, node) => {
      aliases.push(node);
      return visit.BREAK;
    },
  });
  const alias = aliases[0];
  if (alias !== undefined) {
    throw bad(
      lineOf(alias, 1),
      `an alias (${quoteInput(`*${alias.source}`)}): anchors and aliases (&name, *name) are not allowed here`,
      'write each value out in full',
    );
  }
  const values = new Map<DaemonConfigKey, GivenValue>();
  const contents = document.contents;
  if (contents === null || (isScalar(contents) && contents.value === null)) return { file, values };
  if (!isMap(contents))
    throw bad(lineOf(contents, 1), 'the file must be a mapping of keys such as "queryInterval: 125s"');
  for (const pair of contents.items) {
    const keyLine = lineOf(pair.key, 1);
    const key = isScalar(pair.key) ? pair.key.value : pair.key;
    if (typeof key !== 'string' || !isDaemonConfigKey(key)) {
      const name = typeof key === 'string' ? quoteInput(key) : quoteInput(String(key));
      throw bad(keyLine, `unknown key ${name} (known: ${DAEMON_CONFIG_KEYS.join(', ')})`);
    }
    const valueNode = pair.value as Node | null;
    const value: unknown = isNode(valueNode) ? valueNode.toJS(document) : valueNode;
    // No value (`key:` or `key: null`): as if the key were not there.
    if (value === null || value === undefined) continue;
    const setting: GivenValue = { value, origin: { kind: 'file', file, line: keyLine } };
    if (isSeq(valueNode)) setting.itemLines = valueNode.items.map((item) => lineOf(item, keyLine));
    values.set(key, setting);
  }
  return { file, values };
}

/**
 * Refuses, through `bad(line, message, hint)`, a text the `yaml` package should not be
 * given (see MAX_CONFIG_NODES and safe-yaml.ts), and a syntax error js-yaml finds.
 */
function checkConfigShape(text: string, bad: (line: number, message: string, hint?: string) => UsageError): void {
  try {
    loadYaml(text, { maxNodes: MAX_CONFIG_NODES });
  } catch (error) {
    if (error instanceof YamlShapeError) {
      const shape = `at most ${MAX_YAML_DEPTH} levels, ${MAX_CONFIG_NODES} nodes`;
      const hint =
        error.reason === 'anchor'
          ? 'write each value out in full'
          : `the configuration is a mapping of keys to values and short lists (${shape}); see contrib/daemon.yaml`;
      throw bad(error.line, error.message, hint);
    }
    const syntax = yamlSyntaxError(error);
    if (syntax === undefined) throw error;
    throw bad(syntax.line ?? 1, `not valid YAML: ${syntax.reason}`);
  }
}
