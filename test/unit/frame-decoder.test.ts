import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { LinkType } from '../../src/packet/pcap/index.js';
import { decodeFrame, ipv4Locator, type FrameEvent } from '../../src/packet/frame-decoder.js';
import { toJsonLine } from '../../src/packet/frame-event-json.js';
import { toJsonRecord } from '../../src/packet/frame-event-record.js';
import { V3_JOIN_239_1_1_1, V3_LEAVE_239_1_1_1 } from '../fixtures/real-frames.js';
import { hex } from '../helpers/bytes.js';
import { hostileFrames, validFrames } from '../helpers/hostile-frames.js';

const ethernet = ipv4Locator(LinkType.ETHERNET);
const meta = { frame: 7, ts: 1700000000.25 };

function decode(frame: Uint8Array, locate = ethernet): FrameEvent | undefined {
  return decodeFrame(locate, frame, meta);
}

describe('frame decoder', () => {
  it('turns a real kernel join into the --json record of the contract', () => {
    assert.deepEqual(toJsonRecord(decode(V3_JOIN_239_1_1_1)!), {
      frame: 7,
      ts: 1700000000.25,
      src: '10.9.0.1',
      dst: '224.0.0.22',
      version: 3,
      type: 'report',
      records: [{ type: 'CHANGE_TO_EXCLUDE_MODE', group: '239.1.1.1', sources: [] }],
    });
    assert.deepEqual(toJsonRecord(decode(V3_LEAVE_239_1_1_1)!).records, [{ type: 'CHANGE_TO_INCLUDE_MODE', group: '239.1.1.1', sources: [] }]);
  });
  it('the fast NDJSON line is exactly JSON.stringify of the record', () => {
    const frames = [V3_JOIN_239_1_1_1, V3_LEAVE_239_1_1_1, ...Object.values(validFrames), ...hostileFrames.map((hostile) => hostile.frame)];
    let compared = 0;
    for (const frame of frames) {
      const event = decode(frame);
      if (event === undefined) continue;
      assert.equal(toJsonLine(event), JSON.stringify(toJsonRecord(event)));
      compared++;
    }
    assert.ok(compared >= hostileFrames.length + 4);
  });
  it('gives queries their times', () => {
    assert.deepEqual(toJsonRecord(decode(validFrames.v2Query)!), {
      ...meta,
      src: '10.0.0.1',
      dst: '224.0.0.1',
      version: 2,
      type: 'query',
      group: '0.0.0.0',
      maxRespTimeMs: 10000,
    });
  });
  it('reports other IGMP types by number', () => {
    const record = toJsonRecord(decode(validFrames.mtrace)!);
    assert.equal(record.type, 'other');
    assert.equal(record.igmpType, 0x1f);
    assert.equal(record.version, 1);
  });
  it('says nothing of UDP, ARP or IPv6', () => {
    assert.equal(decode(validFrames.udp), undefined);
    assert.equal(decode(validFrames.arp), undefined);
    assert.equal(decode(hex('333300000016 020000000001 86dd 6000000000080001')), undefined);
    assert.equal(decode(hex('01005e')), undefined, 'too short to be anything');
  });
  for (const hostile of hostileFrames) {
    it(`hostile: ${hostile.name} → ${hostile.error}`, () => {
      const event = decode(hostile.frame);
      assert.ok(event !== undefined && event.kind === 'malformed', 'a malformed event');
      const record = toJsonRecord(event);
      assert.equal(record.error, hostile.error);
      assert.ok(typeof record.message === 'string' && record.message.length > 10);
      assert.equal(record.type, undefined, 'no type on an error line');
    });
  }
  it('truncation at every offset of a real frame: nothing below the IPv4 header, truncated after', () => {
    for (let length = 0; length < V3_JOIN_239_1_1_1.length; length++) {
      const event = decode(V3_JOIN_239_1_1_1.subarray(0, length));
      if (length < 14) assert.equal(event, undefined, `length ${length}`);
      else assert.ok(event?.kind === 'malformed' && event.code === 'truncated', `length ${length}: ${JSON.stringify(event)}`);
    }
  });
  it('ignores Ethernet padding after the IP total length', () => {
    const padded = Buffer.concat([V3_JOIN_239_1_1_1, Buffer.alloc(6)]);
    assert.equal(decode(padded)?.kind, 'igmp');
  });
  it('decodes every supported link type', () => {
    const packet = V3_JOIN_239_1_1_1.subarray(14);
    const raw = decode(packet, ipv4Locator(LinkType.RAW));
    assert.equal(raw?.kind, 'igmp');
    assert.equal(decode(packet, ipv4Locator(12))?.kind, 'igmp', 'BSD DLT_RAW');
    assert.equal(decode(packet, ipv4Locator(LinkType.IPV4))?.kind, 'igmp');
    // SLL (16 octets): packet type 2 (multicast), ARPHRD 1, address length 6, address, protocol 0x0800.
    const sll = Buffer.concat([hex('0002 0001 0006 1687c5031deb 0000 0800'), packet]);
    assert.equal(decode(sll, ipv4Locator(LinkType.LINUX_SLL))?.kind, 'igmp');
    // SLL2 (20 octets): protocol 0x0800, reserved, ifindex 3, ARPHRD 1, packet type 2, address length 6, address.
    const sll2 = Buffer.concat([hex('0800 0000 00000003 0001 02 06 1687c5031deb 0000'), packet]);
    assert.equal(decode(sll2, ipv4Locator(LinkType.LINUX_SLL2))?.kind, 'igmp');
    assert.equal(decode(Buffer.concat([hex('86dd 0000 00000003 0001 02 06 1687c5031deb 0000'), packet]), ipv4Locator(LinkType.LINUX_SLL2)), undefined);
  });
  it('refuses a link type it cannot decode, by a typed error', () => {
    assert.throws(
      () => ipv4Locator(147),
      (error: unknown) => (error as { code?: string }).code === 'unsupported-link-type',
    );
  });
});
