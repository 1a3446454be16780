/**
 * The meter codecs (OpenFlow 1.3.5 §7.3.4.4, §7.2.4 METER instruction, §7.3.5.12–14
 * multiparts): byte-exact vectors written out from the spec's structures (each also read
 * by `ovs-ofctl ofp-print`, which prints what the comment above it says), round trips,
 * and malformed input refused with DecodeError.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import fc from 'fast-check';
import { DecodeError } from '../../src/errors.js';
import { output } from '../../src/protocol/openflow/action.js';
import { summarize } from '../../src/protocol/openflow/describe.js';
import { describeError } from '../../src/protocol/openflow/error-code.js';
import { OpenFlowDecodeError } from '../../src/protocol/openflow/errors.js';
import { flowMod } from '../../src/protocol/openflow/flow-mod.js';
import { applyActions, meter } from '../../src/protocol/openflow/instruction.js';
import * as bandList from '../../src/protocol/openflow/meter-band.js';
import { dropBand, dscpRemarkBand, type MeterBand } from '../../src/protocol/openflow/meter-band.js';
import {
  MeterFlag,
  MeterModCommand,
  meterMod,
  OfpMeter,
  type MeterMod,
} from '../../src/protocol/openflow/meter-mod.js';
import * as openflow from '../../src/protocol/openflow/message.js';
import type { OpenFlowMessage } from '../../src/protocol/openflow/message.js';
import { applyMutations, frameMutation } from '../helpers/arbitraries.js';
import { hex } from '../helpers/bytes.js';
import { assertRoundTrip } from '../helpers/roundtrip.js';

const codec = { encode: openflow.encode, decode: openflow.decode, encodingLength: openflow.encodingLength };

interface Vector {
  name: string;
  message: OpenFlowMessage;
  hex: string;
}

const PKTPS_BURST_STATS = MeterFlag.PKTPS | MeterFlag.BURST | MeterFlag.STATS;
/** ofp_match with no fields: type OXM, length 4, padded to 8. */
const EMPTY_MATCH = '0001000400000000';
/** METER 1 (type 6, len 8), then APPLY_ACTIONS output:2 (max_len 0). */
const METER_THEN_OUTPUT = '0006000800000001' + '0004001800000000' + '00000010000000020000000000000000';

