/**
 * The layers of src/, lowest first. A module may import its own layer or a lower one,
 * never a higher one, and no import cycle is allowed anywhere. `npm run lint` checks it.
 *
 *   errors.ts, version.ts   shared by every layer
 *   runtime                 clock, timers, backoff, logger, files, YAML, run lock
 *   wire                    byte kit, checksum, addresses, endpoints
 *   packet                  ethernet, ipv4, sll, pcap, igmp, frame decoding (pure)
 *   protocol                openflow messages, ovsdb notation, kernel routing structs and family kits (pure)
 *   transport               openflow connection, ovsdb client, router and packet sockets, control socket
 *   domain                  membership, pipeline, route policy, declared state, reconcile planning
 *   adapters                the ovs bridge, the kernel router, query links
 *   controllers             daemon, static (install, reconcile), query, snoop
 *   cli                     commands, options, rendering, the exit path
 */
const LAYERS = ['runtime', 'wire', 'packet', 'protocol', 'transport', 'domain', 'adapters', 'controllers', 'cli'];

const upward = LAYERS.slice(0, -1).map((layer, index) => ({
  name: `no-upward-from-${layer}`,
  comment: `${layer} may import only ${LAYERS.slice(0, index + 1).join(', ')} (and errors.ts, version.ts)`,
  severity: 'error',
  from: { path: `^src/${layer}/` },
  to: { path: `^src/(${LAYERS.slice(index + 1).join('|')})/` },
}));

module.exports = {
  forbidden: [
    ...upward,
    {
      name: 'no-cycles',
      comment: 'an import cycle makes the layers meaningless',
      severity: 'error',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'root-modules-import-nothing-above',
      comment: 'errors.ts and version.ts are shared by every layer',
      severity: 'error',
      from: { path: '^src/(errors|version)\\.ts$' },
      to: { path: '^src/[^/]+/' },
    },
    {
      name: 'src-never-imports-tests',
      severity: 'error',
      from: { path: '^src/' },
      to: { path: '^(test|bench)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    enhancedResolveOptions: { exportsFields: ['exports'], conditionNames: ['import', 'require', 'node', 'default'] },
  },
};
