/**
 * The kernel struct codecs against the kernel's own headers. test/fixtures/kernel-structs.c,
 * compiled here by gcc against this machine's linux/mroute.h, linux/mroute6.h and
 * netinet/in.h, prints each struct's sizeof and its fields' offsetof and sizeof. Each codec
 * is read as a black box, field by field, and must agree:
 *
 * - its encodingLength and its length constant are the struct's sizeof;
 * - the base value (every field zero, but for values a struct cannot do without, such as a
 *   sockaddr's family) encodes to the base octets built from the header, zeros with those
 *   values at their offsets, and decodes from them back to itself;
 * - for each field, a marker (a value whose every octet is non-zero) set in that field alone
 *   changes the encoding exactly where the header puts the field, to the octets the kernel
 *   reads; and the marker's octets written at the header's offset into the base octets
 *   decode to the base value with that field, and nothing else, changed.
 *
 * Needs gcc and the kernel's headers (linux-libc-dev), neither root nor a kernel that routes
 * multicast: the headers fix the layout the kernel reads.
 */
import assert from 'node:assert/strict';
import { it } from '../helpers/node-test.js';

import { IF_SETSIZE, MAXVIFS, VIFF_USE_IFINDEX } from '../../src/protocol/mroute/constants.js';
import {
  GROUP_FILTER_BASE_LENGTH,
  GROUP_REQ_LENGTH,
  GROUP_SOURCE_REQ_LENGTH,
  type GroupFilter,
  groupFilter,
  groupReq,
  groupSourceReq,
} from '../../src/protocol/mroute/group-req.js';
import * as igmpmsg from '../../src/protocol/mroute/igmpmsg.js';
import * as ipMreqn from '../../src/protocol/mroute/ip-mreqn.js';
import * as ipv6Mreq from '../../src/protocol/mroute/ipv6-mreq.js';
import * as mf6cctl from '../../src/protocol/mroute/mf6cctl.js';
import * as mfcctl from '../../src/protocol/mroute/mfcctl.js';
import * as mif6ctl from '../../src/protocol/mroute/mif6ctl.js';
import * as mrt6msg from '../../src/protocol/mroute/mrt6msg.js';
import * as vifctl from '../../src/protocol/mroute/vifctl.js';
import { checkStruct, hostOrder, kernelLayout } from '../helpers/kernel-layout.js';

const kernel = kernelLayout();

// Markers: no octet is zero, so a marker changes every octet of the field it is set in.
const BYTE = 0xa5;
const U16 = 0x1a2b;
const U32 = 0x1a2b3c4d;
const IPV4 = { text: '198.51.100.7', octets: [198, 51, 100, 7] };
const IPV6 = {
  text: '2001:db8:a1b2:c3d4:e5f6:1718:191a:1b1c',
  octets: [0x20, 0x01, 0x0d, 0xb8, 0xa1, 0xb2, 0xc3, 0xd4, 0xe5, 0xf6, 0x17, 0x18, 0x19, 0x1a, 0x1b, 0x1c],
};

const AF_INET = hostOrder(kernel.constant('AF_INET'), 2);
const AF_INET6 = hostOrder(kernel.constant('AF_INET6'), 2);
const NO_TTLS: number[] = Array(MAXVIFS).fill(0);

function ttlsWith(vif: number, ttl: number): number[] {
  return NO_TTLS.map((zero, index) => (index === vif ? ttl : zero));
}

/** The bits of an if_set word with one bit in each of its octets, the word's first and last among them. */
const IFSET_BITS = [0, 9, 18, 31];
const IFSET_WORD = IFSET_BITS.reduce((word, bit) => word + 2 ** bit, 0);

/** The MIFs that IFSET_WORD stands for as the if_set's word `word`. */
function mifsOfWord(word: number): number[] {
  return IFSET_BITS.map((bit) => 32 * word + bit);
}
const LAST_IFSET_WORD = IF_SETSIZE / 32 - 1;

const vifctlBase: vifctl.VifCtl = {
  vif: 0,
  flags: 0,
  threshold: 0,
  rateLimit: 0,
  local: { kind: 'address', address: '0.0.0.0' },
  remoteAddress: '0.0.0.0',
};

