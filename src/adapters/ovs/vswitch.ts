/**
 * The rows of the Open_vSwitch database that mcastctl uses, as typed objects, and the
 * queries it needs: find a bridge, list the Interfaces on a bridge, watch them change.
 * The generic client knows nothing of this schema; everything vswitch-specific is here.
 *
 * Fields are named after their OVSDB columns (so `ovs-vsctl list Interface` and these
 * objects read alike); `uuid` is the row's `_uuid`.
 */
import { McastError } from '../../errors.js';
import type { OvsdbClient } from '../../transport/ovsdb/client.js';
import type { RequestOptions } from '../../transport/ovsdb/requests.js';
import {
  asOptionalBoolean,
  asOptionalInteger,
  asOptionalString,
  asSet,
  asStringMap,
  asUuidStrings,
  isUuid,
  type Row,
} from '../../protocol/ovsdb/datum.js';
import { TableCache, type MonitorRequests, type MonitorUpdateReason } from '../../protocol/ovsdb/monitor.js';
import type { Condition } from '../../protocol/ovsdb/operations.js';
import { VSWITCH_DB } from './ovs-constants.js';

export interface BridgeRow {
  readonly uuid: string;
  readonly name: string;
  /** `netdev` for the user-space datapath; '' means the default (`system`). */
  readonly datapath_type: string;
  readonly mcast_snooping_enable: boolean;
  readonly other_config: Readonly<Record<string, string>>;
  /** Port row UUIDs. */
  readonly ports: readonly string[];
  /** OpenFlow versions, e.g. `OpenFlow13`; empty means OVS's default set. */
  readonly protocols: readonly string[];
}

interface PortRow {
  readonly uuid: string;
  readonly name: string;
  /** Interface row UUIDs. */
  readonly interfaces: readonly string[];
}

export interface InterfaceRow {
  readonly uuid: string;
  readonly name: string;
  /** The OpenFlow port number; undefined until ovs-vswitchd assigns one, and when it failed (-1). */
  readonly ofport: number | undefined;
  /** What CNI plugins write: ip-address, attached-mac, pod-name, pod-namespace, ... */
  readonly external_ids: Readonly<Record<string, string>>;
  /** '' (a system device), `internal`, `patch`, `tap`, `dpdk`, ... */
  readonly type: string;
  /**
   * Per-type settings, e.g. a tunnel's remote_ip (`flow`: each packet's tun_dst); absent in rows not read from OVSDB,
   * meaning none.
   */
  readonly options?: Readonly<Record<string, string>>;
  readonly mac_in_use: string | undefined;
}

const BRIDGE_COLUMNS = [
  'name',
  'datapath_type',
  'mcast_snooping_enable',
  'other_config',
  'ports',
  'protocols',
] as const;
const PORT_COLUMNS = ['name', 'interfaces'] as const;
const INTERFACE_COLUMNS = ['name', 'ofport', 'external_ids', 'type', 'options', 'mac_in_use'] as const;

/** A bridge name that is not in the database. */
export class NoSuchBridgeError extends McastError {
  override readonly name = 'NoSuchBridgeError';
  constructor(
    readonly bridge: string,
    endpoint: string,
  ) {
    super('no-such-interface', `no bridge ${bridge} in OVSDB ${endpoint}`, {
      hint: '`ovs-vsctl list-br` shows the bridges',
    });
  }
}

// --- Rows -----------------------------------------------------------------------------

function bridgeFromRow(uuid: string, row: Row): BridgeRow {
  const at = (column: string) => `Bridge ${uuid} column ${column}`;
  return {
    uuid,
    name: asOptionalString(row['name'], at('name')) ?? '',
    datapath_type: asOptionalString(row['datapath_type'], at('datapath_type')) ?? '',
    mcast_snooping_enable: asOptionalBoolean(row['mcast_snooping_enable'], at('mcast_snooping_enable')) ?? false,
    other_config: asStringMap(row['other_config'], at('other_config')),
    ports: asUuidStrings(row['ports'], at('ports')),
    protocols: row['protocols'] === undefined ? [] : asSet(row['protocols'], at('protocols')).map(String),
  };
}

