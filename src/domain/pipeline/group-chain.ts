/**
 * The chain of OVS groups that copies an entry's traffic to its ports: one GROUP_MOD carries
 * only so many buckets, so a longer list of ports is split over links, each link's last
 * bucket jumping to the next. The ids of the links come from the pipeline's allocation
 * (./group-ids.ts), the entry's (S,G) or (*,G) target choosing which.
 */
import type { ForwardingTarget } from './forwarding-key.js';
import type { GroupIdAllocation } from './group-ids.js';
import type { Bucket, GroupEntry } from './pipeline-entries.js';

/** What a chain is built with: where its ids come from and how many buckets one group holds. */
interface ChainSettings {
  groupIds: GroupIdAllocation;
  maxBucketsPerGroup: number;
}

/**
 * The links that output to `ports`, tail first, from link `firstLink` on: link k holds
 * up to max-1 ports and a bucket to link k+1. None for no port (from link 1 on).
 */
export function groupChain(
  settings: ChainSettings,
  target: ForwardingTarget,
  ports: readonly number[],
  firstLink: number,
): GroupEntry[] {
  if (ports.length === 0 && firstLink > 0) return [];
  const max = settings.maxBucketsPerGroup;
  const groups: GroupEntry[] = [];
  const links = ports.length <= max ? 1 : Math.ceil((ports.length - 1) / (max - 1));
  let next: number | undefined;
  for (let link = links - 1; link >= 0; link--) {
    const start = link * (max - 1);
    const slice = link === links - 1 ? ports.slice(start) : ports.slice(start, start + max - 1);
    const buckets: Bucket[] = slice.map((port) => ({ type: 'output', port }));
    if (next !== undefined) buckets.push({ type: 'group', groupId: next });
    const groupId = settings.groupIds.idOfTarget(target, firstLink + link);
    groups.push({ groupId, buckets });
    next = groupId;
  }
  return groups;
}
