/**
 * The demo: real kernels speaking IGMP, watched by `mcastctl snoop`.
 *
 *   sudo node --import tsx scripts/demo-snoop.ts   (after `npm run build`; or scripts/demo.sh snoop)
 *
 * Builds a small lab out of network namespaces (a Linux bridge querying in IGMPv3 behind
 * a hub, and three hosts forced to IGMPv1, v2 and v3), runs `mcastctl snoop --iface
 * <hub bridge>` in the bridge's namespace for about 15 seconds while the hosts join and
 * leave groups on a script (each step is told on stderr as it happens), lets snoop print
 * its membership summary, and removes everything, also on Ctrl-C. Nothing outside the
 * lab's namespaces (all named mcl*) is touched.
 *
 * Environment: DEMO_SECONDS (default 15), MCASTCTL_BIN (another build of the CLI),
 * NO_COLOR.
 */
import { startMcastctl, type RunningCli } from '../test/lab/cli.js';
import { Lab, type Host } from '../test/lab/lab.js';
import { Member } from '../test/lab/member.js';
import { color, runDemo, say } from './demo-kit.js';

const SECONDS = Number(process.env.DEMO_SECONDS ?? 15);
interface Actor {
  label: string;
  host: Host;
  member: Member;
}

type Step = [atSeconds: number, actor: 'h1' | 'h2' | 'h3', describe: string, act: (member: Member) => Promise<void>];

/** What the hosts do, and when (seconds after snoop starts). */
const SCRIPT: Step[] = [
  [1.5, 'h1', 'join 239.1.1.1 (IGMPv1 report)', (m) => m.join('239.1.1.1')],
  [2.5, 'h2', 'join 239.2.2.2 (IGMPv2 report)', (m) => m.join('239.2.2.2')],
  [3.5, 'h3', 'join 239.3.3.3 (IGMPv3 CHANGE_TO_EXCLUDE {})', (m) => m.join('239.3.3.3')],
  [4.5, 'h3', 'join 232.1.1.1 from source 10.0.0.5 only (ALLOW_NEW_SOURCES)', (m) => m.joinSource('232.1.1.1', '10.0.0.5')],
  [6.0, 'h3', 'block source 10.0.0.7 in 239.3.3.3 (BLOCK_OLD_SOURCES)', (m) => m.block('239.3.3.3', '10.0.0.7')],
  [8.0, 'h2', 'leave 239.2.2.2 (IGMPv2 leave; the querier asks who else is in it)', (m) => m.leave('239.2.2.2')],
  [9.5, 'h3', 'drop source 10.0.0.5 from 232.1.1.1 (BLOCK_OLD_SOURCES)', (m) => m.dropSource('232.1.1.1', '10.0.0.5')],
  [10.5, 'h3', 'leave 239.3.3.3 (CHANGE_TO_INCLUDE {})', (m) => m.leave('239.3.3.3')],
  [12.0, 'h2', 'join 239.2.2.9 (IGMPv2 report)', (m) => m.join('239.2.2.9')],
];

async function main(): Promise<number> {
  // Signals are handled here: Ctrl-C first lets snoop print its summary, then tears down.
  const lab = Lab.create({ handleSignals: false });
  const stop = new AbortController();
  let snoop: RunningCli | undefined;
  let signals = 0;
  const onSignal = (signal: NodeJS.Signals) => {
    if (++signals > 1) {
      lab.destroySync();
      process.exit(130);
    }
    say(`${signal}: stopping (again to force)`);
    stop.abort();
    // snoop runs in a process group of its own (Ctrl-C at the terminal does not reach it):
    // one SIGINT makes it stop and print its summary.
    snoop?.child.kill('SIGINT');
  };
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) process.on(signal, onSignal);

  try {
    say(`building the lab (namespaces ${lab.prefix}-*)`);
    const ns = await lab.namespace('sw');
    const segment = await lab.igmpSegment(ns, {
      address: '10.62.0.1/24',
      querier: { igmpVersion: 3, queryIntervalMs: 5000, queryResponseIntervalMs: 2000, lastMemberIntervalMs: 500, lastMemberCount: 2 },
    });
    const actors = new Map<string, Actor>();
    for (const [label, version] of [['h1', 1], ['h2', 2], ['h3', 3]] as const) {
      const host = await lab.host(label, { bridge: segment.hub, igmpVersion: version });
      actors.set(label, { label: `${label} (IGMPv${version}, ${host.address})`, host, member: await Member.start(lab, host) });
    }
    say(`querier ${segment.querier.address} (IGMPv3) behind hub ${segment.hub.name}; hosts ${[...actors.values()].map((a) => a.label).join(', ')}`);
    say(`running: mcastctl snoop --iface ${segment.hub.name} --duration ${SECONDS}s   (in namespace ${ns})`);

    snoop = startMcastctl(['snoop', '--iface', segment.hub.name, '--duration', `${SECONDS}s`], {
      ns,
      inherit: true,
      detached: true,
      timeoutMs: (SECONDS + 30) * 1000,
    });
    const started = Date.now();
    const at = (seconds: number) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, Math.max(0, started + seconds * 1000 - Date.now()));
        stop.signal.addEventListener('abort', () => (clearTimeout(timer), resolve()), { once: true });
      });
    const stamp = () => color.dim(`[${((Date.now() - started) / 1000).toFixed(1).padStart(4)}s]`);

    await at(0.8);
    if (!stop.signal.aborted) {
      await segment.querier.set({ querier: true });
      say(`${stamp()} querier on: general queries every 5 s`);
    }
    for (const [seconds, who, what, act] of SCRIPT) {
      await at(seconds);
      if (stop.signal.aborted || seconds >= SECONDS) break;
      const actor = actors.get(who)!;
      say(`${stamp()} ${color.bold(actor.label)}: ${what}`);
      await act(actor.member).catch((error: unknown) => say(`${color.red('failed')}: ${String(error)}`));
    }
    const result = await snoop.done;
    if (result.code !== 0) say(`mcastctl exited ${result.code ?? result.signal}`);
    return stop.signal.aborted ? 130 : (result.code ?? 1);
  } finally {
    if (snoop && snoop.child.exitCode === null && snoop.child.signalCode === null) {
      snoop.child.kill('SIGINT');
      await Promise.race([snoop.done, new Promise((resolve) => setTimeout(resolve, 3000))]);
    }
    say('removing the lab');
    await lab.destroy();
  }
}

await runDemo('scripts/demo.sh snoop', main);