function portFromRow(uuid: string, row: Row): PortRow {
  return {
    uuid,
    name: asOptionalString(row['name'], `Port ${uuid} column name`) ?? '',
    interfaces: asUuidStrings(row['interfaces'], `Port ${uuid} column interfaces`),
  };
}

function interfaceFromRow(uuid: string, row: Row): InterfaceRow {
  const at = (column: string) => `Interface ${uuid} column ${column}`;
  const ofport = asOptionalInteger(row['ofport'], at('ofport'));
  return {
    uuid,
    name: asOptionalString(row['name'], at('name')) ?? '',
    ofport: ofport === undefined || ofport < 0 ? undefined : ofport,
    external_ids: asStringMap(row['external_ids'], at('external_ids')),
    type: asOptionalString(row['type'], at('type')) ?? '',
    options: asStringMap(row['options'], at('options')),
    mac_in_use: asOptionalString(row['mac_in_use'], at('mac_in_use')),
  };
}

/** The `_uuid` of a row returned by select. */
function uuidOf(row: Row, table: string): string {
  const value = row['_uuid'];
  if (!isUuid(value)) throw new TypeError(`a ${table} row without _uuid: select must ask for it`);
  return value.uuid;
}

// --- Queries --------------------------------------------------------------------------

/** The bridge named `name`, or undefined. */
export async function findBridge(
  client: OvsdbClient,
  name: string,
  options: RequestOptions = {},
): Promise<BridgeRow | undefined> {
  const [{ rows }] = await client.transact(
    VSWITCH_DB,
    [{ op: 'select', table: 'Bridge', where: [['name', '==', name]], columns: ['_uuid', ...BRIDGE_COLUMNS] }],
    options,
  );
  const row = rows[0];
  return row === undefined ? undefined : bridgeFromRow(uuidOf(row, 'Bridge'), row);
}

/**
 * The Interface rows of every port of bridge `bridgeName`, sorted by name. One
 * transaction, so the three tables are read as one consistent snapshot. Throws
 * NoSuchBridgeError when there is no such bridge.
 */
export async function bridgeInterfaces(
  client: OvsdbClient,
  bridgeName: string,
  options: RequestOptions = {},
): Promise<InterfaceRow[]> {
  const everything: Condition[] = [];
  // Select cannot join: read all ports and interfaces (a node has hundreds, not millions).
  const [bridges, ports, interfaces] = await client.transact(
    VSWITCH_DB,
    [
      { op: 'select', table: 'Bridge', where: [['name', '==', bridgeName]], columns: ['_uuid', 'ports'] },
      { op: 'select', table: 'Port', where: everything, columns: ['_uuid', ...PORT_COLUMNS] },
      { op: 'select', table: 'Interface', where: everything, columns: ['_uuid', ...INTERFACE_COLUMNS] },
    ],
    options,
  );
  const bridge = bridges.rows[0];
  if (bridge === undefined) throw new NoSuchBridgeError(bridgeName, client.endpoint.text);
  const found = interfacesOfBridge(
    uuidOf(bridge, 'Bridge'),
    bridge,
    new Map(ports.rows.map((row) => [uuidOf(row, 'Port'), row])),
    new Map(interfaces.rows.map((row) => [uuidOf(row, 'Interface'), row])),
  );
  return [...found.values()].sort((a, b) => a.name.localeCompare(b.name));
}

/** What changed on the bridge, with the complete current state. */
export interface InterfaceChanges {
  readonly reason: MonitorUpdateReason;
  /** Every Interface on the bridge now, by UUID. */
  readonly interfaces: ReadonlyMap<string, InterfaceRow>;
  readonly added: readonly InterfaceRow[];
  readonly modified: ReadonlyArray<{ readonly before: InterfaceRow; readonly after: InterfaceRow }>;
  readonly removed: readonly InterfaceRow[];
}

export interface InterfaceWatch {
  readonly monitorId: string;
  /** Every Interface on the bridge now, by UUID. */
  interfaces(): ReadonlyMap<string, InterfaceRow>;
  cancel(): Promise<void>;
}

let watchCount = 0;

