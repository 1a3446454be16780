/**
 * Reserved numbers of OpenFlow 1.3 (§7.2.1, §7.3.4.2, §7.2.5): ports, group ids, the
 * "no buffer" id and the controller max_len values, with names for display.
 */

/** Reserved port numbers (`ofp_port_no`). Real ports are 1..0xffffff00 (OFPP_MAX). */
export const OfpPort = {
  MAX: 0xffffff00,
  /** Send the packet out of the input port. */
  IN_PORT: 0xfffffff8,
  /** Submit the packet to the first flow table (packet-out only). */
  TABLE: 0xfffffff9,
  /** The switch's non-OpenFlow pipeline (OVS: the L2 learning switch). */
  NORMAL: 0xfffffffa,
  FLOOD: 0xfffffffb,
  ALL: 0xfffffffc,
  CONTROLLER: 0xfffffffd,
  LOCAL: 0xfffffffe,
  /** "Any port": the wildcard of flow-stats requests and delete commands, and "no port". */
  ANY: 0xffffffff,
} as const;

const PORT_NAMES: ReadonlyMap<number, string> = new Map(
  Object.entries(OfpPort)
    .filter(([name]) => name !== 'MAX')
    .map(([name, number]) => [number, name]),
);

/** `CONTROLLER` for 0xfffffffd, the number itself for a real port. */
export function describePort(port: number): string {
  return PORT_NAMES.get(port) ?? String(port);
}

/** Reserved group ids (`ofp_group`). Real groups are 0..0xffffff00 (OFPG_MAX). */
export const OfpGroup = {
  MAX: 0xffffff00,
  /** All groups, for group delete and group stats requests. */
  ALL: 0xfffffffc,
  /** "Any group": the wildcard of flow-stats requests and delete commands. */
  ANY: 0xffffffff,
} as const;

/** `buffer_id` meaning "the packet is not buffered; the data is in the message". */
export const OFP_NO_BUFFER = 0xffffffff;

/** `max_len` of an OUTPUT to CONTROLLER (§7.2.5, `ofp_controller_max_len`). */
export const OfpControllerMaxLen = {
  /** Largest length that may be asked to be sent (the rest is buffered). */
  MAX: 0xffe5,
  /** Send the whole packet; do not buffer it. */
  NO_BUFFER: 0xffff,
} as const;

/** The most recent table (`table_id` wildcard for flow-stats requests and deletes). */
export const OFPTT_ALL = 0xff;