const VECTORS: Vector[] = [
  // ADD meter=1 pktps burst stats bands=type=drop rate=50 burst_size=10
  {
    name: 'METER_MOD ADD pktps, drop band',
    message: meterMod({ xid: 6, meterId: 1, bands: [dropBand(50, 10)] }),
    hex: '041d0020 00000006 0000 000e 00000001' + '0001 0010 00000032 0000000a 00000000',
  },
  // MOD meter=2 kbps burst bands=type=drop rate=10000 burst_size=100 type=dscp_remark rate=5000 burst_size=1000
  // prec_level=1
  {
    name: 'METER_MOD MODIFY kbps, drop and dscp_remark bands',
    message: meterMod({
      xid: 6,
      command: MeterModCommand.MODIFY,
      flags: MeterFlag.KBPS | MeterFlag.BURST,
      meterId: 2,
      bands: [dropBand(10_000, 100), dscpRemarkBand(5000, 1, 1000)],
    }),
    hex:
      '041d0030 00000006 0001 0005 00000002' +
      '0001 0010 00002710 00000064 00000000' +
      '0002 0010 00001388 000003e8 01 000000',
  },
  // DEL meter=2
  {
    name: 'METER_MOD DELETE',
    message: meterMod({ xid: 6, command: MeterModCommand.DELETE, flags: 0, meterId: 2 }),
    hex: '041d0010 00000006 0002 0000 00000002',
  },
  // DEL meter=all
  {
    name: 'METER_MOD DELETE all',
    message: meterMod({ xid: 6, command: MeterModCommand.DELETE, flags: 0, meterId: OfpMeter.ALL }),
    hex: '041d0010 00000006 0002 0000 ffffffff',
  },
  // An experimenter band is kept as it came.
  {
    name: 'METER_MOD with an experimenter band',
    message: meterMod({
      xid: 6,
      meterId: 3,
      bands: [{ type: 'OTHER', bandType: 0xffff, rate: 1, burstSize: 2, body: hex('00002320') }],
    }),
    hex: '041d0020 00000006 0000 000e 00000003' + 'ffff 0010 00000001 00000002 00002320',
  },
  // ADD priority=100 actions=meter:1,output:2
  {
    name: 'FLOW_MOD with a METER instruction',
    message: flowMod({ xid: 6, priority: 100, instructions: [meter(1), applyActions([output(2)])] }),
    hex:
      '040e0058 00000006' +
      '0'.repeat(32) +
      '00 00 0000 0000 0064 ffffffff ffffffff ffffffff 0000 0000' +
      EMPTY_MATCH +
      METER_THEN_OUTPUT,
  },
  // OFPST_METER request: meter=all
  {
    name: 'MULTIPART_REQUEST METER all',
    message: { type: 'MULTIPART_REQUEST', xid: 7, flags: 0, body: { kind: 'METER', meterId: OfpMeter.ALL } },
    hex: '04120018 00000007 0009 0000 00000000 ffffffff 00000000',
  },
  // OFPST_METER_CONFIG request: meter=1
  {
    name: 'MULTIPART_REQUEST METER_CONFIG one meter',
    message: { type: 'MULTIPART_REQUEST', xid: 7, flags: 0, body: { kind: 'METER_CONFIG', meterId: 1 } },
    hex: '04120018 00000007 000a 0000 00000000 00000001 00000000',
  },
  // OFPST_METER_FEATURES request
  {
    name: 'MULTIPART_REQUEST METER_FEATURES',
    message: { type: 'MULTIPART_REQUEST', xid: 7, flags: 0, body: { kind: 'METER_FEATURES' } },
    hex: '04120010 00000007 000b 0000 00000000',
  },
  // meter:1 flow_count:1 packet_in_count:100 byte_in_count:6000 duration:5.500s bands: 0: packet_count:40
  // byte_count:2400
  {
    name: 'MULTIPART_REPLY METER',
    message: {
      type: 'MULTIPART_REPLY',
      xid: 7,
      flags: 0,
      body: {
        kind: 'METER',
        meters: [
          {
            meterId: 1,
            flowCount: 1,
            packetInCount: 100n,
            byteInCount: 6000n,
            durationSec: 5,
            durationNsec: 500_000_000,
            bandStats: [{ packetCount: 40n, byteCount: 2400n }],
          },
        ],
      },
    },
    hex:
      '04130048 00000007 0009 0000 00000000' +
      '00000001 0038 000000000000 00000001 0000000000000064 0000000000001770 00000005 1dcd6500' +
      '0000000000000028 0000000000000960',
  },
  // meter=1 pktps burst stats bands=type=drop rate=50 burst_size=10
  {
    name: 'MULTIPART_REPLY METER_CONFIG',
    message: {
      type: 'MULTIPART_REPLY',
      xid: 7,
      flags: 0,
      body: { kind: 'METER_CONFIG', meters: [{ flags: PKTPS_BURST_STATS, meterId: 1, bands: [dropBand(50, 10)] }] },
    },
    hex: '04130028 00000007 000a 0000 00000000' + '0018 000e 00000001' + '0001 0010 00000032 0000000a 00000000',
  },
  // max_meter:262144 max_bands:8 max_color:0 band_types: drop dscp_remark capabilities: kbps pktps burst stats
  {
    name: 'MULTIPART_REPLY METER_FEATURES',
    message: {
      type: 'MULTIPART_REPLY',
      xid: 7,
      flags: 0,
      body: {
        kind: 'METER_FEATURES',
        features: { maxMeter: 262_144, bandTypes: 0b110, capabilities: 0xf, maxBands: 8, maxColor: 0 },
      },
    },
    hex: '04130020 00000007 000b 0000 00000000' + '00040000 00000006 0000000f 08 00 0000',
  },
  // A flow stats reply whose flow uses a meter: read back, not refused.
  {
    name: 'MULTIPART_REPLY FLOW with a METER instruction',
    message: {
      type: 'MULTIPART_REPLY',
      xid: 8,
      flags: 0,
      body: {
        kind: 'FLOW',
        flows: [
          {
            tableId: 0,
            durationSec: 1,
            durationNsec: 2,
            priority: 100,
            idleTimeout: 0,
            hardTimeout: 0,
            flags: 0,
            cookie: 0x10n,
            packetCount: 3n,
            byteCount: 180n,
            match: [],
            instructions: [meter(1), applyActions([output(2)])],
          },
        ],
      },
    },
    hex:
      '04130068 00000008 0001 0000 00000000' +
      '0058 00 00 00000001 00000002 0064 0000 0000 0000 00000000 0000000000000010 0000000000000003 00000000000000b4' +
      EMPTY_MATCH +
      METER_THEN_OUTPUT,
  },
];

