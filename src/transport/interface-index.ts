/**
 * The ifindex of a network interface by its name, which the kernel's routing and membership structs take instead of the
 * name.
 */
import { readFileSync } from 'node:fs';

import { isSystemError, McastError, messageOf, quoteInput, UsageError } from '../errors.js';

/** The ifindex of interface `name` in this process's network namespace (/sys/class/net/<name>/ifindex). */
export function ifindexOf(name: string): number {
  if (name.length === 0 || Buffer.byteLength(name) > 15 || /[/\s:]/.test(name) || name === '.' || name === '..') {
    throw new UsageError(`invalid interface name ${quoteInput(name)}: 1 to 15 characters, no '/', ':' or whitespace`);
  }
  try {
    return Number(readFileSync(`/sys/class/net/${name}/ifindex`, 'utf8').trim());
  } catch (error) {
    if (isSystemError(error) && error.code === 'ENOENT') {
      throw new UsageError(`no interface ${name} in this network namespace (list them with \`ip link\`)`, {
        code: 'no-such-interface',
        cause: error,
      });
    }
    throw new McastError('io', `cannot read the ifindex of ${name}: ${messageOf(error)}`, { cause: error });
  }
}
