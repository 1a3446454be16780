/**
 * The daemon's group policy file, read from disk: a regular file of at most
 * MAX_POLICY_FILE_BYTES (never a FIFO or a device), parsed by policy-file.ts. Every
 * refusal is a UsageError naming the path (and the line, for what is in the file).
 */
import { FileRefusedError, readRegularFile, showBytes } from '../../../runtime/regular-file.js';
import type { GroupPolicy } from '../../../domain/policy/group-policy.js';
import { parseGroupPolicy } from '../../../domain/policy/policy-file.js';

/** The largest policy file read: 10,000 rules of a few lines each fit. */
const MAX_POLICY_FILE_BYTES = 1024 * 1024;

export async function loadGroupPolicy(path: string): Promise<GroupPolicy> {
  let text: string;
  try {
    text = await readRegularFile(path, { what: 'group policy', maxBytes: MAX_POLICY_FILE_BYTES });
  } catch (error) {
    if (!(error instanceof FileRefusedError)) throw error;
    const hint =
      error.reason === 'too-large'
        ? `a group policy file holds at most ${showBytes(MAX_POLICY_FILE_BYTES)}: is ${path} the right file? (an example: contrib/group-policy.yaml)`
        : 'give the path of a readable YAML file (an example: contrib/group-policy.yaml)';
    throw new FileRefusedError(error.reason, error.path, error.message, hint);
  }
  return parseGroupPolicy(text, path);
}
