/**
 * The rules between settings: each value was read alone already (settings.ts); these say
 * which combinations the daemon refuses. A clash is blamed on the first of its keys the
 * user set, and names the other with its value.
 */
import { UsageError } from '../../../errors.js';
import { showMs } from '../../../runtime/values.js';
import { MIN_RESP_MS, V2_MAX_RESP_MS, V3_MAX_RESP_MS } from './setting-values.js';
import type { DaemonConfigKey, SettingValue } from './settings.js';

/** The longest Maximum Response Delay an MLDv1 query carries: 65535 ms. */
const MLDV1_MAX_RESP_MS = 0xffff;

/** What a check is given: every setting's value, and how to report a clash. */
export interface CheckContext {
  value<K extends DaemonConfigKey>(key: K): SettingValue<K>;
  /** Of keys that clash, the one to blame: the first the user set. */
  blame(...keys: DaemonConfigKey[]): DaemonConfigKey;
  /**
   * How a clashing value is named in a message: `queryInterval (125s)`, `--query-interval (60s)`, with `, the default`
   * when it is one.
   */
  named(key: DaemonConfigKey, shown: string): string;
  fail(key: DaemonConfigKey, reason: string, item?: number): never;
  /** Where a key's value came from, as messages name it: its flag, or `key` for the file and the default. */
  source(key: DaemonConfigKey): string;
  /** Whether the file or a flag gives the key a value other than its default (an empty one is none). */
  setByUser(key: DaemonConfigKey): boolean;
}

/** The tunnel settings that mean nothing without a tunnel port. */
const TUNNEL_ONLY_KEYS = [
  'peers',
  'peersFile',
  'peerKeyFile',
  'nodeAddress',
  'clusterCidrs',
  'peerRefreshInterval',
  'peerTimeout',
  'maxGroupsPerPeer',
] as const;

interface ConfigCheck {
  name: string;
  keys: readonly DaemonConfigKey[];
  check(context: CheckContext): void;
}

