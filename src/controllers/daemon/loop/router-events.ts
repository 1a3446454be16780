/** What the kernel router asks the loop (local members of a group) and tells it (routes, failures). */
import type { McastError } from '../../../errors.js';
import { UpstreamFilterWidened } from '../../../adapters/upstream-memberships.js';
import type { GroupAddress } from '../../../wire/ip-address.js';
import type { DaemonEvent } from '../../../transport/control/daemon-view.js';
import { routingFailure } from './failures.js';
import type { ControllerLogger, RouterEvents } from './ports.js';

export interface RouterEventsOptions {
  hasLocalMembers: (group: GroupAddress) => boolean;
  logger: ControllerLogger;
  publish: (event: DaemonEvent) => void;
  isoNow: () => string;
  fail: (kind: string, error: unknown) => void;
  /** The routing socket failed: the daemon stops. */
  onFatal: (error: McastError) => void;
}

export function routerEventsOf(options: RouterEventsOptions): RouterEvents {
  const { logger, publish, isoNow, fail } = options;
  return {
    hasLocalMembers: options.hasLocalMembers,
    onRoute: (change) => {
      logger.info(
        change.action === 'add' ? 'route added' : change.action === 'update' ? 'route updated' : 'idle route removed',
        { ...change },
      );
      publish({ type: 'route', time: isoNow(), ...change });
    },
    onError: (error) => {
      // Not a failure: the node joins more sources upstream than its members want.
      if (error instanceof UpstreamFilterWidened)
        logger.warn('upstream source filter widened', { group: error.group, error: error.message });
      else fail('mroute', error);
    },
    onFailure: (error) => {
      fail('mroute', error);
      options.onFatal(routingFailure(error));
    },
  };
}
