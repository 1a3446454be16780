/**
 * One `query` run: listen, send the query (`repeat` times, `interval` apart), keep
 * listening for `wait` after the last one, and hand back what was heard. Stops early,
 * with what it has, when the caller's signal fires or the link fails.
 */
import { randomInt } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { McastError } from '../../errors.js';
import { systemClock, type Clock, type QueryLink } from '../../adapters/query-link/query-link.js';
import type { AnyQueryPacket } from '../../packet/query-frame.js';
import { mldQueryDestination, mldQueryKind, mldQueryMessage, type MldQuerySpec } from './mld-query-spec.js';
import { queryDestination, queryKind, queryMessage, type QuerySpec } from './query-spec.js';
import { ResponderTable } from './responder-table.js';

export interface QueryRunOptions {
  link: QueryLink;
  /** An IGMP query, or an MLD one (`protocol: 'mld'`). */
  spec: QuerySpec | MldQuerySpec;
  /** The address the queries come from (0.0.0.0, or :: in MLD, allowed). */
  src: string;
  repeat: number;
  intervalMs: number;
  /** Listening time after the last query. */
  waitMs: number;
  signal?: AbortSignal;
  clock?: Clock;
}

export interface QueryRunResult {
  table: ResponderTable;
  /** The run stopped before its time (the signal fired, or the link failed). */
  stoppedEarly: boolean;
  /** Why the link failed, if it did; what was heard until then is in `table`. */
  failure?: McastError;
}

export async function runQuery(options: QueryRunOptions): Promise<QueryRunResult> {
  const { link, spec, src } = options;
  const clock = options.clock ?? systemClock;
  const mld = isMldSpec(spec);
  const table = new ResponderTable({
    ...(spec.group === undefined ? {} : { group: spec.group }),
    self: { address: src, version: spec.version },
    protocol: mld ? 'mld' : 'igmp',
  });
  const stop = new AbortController();
  const onAbort = (): void => stop.abort();
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) stop.abort();
  let failure: McastError | undefined;
  const fail = (error: McastError): void => {
    failure ??= error;
    stop.abort();
  };
  try {
    await link.listen((event) => table.heard(event), fail);
    const dst = mld ? mldQueryDestination(spec) : queryDestination(spec);
    const kind = mld ? mldQueryKind(spec) : queryKind(spec);
    for (let i = 0; i < options.repeat && !stop.signal.aborted; i++) {
      if (i > 0 && !(await pause(options.intervalMs, stop.signal))) break;
      // A fresh IP identification per IPv4 query, as a host's stack would pick.
      const identification = mld ? undefined : randomInt(0x10000);
      // Recorded before it is sent: on a bridge the first answers can arrive before the
      // switch has confirmed the send, and they must find their query.
      table.querySent({
        at: clock.now(),
        ...(mld ? { protocol: 'mld' as const } : {}),
        version: spec.version,
        kind,
        group: spec.group ?? null,
        sources: [...spec.sources],
        src,
        dst,
        maxRespMs: spec.maxRespMs,
        ...(identification === undefined ? {} : { identification }),
      });
      const packet: AnyQueryPacket = mld
        ? { message: mldQueryMessage(spec), src, dst }
        : { message: queryMessage(spec), src, dst, identification: identification ?? 0 };
      try {
        await link.send(packet);
      } catch (error) {
        if (!(error instanceof McastError)) throw error;
        fail(error);
      }
    }
    if (!stop.signal.aborted) await pause(options.waitMs, stop.signal);
  } finally {
    options.signal?.removeEventListener('abort', onAbort);
  }
  return { table, stoppedEarly: stop.signal.aborted, ...(failure === undefined ? {} : { failure }) };
}

/** Waits `ms`; false if `signal` cut it short. */
async function pause(ms: number, signal: AbortSignal): Promise<boolean> {
  try {
    await sleep(ms, undefined, { signal });
    return true;
  } catch (error) {
    if (signal.aborted) return false;
    throw error;
  }
}

function isMldSpec(spec: QuerySpec | MldQuerySpec): spec is MldQuerySpec {
  return 'protocol' in spec && spec.protocol === 'mld';
}
