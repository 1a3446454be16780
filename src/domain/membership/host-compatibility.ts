/**
 * Which IGMP version each port is treated as speaking for each group (RFC 3376 §7.3.2):
 * the oldest version heard from the port within the Older Host Present Interval. The
 * state is per group and port, because one old host on a port makes the whole port fall
 * back for that group only. MLD keeps the same state: an MLDv1 host is heard as an IGMPv2
 * one (RFC 3810 §8.3.2 mirrors RFC 3376 §7.3.2), and MLD has nothing like IGMPv1.
 */
import type { GroupRecord, IgmpVersion } from '../../packet/igmp/message.js';
import type { GroupAddress } from '../../wire/ip-address.js';

interface PortCompatibility {
  v1Until: number;
  v2Until: number;
}

interface CompatibilityNote {
  group: GroupAddress;
  port: number;
  version: 1 | 2;
  /** On the membership table's clock. */
  until: number;
}

export class HostCompatibility {
  /** `group|port` → until when older-version hosts count as present there. */
  private readonly byGroupPort = new Map<string, PortCompatibility>();

  /** A v1 or v2 host was heard on `port` for `group`: the port is treated as that version until `until`. */
  heard(options: CompatibilityNote): void {
    const compat = this.entryOf(options.group, options.port);
    if (options.version === 1) compat.v1Until = options.until;
    else compat.v2Until = options.until;
  }

  /**
   * A member saved with an older version came back (a restart): like heard(), but several
   * saved hosts of one port may say different things, and the latest end holds.
   */
  restored(options: CompatibilityNote): void {
    const compat = this.entryOf(options.group, options.port);
    if (options.version === 1) compat.v1Until = Math.max(compat.v1Until, options.until);
    else compat.v2Until = Math.max(compat.v2Until, options.until);
  }

  /** The version the port is treated as for the group at `now`. */
  modeOf(group: GroupAddress, port: number, now: number): IgmpVersion {
    const compat = this.byGroupPort.get(compatibilityKey(group, port));
    if (compat === undefined) return 3;
    if (compat.v1Until > now) return 1;
    return compat.v2Until > now ? 2 : 3;
  }

  /** The port left the group altogether: what was heard there no longer counts. */
  forget(group: GroupAddress, port: number): void {
    this.byGroupPort.delete(compatibilityKey(group, port));
  }

  private entryOf(group: GroupAddress, port: number): PortCompatibility {
    const key = compatibilityKey(group, port);
    let compat = this.byGroupPort.get(key);
    if (compat === undefined) {
      compat = { v1Until: 0, v2Until: 0 };
      this.byGroupPort.set(key, compat);
    }
    return compat;
  }

  /** Drops what no longer holds at `now`. */
  expire(now: number): void {
    for (const [key, compat] of this.byGroupPort)
      if (compat.v1Until <= now && compat.v2Until <= now) this.byGroupPort.delete(key);
  }
}

function compatibilityKey(group: GroupAddress, port: number): string {
  return `${group}|${port}`;
}

/**
 * What a v3 group record counts as on a port treated as `mode` (§7.3.2): BLOCK is ignored
 * and TO_EX's sources too; in v1 mode no leave counts (a v1 host, which never says it
 * leaves, may still be there). Undefined: the record changes nothing.
 */
export function recordAsCounted<S extends string>(
  mode: IgmpVersion,
  record: { type: GroupRecord['type']; sources: readonly S[] },
): { type: GroupRecord['type']; sources: readonly S[] } | undefined {
  if (mode === 3) return record;
  if (record.type === 'BLOCK_OLD_SOURCES') return undefined;
  if (record.type === 'CHANGE_TO_EXCLUDE_MODE' || record.type === 'MODE_IS_EXCLUDE')
    return { type: record.type, sources: [] };
  if (
    mode === 1 &&
    (record.type === 'CHANGE_TO_INCLUDE_MODE' || record.type === 'MODE_IS_INCLUDE') &&
    record.sources.length === 0
  )
    return undefined;
  return record;
}