checkStruct({
  struct: 'vifctl',
  title: 'vifctl',
  codec: vifctl,
  lengthConstant: vifctl.VIFCTL_LENGTH,
  base: { value: vifctlBase, octets: {} },
  fields: {
    vifc_vifi: { value: { vif: U16 }, octets: hostOrder(U16, 2) },
    // BYTE leaves VIFF_USE_IFINDEX clear, so the union stays an address on both sides.
    vifc_flags: { value: { flags: BYTE }, octets: [BYTE] },
    vifc_threshold: { value: { threshold: BYTE }, octets: [BYTE] },
    vifc_rate_limit: { value: { rateLimit: U32 }, octets: hostOrder(U32, 4) },
    vifc_lcl_addr: { value: { local: { kind: 'address', address: IPV4.text } }, octets: IPV4.octets },
    // The union's other arm: read as an ifindex when the flags hold VIFF_USE_IFINDEX.
    vifc_lcl_ifindex: {
      base: {
        value: { ...vifctlBase, flags: VIFF_USE_IFINDEX, local: { kind: 'ifindex', ifindex: 0 } },
        octets: { vifc_flags: [kernel.constant('VIFF_USE_IFINDEX')] },
      },
      value: { local: { kind: 'ifindex', ifindex: U32 } },
      octets: hostOrder(U32, 4),
    },
    vifc_rmt_addr: { value: { remoteAddress: IPV4.text }, octets: IPV4.octets },
  },
});

checkStruct({
  struct: 'mfcctl',
  title: 'mfcctl',
  codec: mfcctl,
  lengthConstant: mfcctl.MFCCTL_LENGTH,
  base: {
    value: {
      origin: '0.0.0.0',
      group: '0.0.0.0',
      parent: 0,
      ttls: NO_TTLS,
      packets: 0,
      bytes: 0,
      wrongIf: 0,
      expire: 0,
    },
    octets: {},
  },
  fields: {
    mfcc_origin: { value: { origin: IPV4.text }, octets: IPV4.octets },
    mfcc_mcastgrp: { value: { group: IPV4.text }, octets: IPV4.octets },
    mfcc_parent: { value: { parent: U16 }, octets: hostOrder(U16, 2) },
    // The TTL array is probed at its ends: its first and last VIF.
    'mfcc_ttls[0]': { value: { ttls: ttlsWith(0, BYTE) }, octets: [BYTE] },
    [`mfcc_ttls[${MAXVIFS - 1}]`]: { value: { ttls: ttlsWith(MAXVIFS - 1, BYTE) }, octets: [BYTE] },
    mfcc_pkt_cnt: { value: { packets: U32 }, octets: hostOrder(U32, 4) },
    mfcc_byte_cnt: { value: { bytes: U32 }, octets: hostOrder(U32, 4) },
    mfcc_wrong_if: { value: { wrongIf: U32 }, octets: hostOrder(U32, 4) },
    mfcc_expire: { value: { expire: U32 }, octets: hostOrder(U32, 4) },
  },
});

checkStruct({
  struct: 'igmpmsg',
  title: 'igmpmsg',
  codec: igmpmsg,
  lengthConstant: igmpmsg.IGMPMSG_LENGTH,
  base: { value: { type: 0, vif: 0, source: '0.0.0.0', group: '0.0.0.0' }, octets: {} },
  fields: {
    // The codec writes the unused fields and im_mbz as zeros and reads nothing from them:
    // decoding must ignore a marker there. readUpcall finds im_mbz by its offset constant.
    unused1: { value: {}, octets: hostOrder(U32, 4), decodeOnly: true },
    unused2: { value: {}, octets: hostOrder(U32, 4), decodeOnly: true },
    im_msgtype: { value: { type: BYTE }, octets: [BYTE] },
    im_mbz: { value: {}, octets: [BYTE], decodeOnly: true },
    // The codec's VIF is 16 bits wide: its low octet is im_vif, its high one im_vif_hi.
    im_vif: { value: { vif: BYTE }, octets: [BYTE] },
    im_vif_hi: { value: { vif: BYTE << 8 }, octets: [BYTE] },
    im_src: { value: { source: IPV4.text }, octets: IPV4.octets },
    im_dst: { value: { group: IPV4.text }, octets: IPV4.octets },
  },
  offsetConstants: { im_mbz: igmpmsg.IGMPMSG_MBZ_OFFSET },
});

checkStruct({
  struct: 'ip_mreqn',
  title: 'ip_mreqn',
  codec: ipMreqn,
  lengthConstant: ipMreqn.IP_MREQN_LENGTH,
  base: { value: { group: '0.0.0.0', address: '0.0.0.0', ifindex: 0 }, octets: {} },
  fields: {
    imr_multiaddr: { value: { group: IPV4.text }, octets: IPV4.octets },
    imr_address: { value: { address: IPV4.text }, octets: IPV4.octets },
    imr_ifindex: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
  },
});

// In the RFC 3678 structs, each address is a sockaddr_storage that the kernel reads as a
// sockaddr_in or sockaddr_in6 by its family: the family is in every base (a storage without
// it does not decode), and the address is probed where that sockaddr puts it. The rest of
// each storage is zeros in the base octets.

