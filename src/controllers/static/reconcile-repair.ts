/**
 * How reconcile repairs the drift it found: group changes sent to OVS in batches (the rows a
 * lost connection left unconfirmed marked failed), and routes written one by one to the kernel,
 * each entry's result kept for the report.
 */
import { ExitCode, McastError, messageOf, UnavailableError } from '../../errors.js';
import type { BridgeClient } from '../../adapters/ovs/bridge-client.js';
import type { PipelineChange } from '../../domain/pipeline/plan.js';
import type { GroupDrift, RouteDrift, StrayGroupDrift } from '../../domain/reconcile-plan.js';
import { installRoute, uninstallRoute } from './static-routes.js';

/** Changes sent to OVS in one batch (one barrier each); the progress bar moves per batch. */
const BATCH_CHANGES = 2_000;
/** A reconcile this large shows a progress bar on a terminal. */
const PROGRESS_FROM = 2_000;

export type Drift = GroupDrift | StrayGroupDrift | RouteDrift;
export type RepairResult = 'planned' | 'applied' | 'failed';

/** How far a large repair has got, shown while it runs. */
export interface RepairProgress {
  update(done: number): void;
  done(): void;
}

/**
 * Sends the group changes in batches (with `showProgress`, the caller's progress bar, when
 * there are many). Returns the error if the connection to OVS was lost part-way: the rows
 * not confirmed are marked failed, so that the report still says what was done.
 */
export async function applyGroupDrift(
  bridge: BridgeClient,
  drift: ReadonlyArray<GroupDrift | StrayGroupDrift>,
  results: Map<Drift, { result: RepairResult; error?: string }>,
  showProgress: ((total: number) => Promise<RepairProgress>) | undefined,
): Promise<UnavailableError | undefined> {
  const changes: PipelineChange[] = [];
  const owner: Array<GroupDrift | StrayGroupDrift> = [];
  for (const entry of drift) {
    for (const change of entry.changes) {
      changes.push(change);
      owner.push(entry);
    }
  }
  const progress =
    changes.length >= PROGRESS_FROM && showProgress !== undefined ? await showProgress(changes.length) : undefined;
  const errors = new Map<Drift, string>();
  let lost: UnavailableError | undefined;
  for (let start = 0; start < changes.length; start += BATCH_CHANGES) {
    const batch = changes.slice(start, start + BATCH_CHANGES);
    let refused: ReadonlyMap<number, Error>;
    try {
      refused = await bridge.apply(batch);
    } catch (error) {
      if (!(error instanceof UnavailableError)) throw error;
      lost = new UnavailableError(`${error.message}, after ${start} of ${changes.length} changes were confirmed`, {
        hint: 'run reconcile again once OVS is back: it repairs what still differs',
        cause: error,
      });
      for (const entry of owner.slice(start))
        if (!errors.has(entry)) errors.set(entry, 'not confirmed: the connection to OVS was lost');
      break;
    }
    for (const [index, error] of refused)
      if (!errors.has(owner[start + index]!)) errors.set(owner[start + index]!, error.message);
    progress?.update(Math.min(changes.length, start + BATCH_CHANGES));
  }
  progress?.done();
  for (const entry of drift) {
    const error = errors.get(entry);
    results.set(entry, error === undefined ? { result: 'applied' } : { result: 'failed', error });
  }
  return lost;
}

export async function applyRouteDrift(entry: RouteDrift): Promise<{ result: RepairResult; error?: string }> {
  try {
    if (entry.action === 'remove') await uninstallRoute(entry);
    else await installRoute(entry.after!);
    return { result: 'applied' };
  } catch (error) {
    if (error instanceof McastError && error.exitCode === ExitCode.NoPermission) throw error;
    return { result: 'failed', error: messageOf(error) };
  }
}
