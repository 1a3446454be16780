/**
 * Meter read-back over the multipart requests (OpenFlow 1.3.5 §7.3.5.12, §7.3.5.14): the parts of
 * each reply joined, and picked by the body kind the request asked for (a part of another
 * kind cannot settle the request: requests.ts settles by xid and reply type).
 */
import { UnavailableError } from '../../errors.js';
import type { MeterFeatures } from '../../protocol/openflow/meter-features.js';
import { OfpMeter } from '../../protocol/openflow/meter-mod.js';
import type { MeterConfig, MeterStats } from '../../protocol/openflow/meter-stats.js';
import type { MultipartReply, MultipartRequestBody } from '../../protocol/openflow/multipart.js';
import { checkUint } from '../../wire/bytes.js';

/** Sends a multipart request; resolves with every part of its reply (OpenFlowConnection.multipart). */
type MultipartTransact = (body: MultipartRequestBody) => Promise<MultipartReply[]>;

/** One meter by id (1..OfpMeter.MAX), or every meter. */
export type MeterSelector = number | 'all';

function meterIdOf(selector: MeterSelector): number {
  return selector === 'all' ? OfpMeter.ALL : checkUint(selector, OfpMeter.ALL, 'meter_id');
}

/** Counters of one meter or all of them (OVS refuses an unknown meter id with METER_MOD_FAILED/UNKNOWN_METER). */
export async function readMeterStats(transact: MultipartTransact, selector: MeterSelector): Promise<MeterStats[]> {
  const parts = await transact({ kind: 'METER', meterId: meterIdOf(selector) });
  return parts.flatMap((part) => (part.body.kind === 'METER' ? part.body.meters : []));
}

/** The flags and bands of one meter or all of them (METER_CONFIG). */
export async function readMeterConfigs(transact: MultipartTransact, selector: MeterSelector): Promise<MeterConfig[]> {
  const parts = await transact({ kind: 'METER_CONFIG', meterId: meterIdOf(selector) });
  return parts.flatMap((part) => (part.body.kind === 'METER_CONFIG' ? part.body.meters : []));
}

/** What meters the switch supports: how many, which band types, which flags. */
export async function readMeterFeatures(transact: MultipartTransact): Promise<MeterFeatures> {
  const parts = await transact({ kind: 'METER_FEATURES' });
  for (const part of parts) if (part.body.kind === 'METER_FEATURES') return part.body.features;
  throw new UnavailableError('the switch answered METER_FEATURES without a meter features body', {
    hint: 'does the switch support OpenFlow 1.3 meters?',
  });
}