/**
 * Watches the Interfaces on bridge `bridgeName` (which need not exist yet). `onChange`
 * is called with the initial state (every interface `added`), after every change that
 * touches the bridge's interfaces (a port added to or removed from the bridge, an
 * interface deleted, a watched column changed), and after a reconnection (`resync`,
 * diffed against what was known before, so interfaces that went away meanwhile arrive
 * as `removed`).
 */
export async function watchInterfaces(
  client: OvsdbClient,
  bridgeName: string,
  onChange: (changes: InterfaceChanges) => void,
  options: RequestOptions = {},
): Promise<InterfaceWatch> {
  const monitorId = `mcastctl-interfaces-${bridgeName}-${++watchCount}`;
  const requests: MonitorRequests = {
    Bridge: { columns: ['name', 'ports'] },
    Port: { columns: PORT_COLUMNS },
    Interface: { columns: INTERFACE_COLUMNS },
  };
  const cache = new TableCache();
  let current: ReadonlyMap<string, InterfaceRow> = new Map();
  await client.monitor(
    VSWITCH_DB,
    monitorId,
    requests,
    (updates, reason) => {
      if (reason === 'update') cache.apply(updates);
      else cache.reset(updates);
      const next = interfacesOnBridge(cache, bridgeName);
      const changes = diffInterfaces(current, next, reason);
      current = next;
      if (reason !== 'update' || changes.added.length + changes.modified.length + changes.removed.length > 0)
        onChange(changes);
    },
    options,
  );
  return {
    monitorId,
    interfaces: () => current,
    cancel: () => client.monitorCancel(monitorId),
  };
}

/** The Interfaces on the bridge named `bridgeName` in `cache` (none if there is no such bridge). */
function interfacesOnBridge(cache: TableCache, bridgeName: string): Map<string, InterfaceRow> {
  for (const [uuid, row] of cache.table('Bridge')) {
    if (asOptionalString(row['name']) === bridgeName)
      return interfacesOfBridge(uuid, row, cache.table('Port'), cache.table('Interface'));
  }
  return new Map();
}

/** Bridge → its ports → their interfaces, by Interface UUID. */
function interfacesOfBridge(
  bridgeUuid: string,
  bridgeRow: Row,
  portRows: ReadonlyMap<string, Row>,
  interfaceRows: ReadonlyMap<string, Row>,
): Map<string, InterfaceRow> {
  const out = new Map<string, InterfaceRow>();
  for (const portUuid of asUuidStrings(bridgeRow['ports'], `Bridge ${bridgeUuid} column ports`)) {
    const portRow = portRows.get(portUuid);
    if (portRow === undefined) continue;
    for (const interfaceUuid of portFromRow(portUuid, portRow).interfaces) {
      const interfaceRow = interfaceRows.get(interfaceUuid);
      if (interfaceRow !== undefined) out.set(interfaceUuid, interfaceFromRow(interfaceUuid, interfaceRow));
    }
  }
  return out;
}

function diffInterfaces(
  before: ReadonlyMap<string, InterfaceRow>,
  after: ReadonlyMap<string, InterfaceRow>,
  reason: MonitorUpdateReason,
): InterfaceChanges {
  const added: InterfaceRow[] = [];
  const modified: Array<{ before: InterfaceRow; after: InterfaceRow }> = [];
  const removed: InterfaceRow[] = [];
  for (const [uuid, row] of after) {
    const previous = before.get(uuid);
    if (previous === undefined) added.push(row);
    else if (!sameInterface(previous, row)) modified.push({ before: previous, after: row });
  }
  for (const [uuid, row] of before) if (!after.has(uuid)) removed.push(row);
  return { reason, interfaces: after, added, modified, removed };
}

function sameInterface(a: InterfaceRow, b: InterfaceRow): boolean {
  if (a.name !== b.name || a.ofport !== b.ofport || a.type !== b.type || a.mac_in_use !== b.mac_in_use) return false;
  return sameMap(a.external_ids, b.external_ids) && sameMap(a.options ?? {}, b.options ?? {});
}

function sameMap(a: Readonly<Record<string, string>>, b: Readonly<Record<string, string>>): boolean {
  const aKeys = Object.keys(a);
  if (aKeys.length !== Object.keys(b).length) return false;
  return aKeys.every((key) => a[key] === b[key]);
}