checkStruct({
  struct: 'group_source_req',
  title: 'group_source_req (IPv4)',
  codec: groupSourceReq.ipv4,
  lengthConstant: GROUP_SOURCE_REQ_LENGTH,
  base: {
    value: { ifindex: 0, group: '0.0.0.0', source: '0.0.0.0' },
    octets: { 'gsr_group.ss_family': AF_INET, 'gsr_source.ss_family': AF_INET },
  },
  fields: {
    gsr_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
    'gsr_group.sin_addr': { value: { group: IPV4.text }, octets: IPV4.octets },
    'gsr_source.sin_addr': { value: { source: IPV4.text }, octets: IPV4.octets },
  },
});

// glibc's group_filter has room for one source, so its sizeof is GROUP_FILTER_SIZE(1): the
// bases hold one source. gf_numsrc is in the bases (1) rather than probed, since another
// count changes the struct's length. gf_fmode's marker is MCAST_INCLUDE, the one value
// besides MCAST_EXCLUDE (0) that the codecs take: its zero octets do not change, so encoding
// shows only where its low octet goes, and decoding checks the whole field.

checkStruct<GroupFilter>({
  struct: 'group_filter',
  title: 'group_filter (IPv4)',
  codec: groupFilter.ipv4,
  base: {
    value: { ifindex: 0, group: '0.0.0.0', mode: 'exclude', sources: ['0.0.0.0'] },
    octets: {
      'gf_group.ss_family': AF_INET,
      gf_fmode: hostOrder(kernel.constant('MCAST_EXCLUDE'), 4),
      gf_numsrc: hostOrder(1, 4),
      'gf_slist[0].ss_family': AF_INET,
    },
  },
  fields: {
    gf_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
    'gf_group.sin_addr': { value: { group: IPV4.text }, octets: IPV4.octets },
    gf_fmode: { value: { mode: 'include' }, octets: hostOrder(kernel.constant('MCAST_INCLUDE'), 4) },
    'gf_slist[0].sin_addr': { value: { sources: [IPV4.text] }, octets: IPV4.octets },
  },
});

checkStruct({
  struct: 'mif6ctl',
  title: 'mif6ctl',
  codec: mif6ctl,
  lengthConstant: mif6ctl.MIF6CTL_LENGTH,
  base: { value: { mif: 0, flags: 0, threshold: 0, ifindex: 0, rateLimit: 0 }, octets: {} },
  fields: {
    mif6c_mifi: { value: { mif: U16 }, octets: hostOrder(U16, 2) },
    mif6c_flags: { value: { flags: BYTE }, octets: [BYTE] },
    vifc_threshold: { value: { threshold: BYTE }, octets: [BYTE] },
    mif6c_pifi: { value: { ifindex: U16 }, octets: hostOrder(U16, 2) },
    vifc_rate_limit: { value: { rateLimit: U32 }, octets: hostOrder(U32, 4) },
  },
});

checkStruct({
  struct: 'mf6cctl',
  title: 'mf6cctl',
  codec: mf6cctl,
  lengthConstant: mf6cctl.MF6CCTL_LENGTH,
  base: {
    value: { origin: '::', group: '::', parent: 0, oifs: [] },
    octets: { 'mf6cc_origin.sin6_family': AF_INET6, 'mf6cc_mcastgrp.sin6_family': AF_INET6 },
  },
  fields: {
    'mf6cc_origin.sin6_addr': { value: { origin: IPV6.text }, octets: IPV6.octets },
    'mf6cc_mcastgrp.sin6_addr': { value: { group: IPV6.text }, octets: IPV6.octets },
    mf6cc_parent: { value: { parent: U16 }, octets: hostOrder(U16, 2) },
    // The if_set is probed by its first and last word (MIF 0 and 31 are in the first). The
    // codec encodes no MIF from MAXMIFS (32) on, since the kernel reads none, so the last word
    // is checked by decoding only.
    'mf6cc_ifset.ifs_bits[0]': { value: { oifs: mifsOfWord(0) }, octets: hostOrder(IFSET_WORD, 4) },
    [`mf6cc_ifset.ifs_bits[${LAST_IFSET_WORD}]`]: {
      value: { oifs: mifsOfWord(LAST_IFSET_WORD) },
      octets: hostOrder(IFSET_WORD, 4),
      decodeOnly: true,
    },
  },
});

