/**
 * The group policy file, YAML (or JSON):
 *
 *   rules:                               # the first rule that matches decides; none: allowed
 *     - action: deny                     # allow | deny
 *       pods: tenant-b/*                 # NAMESPACE/NAME globs, one or a list; absent: every pod
 *       groups: [239.1.0.0/16, ff3e::/16] # CIDR blocks or addresses in 224.0.0.0/4 or ff00::/8;
 *                                        #   absent: all multicast of both families
 *       directions: [join, send]         # absent: both
 *   sourceAddresses:                     # extra IGMP or MLD sources some pods may report from
 *     - pods: kube-system/vrrp-*
 *       addresses: [10.0.0.0/24, 10.1.2.3, 2001:db8::/32]
 *
 * Every problem is a UsageError naming the file and the line of the node at fault. What the
 * file says is quoted (a bounded excerpt) only once its top level is a policy's, a mapping of
 * those two keys: until then the path may name another file by mistake (/etc/shadow), and
 * only where and what was expected are said. An empty file is the policy that allows
 * everything. Read as the declared state is (safe-yaml.ts: no anchors, bounded nesting, one parse).
 */
import { quoteInput, UsageError } from '../../errors.js';
import { loadYaml, type LoadedYaml, MAX_YAML_DEPTH, unquotedYamlError } from '../../runtime/safe-yaml.js';
import {
  GroupPolicy,
  type PolicyAction,
  type PolicyDirection,
  type PolicyRule,
  type SourceGrant,
} from './group-policy.js';
import type { AddressFamily } from '../../wire/ip-address.js';
import {
  type IpRange,
  ipPrefixRange,
  ipRangeWithin,
  MULTICAST_RANGES,
  normalizeIpRanges,
  parseIpPrefix,
  UNICAST_RANGES,
} from './ip-prefix.js';
import { EVERY_POD, type PodGlob, parsePodGlob } from './pod-glob.js';

/** The most rules, and the most sourceAddresses entries, a file may hold. */
export const MAX_POLICY_RULES = 10_000;

type DocumentPath = readonly (string | number)[];

/** A problem found in the document, before its line is known. */
class PolicyProblem extends Error {
  constructor(
    readonly path: DocumentPath,
    message: string,
  ) {
    super(message);
  }
}

const TOP_LEVEL_KEYS = ['rules', 'sourceAddresses'] as const;
const RULE_KEYS = ['action', 'pods', 'groups', 'directions'] as const;
const GRANT_KEYS = ['pods', 'addresses'] as const;
const ACTIONS: readonly PolicyAction[] = ['allow', 'deny'];
const DIRECTIONS: readonly PolicyDirection[] = ['join', 'send'];
const HINT = 'see contrib/group-policy.yaml for an example of every key';

/** Parses a policy file's text; `origin` (its path) begins every message: `origin:LINE: what is wrong`. */
export function parseGroupPolicy(text: string, origin: string): GroupPolicy {
  let loaded: LoadedYaml;
  try {
    loaded = loadYaml(text, { filename: origin });
  } catch (error) {
    // Not yet known to be a policy file: where and what, never the text (a path given by mistake).
    const unquoted = unquotedYamlError(error);
    if (unquoted === undefined) throw error;
    const at = unquoted.line === undefined ? origin : `${origin}:${unquoted.line}`;
    if (unquoted.shape !== undefined) {
      const hint =
        unquoted.shape === 'too-deep'
          ? `a policy file is lists of flat entries (at most ${MAX_YAML_DEPTH} levels are read)`
          : 'write each entry out in full';
      throw new UsageError(`${at}: ${unquoted.reason}`, { code: 'bad-file', hint });
    }
    const column = unquoted.column === undefined ? '' : ` at column ${unquoted.column}`;
    throw new UsageError(`${at}: not valid YAML or JSON${column}: ${unquoted.reason}`, { code: 'bad-file' });
  }
  try {
    return validate(loaded);
  } catch (error) {
    if (!(error instanceof PolicyProblem)) throw error;
    throw new UsageError(`${origin}:${loaded.lineOf(error.path)}: ${error.message}`, { code: 'bad-file', hint: HINT });
  }
}

