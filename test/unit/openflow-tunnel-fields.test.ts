/**
 * OpenFlow codec: Open vSwitch's tunnel endpoint fields (NXM_1 class), as a flow-based
 * Geneve port needs them: `set_field:PEER->tun_dst,output:TUN` in group buckets and
 * packet-outs, and `tun_src`/`tun_dst` in the match of a packet-in from the tunnel.
 *
 * The bytes are written out by hand from OVS's layouts (lib/nx-match.c NXM_HEADER:
 * class<<16 | field<<9 | hasmask<<8 | length; tun_src is NXM_1 field 31, tun_dst field 32)
 * and checked with OVS's own decoder (`ovs-ofctl ofp-print`, `ovs-ofctl parse-actions`)
 * in the last suite, which runs when ovs-ofctl is installed.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { describe, it, before } from '../helpers/node-test.js';
import * as actionList from '../../src/protocol/openflow/action.js';
import { output, setTunnelDestination } from '../../src/protocol/openflow/action.js';
import { bucket, bucketLength } from '../../src/protocol/openflow/bucket.js';
import { OpenFlowDecodeError } from '../../src/protocol/openflow/errors.js';
import { groupMod } from '../../src/protocol/openflow/group-mod.js';
import { TUNNEL_BUCKET_LENGTH, maxBucketsPerGroupMod } from '../../src/protocol/openflow/limits.js';
import * as match from '../../src/protocol/openflow/match.js';
import * as openflow from '../../src/protocol/openflow/message.js';
import type { OpenFlowMessage } from '../../src/protocol/openflow/message.js';
import { GroupType } from '../../src/protocol/openflow/mod-command.js';
import * as oxm from '../../src/protocol/openflow/oxm.js';
import type { OxmField } from '../../src/protocol/openflow/oxm.js';
import { NXM_1_FIELDS, OxmClass, oxmFieldName } from '../../src/protocol/openflow/oxm-field.js';
import { inPortOf, tunnelSourceOf } from '../../src/protocol/openflow/packet-in.js';
import { OFP_NO_BUFFER, OfpPort } from '../../src/protocol/openflow/reserved.js';
import { hex } from '../helpers/bytes.js';
import { assertRoundTrip } from '../helpers/roundtrip.js';

const codec = { encode: openflow.encode, decode: openflow.decode, encodingLength: openflow.encodingLength };

const PEER = '192.168.60.12';
const US = '192.168.60.11';
const TUNNEL_PORT = 2;

// SET_FIELD (25), length 16 | NXM_NX_TUN_IPV4_DST header 0x00014004 | 192.168.60.12 | pad8(4 + 8) = 16: 4 zero octets.
const SET_TUN_DST_PEER = '0019 0010 00014004 c0a83c0c 00000000';
// OUTPUT (0), length 16 | port 2 | max_len 0 | pad(6).
const OUTPUT_TUNNEL = '0000 0010 00000002 0000 000000000000';
// A bucket of an ALL group: len 48 | weight 0 | watch_port ANY | watch_group ANY | pad(4) | the two actions.
const TUNNEL_BUCKET = `0030 0000 ffffffff ffffffff 00000000 ${SET_TUN_DST_PEER} ${OUTPUT_TUNNEL}`;
// The frame a packet-in carries after the match; the codec does not look inside (a pod's IGMPv3 report).
const INNER_FRAME =
  '01005e000016da666bf436b9080046c00028000040000102f9ed0a01000be0000016940400002200e5f30000000104000000ef050505';

const tunnelBucket = bucket([setTunnelDestination(PEER), output(TUNNEL_PORT)]);

// The match OVS puts in a packet-in from the Geneve port: IN_PORT, then tun_src and tun_dst (nx_put_raw's order).
const TUNNEL_MATCH: OxmField[] = [
  { field: 'IN_PORT', value: TUNNEL_PORT },
  { field: 'TUN_IPV4_SRC', value: PEER },
  { field: 'TUN_IPV4_DST', value: US },
];
// OFPMT_OXM, length 4 + 3 × 8 = 28, padded to 32.
const TUNNEL_MATCH_HEX = '0001 001c 80000004 00000002 00013e04 c0a83c0c 00014004 c0a83c0b 00000000';

const vectors: { name: string; message: OpenFlowMessage; hex: string }[] = [
  {
    name: 'GROUP_MOD ADD ALL with a tunnel bucket',
    message: groupMod({ xid: 1, groupId: 7, buckets: [tunnelBucket] }),
    hex: `040f0040 00000001 0000 00 00 00000007 ${TUNNEL_BUCKET}`,
  },
  {
    name: 'MULTIPART_REPLY GROUP_DESC with a tunnel bucket',
    message: {
      type: 'MULTIPART_REPLY',
      xid: 2,
      flags: 0,
      body: { kind: 'GROUP_DESC', groups: [{ groupType: GroupType.ALL, groupId: 7, buckets: [tunnelBucket] }] },
    },
    // multipart type 7, flags 0, pad(4) | entry length 8 + 48 = 56 | type ALL | pad | group 7 | the bucket.
    hex: `04130048 00000002 0007 0000 00000000 0038 00 00 00000007 ${TUNNEL_BUCKET}`,
  },
  {
    name: 'PACKET_OUT from CONTROLLER into the tunnel',
    message: {
      type: 'PACKET_OUT',
      xid: 3,
      bufferId: OFP_NO_BUFFER,
      inPort: OfpPort.CONTROLLER,
      actions: [setTunnelDestination(PEER), output(TUNNEL_PORT)],
      data: hex(INNER_FRAME),
    },
    // 8 + 16 + 32 of actions + 54 of frame = 110 (0x6e); actions_len 32.
    hex: `040d006e 00000003 ffffffff fffffffd 0020 000000000000 ${SET_TUN_DST_PEER} ${OUTPUT_TUNNEL} ${INNER_FRAME}`,
  },
  {
    name: 'PACKET_IN from the tunnel with tun_src and tun_dst in its match',
    message: {
      type: 'PACKET_IN',
      xid: 0,
      bufferId: OFP_NO_BUFFER,
      totalLen: 54,
      reason: 1,
      tableId: 0,
      cookie: 0x20n,
      match: TUNNEL_MATCH,
      data: hex(INNER_FRAME),
    },
    // 8 + 16 + 32 of match + 2 of padding + 54 of frame = 112 (0x70).
    hex: `040a0070 00000000 ffffffff 0036 01 00 0000000000000020 ${TUNNEL_MATCH_HEX} 0000 ${INNER_FRAME}`,
  },
];

describe('OpenFlow codec: tunnel fields', () => {
  for (const vector of vectors) {
    it(vector.name, () => assertRoundTrip(codec, vector.message, hex(vector.hex)));
  }

  it('OXM: tun_src and tun_dst are named NXM_1 fields, plain and masked', () => {
    assertRoundTrip(oxm, { field: 'TUN_IPV4_SRC', value: PEER }, hex('00013e04 c0a83c0c'));
    assertRoundTrip(oxm, { field: 'TUN_IPV4_DST', value: PEER }, hex('00014004 c0a83c0c'));
    assertRoundTrip(
      oxm,
      { field: 'TUN_IPV4_SRC', value: '192.168.60.0', mask: '255.255.255.0' },
      hex('00013f08 c0a83c00 ffffff00'),
    );
    assertRoundTrip(
      oxm,
      { field: 'TUN_IPV4_DST', value: '192.168.0.0', mask: '255.255.0.0' },
      hex('00014108 c0a80000 ffff0000'),
    );
  });

  it('OXM: the lookup is by class and number; other class-0x0001 fields and the same numbers elsewhere stay RAW', () => {
    assert.equal(oxmFieldName(NXM_1_FIELDS.TUN_IPV4_SRC.number, OxmClass.NXM_1), 'TUN_IPV4_SRC');
    assert.equal(oxmFieldName(NXM_1_FIELDS.TUN_IPV4_DST.number, OxmClass.NXM_1), 'TUN_IPV4_DST');
    assert.equal(oxmFieldName(31), undefined);
    assert.equal(oxmFieldName(12, OxmClass.NXM_1), undefined);
    // NXM_NX_REG0 (class 0x0001, field 0), NXM_NX_PKT_MARK (class 0x0001, field 33), field 31 of class 0x0000, basic
    // field 32 (IPV6_ND_SLL).
    const raw: [number, number, string][] = [
      [OxmClass.NXM_1, 0, '0000002a'],
      [OxmClass.NXM_1, 33, '0000002a'],
      [OxmClass.NXM_0, 31, 'c0a83c0c'],
      [OxmClass.OPENFLOW_BASIC, 32, '0a0b0c0d0e0f'],
    ];
    for (const [oxmClass, oxmField, payload] of raw) {
      const header = ((oxmClass << 16) | (oxmField << 9) | (payload.length / 2)) >>> 0;
      const bytes = hex(header.toString(16).padStart(8, '0') + payload);
      assertRoundTrip(oxm, { field: 'RAW', oxmClass, oxmField, hasMask: false, payload: hex(payload) }, bytes);
    }
  });

  it('OXM: a tunnel field whose length is not 4 (or 8 with a mask) is refused with a stable code', () => {
    for (const bad of ['00013e02 c0a8', '00014005 c0a83c0c00', '00013f04 c0a83c0c']) {
      assert.throws(
        () => oxm.decode(hex(bad)),
        (error: unknown) => error instanceof OpenFlowDecodeError && error.reason === 'bad-field-length',
      );
    }
  });

  it('actions: setTunnelDestination is SET_FIELD of TUN_IPV4_DST, 16 octets, and decodes back to the same value', () => {
    const action = setTunnelDestination(PEER);
    assert.deepEqual(action, { type: 'SET_FIELD', field: { field: 'TUN_IPV4_DST', value: PEER } });
    assertRoundTrip(actionList, [action], hex(SET_TUN_DST_PEER));
    assertRoundTrip(actionList, [action, output(TUNNEL_PORT)], hex(SET_TUN_DST_PEER + OUTPUT_TUNNEL));
    assert.deepEqual(actionList.decode(actionList.encode([setTunnelDestination('10.0.0.5')])), [
      setTunnelDestination('10.0.0.5'),
    ]);
  });

  it('packet-in: tunnelSourceOf gives the outer source next to inPortOf, and nothing for a packet from a pod', () => {
    const packetIn = openflow.decode(hex(vectors.find((v) => v.message.type === 'PACKET_IN')!.hex));
    assert.ok(packetIn.type === 'PACKET_IN');
    assert.equal(inPortOf(packetIn), TUNNEL_PORT);
    assert.equal(tunnelSourceOf(packetIn), PEER);
    assert.equal(tunnelSourceOf({ match: [{ field: 'IN_PORT', value: 1 }] }), undefined);
    // Only tun_src counts: a match with tun_dst alone names no sender.
    assert.equal(tunnelSourceOf({ match: [{ field: 'TUN_IPV4_DST', value: US }] }), undefined);
    assertRoundTrip(match, TUNNEL_MATCH, hex(TUNNEL_MATCH_HEX));
  });

  it('limits: a tunnel bucket is 48 octets, as encoded, and 1364 of them fit in one GROUP_MOD', () => {
    assert.equal(TUNNEL_BUCKET_LENGTH, 48);
    assert.equal(bucketLength(tunnelBucket), TUNNEL_BUCKET_LENGTH);
    assert.equal(hex(TUNNEL_BUCKET).length, TUNNEL_BUCKET_LENGTH);
    assert.equal(maxBucketsPerGroupMod(TUNNEL_BUCKET_LENGTH), 1364);
    const full = groupMod({ groupId: 1, buckets: Array.from({ length: 1364 }, () => tunnelBucket) });
    assert.equal(openflow.encode(full).length, 16 + 1364 * 48);
    assert.throws(() =>
      openflow.encode(groupMod({ groupId: 1, buckets: Array.from({ length: 1365 }, () => tunnelBucket) })),
    );
  });
});

// ---------------------------------------------------------------------------------------
// OVS's own decoder reads the hand-written bytes as we mean them.

function ovsOfctl(args: string[], input?: string): string | undefined {
  try {
    return execFileSync('ovs-ofctl', args, {
      encoding: 'utf8',
      input,
      stdio: [input === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'],
    });
  } catch (error) {
    if ((error as { code?: string }).code === 'ENOENT') return undefined;
    throw error;
  }
}

const haveOfctl = ovsOfctl(['ofp-print', '0402000800000000']) !== undefined;

describe('OpenFlow codec: tunnel fields as ovs-ofctl reads them', () => {
  before(() => assert.ok(haveOfctl, 'ovs-ofctl is not installed: run scripts/setup.sh'));
  const ofpPrint = (name: string) =>
    ovsOfctl([
      'ofp-print',
      Buffer.from(openflow.encode(vectors.find((v) => v.name === name)!.message)).toString('hex'),
    ])!;

  it('the set_field action: OVS decodes it and re-encodes the same bytes', () => {
    // parse-actions reports any difference between the input and its own re-encoding.
    const printed = ovsOfctl(['parse-actions', 'OpenFlow13'], SET_TUN_DST_PEER + OUTPUT_TUNNEL)!;
    assert.equal(printed.trim(), `actions=set_field:${PEER}->tun_dst,output:${TUNNEL_PORT}`);
  });

  it('GROUP_MOD', () => {
    assert.match(
      ofpPrint('GROUP_MOD ADD ALL with a tunnel bucket'),
      /ADD group_id=7,type=all,bucket=actions=set_field:192\.168\.60\.12->tun_dst,output:2/,
    );
  });

  it('GROUP_DESC reply', () => {
    assert.match(
      ofpPrint('MULTIPART_REPLY GROUP_DESC with a tunnel bucket'),
      /group_id=7,type=all,bucket=actions=set_field:192\.168\.60\.12->tun_dst,output:2/,
    );
  });

  it('PACKET_OUT', () => {
    assert.match(
      ofpPrint('PACKET_OUT from CONTROLLER into the tunnel'),
      /in_port=CONTROLLER actions=set_field:192\.168\.60\.12->tun_dst,output:2/,
    );
  });

  it('PACKET_IN', () => {
    assert.match(
      ofpPrint('PACKET_IN from the tunnel with tun_src and tun_dst in its match'),
      /tun_src=192\.168\.60\.12,tun_dst=192\.168\.60\.11,in_port=2/,
    );
  });
});