checkStruct({
  struct: 'mrt6msg',
  title: 'mrt6msg',
  codec: mrt6msg,
  lengthConstant: mrt6msg.MRT6MSG_LENGTH,
  base: { value: { type: 0, mif: 0, source: '::', group: '::' }, octets: {} },
  fields: {
    // The codec writes im6_mbz and im6_pad as zeros and reads nothing from them: decoding must
    // ignore a marker there. readUpcall finds im6_mbz by its offset constant.
    im6_mbz: { value: {}, octets: [BYTE], decodeOnly: true },
    im6_msgtype: { value: { type: BYTE }, octets: [BYTE] },
    im6_mif: { value: { mif: U16 }, octets: hostOrder(U16, 2) },
    im6_pad: { value: {}, octets: hostOrder(U32, 4), decodeOnly: true },
    im6_src: { value: { source: IPV6.text }, octets: IPV6.octets },
    im6_dst: { value: { group: IPV6.text }, octets: IPV6.octets },
  },
  offsetConstants: { im6_mbz: mrt6msg.MRT6MSG_MBZ_OFFSET },
});

checkStruct({
  struct: 'ipv6_mreq',
  title: 'ipv6_mreq',
  codec: ipv6Mreq,
  lengthConstant: ipv6Mreq.IPV6_MREQ_LENGTH,
  base: { value: { group: '::', ifindex: 0 }, octets: {} },
  fields: {
    ipv6mr_multiaddr: { value: { group: IPV6.text }, octets: IPV6.octets },
    ipv6mr_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
  },
});

checkStruct({
  struct: 'group_req',
  title: 'group_req (IPv6)',
  codec: groupReq.ipv6,
  lengthConstant: GROUP_REQ_LENGTH,
  base: { value: { ifindex: 0, group: '::' }, octets: { 'gr_group.ss_family': AF_INET6 } },
  fields: {
    gr_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
    'gr_group.sin6_addr': { value: { group: IPV6.text }, octets: IPV6.octets },
  },
});

checkStruct({
  struct: 'group_source_req',
  title: 'group_source_req (IPv6)',
  codec: groupSourceReq.ipv6,
  lengthConstant: GROUP_SOURCE_REQ_LENGTH,
  base: {
    value: { ifindex: 0, group: '::', source: '::' },
    octets: { 'gsr_group.ss_family': AF_INET6, 'gsr_source.ss_family': AF_INET6 },
  },
  fields: {
    gsr_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
    'gsr_group.sin6_addr': { value: { group: IPV6.text }, octets: IPV6.octets },
    'gsr_source.sin6_addr': { value: { source: IPV6.text }, octets: IPV6.octets },
  },
});

checkStruct<GroupFilter>({
  struct: 'group_filter',
  title: 'group_filter (IPv6)',
  codec: groupFilter.ipv6,
  base: {
    value: { ifindex: 0, group: '::', mode: 'exclude', sources: ['::'] },
    octets: {
      'gf_group.ss_family': AF_INET6,
      gf_fmode: hostOrder(kernel.constant('MCAST_EXCLUDE'), 4),
      gf_numsrc: hostOrder(1, 4),
      'gf_slist[0].ss_family': AF_INET6,
    },
  },
  fields: {
    gf_interface: { value: { ifindex: U32 }, octets: hostOrder(U32, 4) },
    'gf_group.sin6_addr': { value: { group: IPV6.text }, octets: IPV6.octets },
    gf_fmode: { value: { mode: 'include' }, octets: hostOrder(kernel.constant('MCAST_INCLUDE'), 4) },
    'gf_slist[0].sin6_addr': { value: { sources: [IPV6.text] }, octets: IPV6.octets },
  },
});

it("group_filter's lengths are GROUP_FILTER_SIZE's", () => {
  const size = (sources: number) => kernel.constant(`GROUP_FILTER_SIZE(${sources})`);
  for (const sources of [0, 1]) {
    const ipv4 = groupFilter.ipv4.encodingLength({
      ifindex: 0,
      group: '0.0.0.0',
      mode: 'include',
      sources: Array(sources).fill('0.0.0.0'),
    });
    const ipv6 = groupFilter.ipv6.encodingLength({
      ifindex: 0,
      group: '::',
      mode: 'include',
      sources: Array(sources).fill('::'),
    });
    assert.equal(
      ipv4,
      size(sources),
      `group_filter (IPv4): encodingLength of ${sources} sources is not GROUP_FILTER_SIZE(${sources})`,
    );
    assert.equal(
      ipv6,
      size(sources),
      `group_filter (IPv6): encodingLength of ${sources} sources is not GROUP_FILTER_SIZE(${sources})`,
    );
  }
  assert.equal(
    GROUP_FILTER_BASE_LENGTH,
    size(0),
    'group_filter (both families): GROUP_FILTER_BASE_LENGTH is not GROUP_FILTER_SIZE(0)',
  );
});
