/**
 * How much slower this machine runs the tests than the host they were written on: 1
 * unless MCASTCTL_TEST_TIME_SCALE says otherwise. The kernel lab runs the tests in an
 * emulated machine several times slower, and its runs set it.
 *
 * It stretches deadlines only: the time a test, a hook, a wait or a child process may take
 * before it counts as hung. A test that measures a latency or a rate compares the figure
 * itself, never a stretched one.
 */

function timeScale(text: string | undefined): number {
  if (text === undefined || text === '') return 1;
  const scale = Number(text);
  if (!Number.isFinite(scale) || scale < 1)
    throw new Error(`MCASTCTL_TEST_TIME_SCALE must be a number of at least 1, not ${JSON.stringify(text)}`);
  return scale;
}

export const TIME_SCALE = timeScale(process.env.MCASTCTL_TEST_TIME_SCALE);

/** A deadline of `ms` on the host, stretched for this machine. */
export function deadline(ms: number): number {
  return Number.isFinite(ms) ? ms * TIME_SCALE : ms;
}
