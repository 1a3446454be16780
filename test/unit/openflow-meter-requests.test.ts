/**
 * Meter read-back in the OpenFlow transport (src/transport/openflow/meters.ts): the request
 * each call sends, the parts of a reply joined, and only bodies of the kind asked for used.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { UnavailableError } from '../../src/errors.js';
import type { MeterFeatures } from '../../src/protocol/openflow/meter-features.js';
import type { MeterStats } from '../../src/protocol/openflow/meter-stats.js';
import type {
  MultipartReply,
  MultipartReplyBody,
  MultipartRequestBody,
} from '../../src/protocol/openflow/multipart.js';
import { MULTIPART_MORE } from '../../src/protocol/openflow/multipart-type.js';
import { readMeterFeatures, readMeterStats } from '../../src/transport/openflow/meters.js';

function statsOf(meterId: number): MeterStats {
  return {
    meterId,
    flowCount: 1,
    packetInCount: 10n,
    byteInCount: 600n,
    durationSec: 1,
    durationNsec: 0,
    bandStats: [{ packetCount: 4n, byteCount: 240n }],
  };
}

const FEATURES: MeterFeatures = { maxMeter: 262_144, bandTypes: 0b10, capabilities: 0xf, maxBands: 8, maxColor: 0 };

/** A transact that records the request and answers with `bodies`, one part each (all but the last with MORE). */
function answering(bodies: MultipartReplyBody[]) {
  const requests: MultipartRequestBody[] = [];
  const transact = async (body: MultipartRequestBody): Promise<MultipartReply[]> => {
    requests.push(body);
    return bodies.map((reply, index) => ({
      type: 'MULTIPART_REPLY',
      xid: 1,
      flags: index < bodies.length - 1 ? MULTIPART_MORE : 0,
      body: reply,
    }));
  };
  return { requests, transact };
}

describe('meter read-back over multipart requests', () => {
  it("meterStats('all') asks for OFPM_ALL and joins every part", async () => {
    const { requests, transact } = answering([
      { kind: 'METER', meters: [statsOf(1), statsOf(2)] },
      { kind: 'METER', meters: [statsOf(3)] },
    ]);
    const stats = await readMeterStats(transact, 'all');
    assert.deepEqual(requests, [{ kind: 'METER', meterId: 0xffffffff }]);
    assert.deepEqual(
      stats.map((entry) => entry.meterId),
      [1, 2, 3],
    );
  });

  it('meterStats(id) asks for that meter; a part of another kind adds nothing', async () => {
    const { requests, transact } = answering([
      { kind: 'OTHER', multipartType: 9, data: new Uint8Array(0) },
      { kind: 'METER', meters: [statsOf(7)] },
    ]);
    assert.deepEqual(await readMeterStats(transact, 7), [statsOf(7)]);
    assert.deepEqual(requests, [{ kind: 'METER', meterId: 7 }]);
  });

  it('a meter id that is not a 32-bit unsigned integer is refused before anything is sent', async () => {
    const { requests, transact } = answering([]);
    await assert.rejects(readMeterStats(transact, -1), RangeError);
    await assert.rejects(readMeterStats(transact, 2 ** 32), RangeError);
    await assert.rejects(readMeterStats(transact, 1.5), RangeError);
    assert.deepEqual(requests, []);
  });

  it('meterFeatures sends METER_FEATURES and returns the body; a reply without one is an UnavailableError', async () => {
    const good = answering([{ kind: 'METER_FEATURES', features: FEATURES }]);
    assert.deepEqual(await readMeterFeatures(good.transact), FEATURES);
    assert.deepEqual(good.requests, [{ kind: 'METER_FEATURES' }]);
    const bad = answering([{ kind: 'OTHER', multipartType: 11, data: new Uint8Array(0) }]);
    await assert.rejects(readMeterFeatures(bad.transact), UnavailableError);
  });
});
