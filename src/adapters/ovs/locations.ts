/**
 * Where OVS is, found the way OVS's own tools find it: OVS_RUNDIR (default
 * /var/run/openvswitch) holds db.sock, <bridge>.mgmt and the daemons' pidfiles; flags
 * override each.
 */
import { join } from 'node:path';
import { quoteInput, UsageError } from '../../errors.js';
import { FileRefusedError, readRegularFile } from '../../runtime/regular-file.js';
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

/** An OVS daemon's pidfile in `rundir`, as OVS names it: `ovs-vswitchd.pid`, `ovsdb-server.pid`. */
export function ovsPidfilePath(rundir: string, daemon: 'ovs-vswitchd' | 'ovsdb-server'): string {
  return join(rundir, `${daemon}.pid`);
}

/** A pid and its line break, with room to spare. */
const PIDFILE_MAX_BYTES = 64;

/** The largest pid Linux hands out (pid_max at most 2^22); anything over it was not written by a daemon. */
const MAX_PID = 4_194_304;

const PIDFILE_HINT =
  'OVS writes only its pid there: is this the right --ovs-rundir (or OVS_RUNDIR), and is OVS running?';

/**
 * The pid an OVS daemon wrote to its pidfile at `path`; undefined when there is no such file
 * (a daemon started without --pidfile). Anything else there is refused with a
 * FileRefusedError naming the path, at once: the rundir is whatever directory a flag or
 * OVS_RUNDIR names, and a FIFO in the pidfile's place would hang the read, /dev/zero would
 * feed it without end.
 * What the file holds is never quoted: a pidfile is digits, and anything else is no pidfile.
 */
export async function readOvsPidfile(path: string): Promise<number | undefined> {
  const what = 'pidfile';
  let text: string;
  try {
    text = await readRegularFile(path, { what, maxBytes: PIDFILE_MAX_BYTES });
  } catch (error) {
    if (!(error instanceof FileRefusedError)) throw error;
    if (error.reason === 'not-found') return undefined;
    throw new FileRefusedError(error.reason, error.path, error.message, PIDFILE_HINT);
  }
  const digits = text.trim();
  const pid = /^[1-9]\d{0,6}$/.test(digits) ? Number(digits) : undefined;
  if (pid === undefined || pid > MAX_PID) {
    throw new FileRefusedError(
      'bad-content',
      path,
      `cannot read ${what} ${path}: it does not hold a process id (decimal digits and a line break)`,
      PIDFILE_HINT,
    );
  }
  return pid;
}
