/**
 * The project's one native addon (binding.gyp, native/addon.c): the AF_PACKET capture
 * socket, the raw IP sockets of multicast routing and malloc_trim, in one file, found by
 * node-gyp-build in the package root: a local build (build/Release) when there is one,
 * else the prebuilt copy the package ships (prebuilds/<platform>-<arch>/). The addon is
 * N-API at a fixed version, so one prebuilt copy serves every Node release from 20 on;
 * the package's install script builds it only where none fits (another architecture or
 * libc).
 *
 * Each part's shape is declared by the module that wraps it (src/transport/packet-socket.ts,
 * src/transport/raw-socket.ts, memory-release.ts), which knows its contract; here the
 * parts are opaque.
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

import { McastError, messageOf } from '../errors.js';

export type NativePart = 'packetSocket' | 'rawSocket' | 'memoryTrim';

type NativeAddon = Record<NativePart, unknown>;

/** Two levels below the package root, as src/runtime/*.ts (tsx) and dist/runtime/*.js. */
const PACKAGE_ROOT = fileURLToPath(new URL('../../', import.meta.url));

let addon: NativeAddon | undefined;
let failure: McastError | undefined;

function load(): NativeAddon {
  if (addon !== undefined) return addon;
  if (failure !== undefined) throw failure;
  const require = createRequire(import.meta.url);
  try {
    const find = require('node-gyp-build') as (root: string) => NativeAddon;
    addon = find(PACKAGE_ROOT);
    return addon;
  } catch (error) {
    // Asked once: the answer does not change while the process runs.
    failure = new McastError(
      'internal',
      `cannot load mcastctl's native addon from ${PACKAGE_ROOT}: ${messageOf(error)}`,
      {
        hint: 'no prebuilt copy fits this machine: build it with `npm rebuild -g mcastctl` (or `npm run build:native` in a clone), which needs python3, make and a C compiler',
        cause: error,
      },
    );
    throw failure;
  }
}

/**
 * One part of the addon, loaded on first use so that importing a module that wraps it
 * costs nothing. Throws McastError 'internal' (with how to build it) when the addon is missing.
 */
export function nativePart<T>(part: NativePart): T {
  return load()[part] as T;
}
