/**
 * What a new group policy changes in the membership: the members it denies leave at once,
 * and the ports it now lets into a group they were refused (or removed from) by the policy
 * are asked about that group at once, with a group-specific query. A pod's kernel reports a
 * group once when it joins and then only when asked: without the query, a member the last
 * policy kept out would wait for the next general query, minutes away, to be let in.
 */
import type { GroupPolicy } from '../../../domain/policy/group-policy.js';
import type { MembershipEffect } from '../../../domain/membership/membership-table.js';
import { type GroupAddress, parseGroupAddress } from '../../../wire/ip-address.js';
import type { LoopParts } from './loop-parts.js';

/**
 * How soon the asked ports must answer: with the sync after it, their members are back
 * within a second of the reload (the last member query interval, when shorter, applies).
 */
const POLICY_REASK_RESPONSE_MS = 500;

/**
 * Puts `policy` in force: the effects to apply (the denied members' leaves, then the
 * queries to the ports let back in), or undefined when it decides as the one before.
 */
export function replacePolicy(
  parts: Pick<LoopParts, 'policy' | 'table' | 'pods' | 'activity'>,
  policy: GroupPolicy,
  file: string | undefined,
): MembershipEffect[] | undefined {
  const { activity, table, pods } = parts;
  if (!parts.policy.replace(policy, file)) return undefined;
  const denies = parts.policy.deniesMember(pods);
  const deniedNow: Array<{ group: GroupAddress; port: number }> = [];
  const effects = table.removeMembers((group, port) => {
    if (!denies(group, port)) return false;
    deniedNow.push({ group, port });
    return true;
  }, 'denied');
  // Remembered as refusals by the policy, so that a later policy that allows them asks again.
  for (const { group, port } of deniedNow) activity.refused(port, group, 'policy');
  for (const refused of activity.lastRefusedFor('policy')) {
    const group = parseGroupAddress(refused.group);
    if (group === undefined || denies(group, refused.port) || table.portsOf(group).includes(refused.port)) continue;
    effects.push({ kind: 'query', group, port: refused.port, responseMs: POLICY_REASK_RESPONSE_MS });
  }
  return effects;
}