describe('OpenFlow meter codecs: byte-exact vectors', () => {
  for (const vector of VECTORS) {
    it(vector.name, () => assertRoundTrip(codec, vector.message, hex(vector.hex)));
  }

  it('every vector cut short is refused with DecodeError, or is a shorter whole message', () => {
    for (const vector of VECTORS) {
      const bytes = hex(vector.hex);
      for (let cut = 0; cut < bytes.length; cut++) {
        // The header's length fixed to the cut, so that the inner lengths are what is tested.
        const cutBytes = Buffer.from(bytes.subarray(0, cut));
        if (cut >= 4) cutBytes.writeUInt16BE(cut, 2);
        if (cut % 8 !== 0) {
          assert.throws(() => openflow.decode(cutBytes), DecodeError, `${vector.name} cut at ${cut}`);
          continue;
        }
        // Every structure here is a multiple of 8 octets: a cut between two is a message with fewer of them, or
        // refused.
        let decoded: OpenFlowMessage;
        try {
          decoded = openflow.decode(cutBytes);
        } catch (error) {
          assert.ok(error instanceof DecodeError, `${vector.name} cut at ${cut}: ${String(error)}`);
          continue;
        }
        assert.equal(
          Buffer.from(openflow.encode(decoded)).toString('hex'),
          cutBytes.toString('hex'),
          `${vector.name} cut at ${cut}`,
        );
      }
    }
  });
});

describe('OpenFlow meter codecs: malformed input', () => {
  function refused(text: string, reason: 'truncated' | 'bad-length', pattern: RegExp): void {
    assert.throws(
      () => openflow.decode(hex(text)),
      (error: unknown) =>
        error instanceof OpenFlowDecodeError && error.reason === reason && pattern.test(error.message),
    );
  }

  it('a band length below 16, not a multiple of 8, or past the message', () => {
    refused(
      '041d0020 00000006 0000 000e 00000001 0001 0008 00000032 0000000a 00000000',
      'bad-length',
      /meter band length 8/,
    );
    refused(
      '041d0020 00000006 0000 000e 00000001 0001 0014 00000032 0000000a 00000000',
      'bad-length',
      /meter band length 20/,
    );
    refused(
      '041d0020 00000006 0000 000e 00000001 0001 0018 00000032 0000000a 00000000',
      'truncated',
      /meter band of 24 octets/,
    );
  });

  it('a drop or dscp_remark band of any length but 16', () => {
    refused(
      '041d0028 00000006 0000 000e 00000001 0001 0018 00000032 0000000a 00000000 00000000 00000000',
      'bad-length',
      /type 1 has length 24/,
    );
    refused(
      '041d0028 00000006 0000 000e 00000001 0002 0018 00000032 0000000a 00000000 00000000 00000000',
      'bad-length',
      /type 2 has length 24/,
    );
  });

  it('a METER_MOD shorter than its 16-octet fixed part, or whose header length disagrees', () => {
    refused('041d000c 00000006 0000 000e', 'bad-length', /shorter than its 16-octet minimum/);
    refused('041d0018 00000006 0000 000e 00000001', 'bad-length', /header says 24 octets; the message has 16/);
  });

  it('a METER instruction of any length but 8', () => {
    const flow =
      '040e0058 00000006' + '0'.repeat(32) + '00 00 0000 0000 0064 ffffffff ffffffff ffffffff 0000 0000' + EMPTY_MATCH;
    refused(
      `${flow.replace('040e0058', '040e0048')}0006001000000001 0000000000000000`,
      'bad-length',
      /METER instruction length 16 is not 8/,
    );
  });

  it('meter stats whose length is not 40 plus whole band stats, or runs past the reply', () => {
    const entry = (length: string) =>
      `00000001 ${length} 000000000000 00000001 0000000000000064 0000000000001770 00000005 1dcd6500 0000000000000028 0000000000000960`;
    refused(`04130048 00000007 0009 0000 00000000 ${entry('0030')}`, 'bad-length', /meter stats length 48/);
    refused(`04130048 00000007 0009 0000 00000000 ${entry('0020')}`, 'bad-length', /meter stats length 32/);
    refused(`04130048 00000007 0009 0000 00000000 ${entry('0048')}`, 'truncated', /meter stats entry of 72 octets/);
  });

  it('a meter config whose length is below 8 or runs past the reply', () => {
    refused(
      '04130028 00000007 000a 0000 00000000 0004 000e 00000001 0001 0010 00000032 0000000a 00000000',
      'bad-length',
      /meter config length 4/,
    );
    refused(
      '04130028 00000007 000a 0000 00000000 0020 000e 00000001 0001 0010 00000032 0000000a 00000000',
      'truncated',
      /meter config entry of 32/,
    );
  });

  it('meter features and meter requests of the wrong size', () => {
    refused('0413001c 00000007 000b 0000 00000000 00040000 00000006 0000000f', 'truncated', /meter features needs 16/);
    refused(
      '04130028 00000007 000b 0000 00000000 00040000 00000006 0000000f 08000000 00000000 00000000',
      'bad-length',
      /meter features body of 24/,
    );
    refused('04120014 00000007 0009 0000 00000000 ffffffff', 'truncated', /meter request needs 8/);
    refused(
      '04120020 00000007 000a 0000 00000000 00000001 00000000 00000000 00000000',
      'bad-length',
      /meter request body of 16/,
    );
  });

  it('values that do not fit their fields are refused by encode (RangeError)', () => {
    assert.throws(() => openflow.encode(meterMod({ meterId: 2 ** 32 })), RangeError);
    assert.throws(() => openflow.encode(meterMod({ meterId: 1, bands: [dropBand(2 ** 32)] })), RangeError);
    assert.throws(() => openflow.encode(meterMod({ meterId: 1, bands: [dscpRemarkBand(10, 256)] })), RangeError);
    assert.throws(
      () =>
        openflow.encode(
          meterMod({
            meterId: 1,
            bands: [{ type: 'OTHER', bandType: 9, rate: 1, burstSize: 1, body: new Uint8Array(8) }],
          }),
        ),
      RangeError,
    );
  });
});

