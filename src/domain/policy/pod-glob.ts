/**
 * Globs over pods, NAMESPACE/NAME: `*` matches any run of characters other than "/", `?`
 * one character other than "/", and every other character itself (so "." and "+" in a
 * name are literal). A pod is known to the daemon as "namespace/name", or as "name" alone
 * when the CNI gave no namespace: its namespace is then empty, and only a glob whose
 * namespace part can match nothing (`*`) covers it.
 *
 * Matched without regular expressions: a glob of many stars against a long name cannot
 * backtrack, each side costs at most (glob length × name length) steps.
 */

/** A glob of one "/", split at it. */
export interface PodGlob {
  readonly text: string;
  readonly namespace: string;
  readonly name: string;
}

/** A namespace (63) and a name (253) with room for wildcards. */
const MAX_GLOB_CHARACTERS = 512;

/** Every pod: what a rule without "pods" covers. */
export const EVERY_POD: PodGlob = { text: '*/*', namespace: '*', name: '*' };

export type PodGlobParse = { ok: true; glob: PodGlob } | { ok: false; reason: string };

export function parsePodGlob(text: string): PodGlobParse {
  if (text.length > MAX_GLOB_CHARACTERS)
    return { ok: false, reason: `a pod glob is at most ${MAX_GLOB_CHARACTERS} characters` };
  const parts = text.split('/');
  if (parts.length !== 2) {
    return {
      ok: false,
      reason: 'a pod glob is NAMESPACE/NAME with exactly one "/", such as tenant-b/* (*/NAME for any namespace)',
    };
  }
  const [namespace, name] = parts as [string, string];
  if (namespace === '' || name === '') return { ok: false, reason: 'both sides of the "/" must be given (* for any)' };
  return { ok: true, glob: { text, namespace, name } };
}

/** Whether the pod, as the daemon names it ("namespace/name" or "name"), matches. */
export function podMatches(glob: PodGlob, pod: string): boolean {
  const slash = pod.indexOf('/');
  const namespace = slash < 0 ? '' : pod.slice(0, slash);
  const name = slash < 0 ? pod : pod.slice(slash + 1);
  return segmentMatches(glob.namespace, namespace) && segmentMatches(glob.name, name);
}

/**
 * One side of a glob against one side of a pod's name. The usual two-cursor match: on a
 * mismatch, go back to just after the last `*` and let it take one more character.
 */
function segmentMatches(pattern: string, text: string): boolean {
  let p = 0;
  let t = 0;
  let starAt = -1;
  let starText = 0;
  while (t < text.length) {
    const c = pattern.charCodeAt(p);
    if (p < pattern.length && c !== 0x2a && (c === 0x3f || c === text.charCodeAt(t)) && text.charCodeAt(t) !== 0x2f) {
      p += 1;
      t += 1;
    } else if (p < pattern.length && c === 0x2a) {
      starAt = p;
      starText = t;
      p += 1;
    } else if (starAt >= 0 && text.charCodeAt(starText) !== 0x2f) {
      p = starAt + 1;
      starText += 1;
      t = starText;
    } else return false;
  }
  while (p < pattern.length && pattern.charCodeAt(p) === 0x2a) p += 1;
  return p === pattern.length;
}
