/**
 * What the daemon's e2e tests read off a lab node to see what it programmed: the ports the
 * OVS group of a multicast group outputs to (read with ovs-ofctl, an independent reader),
 * a wait until OVS forwards a group to exactly some pods, numbered datagrams delivered to
 * receivers, and the daemon's metrics fetched from inside the node.
 */
import { sleep, waitUntil } from './lab.js';
import type { OvsNode, OvsPod, Receiver } from './ovs.js';

/**
 * The output ports of the OVS group that the (*,G) flow for `group` (nw_dst=group, any source) points to; undefined
 * when no such flow exists.
 */
export function ovsGroupPorts(node: OvsNode, group: string): Promise<number[] | undefined> {
  return portsOfFlow(
    node,
    (line) => !line.includes('nw_src=') && (line.includes(`nw_dst=${group} `) || line.includes(`nw_dst=${group},`)),
  );
}

/**
 * The output ports of the OVS group that the (S,G) flow of `source` and `group` points to; undefined when no such flow
 * exists.
 */
export function ovsSourcePorts(node: OvsNode, source: string, group: string): Promise<number[] | undefined> {
  const match = `nw_src=${source},nw_dst=${group}`;
  return portsOfFlow(node, (line) => line.includes(`${match} `) || line.includes(`${match},`));
}

/** The output ports of the OVS group that the first flow `picks` points to. */
export async function portsOfFlow(node: OvsNode, picks: (line: string) => boolean): Promise<number[] | undefined> {
  const flows = await node.ofctl('dump-flows', node.bridge);
  const id = flows
    .split('\n')
    .find(picks)
    ?.match(/actions=group:(\d+)/)?.[1];
  if (id === undefined) return undefined;
  const groups = await node.ofctl('dump-groups', node.bridge);
  const line = groups.split('\n').find((entry) => entry.includes(`group_id=${id},`));
  if (line === undefined) return [];
  return [...line.matchAll(/bucket=actions=output:(\d+)/g)].map((match) => Number(match[1]));
}

/**
 * Waits until OVS forwards `source`'s traffic to `group` to exactly `pods` among `candidates` (its (S,G) entry); its
 * ports.
 */
export function waitForOvsSourceMembers(
  node: OvsNode,
  options: { source: string; group: string; pods: readonly OvsPod[]; not?: readonly OvsPod[] },
): Promise<number[]> {
  const { source, group, pods, not = [] } = options;
  return waitUntil(
    `OVS to forward ${source} → ${group} on ${node.name} to ${pods.map((pod) => pod.name).join(',')}`,
    async () => {
      const ports = (await ovsSourcePorts(node, source, group)) ?? [];
      return pods.every((pod) => ports.includes(pod.ofport)) && !not.some((pod) => ports.includes(pod.ofport))
        ? ports
        : undefined;
    },
    10_000,
  );
}

/** Waits until the OVS group of `group` forwards to every pod in `pods` (and to none of `not`); its ports. */
export function waitForOvsMembers(
  node: OvsNode,
  group: string,
  pods: readonly OvsPod[],
  not: readonly OvsPod[] = [],
  timeoutMs = 10_000,
): Promise<number[]> {
  return waitUntil(
    `OVS group of ${group} on ${node.name} to forward to ${pods.map((pod) => pod.name).join(',')}`,
    async () => {
      const ports = (await ovsGroupPorts(node, group)) ?? [];
      return pods.every((pod) => ports.includes(pod.ofport)) && !not.some((pod) => ports.includes(pod.ofport))
        ? ports
        : undefined;
    },
    timeoutMs,
  );
}

/** `sender` sends 20 numbered datagrams to group:port; resolves with how many of them each receiver got. */
export async function deliverNumbered(
  sender: OvsPod,
  receivers: readonly Receiver[],
  group: string,
  port: number,
  tag: string,
): Promise<number[]> {
  await sleep(200);
  await sender.send(group, port, 20, { intervalMs: 5, tag });
  await sleep(300);
  return receivers.map(
    (receiver) => receiver.received.filter((datagram) => datagram.payload.startsWith(`${tag} `)).length,
  );
}

/** The metrics endpoint's text, fetched from inside the node (it listens on the node's 127.0.0.1). */
export async function scrapeMetrics(node: OvsNode, url: string): Promise<string> {
  return (await node.exec(['curl', '-sf', '--max-time', '5', url])).stdout;
}
