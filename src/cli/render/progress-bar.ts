/**
 * A progress bar of changes on stderr, for a repair long enough to wait on. Drawing is the
 * command line's part: the repair (controllers/static) is handed the bar and only moves it.
 */
import type { RepairProgress } from '../../controllers/static/reconcile-repair.js';

/**
 * `[#####.....] 1200/5000 changes` on stderr, redrawn in place (cli-progress; loaded only
 * when a reconcile is large enough to show it).
 */
export async function progressBar(total: number): Promise<RepairProgress> {
  const { SingleBar } = (await import('cli-progress')).default;
  const bar = new SingleBar({
    format: '[{bar}] {value}/{total} changes',
    barsize: 30,
    barCompleteChar: '#',
    barIncompleteChar: '.',
    stream: process.stderr,
    hideCursor: false,
  });
  bar.start(total, 0);
  return { update: (done) => bar.update(done), done: () => bar.stop() };
}
