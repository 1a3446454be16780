/**
 * OpenFlow lookup tables: message types, error types and codes (OpenFlow 1.3.5 §7.1,
 * §7.4.4; numbers cross-checked with OVS's include/openvswitch/ofp-errors.h), experimenter
 * errors, OXM fields, endpoints, and the bucket limit.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { UsageError } from '../../src/errors.js';
import { parseEndpoint } from '../../src/wire/endpoint.js';
import {
  describeError,
  errorCodeName,
  errorCodeNumber,
  errorTypeName,
  EXPERIMENTER_IDS,
  OFP_ERROR_TYPES,
} from '../../src/protocol/openflow/error-code.js';
import { MAX_OUTPUT_BUCKETS_PER_GROUP_MOD, maxBucketsPerGroupMod } from '../../src/protocol/openflow/limits.js';
import {
  describeOfpType,
  describeOfpVersion,
  OFP_TYPE_NUMBERS,
  ofpTypeName,
} from '../../src/protocol/openflow/message-type.js';
import { OXM_FIELDS, oxmFieldName } from '../../src/protocol/openflow/oxm-field.js';
import { describePort, OfpPort } from '../../src/protocol/openflow/reserved.js';

describe('OpenFlow lookup tables', () => {
  it('message types: numbers ↔ names, 0..29 all named', () => {
    for (const [name, number] of Object.entries(OFP_TYPE_NUMBERS)) assert.equal(ofpTypeName(number), name);
    for (let type = 0; type <= 29; type++) assert.ok(ofpTypeName(type), `type ${type}`);
    assert.equal(ofpTypeName(30), undefined);
    assert.equal(describeOfpType(14), 'FLOW_MOD');
    assert.equal(describeOfpType(200), 'type 200');
    assert.equal(describeOfpVersion(4), '1.3');
    assert.equal(describeOfpVersion(0x42), '0x42');
  });

  it('error types and the codes OVS sends in 1.3', () => {
    const spot: [number, number, string][] = [
      [0, 0, 'HELLO_FAILED/INCOMPATIBLE'],
      [1, 1, 'BAD_REQUEST/BAD_TYPE'],
      [1, 13, 'BAD_REQUEST/MULTIPART_BUFFER_OVERFLOW'],
      [2, 4, 'BAD_ACTION/BAD_OUT_PORT'],
      [2, 9, 'BAD_ACTION/BAD_OUT_GROUP'],
      [2, 15, 'BAD_ACTION/BAD_SET_ARGUMENT'],
      [3, 8, 'BAD_INSTRUCTION/EPERM'],
      [4, 9, 'BAD_MATCH/BAD_PREREQ'],
      [4, 11, 'BAD_MATCH/EPERM'],
      [5, 7, 'FLOW_MOD_FAILED/BAD_FLAGS'],
      [6, 0, 'GROUP_MOD_FAILED/GROUP_EXISTS'],
      [6, 4, 'GROUP_MOD_FAILED/OUT_OF_BUCKETS'],
      [6, 8, 'GROUP_MOD_FAILED/UNKNOWN_GROUP'],
      [6, 14, 'GROUP_MOD_FAILED/EPERM'],
      [7, 4, 'PORT_MOD_FAILED/EPERM'],
      [8, 2, 'TABLE_MOD_FAILED/EPERM'],
      [9, 2, 'QUEUE_OP_FAILED/EPERM'],
      [10, 2, 'SWITCH_CONFIG_FAILED/EPERM'],
      [11, 2, 'ROLE_REQUEST_FAILED/BAD_ROLE'],
      [12, 11, 'METER_MOD_FAILED/OUT_OF_BANDS'],
      [13, 5, 'TABLE_FEATURES_FAILED/EPERM'],
    ];
    for (const [type, code, name] of spot) assert.equal(describeError({ errorType: type, code }), name);
    assert.equal(errorTypeName(OFP_ERROR_TYPES.EXPERIMENTER), 'EXPERIMENTER');
    assert.equal(errorCodeName(6, 99), undefined);
    assert.equal(errorCodeNumber('GROUP_MOD_FAILED', 'GROUP_EXISTS'), 0);
    assert.equal(describeError({ errorType: 6, code: 99 }), 'GROUP_MOD_FAILED/code 99');
    assert.equal(describeError({ errorType: 77, code: 3 }), 'type 77/code 3');
  });

  it('experimenter errors: NX and ONF by number, named when known', () => {
    assert.equal(
      describeError({ errorType: 0xffff, code: 12, experimenter: EXPERIMENTER_IDS.NX }),
      'NX(12)/NXFMFC_HARDWARE',
    );
    assert.equal(
      describeError({ errorType: 0xffff, code: 43, experimenter: EXPERIMENTER_IDS.NX }),
      'NX(43)/NXBMC_CT_DATAPATH_SUPPORT',
    );
    assert.equal(describeError({ errorType: 0xffff, code: 99, experimenter: EXPERIMENTER_IDS.NX }), 'NX(99)');
    assert.equal(
      describeError({ errorType: 0xffff, code: 2370, experimenter: EXPERIMENTER_IDS.ONF }),
      'ONF(2370)/OFPACFC_INVALID',
    );
    assert.equal(describeError({ errorType: 0xffff, code: 5, experimenter: 0x12345678 }), 'EXPERIMENTER 0x12345678(5)');
  });

  it('OXM fields: numbers ↔ names', () => {
    for (const [name, spec] of Object.entries(OXM_FIELDS)) assert.equal(oxmFieldName(spec.number), name);
    assert.equal(OXM_FIELDS.IPV4_DST.number, 12);
    assert.equal(OXM_FIELDS.IP_PROTO.number, 10);
    assert.equal(OXM_FIELDS.IPV6_SRC.number, 26);
    assert.equal(OXM_FIELDS.IPV6_DST.number, 27);
    assert.equal(OXM_FIELDS.ICMPV6_TYPE.number, 29);
    assert.equal(OXM_FIELDS.ICMPV6_CODE.number, 30);
    assert.equal(oxmFieldName(26), 'IPV6_SRC');
    assert.equal(oxmFieldName(27), 'IPV6_DST');
    assert.equal(oxmFieldName(29), 'ICMPV6_TYPE');
    assert.equal(oxmFieldName(30), 'ICMPV6_CODE');
    assert.equal(oxmFieldName(28), undefined); // IPV6_FLABEL: passed through raw
    assert.equal(oxmFieldName(31), undefined); // IPV6_ND_TARGET: Neighbor Discovery is never matched
  });

  it('reserved ports', () => {
    assert.equal(describePort(OfpPort.CONTROLLER), 'CONTROLLER');
    assert.equal(describePort(OfpPort.ANY), 'ANY');
    assert.equal(describePort(7), '7');
  });

  it('endpoints', () => {
    assert.deepEqual(parseEndpoint('unix:/var/run/openvswitch/br-int.mgmt', 'OpenFlow'), {
      kind: 'unix',
      path: '/var/run/openvswitch/br-int.mgmt',
      text: 'unix:/var/run/openvswitch/br-int.mgmt',
    });
    assert.deepEqual(parseEndpoint('tcp:127.0.0.1:6653', 'OpenFlow'), {
      kind: 'tcp',
      host: '127.0.0.1',
      port: 6653,
      text: 'tcp:127.0.0.1:6653',
    });
    assert.deepEqual(parseEndpoint('tcp:[::1]:6653', 'OpenFlow'), {
      kind: 'tcp',
      host: '::1',
      port: 6653,
      text: 'tcp:[::1]:6653',
    });
    for (const bad of ['br-int', 'unix:', 'tcp:host', 'tcp:host:0', 'tcp:host:70000', 'ssl:1.2.3.4:6653']) {
      assert.throws(
        () => parseEndpoint(bad, 'OpenFlow'),
        (error: unknown) => error instanceof UsageError && error.code === 'bad-address' && error.exitCode === 64,
        bad,
      );
    }
  });

  it('buckets per GROUP_MOD: 2047 single-OUTPUT buckets fit 65535 octets', () => {
    assert.equal(MAX_OUTPUT_BUCKETS_PER_GROUP_MOD, 2047);
    assert.equal(16 + 2047 * 32, 65520);
    assert.equal(maxBucketsPerGroupMod(48), 1364);
    assert.throws(() => maxBucketsPerGroupMod(20), RangeError);
  });
});
