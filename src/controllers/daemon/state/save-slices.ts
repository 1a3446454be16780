/**
 * How a periodic save shares the loop: it snapshots, checks and serializes about
 * SAVE_SLICE_MEMBERS members a turn, so a save of thousands never holds a join or a
 * leave for its whole length.
 */
const SAVE_SLICE_MEMBERS = 500;

/** `items` (`members` members in all) in consecutive slices of about SAVE_SLICE_MEMBERS members each. */
export function* saveSlices<T>(items: readonly T[], members: number): Generator<readonly T[]> {
  const perSlice = Math.max(1, Math.floor((SAVE_SLICE_MEMBERS * items.length) / Math.max(1, members)));
  for (let first = 0; first < items.length; first += perSlice) yield items.slice(first, first + perSlice);
}
