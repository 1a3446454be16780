/**
 * The real ports of the daemon's loop (see ../loop/ports.ts) besides the bridge, which is
 * the bridge client's (src/adapters/ovs/bridge-client.ts), and the pod directory, which
 * is OVSDB's (src/adapters/ovs/ovsdb-pod-directory.ts): this host's interfaces, and the
 * system clock.
 */
import { readFileSync } from 'node:fs';
import { networkInterfaces } from 'node:os';
import { systemTimers } from '../../../domain/membership/work-queue.js';
import type { DaemonClock, HostFacts } from '../loop/ports.js';

export const systemHost: HostFacts = {
  interfaceIPv4(name) {
    const entry = networkInterfaces()[name]?.find((address) => address.family === 'IPv4');
    return entry === undefined ? undefined : { address: entry.address, mac: entry.mac };
  },
  interfaceMtu(name) {
    // An interface name is no path: anything else (a slash, dots) is not looked up.
    if (!/^[\w.-]{1,15}$/.test(name) || name === '.' || name === '..') return undefined;
    try {
      const mtu = Number(readFileSync(`/sys/class/net/${name}/mtu`, 'utf8').trim());
      return Number.isInteger(mtu) && mtu > 0 ? mtu : undefined;
    } catch {
      return undefined;
    }
  },
  interfaceHolding(address) {
    return Object.entries(networkInterfaces()).find(([, entries]) =>
      entries?.some((entry) => entry.address === address),
    )?.[0];
  },
};

export const systemClock: DaemonClock = {
  monotonicMs: () => performance.now(),
  wallMs: () => Date.now(),
  after: (ms, run) => systemTimers.after(ms, run),
};
