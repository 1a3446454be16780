/**
 * What the loop does when the pod directory says the bridge's ports changed: a pod port
 * gone leaves every group at once and is forgotten everywhere; a new one is asked at once
 * what it wants; a gateway or tunnel port that appeared, went or got another number gets
 * the base flows again and every group a sync; a resync after the directory came back is
 * counted as a replay.
 */
import type { MembershipEffect } from '../../../domain/membership/membership-table.js';
import type { DirectoryPort } from '../../../domain/pods/pod-directory.js';
import type { DaemonEvent } from '../../../transport/control/daemon-view.js';
import type { GroupAddress } from '../../../wire/ip-address.js';
import type { LoopParts } from './loop-parts.js';
import type { ControllerOptions } from './ports.js';

/** What the change needs of the loop. */
export interface PortChangeContext {
  parts: LoopParts;
  options: Pick<ControllerOptions, 'logger' | 'vswitch'>;
  apply(effects: readonly MembershipEffect[]): void;
  fail(kind: string, error: unknown): void;
  publish(event: DaemonEvent): void;
  isoNow(): string;
  /** The groups the switch must hold now. */
  groupsInUse(): Set<GroupAddress>;
}

export function takePortChanges(context: PortChangeContext, ports: readonly DirectoryPort[], resync: boolean): void {
  const { parts, options } = context;
  const { logger } = options;
  const { added, removed, gatewayChanged } = parts.pods.update(ports);
  const tunnelChanged = parts.tunnel?.updatePorts(ports) === true;
  for (const port of removed) {
    logger.info('pod port removed: it leaves every group', { port: port.name, ofport: port.ofport, pod: port.pod });
    context.apply(parts.table.removePort(port.ofport));
    parts.guard.forgetPort(port.ofport);
    parts.activity.forgetPort(port.ofport);
    parts.portEntries.forget(port.ofport);
  }
  if (removed.length > 0) parts.timers.scheduleSave();
  for (const port of added) {
    logger.info('pod port added', { port: port.name, ofport: port.ofport, pod: port.pod });
    parts.activity.portAdded(port.ofport);
    parts.portEntries.markDirty(port.ofport);
  }
  // A new pod is asked at once what it wants, instead of at the next general query.
  if (added.length > 0) void parts.querier.generalQueries(added.map((port) => port.ofport));
  if (gatewayChanged || tunnelChanged) {
    logger.warn('the gateway or tunnel port changed', {
      gateway: parts.pods.gateway?.ofport,
      tunnel: parts.tunnel?.ofport,
    });
    void installBaseFlows(parts, options.vswitch).catch((error: unknown) => context.fail('openflow', error));
    for (const group of context.groupsInUse()) parts.sync.markDirty(group);
  }
  if (resync) {
    parts.counters.replays++;
    context.publish({ type: 'replay', time: context.isoNow(), what: 'ovsdb', groups: parts.table.groupCount });
    logger.info('OVSDB reconnected; ports resynced', {
      podPorts: parts.pods.size,
      added: added.length,
      removed: removed.length,
    });
  }
}

/** The flows every group relies on, for the gateway, the tunnel port and the peers there are now. */
export function installBaseFlows(
  parts: Pick<LoopParts, 'pods' | 'tunnel'>,
  vswitch: Pick<ControllerOptions['vswitch'], 'installBase'>,
): Promise<void> {
  return vswitch.installBase(parts.pods.gateway?.ofport, parts.tunnel?.baseFlows());
}
