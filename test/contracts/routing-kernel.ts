/**
 * One contract for a family's kernel multicast routing (MulticastRoutingKernel), run
 * against the real kernel (test/routing/routing-kernel-contract.test.ts, in a lab
 * namespace) and against the shared fake (test/unit/routing-kernel-contract.test.ts):
 * what each call does, and what the kernel refuses, with the same typed error in both.
 * The real kernel is the reference: where the fake and it part, the fake is wrong.
 *
 * Each case runs its steps against a fresh namespace's routing (nothing added yet, no
 * router), leaves it that way (it closes and deletes what it made), and gives the outcome
 * of each step: "ok", a value it read, or the error as ErrorName/code/errno.
 */
import { McastError } from '../../src/errors.js';
import type { MulticastRoutingKernel, RouteEntry } from '../../src/transport/multicast-routing.js';
import type { AddressFamily } from '../../src/wire/ip-address.js';

/** What a case works on: the kernel of one family, in a namespace with two usable devices. */
export interface ContractWorld {
  kernel: MulticastRoutingKernel;
  /** Two devices of the namespace, up, with addresses of the family. */
  devices: readonly [{ name: string; ifindex: number }, { name: string; ifindex: number }];
  /** An ifindex no device of the namespace has. */
  missingIfindex: number;
}

/** Outcomes by step name, in the order the steps ran. */
export type Outcomes = Record<string, string>;

export interface ContractCase {
  name: string;
  run(world: ContractWorld): Promise<Outcomes>;
  /** The outcomes the real kernel gives, per family. */
  expected: Record<AddressFamily, Outcomes>;
}

/** A group and sources of each family, private (administratively scoped or documentation) addresses. */
const ADDRESSES = {
  ipv4: { group: '239.77.0.1', otherGroup: '239.77.0.2', source: '10.77.0.1', unicast: '10.77.0.9' },
  ipv6: { group: 'ff3e::77:1', otherGroup: 'ff3e::77:2', source: '2001:db8::77:1', unicast: '2001:db8::77:9' },
} as const;

/** A step's outcome: "ok", what it returned (as JSON), or the error's class, code and errno. */
async function outcomeOf(step: () => unknown): Promise<string> {
  try {
    const value = await step();
    return value === undefined ? 'ok' : JSON.stringify(value);
  } catch (error) {
    if (error instanceof McastError) {
      const errno = (error as { errno?: string }).errno;
      return `${error.name}/${error.code}/${errno ?? '-'}`;
    }
    return `thrown/${error instanceof Error ? error.message : String(error)}`;
  }
}

/** Runs named steps in order, each one's outcome kept; `cleanup` runs last whatever happened. */
async function steps(
  list: ReadonlyArray<readonly [string, () => unknown]>,
  cleanup: () => unknown = () => undefined,
): Promise<Outcomes> {
  const outcomes: Outcomes = {};
  try {
    for (const [name, step] of list) outcomes[name] = await outcomeOf(step);
  } finally {
    await cleanup();
  }
  return outcomes;
}

const indexes = async (kernel: MulticastRoutingKernel) =>
  (await kernel.readInterfaces()).map((row) => `${row.index}${row.static ? ' static' : ''}`).sort();
const routes = async (kernel: MulticastRoutingKernel) =>
  (await kernel.readRoutes()).map((row) => `${row.source}>${row.group} ${row.iif}>${row.oifs.join(',')}`).sort();

/** Interfaces 0 and 1 on the world's two devices. */
function addBoth(
  socket: { addInterface(options: { index: number; ifindex: number }): void },
  devices: ContractWorld['devices'],
): void {
  socket.addInterface({ index: 0, ifindex: devices[0].ifindex });
  socket.addInterface({ index: 1, ifindex: devices[1].ifindex });
}

const bothFamilies = (outcomes: Outcomes): Record<AddressFamily, Outcomes> => ({ ipv4: outcomes, ipv6: outcomes });

