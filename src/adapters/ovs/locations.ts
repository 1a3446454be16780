/**
 * Where OVS is, found the way OVS's own tools find it: OVS_RUNDIR (default
 * /var/run/openvswitch) holds db.sock and <bridge>.mgmt; flags override each.
 */
import { quoteInput, UsageError } from '../../errors.js';
import { parseEndpoint } from '../../wire/endpoint.js';

const DEFAULT_OVS_RUNDIR = '/var/run/openvswitch';
export const DEFAULT_BRIDGE = 'br-int';

export interface OvsTarget {
  bridge: string;
  /** OVSDB endpoint, `unix:PATH` or `tcp:HOST:PORT`. */
  db: string;
  /** OpenFlow endpoint of the bridge's management socket, `unix:PATH` or `tcp:HOST:PORT`. */
  openflow: string;
}

export interface OvsTargetFlags {
  bridge?: string;
  ovsRundir?: string;
  db?: string;
  openflow?: string;
}

export function resolveOvsTarget(flags: OvsTargetFlags, env: NodeJS.ProcessEnv = process.env): OvsTarget {
  const bridge = flags.bridge ?? DEFAULT_BRIDGE;
  // OVS bridge names are interface names: at most 15 octets, no '/' or whitespace.
  if (!/^[A-Za-z0-9_.:-]{1,15}$/.test(bridge)) {
    throw new UsageError(
      `--bridge ${quoteInput(bridge)} is not a bridge name (1 to 15 letters, digits, '_', '.', ':' or '-')`,
    );
  }
  const rundir = ovsRundir(flags, env);
  return {
    bridge,
    db: checkEndpoint('--db', flags.db ?? `unix:${rundir}/db.sock`),
    openflow: checkEndpoint('--openflow', flags.openflow ?? `unix:${rundir}/${bridge}.mgmt`),
  };
}

/** The directory of OVS's sockets and pidfiles: --ovs-rundir, else OVS_RUNDIR, else /var/run/openvswitch. */
export function ovsRundir(flags: Pick<OvsTargetFlags, 'ovsRundir'>, env: NodeJS.ProcessEnv = process.env): string {
  return (flags.ovsRundir ?? env.OVS_RUNDIR ?? DEFAULT_OVS_RUNDIR).replace(/\/+$/, '') || '/';
}

function checkEndpoint(flag: string, endpoint: string): string {
  return parseEndpoint(endpoint, `${flag === '--db' ? 'OVSDB' : 'OpenFlow'} (${flag})`).text;
}
