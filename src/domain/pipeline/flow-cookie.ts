/**
 * FlowCookie: the 64-bit OpenFlow cookie of every flow the pipeline writes.
 *
 *   | prefix (16) | kind (8) | flags (8) | value (32) |
 *
 * The prefix says "ours" (reconcile and uninstall read flows back by cookie and a prefix
 * mask and delete each of ours strictly, so they never touch another controller's flows,
 * nor a kind of ours they do not know); the kind says which pipeline flow it is; the
 * value says for what (the group address, or the port). So a flow read back from the
 * switch tells by its cookie alone what it was written for.
 */
export const FlowKind = {
  /** IGMP or MLD → controller; value: the in_port it matches (the pod's metered flows), or 0 for every port. */
  MembershipToController: 1,
  /** Link scope (224.0.0.0/24, ff02::/16) → flood; value: 0. */
  LinkLocalFlood: 2,
  /** A group's traffic → its OVS group; value: the group address. */
  GroupForward: 3,
  /** Other multicast → the gateway; value: the gateway ofport, or 0: dropped (no gateway). */
  UnknownGroupToGateway: 4,
  /** IGMP from a queried port → controller while `mcastctl query` listens; value: the run's id. Expires by itself. */
  IgmpQueryProbe: 5,
  /** Multicast a pod may not send (the group policy) → dropped; value: the in_port it matches. */
  SendPolicyDrop: 6,
  /**
   * Tunnel mode: a group's traffic from the tunnel or the gateway → link 1 of its chain (its pods); value: the group
   * address.
   */
  IngressForward: 7,
  /** Tunnel mode: other multicast from the tunnel or the gateway → dropped; value: the in_port it matches. */
  IngressDrop: 8,
  /**
   * One source's traffic of a group (an (S,G) entry) → its OVS group; value: the group address (the source is in the
   * match).
   */
  SourceForward: 9,
  /**
   * Tunnel mode: one source's traffic of a group from the tunnel or the gateway → link 1 of its (S,G) chain, or
   * dropped; value: the group address.
   */
  SourceIngressForward: 10,
  /**
   * One pod port's traffic to a group's entry, forwarded as the entry's own flow does, so
   * that its counters are what that pod sent; value: the group address (the port, and for
   * an (S,G) entry the source, are in the match).
   */
  SendCounter: 11,
  /**
   * Tunnel mode: membership messages from the tunnel → the controller when their outer
   * source is a configured peer (value: the peer's IPv4 address), else dropped (value: 0).
   */
  TunnelMembership: 12,
} as const;
export type FlowKind = (typeof FlowKind)[keyof typeof FlowKind];

const KINDS: ReadonlySet<number> = new Set(Object.values(FlowKind));

/** Bits of the flags octet. */
export const FlowCookieFlag = {
  /** A group flow the daemon wrote for members it learned (not a static `install`). */
  Learned: 0x01,
} as const;

export interface FlowCookieFields {
  prefix: number;
  kind: FlowKind;
  value: number;
  /** FlowCookieFlag bits; absent or 0: none. */
  flags?: number;
}

export function encodeFlowCookie(fields: FlowCookieFields): bigint {
  return (
    (BigInt(fields.prefix) << 48n) |
    (BigInt(fields.kind) << 40n) |
    (BigInt((fields.flags ?? 0) & 0xff) << 32n) |
    BigInt(fields.value >>> 0)
  );
}

/** The fields of a cookie with our prefix, or undefined for anyone else's cookie or an unknown kind. */
export function decodeFlowCookie(cookie: bigint, prefix: number): FlowCookieFields | undefined {
  if (cookie >> 48n !== BigInt(prefix)) return undefined;
  const kind = Number((cookie >> 40n) & 0xffn);
  if (!KINDS.has(kind)) return undefined;
  const flags = Number((cookie >> 32n) & 0xffn);
  return { prefix, kind: kind as FlowKind, value: Number(cookie & 0xffffffffn), ...(flags === 0 ? {} : { flags }) };
}

/**
 * The mask of a whole cookie: a strict change of one flow, and the fast dump (OVS answers
 * a full cookie from an index of its own; any other mask walks the table's every flow).
 */
export const FLOW_COOKIE_FULL_MASK = 0xffff_ffff_ffff_ffffn;

/** The mask that matches every cookie with our prefix: dump and delete "ours" with it. */
export const FLOW_COOKIE_PREFIX_MASK = 0xffff_0000_0000_0000n;

export function prefixCookie(prefix: number): bigint {
  return BigInt(prefix) << 48n;
}