export const ROUTING_KERNEL_CONTRACT: readonly ContractCase[] = [
  {
    name: 'one router per namespace: a second is refused while the first is open, and may open once it closed',
    async run({ kernel }) {
      const first = kernel.openRouter();
      let second: ReturnType<MulticastRoutingKernel['openRouter']> | undefined;
      return steps(
        [
          ['router active', () => kernel.routerActive()],
          ['second router', () => void (second = kernel.openRouter())],
          ['first closes', () => first.close()],
          ['router active after close', () => kernel.routerActive()],
          ['another router', () => void (second = kernel.openRouter())],
        ],
        () => {
          if (!first.closed) first.close();
          second?.close();
        },
      );
    },
    expected: bothFamilies({
      'router active': 'true',
      'second router': 'UnavailableError/unavailable/-',
      'first closes': 'ok',
      'router active after close': 'false',
      'another router': 'ok',
    }),
  },
  {
    name: "a router's interfaces: a duplicate index, an index past the table and a device that does not exist are refused",
    async run({ kernel, devices, missingIfindex }) {
      const router = kernel.openRouter();
      const [a, b] = devices;
      return steps(
        [
          ['add 0', () => router.addInterface({ index: 0, ifindex: a.ifindex })],
          ['add 1', () => router.addInterface({ index: 1, ifindex: b.ifindex })],
          ['add 0 again', () => router.addInterface({ index: 0, ifindex: b.ifindex })],
          ['add past the table', () => router.addInterface({ index: kernel.maxInterfaces, ifindex: b.ifindex })],
          ['add a missing device', () => router.addInterface({ index: 2, ifindex: missingIfindex })],
          ['add a second on one device', () => router.addInterface({ index: 3, ifindex: a.ifindex })],
          ['the table', () => indexes(kernel)],
        ],
        () => router.close(),
      );
    },
    expected: {
      ipv4: {
        'add 0': 'ok',
        'add 1': 'ok',
        'add 0 again': 'MrouteError/io/EADDRINUSE',
        'add past the table': 'UsageError/usage/-',
        'add a missing device': 'MrouteError/io/EADDRNOTAVAIL',
        'add a second on one device': 'ok',
        'the table': '["0","1","3"]',
      },
      ipv6: {
        'add 0': 'ok',
        'add 1': 'ok',
        'add 0 again': 'MrouteError/io/EADDRINUSE',
        'add past the table': 'UsageError/usage/-',
        'add a missing device': 'MrouteError/io/EADDRNOTAVAIL',
        'add a second on one device': 'ok',
        'the table': '["0","1","3"]',
      },
    },
  },
  {
    name: "a router's routes: added, replaced, deleted; an entry that is not there cannot be deleted; what the kernel takes of unknown interfaces",
    async run({ kernel, devices }) {
      const { group, otherGroup, source, unicast } = ADDRESSES[kernel.family];
      const router = kernel.openRouter();
      const route = (entry: Partial<RouteEntry>): RouteEntry => ({ source, group, iif: 0, oifs: [1], ...entry });
      return steps(
        [
          ['interfaces', () => addBoth(router, devices)],
          ['add', () => router.addRoute(route({}))],
          ['replace', () => router.addRoute(route({ oifs: [] }))],
          ['routes', () => routes(kernel)],
          ['delete', () => router.delRoute({ source, group })],
          ['delete again', () => router.delRoute({ source, group })],
          ['incoming interface never added', () => router.addRoute(route({ group: otherGroup, iif: 5, oifs: [1] }))],
          ['outgoing interface never added', () => router.addRoute(route({ group: otherGroup, iif: 0, oifs: [1, 6] }))],
          ['incoming index past the table', () => router.addRoute(route({ iif: kernel.maxInterfaces }))],
          ['a unicast group', () => router.addRoute(route({ group: unicast }))],
          ['routes at the end', () => routes(kernel)],
        ],
        () => router.close(),
      );
    },
    expected: {
      ipv4: {
        interfaces: 'ok',
        add: 'ok',
        replace: 'ok',
        routes: '["10.77.0.1>239.77.0.1 0>"]',
        delete: 'ok',
        'delete again': 'MrouteError/io/ENOENT',
        'incoming interface never added': 'ok',
        'outgoing interface never added': 'ok',
        'incoming index past the table': 'UsageError/usage/-',
        'a unicast group': 'UsageError/bad-address/-',
        'routes at the end': '["10.77.0.1>239.77.0.2 0>1"]',
      },
      ipv6: {
        interfaces: 'ok',
        add: 'ok',
        replace: 'ok',
        routes: '["2001:db8::77:1>ff3e::77:1 0>"]',
        delete: 'ok',
        'delete again': 'MrouteError/io/ENOENT',
        'incoming interface never added': 'ok',
        'outgoing interface never added': 'ok',
        'incoming index past the table': 'UsageError/usage/-',
        'a unicast group': 'UsageError/bad-address/-',
        'routes at the end': '["2001:db8::77:1>ff3e::77:2 0>1"]',
      },
    },
  },
  {
    name: 'closing the router takes away every interface and route it added',
    async run({ kernel, devices }) {
      const { group, source } = ADDRESSES[kernel.family];
      const router = kernel.openRouter();
      return steps(
        [
          ['interfaces', () => addBoth(router, devices)],
          ['add', () => router.addRoute({ source, group, iif: 0, oifs: [1] })],
          ['close', () => router.close()],
          ['closed', () => router.closed],
          ['interfaces after', () => indexes(kernel)],
          ['routes after', () => routes(kernel)],
        ],
        () => {
          if (!router.closed) router.close();
        },
      );
    },
    expected: bothFamilies({
      interfaces: 'ok',
      add: 'ok',
      close: 'ok',
      closed: 'true',
      'interfaces after': '[]',
      'routes after': '[]',
    }),
  },
  {
    name: 'static entries: marked static, kept after their socket closes and through a router, deleted one by one',
    async run({ kernel, devices }) {
      const { group, source } = ADDRESSES[kernel.family];
      const first = kernel.openStatic();
      const cleanup = kernel.openStatic();
      return steps(
        [
          ['interfaces', () => addBoth(first, devices)],
          ['add', () => first.addRoute({ source, group, iif: 0, oifs: [1] })],
          ['socket closes', () => first.close()],
          ['router active', () => kernel.routerActive()],
          ['interfaces after', () => indexes(kernel)],
          ['routes after', () => routes(kernel)],
          [
            'through a router',
            async () => {
              const router = kernel.openRouter();
              router.close();
              return [await indexes(kernel), await routes(kernel)];
            },
          ],
          ['delete the route', () => cleanup.delRoute({ source, group })],
          ['delete interface 1', () => cleanup.delInterface(1)],
          ['delete interface 1 again', () => cleanup.delInterface(1)],
          ['delete interface 0', () => cleanup.delInterface(0)],
          ['interfaces at the end', () => indexes(kernel)],
        ],
        () => cleanup.close(),
      );
    },
    expected: {
      ipv4: {
        interfaces: 'ok',
        add: 'ok',
        'socket closes': 'ok',
        'router active': 'false',
        'interfaces after': '["0 static","1 static"]',
        'routes after': '["10.77.0.1>239.77.0.1 0>1"]',
        'through a router': '[["0 static","1 static"],["10.77.0.1>239.77.0.1 0>1"]]',
        'delete the route': 'ok',
        'delete interface 1': 'ok',
        'delete interface 1 again': 'MrouteError/io/EADDRNOTAVAIL',
        'delete interface 0': 'ok',
        'interfaces at the end': '[]',
      },
      ipv6: {
        interfaces: 'ok',
        add: 'ok',
        'socket closes': 'ok',
        'router active': 'false',
        'interfaces after': '["0 static","1 static"]',
        'routes after': '["2001:db8::77:1>ff3e::77:1 0>1"]',
        'through a router': '[["0 static","1 static"],["2001:db8::77:1>ff3e::77:1 0>1"]]',
        'delete the route': 'ok',
        'delete interface 1': 'ok',
        'delete interface 1 again': 'MrouteError/io/EADDRNOTAVAIL',
        'delete interface 0': 'ok',
        'interfaces at the end': '[]',
      },
    },
  },
  {
    name: 'memberships: a join twice on one socket is refused, and so is a leave of what is not joined',
    async run({ kernel, devices }) {
      const { group } = ADDRESSES[kernel.family];
      const [a] = devices;
      const socket = kernel.openMembershipSocket();
      const held = async () =>
        (await kernel.readMemberships())
          .filter((row) => row.name === a.name && row.group === group)
          .map((row) => `device a: ${row.group}`);
      return steps(
        [
          ['join', () => socket.joinGroup({ group, ifindex: a.ifindex })],
          ['held', held],
          ['join again', () => socket.joinGroup({ group, ifindex: a.ifindex })],
          ['leave', () => socket.leaveGroup({ group, ifindex: a.ifindex })],
          ['held after', held],
          ['leave again', () => socket.leaveGroup({ group, ifindex: a.ifindex })],
        ],
        () => socket.close(),
      );
    },
    expected: {
      ipv4: {
        join: 'ok',
        held: '["device a: 239.77.0.1"]',
        'join again': 'MrouteError/io/EADDRINUSE',
        leave: 'ok',
        'held after': '[]',
        'leave again': 'MrouteError/io/EADDRNOTAVAIL',
      },
      ipv6: {
        join: 'ok',
        held: '["device a: ff3e::77:1"]',
        'join again': 'MrouteError/io/EADDRINUSE',
        leave: 'ok',
        'held after': '[]',
        'leave again': 'MrouteError/io/EADDRNOTAVAIL',
      },
    },
  },
];

/** Runs every case for `family`: their outcomes by case name. */
export async function runRoutingKernelContract(
  makeWorld: () => ContractWorld | Promise<ContractWorld>,
): Promise<Record<string, Outcomes>> {
  const results: Record<string, Outcomes> = {};
  for (const contractCase of ROUTING_KERNEL_CONTRACT)
    results[contractCase.name] = await contractCase.run(await makeWorld());
  return results;
}