function validate(loaded: LoadedYaml): GroupPolicy {
  const document = loaded.document;
  if (document === undefined || document === null) return GroupPolicy.allowAll();
  if (!isRecord(document))
    throw new PolicyProblem([], 'the file must be a mapping with "rules" and/or "sourceAddresses"');
  checkKeys(document, [], TOP_LEVEL_KEYS, 'the file');
  const rules = listAt(document, 'rules').map((item, index) =>
    parseRule(item, ['rules', index], loaded.lineOf(['rules', index])),
  );
  const grants = listAt(document, 'sourceAddresses').map((item, index) => parseGrant(item, ['sourceAddresses', index]));
  return new GroupPolicy(rules, grants);
}

/** The list under a top-level key: none when absent or empty. */
function listAt(document: Record<string, unknown>, key: string): unknown[] {
  const list = document[key];
  if (list === undefined || list === null) return [];
  if (!Array.isArray(list)) throw new PolicyProblem([key], `"${key}" must be a list`);
  if (list.length > MAX_POLICY_RULES)
    throw new PolicyProblem([key, MAX_POLICY_RULES], `"${key}" has more than ${MAX_POLICY_RULES} entries`);
  return list;
}

function parseRule(item: unknown, path: DocumentPath, line: number): PolicyRule {
  if (!isRecord(item))
    throw new PolicyProblem(
      path,
      'each rule must be a mapping like {action: deny, pods: tenant-b/*, groups: [239.1.0.0/16, ff3e::/16]}',
    );
  checkKeys(item, path, RULE_KEYS, 'a rule');
  if (!('action' in item) || item.action === null)
    throw new PolicyProblem(path, 'a rule needs "action" (allow or deny)');
  const action = item.action;
  if (typeof action !== 'string' || !(ACTIONS as readonly string[]).includes(action)) {
    throw new PolicyProblem([...path, 'action'], `"action" must be allow or deny, not ${describe(action)}`);
  }
  const pods = parsePods(item, path);
  const groupTexts = stringsAt(item, path, 'groups', 'CIDR blocks such as 239.1.0.0/16 or ff3e::/16');
  const groups =
    groupTexts === undefined
      ? [MULTICAST_RANGES.ipv4, MULTICAST_RANGES.ipv6]
      : normalizeIpRanges(groupTexts.map(({ text, at }) => rangeOf(text, at, MULTICAST_RANGES, MULTICAST_OUTSIDE)));
  const directionTexts = stringsAt(item, path, 'directions', 'join or send');
  const directions =
    directionTexts === undefined ? DIRECTIONS : [...new Set(directionTexts.map(({ text, at }) => direction(text, at)))];
  return { action: action as PolicyAction, pods, groups, directions, line };
}

function parseGrant(item: unknown, path: DocumentPath): SourceGrant {
  if (!isRecord(item))
    throw new PolicyProblem(
      path,
      'each sourceAddresses entry must be a mapping like {pods: kube-system/vrrp-*, addresses: [10.0.0.0/24]}',
    );
  checkKeys(item, path, GRANT_KEYS, 'a sourceAddresses entry');
  const pods = parsePods(item, path);
  const addressTexts = stringsAt(
    item,
    path,
    'addresses',
    'unicast addresses or CIDR blocks such as 10.0.0.0/24 or 2001:db8::/32',
  );
  if (addressTexts === undefined) throw new PolicyProblem(path, 'a sourceAddresses entry needs "addresses"');
  return {
    pods,
    addresses: normalizeIpRanges(
      addressTexts.map(({ text, at }) => rangeOf(text, at, UNICAST_RANGES, UNICAST_OUTSIDE)),
    ),
  };
}

function parsePods(item: Record<string, unknown>, path: DocumentPath): readonly PodGlob[] {
  const texts = stringsAt(item, path, 'pods', 'NAMESPACE/NAME globs such as tenant-b/*');
  if (texts === undefined) return [EVERY_POD];
  return texts.map(({ text, at }) => {
    const parsed = parsePodGlob(text);
    if (!parsed.ok) throw new PolicyProblem(at, `pod glob ${excerpt(text)}: ${parsed.reason}`);
    return parsed.glob;
  });
}