/** The checks, in the order they run. */
export const CONFIG_CHECKS: readonly ConfigCheck[] = [
  {
    name: 'gateway-is-not-an-uplink',
    keys: ['gateway', 'multicastInterfaces'],
    check({ value, blame, fail }) {
      const gateway = value('gateway');
      const index = gateway === undefined ? -1 : value('multicastInterfaces').indexOf(gateway);
      if (index < 0) return;
      const key = blame('multicastInterfaces', 'gateway');
      fail(
        key,
        `${gateway} is both the gateway and a multicast interface: an interface is one or the other`,
        key === 'multicastInterfaces' ? index : undefined,
      );
    },
  },
  {
    name: 'multicast-interfaces-need-a-gateway',
    keys: ['multicastInterfaces', 'gateway'],
    check({ value }) {
      if (value('multicastInterfaces').length === 0 || value('gateway') !== undefined) return;
      // Thrown as it is, not through fail(): the clash is of two keys, neither with a value at
      // fault, so the message names both rather than blaming one (and is the one operators know).
      throw new UsageError(
        'multicastInterfaces (--multicast-interfaces) need a gateway (--gateway): traffic crosses between the uplinks and the pods through it',
      );
    },
  },
  {
    name: 'query-response-interval-below-query-interval',
    keys: ['queryInterval', 'queryResponseInterval'],
    check({ value, blame, named, fail }) {
      const queryIntervalMs = value('queryInterval');
      const queryResponseIntervalMs = value('queryResponseInterval');
      if (queryResponseIntervalMs < queryIntervalMs) return;
      const key = blame('queryResponseInterval', 'queryInterval');
      fail(
        key,
        key === 'queryInterval'
          ? `${showMs(queryIntervalMs)} must be longer than ${named('queryResponseInterval', showMs(queryResponseIntervalMs))}`
          : `${showMs(queryResponseIntervalMs)} must be shorter than ${named('queryInterval', showMs(queryIntervalMs))}`,
      );
    },
  },
  {
    name: 'query-response-interval-at-least-a-tenth',
    keys: ['queryResponseInterval', 'queryVersions'],
    check({ value, fail }) {
      const queryResponseIntervalMs = value('queryResponseInterval');
      if (value('queryVersions').some((version) => version !== 1) && queryResponseIntervalMs < MIN_RESP_MS) {
        fail(
          'queryResponseInterval',
          `${showMs(queryResponseIntervalMs)} is below 100ms, the least an IGMPv2 or v3 query can carry (0 would make it an IGMPv1 query)`,
        );
      }
    },
  },
  {
    name: 'query-response-interval-fits-the-versions',
    keys: ['queryResponseInterval', 'queryVersions'],
    check({ value, blame, named, fail }) {
      const queryResponseIntervalMs = value('queryResponseInterval');
      const versions = value('queryVersions');
      const tightest = versions.includes(2)
        ? { version: 2, max: V2_MAX_RESP_MS }
        : versions.includes(3)
          ? { version: 3, max: V3_MAX_RESP_MS }
          : undefined;
      if (tightest === undefined || queryResponseIntervalMs <= tightest.max) return;
      const key = blame('queryResponseInterval', 'queryVersions');
      const shown = showMs(queryResponseIntervalMs);
      fail(
        key,
        key === 'queryResponseInterval'
          ? `${shown} does not fit an IGMPv${tightest.version} query (at most ${showMs(tightest.max)})`
          : `an IGMPv${tightest.version} query cannot carry ${named('queryResponseInterval', shown)}: at most ${showMs(tightest.max)}`,
      );
    },
  },
  {
    // MLDv1 carries the Maximum Response Delay in 16 bits of milliseconds (RFC 2710 §3.4);
    // MLDv2's code reaches past any query interval the daemon takes.
    name: 'query-response-interval-fits-mldv1',
    keys: ['queryResponseInterval', 'mldQueryVersions'],
    check({ value, blame, named, fail }) {
      const queryResponseIntervalMs = value('queryResponseInterval');
      if (value('mldQueryVersions')?.includes(1) !== true || queryResponseIntervalMs <= MLDV1_MAX_RESP_MS) return;
      const key = blame('queryResponseInterval', 'mldQueryVersions');
      const shown = showMs(queryResponseIntervalMs);
      fail(
        key,
        key === 'queryResponseInterval'
          ? `${shown} does not fit an MLDv1 query (at most ${showMs(MLDV1_MAX_RESP_MS)})`
          : `an MLDv1 query cannot carry ${named('queryResponseInterval', shown)}: at most ${showMs(MLDV1_MAX_RESP_MS)}`,
      );
    },
  },
  {
    name: 'sync-backoff-max-not-below-min',
    keys: ['syncBackoffMin', 'syncBackoffMax'],
    check({ value, blame, named, fail }) {
      const minMs = value('syncBackoffMin');
      const maxMs = value('syncBackoffMax');
      if (maxMs >= minMs) return;
      const key = blame('syncBackoffMax', 'syncBackoffMin');
      fail(
        key,
        key === 'syncBackoffMax'
          ? `${showMs(maxMs)} is shorter than ${named('syncBackoffMin', showMs(minMs))}`
          : `${showMs(minMs)} is longer than ${named('syncBackoffMax', showMs(maxMs))}`,
      );
    },
  },
  {
    name: 'tunnel-settings-need-a-tunnel-port',
    keys: ['tunnelPort', ...TUNNEL_ONLY_KEYS],
    check({ value, setByUser, source }) {
      if (value('tunnelPort') !== undefined) return;
      const key = TUNNEL_ONLY_KEYS.find(setByUser);
      if (key === undefined) return;
      throw new UsageError(
        `${source(key)} is a tunnel mode setting: it needs --tunnel-port (the flow-based tunnel port on the bridge)`,
        {
          hint: 'give --tunnel-port NAME (tunnelPort in the file), or leave the tunnel settings out; see mcastctl-daemon(1), TUNNEL MODE',
        },
      );
    },
  },
  {
    name: 'tunnel-port-needs-peers',
    keys: ['tunnelPort', 'peers', 'peersFile'],
    check({ value, source }) {
      if (value('tunnelPort') === undefined || value('peers') !== undefined || value('peersFile') !== undefined) return;
      throw new UsageError(`${source('tunnelPort')} needs the peers: --peers ADDR,ADDR,... or --peers-file FILE`, {
        hint: 'a node alone in tunnel mode takes --peers "" and --node-address ADDR',
      });
    },
  },
  {
    // Both ways between nodes at once: a pod's datagram would reach another node through the
    // tunnel and again through the underlay, into that node's kernel and out of its gateway.
    name: 'tunnel-and-routing-need-cluster-cidrs',
    keys: ['tunnelPort', 'multicastInterfaces', 'clusterCidrs'],
    check({ value, source }) {
      if (
        value('tunnelPort') === undefined ||
        value('multicastInterfaces').length === 0 ||
        value('clusterCidrs').length > 0
      )
        return;
      throw new UsageError(
        `${source('tunnelPort')} with ${source('multicastInterfaces')} needs --cluster-cidrs: the pods' multicast from other nodes comes through the tunnel, and without the cluster's pod ranges the kernel would route a second copy in from the uplinks`,
        {
          hint: "give --cluster-cidrs CIDR,CIDR,... (clusterCidrs in the file): every node's pod address range, or one block that holds them all",
        },
      );
    },
  },
  {
    name: 'peers-or-peers-file',
    keys: ['peers', 'peersFile'],
    check({ value, blame, named, fail }) {
      if (value('peersFile') === undefined || (value('peers') ?? []).length === 0) return;
      const key = blame('peers', 'peersFile');
      const other =
        key === 'peers'
          ? named('peersFile', value('peersFile') ?? '')
          : named('peers', (value('peers') ?? []).join(','));
      fail(key, `the peers come from one place: this and ${other} contradict each other`);
    },
  },
  {
    name: 'peer-timeout-above-refresh-interval',
    keys: ['peerTimeout', 'peerRefreshInterval'],
    check({ value, blame, named, fail }) {
      const timeoutMs = value('peerTimeout');
      const refreshMs = value('peerRefreshInterval');
      if (timeoutMs === undefined || timeoutMs > refreshMs) return;
      const key = blame('peerTimeout', 'peerRefreshInterval');
      fail(
        key,
        key === 'peerTimeout'
          ? `${showMs(timeoutMs)} must be longer than ${named('peerRefreshInterval', showMs(refreshMs))}, or every peer would expire between refreshes`
          : `${showMs(refreshMs)} must be shorter than ${named('peerTimeout', showMs(timeoutMs))}, or every peer would expire between refreshes`,
      );
    },
  },
];