describe('OpenFlow meter errors and summaries', () => {
  it('METER_MOD_FAILED codes are named', () => {
    assert.equal(describeError({ errorType: 12, code: 1 }), 'METER_MOD_FAILED/METER_EXISTS');
    assert.equal(describeError({ errorType: 12, code: 3 }), 'METER_MOD_FAILED/UNKNOWN_METER');
    assert.equal(describeError({ errorType: 12, code: 10 }), 'METER_MOD_FAILED/OUT_OF_METERS');
  });

  it('a METER_MOD is summarized with its command, meter id, flags and bands', () => {
    assert.equal(
      summarize(meterMod({ meterId: 4, bands: [dropBand(10)] }), 9),
      'METER_MOD ADD meter 4 (xid 9, flags 0xe, 1 band)',
    );
    assert.equal(
      summarize(meterMod({ command: 7, meterId: 4, flags: 0 }), 9),
      'METER_MOD command 7 meter 4 (xid 9, flags 0x0, 0 bands)',
    );
  });
});

const u32 = fc.integer({ min: 0, max: 0xffffffff });
const band: fc.Arbitrary<MeterBand> = fc.oneof(
  fc.record({ type: fc.constant('DROP' as const), rate: u32, burstSize: u32 }),
  fc.record({
    type: fc.constant('DSCP_REMARK' as const),
    rate: u32,
    burstSize: u32,
    precLevel: fc.integer({ min: 0, max: 255 }),
  }),
  fc.record({
    type: fc.constant('OTHER' as const),
    bandType: fc.integer({ min: 3, max: 0xffff }),
    rate: u32,
    burstSize: u32,
    body: fc
      .integer({ min: 0, max: 3 })
      .chain((words) => fc.uint8Array({ minLength: 4 + 8 * words, maxLength: 4 + 8 * words })),
  }),
);
const anyMeterMod: fc.Arbitrary<MeterMod> = fc.record({
  type: fc.constant('METER_MOD' as const),
  xid: u32,
  command: fc.integer({ min: 0, max: 0xffff }),
  flags: fc.integer({ min: 0, max: 0xffff }),
  meterId: u32,
  bands: fc.array(band, { maxLength: 6 }),
});

describe('OpenFlow meter codecs: properties', () => {
  it('any METER_MOD round-trips, and its bands alone too', () => {
    fc.assert(
      fc.property(anyMeterMod, (message) => {
        const bytes = openflow.encode(message);
        assert.equal(bytes.length, openflow.encodingLength(message));
        assert.deepEqual(openflow.encode(openflow.decode(bytes)), bytes);
        assert.deepEqual(
          bandList.encode(bandList.decode(bandList.encode(message.bands))),
          bandList.encode(message.bands),
        );
      }),
      { numRuns: 300 },
    );
  });

  it('mutated meter messages decode or are refused with DecodeError, nothing else', () => {
    const seeds = VECTORS.map((vector) => hex(vector.hex));
    fc.assert(
      fc.property(
        fc.constantFrom(...seeds),
        fc.array(frameMutation, { minLength: 1, maxLength: 4 }),
        fc.boolean(),
        (seed, mutations, fixLength) => {
          const bytes = applyMutations(seed, mutations);
          // Half the time with the header's length set to the octets there, so that the body's own lengths are what is
          // tested.
          if (fixLength && bytes.length >= 4) bytes.writeUInt16BE(bytes.length & 0xffff, 2);
          try {
            const message = openflow.decode(bytes);
            openflow.encode(message); // what decodes, encodes
          } catch (error) {
            assert.ok(error instanceof DecodeError, `not a DecodeError: ${String(error)}`);
          }
        },
      ),
      { numRuns: 1000 },
    );
  });
});