const MULTICAST_OUTSIDE: Readonly<Record<AddressFamily, string>> = {
  ipv4: 'is not inside 224.0.0.0/4, the IPv4 multicast groups',
  ipv6: 'is not inside ff00::/8, the IPv6 multicast groups',
};
const UNICAST_OUTSIDE: Readonly<Record<AddressFamily, string>> = {
  ipv4: 'is not unicast: a source is neither 0.0.0.0 nor in 224.0.0.0/3 (multicast and reserved)',
  ipv6: 'is not unicast: a source is neither :: nor in ff00::/8 (multicast)',
};

/** The addresses of a prefix of either family that must lie within the range `within` gives for its family. */
function rangeOf(
  text: string,
  at: DocumentPath,
  within: Readonly<Record<AddressFamily, IpRange>>,
  outside: Readonly<Record<AddressFamily, string>>,
): IpRange {
  const parsed = parseIpPrefix(text);
  if (!parsed.ok) throw new PolicyProblem(at, `${excerpt(text)}: ${parsed.reason}`);
  const range = ipPrefixRange(parsed.prefix);
  if (!ipRangeWithin(range, within[parsed.prefix.family]))
    throw new PolicyProblem(at, `${excerpt(text)} ${outside[parsed.prefix.family]}`);
  return range;
}

function direction(text: string, at: DocumentPath): PolicyDirection {
  if (!(DIRECTIONS as readonly string[]).includes(text))
    throw new PolicyProblem(at, `a direction is join or send, not ${excerpt(text)}`);
  return text as PolicyDirection;
}

/**
 * A key whose value is one string or a non-empty list of strings, each with its path; undefined
 * when the key is absent. A key without a value is refused: `pods:` alone could mean none or all.
 */
function stringsAt(
  item: Record<string, unknown>,
  path: DocumentPath,
  key: string,
  what: string,
): { text: string; at: DocumentPath }[] | undefined {
  if (!(key in item)) return undefined;
  const value = item[key];
  const at = [...path, key];
  if (value === null) throw new PolicyProblem(at, `"${key}" has no value: give ${what}, or leave the key out`);
  if (typeof value === 'string') return [{ text: value, at }];
  if (!Array.isArray(value))
    throw new PolicyProblem(at, `"${key}" must be ${what}, one or a list, not ${describe(value)}`);
  if (value.length === 0) throw new PolicyProblem(at, `"${key}" is an empty list: give ${what}, or leave the key out`);
  return value.map((entry: unknown, index) => {
    const entryAt = [...at, index];
    if (typeof entry !== 'string')
      throw new PolicyProblem(entryAt, `an entry of "${key}" must be a string (${what}), not ${describe(entry)}`);
    return { text: entry, at: entryAt };
  });
}

function checkKeys(item: Record<string, unknown>, path: DocumentPath, known: readonly string[], what: string): void {
  for (const key of Object.keys(item)) {
    if (known.includes(key)) continue;
    // A top-level key unknown may be the first line of a file that is no policy at all
    // (a path given by mistake): it is not copied into the daemon's log.
    const message =
      path.length === 0
        ? `an unknown key in ${what} (known: ${known.join(', ')}); it is not shown, in case the file is no group policy`
        : `unknown key ${excerpt(key)} in ${what} (known: ${known.join(', ')})`;
    throw new PolicyProblem([...path, key], message);
  }
}

/**
 * What a message quotes of a file once it is known to be a policy (its top level is): a
 * bounded prefix, JSON-quoted, with no character left that a terminal or a log viewer acts
 * on (C1 controls, bidirectional overrides, line separators) rather than shows.
 */
function excerpt(value: string): string {
  return quoteInput(value).replace(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu, (char) => {
    const code = char.codePointAt(0)!;
    return code > 0xffff ? `\\u{${code.toString(16)}}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** A value of the wrong kind, for a message. */
function describe(value: unknown): string {
  if (typeof value === 'string') return excerpt(value);
  if (Array.isArray(value)) return 'a list';
  if (isRecord(value)) return 'a mapping';
  return excerpt(String(value));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
