/**
 * `query`'s pure parts: the flags → query spec checks, the packet on the wire (against
 * bytes written out by hand from RFC 791, 2113, 2236 and 3376, and for MLD from RFC 8200,
 * 2711, 2710 and 3810), and the responder table
 * (answers, versions, filters, delays, the querier election), and the run's order of
 * events against a fake link.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { McastError, ExitCode } from '../../src/errors.js';
import type { IgmpMessage } from '../../src/packet/igmp/index.js';
import * as queryPacket from '../../src/packet/query-frame.js';
import type { QueryPacket } from '../../src/packet/query-frame.js';
import type { QueryLink } from '../../src/adapters/query-link/query-link.js';
import { runQuery } from '../../src/controllers/query/query-run.js';
import {
  parseQuerySpec,
  queryDestination,
  queryKind,
  queryMessage,
  type QueryRequest,
} from '../../src/controllers/query/query-spec.js';
import type { HeardIgmp } from '../../src/adapters/query-link/query-link.js';
import { ResponderTable, type SentQuery } from '../../src/controllers/query/responder-table.js';
import { decodeFrame, ipLocator } from '../../src/packet/frame-decoder.js';
import { ethernetFrame, hex, igmpBytes, ipv4Packet, referenceChecksum } from '../helpers/bytes.js';
import type { MldMessage } from '../../src/packet/mld/index.js';
import type { MldQueryPacket } from '../../src/packet/query-frame.js';
import type { HeardMld } from '../../src/adapters/query-link/query-link.js';
import {
  checkMldQuerierAddress,
  mldQueryDestination,
  mldQueryKind,
  mldQueryMessage,
  parseMldQuerySpec,
  type MldQueryRequest,
} from '../../src/controllers/query/mld-query-spec.js';

describe('query spec', () => {
  it('defaults: a v3 general query, Max Resp 10 s', () => {
    const spec = parseQuerySpec({});
    assert.deepEqual(spec, { version: 3, sources: [], maxRespMs: 10_000 });
    assert.equal(queryKind(spec), 'general');
    assert.equal(queryDestination(spec), '224.0.0.1');
  });

  it('group and group-and-source queries go to the group', () => {
    const group = parseQuerySpec({ version: '2', group: '239.1.2.3', maxResp: '2.5' });
    assert.deepEqual(group, { version: 2, group: '239.1.2.3', sources: [], maxRespMs: 2500 });
    assert.equal(queryKind(group), 'group');
    assert.equal(queryDestination(group), '239.1.2.3');
    const gss = parseQuerySpec({ group: '232.1.1.1', sources: '10.0.0.5, 10.0.0.6' });
    assert.equal(queryKind(gss), 'group-and-source');
    assert.deepEqual(gss.sources, ['10.0.0.5', '10.0.0.6']);
  });

  it('v3 Max Resp above 12.7 s is what the floating-point form carries (rounded down)', () => {
    assert.equal(parseQuerySpec({ maxResp: '12.7' }).maxRespMs, 12_700);
    assert.equal(parseQuerySpec({ maxResp: '20' }).maxRespMs, 20_000); // 200 = 25 << 3: exact
    assert.equal(parseQuerySpec({ maxResp: '20.1' }).maxRespMs, 20_000); // 201 rounds down to 200
    assert.equal(parseQuerySpec({ maxResp: '3174.4' }).maxRespMs, 3_174_400);
    assert.equal(parseQuerySpec({ version: '2', maxResp: '25.5' }).maxRespMs, 25_500); // v2: one octet, exact
    assert.equal(parseQuerySpec({ version: '1' }).maxRespMs, 10_000);
  });

  const refused: Array<[string, QueryRequest, RegExp]> = [
    ['version 4', { version: '4' }, /--version takes 1, 2 or 3/],
    ['version 3.0', { version: '3.0' }, /--version/],
    ['a unicast group', { group: '10.1.1.1' }, /not a multicast address/],
    ['a link-local group', { group: '224.0.0.22' }, /link-local/],
    ['not an address', { group: '239.1.1' }, /not an IPv4 or IPv6 address/],
    ['sources with v2', { version: '2', group: '239.1.1.1', sources: '10.0.0.1' }, /--source needs --version 3/],
    ['sources without a group', { sources: '10.0.0.1' }, /--source needs --group/],
    ['a multicast source', { group: '232.1.1.1', sources: '239.0.0.1' }, /not a unicast host address/],
    ['a zero source', { group: '232.1.1.1', sources: '0.0.0.0' }, /not a unicast host address/],
    ['a source twice', { group: '232.1.1.1', sources: '10.0.0.1,10.0.0.1' }, /twice/],
    ['an empty source', { group: '232.1.1.1', sources: '10.0.0.1,' }, /not an IPv4 or IPv6 address/],
    ['v1 group-specific', { version: '1', group: '239.1.1.1' }, /only general queries/],
    ['v1 max resp', { version: '1', maxResp: '5' }, /no Max Response Time/],
    ['max resp 0', { maxResp: '0' }, /out of range: 0.1 to 3174.4 s/],
    ['v2 max resp 25.6', { version: '2', maxResp: '25.6' }, /out of range: 0.1 to 25.5 s/],
    ['v3 max resp 3174.5', { maxResp: '3174.5' }, /out of range/],
    ['max resp in hundredths', { maxResp: '1.25' }, /in tenths/],
    ['a negative max resp', { maxResp: '-1' }, /in tenths/],
    ['a word', { maxResp: 'ten' }, /in tenths/],
  ];
  for (const [name, request, message] of refused) {
    it(`refuses ${name} with a usage error (exit 64)`, () => {
      assert.throws(
        () => parseQuerySpec(request),
        (error: unknown) =>
          error instanceof McastError && error.exitCode === ExitCode.Usage && message.test(error.message),
      );
    });
  }
});

describe('query packet', () => {
  const locate = ipLocator(1);

  it('a v2 group-specific query: Router Alert, TTL 1, DF, precedence 6, both checksums', () => {
    const spec = parseQuerySpec({ version: '2', group: '239.1.2.3', maxResp: '2' });
    const packet = {
      message: queryMessage(spec),
      src: '10.0.0.1',
      dst: queryDestination(spec),
      identification: 0x1234,
    };
    const expected = ipv4Packet(
      { src: '10.0.0.1', dst: '239.1.2.3', id: 0x1234, flagsAndOffset: 0x4000 },
      igmpBytes('11 14 0000 ef010203'),
    );
    assert.deepEqual(Buffer.from(queryPacket.encode(packet)), expected);
    assert.equal(queryPacket.encodingLength(packet), expected.length);
    // The frame goes to the group's MAC (RFC 1112 §6.4: low 23 bits).
    const frame = Buffer.from(queryPacket.encodeFrame(packet, '02:00:00:00:00:01'));
    assert.deepEqual(frame, ethernetFrame(expected, 0x0800, '01005e010203'));
  });

  it('a v1 query is 8 octets with a zero Max Resp and group', () => {
    const packet = {
      message: queryMessage(parseQuerySpec({ version: '1' })),
      src: '10.0.0.1',
      dst: '224.0.0.1',
      identification: 7,
    };
    assert.deepEqual(
      Buffer.from(queryPacket.encode(packet)),
      ipv4Packet(
        { src: '10.0.0.1', dst: '224.0.0.1', id: 7, flagsAndOffset: 0x4000 },
        igmpBytes('11 00 0000 00000000'),
      ),
    );
  });

  it('a v3 group-and-source query from 0.0.0.0: float Max Resp, QRV 2, QQIC 125, sources', () => {
    const spec = parseQuerySpec({ group: '232.1.1.1', sources: '10.9.9.1,10.9.9.2', maxResp: '20' });
    const packet = { message: queryMessage(spec), src: '0.0.0.0', dst: '232.1.1.1', identification: 0 };
    // Max Resp Code 200 tenths = 0x89 (1|000|1001: 25 << 3); QQIC 125 < 128: itself.
    // S set (0x08 | QRV 2): routers must not lower their timers for a query that only asks.
    const igmp = igmpBytes('11 89 0000 e8010101  0a 7d 0002  0a090901 0a090902');
    assert.deepEqual(
      Buffer.from(queryPacket.encode(packet)),
      ipv4Packet({ src: '0.0.0.0', dst: '232.1.1.1', id: 0, flagsAndOffset: 0x4000 }, igmp),
    );
    // and the snoop decoder reads it back as that query
    const event = decodeFrame(locate, queryPacket.encodeFrame(packet, '02:00:00:00:00:01'), { frame: 1, ts: 0 });
    assert.equal(event?.kind, 'igmp');
    assert.deepEqual(event.kind === 'igmp' && event.message, {
      kind: 'query',
      version: 3,
      group: '232.1.1.1',
      maxRespCode: 0x89,
      sFlag: true,
      qrv: 2,
      qqic: 125,
      sources: ['10.9.9.1', '10.9.9.2'],
    });
    assert.equal(event.kind === 'igmp' && event.ip.ttl, 1);
  });

  it('every version and kind decodes back to itself, and the MAC follows the destination', () => {
    const requests: QueryRequest[] = [
      { version: '1' },
      { version: '2' },
      { version: '2', group: '239.128.1.1' },
      {},
      { group: '239.255.0.1', maxResp: '1000' },
      { group: '232.0.0.9', sources: '192.0.2.1' },
    ];
    for (const request of requests) {
      const spec = parseQuerySpec(request);
      const packet = {
        message: queryMessage(spec),
        src: '192.0.2.200',
        dst: queryDestination(spec),
        identification: 0xffff,
      };
      const frame = queryPacket.encodeFrame(packet, 'aa:bb:cc:dd:ee:ff');
      // 239.128.1.1 and 239.0.1.1 share a MAC: bit 23 of the address is dropped
      const low23 = queryDestination(spec).split('.').map(Number);
      assert.deepEqual([...frame.subarray(0, 6)], [0x01, 0x00, 0x5e, low23[1]! & 0x7f, low23[2]!, low23[3]!]);
      const event = decodeFrame(locate, frame, { frame: 1, ts: 0 });
      assert.ok(event?.kind === 'igmp', JSON.stringify(request));
      assert.deepEqual(event.message, packet.message);
      assert.equal(event.dst, packet.dst);
    }
  });

  it('hex spot check: a v3 general query frame as tcpdump would show it', () => {
    const packet = {
      message: queryMessage(parseQuerySpec({ maxResp: '10' })),
      src: '10.77.0.2',
      dst: '224.0.0.1',
      identification: 0x0102,
    };
    const bytes = Buffer.from(queryPacket.encode(packet));
    assert.deepEqual(bytes.subarray(0, 4), hex('46 c0 00 24')); // IHL 6 (Router Alert), 36 octets
    assert.deepEqual(bytes.subarray(20, 24), hex('94 04 00 00'));
    assert.deepEqual(bytes.subarray(24, 26), hex('11 64')); // Max Resp Code 100
  });
});

describe('responder table', () => {
  const T0 = 1_000_000;
  const general: SentQuery = {
    at: T0,
    version: 3,
    kind: 'general',
    group: null,
    sources: [],
    src: '10.0.0.1',
    dst: '224.0.0.1',
    maxRespMs: 2000,
    identification: 77,
  };
  const heard = (
    table: ResponderTable,
    at: number,
    src: string,
    message: IgmpMessage,
    port?: { name: string; pod?: string },
  ) => table.heard({ at, src, ipId: 1, message, ...(port === undefined ? {} : { port }) });
  const summary = (table: ResponderTable) =>
    table
      .responders()
      .map(
        (r) =>
          `${r.group} ${r.host} v${r.version} ${r.mode}{${r.sources.join(',')}} ${r.delayMs}ms x${r.answers}${r.port ? ` ${r.port}` : ''}${r.pod ? ` ${r.pod}` : ''}`,
      );

  it('lists each host once per group, with the version it spoke and its delay', () => {
    const table = new ResponderTable({ self: { address: '10.0.0.1', version: 3 } });
    table.querySent(general);
    heard(table, T0 + 250, '10.0.0.11', { kind: 'report', version: 1, group: '239.1.1.1' });
    heard(table, T0 + 900.4, '10.0.0.12', { kind: 'report', version: 2, group: '239.2.2.2' });
    heard(table, T0 + 40, '10.0.0.13', {
      kind: 'report',
      version: 3,
      records: [
        { type: 'MODE_IS_EXCLUDE', group: '239.3.3.3', sources: [] },
        { type: 'MODE_IS_INCLUDE', group: '232.1.1.1', sources: ['10.9.9.2', '10.9.9.1'] },
      ],
    });
    heard(table, T0 + 1200, '10.0.0.11', { kind: 'report', version: 1, group: '239.1.1.1' }); // answered twice
    assert.deepEqual(summary(table), [
      '232.1.1.1 10.0.0.13 v3 include{10.9.9.1,10.9.9.2} 40ms x1',
      '239.1.1.1 10.0.0.11 v1 exclude{} 250ms x2',
      '239.2.2.2 10.0.0.12 v2 exclude{} 900ms x1',
      '239.3.3.3 10.0.0.13 v3 exclude{} 40ms x1',
    ]);
    assert.equal(table.ignoredReports, 0);
  });

  it('a group-specific query counts answers for other groups without listing them', () => {
    const table = new ResponderTable({ group: '239.1.1.1', self: { address: '10.0.0.1', version: 3 } });
    table.querySent({ ...general, kind: 'group', group: '239.1.1.1', dst: '239.1.1.1' });
    // a v1 host answers any query as a general one
    heard(table, T0 + 5000, '10.0.0.11', { kind: 'report', version: 1, group: '239.9.9.9' });
    heard(table, T0 + 5001, '10.0.0.11', { kind: 'report', version: 1, group: '239.1.1.1' });
    assert.deepEqual(summary(table), ['239.1.1.1 10.0.0.11 v1 exclude{} 5001ms x1']);
    assert.equal(table.ignoredReports, 1);
  });

  it('reports heard before the first query are no answers', () => {
    const table = new ResponderTable({ self: { address: '10.0.0.1', version: 3 } });
    heard(table, T0 - 10, '10.0.0.11', { kind: 'report', version: 2, group: '239.1.1.1' });
    table.querySent(general);
    assert.deepEqual(table.responders(), []);
    assert.equal(table.ignoredReports, 1);
  });

  it('delays count from the latest query before the answer (repeated queries)', () => {
    const table = new ResponderTable({ self: { address: '10.0.0.1', version: 2 } });
    table.querySent({ ...general, version: 2 });
    table.querySent({ ...general, version: 2, at: T0 + 1000 });
    heard(table, T0 + 1300, '10.0.0.12', { kind: 'report', version: 2, group: '239.2.2.2' });
    assert.equal(table.responders()[0]?.delayMs, 300);
  });

  it('leaves and state changes during the run apply to the filter (RFC 3376 §6.4)', () => {
    const table = new ResponderTable({ self: { address: '10.0.0.1', version: 3 } });
    table.querySent(general);
    heard(table, T0 + 10, '10.0.0.12', { kind: 'report', version: 2, group: '239.2.2.2' });
    heard(table, T0 + 20, '10.0.0.12', { kind: 'leave', version: 2, group: '239.2.2.2' });
    heard(table, T0 + 30, '10.0.0.13', {
      kind: 'report',
      version: 3,
      records: [{ type: 'MODE_IS_INCLUDE', group: '232.1.1.1', sources: ['10.9.9.1'] }],
    });
    heard(table, T0 + 40, '10.0.0.13', {
      kind: 'report',
      version: 3,
      records: [{ type: 'ALLOW_NEW_SOURCES', group: '232.1.1.1', sources: ['10.9.9.3'] }],
    });
    heard(table, T0 + 50, '10.0.0.14', {
      kind: 'report',
      version: 3,
      records: [{ type: 'MODE_IS_INCLUDE', group: '232.1.1.1', sources: ['10.9.9.1'] }],
    });
    heard(table, T0 + 60, '10.0.0.14', {
      kind: 'report',
      version: 3,
      records: [{ type: 'CHANGE_TO_INCLUDE_MODE', group: '232.1.1.1', sources: [] }],
    });
    assert.deepEqual(summary(table), ['232.1.1.1 10.0.0.13 v3 include{10.9.9.1,10.9.9.3} 30ms x2']);
  });

  it('on a bridge the same host on two ports is two responders, with port and pod', () => {
    const table = new ResponderTable({ self: { address: '0.0.0.0', version: 3 } });
    table.querySent({ ...general, src: '0.0.0.0' });
    heard(
      table,
      T0 + 5,
      '10.1.0.11',
      { kind: 'report', version: 2, group: '239.1.1.1' },
      { name: 'veth-a', pod: 'default/a' },
    );
    heard(table, T0 + 6, '10.1.0.11', { kind: 'report', version: 2, group: '239.1.1.1' }, { name: 'gw0' });
    assert.deepEqual(summary(table), [
      '239.1.1.1 10.1.0.11 v2 exclude{} 6ms x1 gw0',
      '239.1.1.1 10.1.0.11 v2 exclude{} 5ms x1 veth-a default/a',
    ]);
  });

  it('the election: lowest address wins, ours included; 0.0.0.0 is no candidate', () => {
    const table = new ResponderTable({ self: { address: '10.0.0.5', version: 3 } });
    table.querySent(general);
    heard(table, T0 + 1, '0.0.0.0', { kind: 'query', version: 2, group: '0.0.0.0', maxRespTimeDs: 100 });
    heard(table, T0 + 2, '10.0.0.9', { kind: 'query', version: 2, group: '0.0.0.0', maxRespTimeDs: 100 });
    heard(table, T0 + 3, '10.0.0.9', { kind: 'query', version: 2, group: '239.1.1.1', maxRespTimeDs: 10 });
    assert.deepEqual(
      table
        .queriers()
        .map(
          (q) => `${q.address} v${q.version} ${q.self ? 'self' : 'other'} ${q.elected ? 'elected' : '-'} ${q.queries}`,
        ),
      ['0.0.0.0 v2 other - 1', '10.0.0.5 v3 self elected 1', '10.0.0.9 v2 other - 2'],
    );
    heard(table, T0 + 4, '10.0.0.3', { kind: 'query', version: 2, group: '0.0.0.0', maxRespTimeDs: 100 });
    assert.deepEqual(
      table
        .queriers()
        .filter((q) => q.elected)
        .map((q) => q.address),
      ['10.0.0.3'],
    );
    // IGMPv1 has no election (RFC 2236 §4): a v1 querier is listed, never elected
    heard(table, T0 + 5, '10.0.0.2', { kind: 'query', version: 1, group: '0.0.0.0' });
    assert.deepEqual(
      table.queriers().map((q) => [q.address, q.elected]),
      [
        ['0.0.0.0', false],
        ['10.0.0.2', false],
        ['10.0.0.3', true],
        ['10.0.0.5', false],
        ['10.0.0.9', false],
      ],
    );
  });

  it('our own query echoed by the link is not another querier', () => {
    const table = new ResponderTable({ self: { address: '10.0.0.1', version: 3 } });
    table.querySent(general);
    table.heard({
      at: T0 + 1,
      src: '10.0.0.1',
      ipId: 77,
      message: {
        kind: 'query',
        version: 3,
        group: '0.0.0.0',
        maxRespCode: 20,
        sFlag: false,
        qrv: 2,
        qqic: 125,
        sources: [],
      },
    });
    assert.deepEqual(
      table.queriers().map((q) => [q.address, q.self]),
      [['10.0.0.1', true]],
    );
    // the same address with another id: somebody else configured with it
    table.heard({
      at: T0 + 2,
      src: '10.0.0.1',
      ipId: 78,
      message: { kind: 'query', version: 2, group: '0.0.0.0', maxRespTimeDs: 100 },
    });
    assert.deepEqual(
      table.queriers().map((q) => [q.address, q.self]),
      [
        ['10.0.0.1', false],
        ['10.0.0.1', true],
      ],
    );
  });

  it('a query from 0.0.0.0 leaves us out of the list and the election', () => {
    const table = new ResponderTable({ self: { address: '0.0.0.0', version: 3 } });
    table.querySent({ ...general, src: '0.0.0.0' });
    assert.deepEqual(table.queriers(), []);
    heard(table, T0 + 2, '10.0.0.9', {
      kind: 'query',
      version: 3,
      group: '0.0.0.0',
      maxRespCode: 100,
      sFlag: false,
      qrv: 2,
      qqic: 125,
      sources: [],
    });
    assert.deepEqual(
      table.queriers().map((q) => [q.address, q.elected]),
      [['10.0.0.9', true]],
    );
  });
});

describe('query run', () => {
  /** A link that answers each query at once, before its send has finished, as a fast bridge does. */
  class FakeLink implements QueryLink {
    readonly name = { iface: 'fake0' };
    readonly ownAddress = '10.0.0.1';
    sent: QueryPacket[] = [];
    closed = false;
    private onIgmp: ((event: HeardIgmp) => void) | undefined;
    onError: ((error: McastError) => void) | undefined;
    constructor(private readonly behaviour: { failSendAt?: number } = {}) {}
    async listen(onIgmp: (event: HeardIgmp) => void, onError: (error: McastError) => void): Promise<void> {
      this.onIgmp = onIgmp;
      this.onError = onError;
    }
    async send(packet: QueryPacket): Promise<void> {
      if (this.sent.length === this.behaviour.failSendAt) throw new McastError('refused', 'the switch said no');
      this.sent.push(packet);
      this.onIgmp?.({
        at: Date.now(),
        src: '10.0.0.11',
        ipId: 9,
        message: { kind: 'report', version: 2, group: '239.1.1.1' },
      });
      await new Promise((resolve) => setTimeout(resolve, 5)); // the barrier round trip
    }
    async close(): Promise<void> {
      this.closed = true;
    }
  }
  const clock = { now: () => Date.now() - 1 }; // a hair before the link's own stamps
  const spec = parseQuerySpec({ version: '2', maxResp: '0.1' });

  it('an answer that arrives while the send is still confirming counts', async () => {
    const link = new FakeLink();
    const result = await runQuery({ link, spec, src: '10.0.0.1', repeat: 1, intervalMs: 1, waitMs: 10, clock });
    assert.deepEqual(
      result.table.responders().map((r) => r.host),
      ['10.0.0.11'],
    );
    assert.equal(result.table.ignoredReports, 0);
    assert.equal(result.stoppedEarly, false);
  });

  it('repeats with fresh IP identifications, each recorded', async () => {
    const link = new FakeLink();
    const result = await runQuery({ link, spec, src: '10.0.0.1', repeat: 3, intervalMs: 2, waitMs: 5, clock });
    assert.equal(link.sent.length, 3);
    assert.deepEqual(
      result.table.queries.map((q) => q.identification),
      link.sent.map((p) => p.identification),
    );
    assert.equal(result.table.responders()[0]?.answers, 3);
  });

  it('a refused send stops the run but keeps what was heard', async () => {
    const link = new FakeLink({ failSendAt: 1 });
    const result = await runQuery({ link, spec, src: '10.0.0.1', repeat: 3, intervalMs: 1, waitMs: 1000, clock });
    assert.equal(result.failure?.code, 'refused');
    assert.equal(result.stoppedEarly, true);
    assert.deepEqual(
      result.table.responders().map((r) => r.host),
      ['10.0.0.11'],
    );
  });

  it('a link failure while listening ends the wait at once', async () => {
    const link = new FakeLink();
    const started = Date.now();
    const running = runQuery({ link, spec, src: '10.0.0.1', repeat: 1, intervalMs: 1, waitMs: 60_000, clock });
    setTimeout(() => link.onError?.(new McastError('no-such-interface', 'gone')), 20);
    const result = await running;
    assert.equal(result.failure?.code, 'no-such-interface');
    assert.ok(Date.now() - started < 5_000);
  });

  it('the caller’s signal stops it early', async () => {
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 20);
    const result = await runQuery({
      link: new FakeLink(),
      spec,
      src: '10.0.0.1',
      repeat: 1,
      intervalMs: 1,
      waitMs: 60_000,
      signal: controller.signal,
      clock,
    });
    assert.equal(result.stoppedEarly, true);
    assert.equal(result.failure, undefined);
  });
});

describe('MLD query spec', () => {
  it('defaults: an MLDv2 general query to ff02::1, Maximum Response Delay 10 s', () => {
    const spec = parseMldQuerySpec({});
    assert.deepEqual(spec, { protocol: 'mld', version: 2, sources: [], maxRespMs: 10_000 });
    assert.equal(mldQueryKind(spec), 'general');
    assert.equal(mldQueryDestination(spec), 'ff02::1');
  });

  it('specific and address-and-source-specific queries go to the group, addresses canonical', () => {
    const v1 = parseMldQuerySpec({ version: '1', group: 'FF05:0:0::0101', maxResp: '0.25' });
    assert.deepEqual(v1, { protocol: 'mld', version: 1, group: 'ff05::101', sources: [], maxRespMs: 250 });
    assert.equal(mldQueryKind(v1), 'group');
    assert.equal(mldQueryDestination(v1), 'ff05::101');
    const gss = parseMldQuerySpec({ group: 'ff3e::8000:1', sources: '2001:db8::5, 2001:DB8:0::6' });
    assert.equal(mldQueryKind(gss), 'group-and-source');
    assert.deepEqual(gss.sources, ['2001:db8::5', '2001:db8::6']);
    // solicited-node groups are link-scope but reported (RFC 3810 §6): they may be asked about
    assert.equal(parseMldQuerySpec({ group: 'ff02::1:ff00:1' }).group, 'ff02::1:ff00:1');
  });

  it('the Maximum Response Delay counts milliseconds; v2 above 32.767 s is what the code carries', () => {
    assert.equal(parseMldQuerySpec({ version: '1', maxResp: '65.535' }).maxRespMs, 65_535);
    assert.equal(parseMldQuerySpec({ maxResp: '32.767' }).maxRespMs, 32_767); // the last exact code
    assert.equal(parseMldQuerySpec({ maxResp: '40' }).maxRespMs, 40_000); // 5000 << 3: exact
    assert.equal(parseMldQuerySpec({ maxResp: '33.333' }).maxRespMs, 33_328); // 4166 << 3, rounded down
    assert.equal(parseMldQuerySpec({ maxResp: '8387.584' }).maxRespMs, 8_387_584);
    assert.equal(parseMldQuerySpec({ maxResp: '0.001' }).maxRespMs, 1);
  });

  const refused: Array<[string, MldQueryRequest, RegExp]> = [
    ['version 3', { version: '3' }, /--version with --mld takes 1 or 2/],
    ['an IPv4 group', { group: '239.1.1.1' }, /not an IPv6 address \(an IPv4 group goes without --mld\)/],
    ['a unicast group', { group: '2001:db8::1' }, /not an IPv6 multicast address/],
    ['all-nodes', { group: 'ff02::1' }, /all-nodes/],
    ['an interface-local group', { group: 'ff01::101' }, /interface-local/],
    ['a reserved-scope group', { group: 'ff00::101' }, /reserved/],
    ['sources with MLDv1', { version: '1', group: 'ff05::1', sources: '2001:db8::5' }, /--source needs MLDv2/],
    ['sources without a group', { sources: '2001:db8::5' }, /--source needs --group/],
    ['an IPv4 source', { group: 'ff3e::1', sources: '10.0.0.1' }, /not an IPv6 address/],
    ['a multicast source', { group: 'ff3e::1', sources: 'ff05::2' }, /not a unicast host address/],
    ['the unspecified source', { group: 'ff3e::1', sources: '::' }, /not a unicast host address/],
    ['a source twice', { group: 'ff3e::1', sources: '2001:db8::5,2001:db8:0::5' }, /twice/],
    [
      'too many sources',
      { group: 'ff3e::1', sources: Array.from({ length: 76 }, (_, i) => `2001:db8::${i + 1}`).join(',') },
      /at most 75/,
    ],
    ['max resp 0', { maxResp: '0' }, /out of range: 0.001 to 8387.584 s for MLDv2/],
    ['v1 max resp 65.536', { version: '1', maxResp: '65.536' }, /out of range: 0.001 to 65.535 s for MLDv1/],
    ['v2 max resp 8387.585', { maxResp: '8387.585' }, /out of range/],
    ['max resp below a millisecond', { maxResp: '0.0005' }, /to the millisecond/],
    ['a word', { maxResp: 'ten' }, /to the millisecond/],
  ];
  for (const [name, request, message] of refused) {
    it(`refuses ${name} with a usage error (exit 64)`, () => {
      assert.throws(
        () => parseMldQuerySpec(request),
        (error: unknown) =>
          error instanceof McastError && error.exitCode === ExitCode.Usage && message.test(error.message),
      );
    });
  }

  it('--from: a link-local address or :: (RFC 3810 §5.1.14), nothing else', () => {
    assert.equal(checkMldQuerierAddress('FE80::0001', '--from'), 'fe80::1');
    assert.equal(checkMldQuerierAddress('febf::1', '--from'), 'febf::1'); // fe80::/10 ends at febf
    assert.equal(checkMldQuerierAddress(' :: ', '--from'), '::');
    for (const [text, message] of [
      ['2001:db8::1', /not link-local/],
      ['fec0::1', /not link-local/],
      ['ff02::1', /not link-local/],
      ['10.0.0.1', /not an IPv6 address/],
    ] as const) {
      assert.throws(
        () => checkMldQuerierAddress(text, '--from'),
        (error: unknown) =>
          error instanceof McastError && error.exitCode === ExitCode.Usage && message.test(error.message),
        text,
      );
    }
  });
});

describe('MLD query packet', () => {
  const locate = ipLocator(1);
  const FROM = 'fe80::1';

  /**
   * IPv6 header (RFC 8200 §3) + hop-by-hop header with Router Alert 0 and PadN (RFC 2711, RFC 3810 §5) + the ICMPv6
   * message, checksummed here.
   */
  function mldPacket(srcHex: string, dstHex: string, icmp: string): Buffer {
    const message = hex(icmp);
    const pseudo = Buffer.concat([
      hex(srcHex),
      hex(dstHex),
      hex(message.length.toString(16).padStart(8, '0')),
      hex('0000003a'),
      message,
    ]);
    message.writeUInt16BE(referenceChecksum(pseudo), 2);
    const payloadLength = 8 + message.length;
    const header = hex(`60000000 ${payloadLength.toString(16).padStart(4, '0')} 00 01 ${srcHex} ${dstHex}`);
    return Buffer.concat([header, hex('3a 00 0502 0000 0100'), message]);
  }

  it('an MLDv1 general query: 24 octets, the delay in ms, to ff02::1, hop limit 1', () => {
    const spec = parseMldQuerySpec({ version: '1', maxResp: '2.5' });
    const packet: MldQueryPacket = { message: mldQueryMessage(spec), src: FROM, dst: mldQueryDestination(spec) };
    const expected = mldPacket(
      'fe800000000000000000000000000001',
      'ff020000000000000000000000000001',
      '82 00 0000 09c4 0000 00000000000000000000000000000000',
    );
    assert.deepEqual(Buffer.from(queryPacket.encodeMld(packet)), expected);
    // to 33:33 and the low 32 bits (RFC 2464 §7)
    assert.deepEqual(
      Buffer.from(queryPacket.encodeMldFrame(packet, '02:00:00:00:00:01')),
      ethernetFrame(expected, 0x86dd, '333300000001'),
    );
  });

  it('an MLDv2 address-and-source-specific query: S set, QRV 2, QQIC 125, the sources', () => {
    const spec = parseMldQuerySpec({ group: 'ff3e::8000:1', sources: '2001:db8::5,2001:db8::6', maxResp: '40' });
    const packet: MldQueryPacket = { message: mldQueryMessage(spec), src: FROM, dst: mldQueryDestination(spec) };
    // Maximum Response Code for 40000 ms: 1|000|mant, mant = 5000 & 0xfff = 0x388: 0x8388.
    const expected = mldPacket(
      'fe800000000000000000000000000001',
      'ff3e0000000000000000000080000001',
      '82 00 0000 8388 0000 ff3e0000000000000000000080000001  0a 7d 0002  20010db8000000000000000000000005 20010db8000000000000000000000006',
    );
    assert.deepEqual(Buffer.from(queryPacket.encodeMld(packet)), expected);
    const event = decodeFrame(locate, queryPacket.encodeMldFrame(packet, '02:00:00:00:00:01'), { frame: 1, ts: 0 });
    assert.ok(event?.kind === 'mld');
    assert.deepEqual(event.message, {
      kind: 'query',
      version: 2,
      group: 'ff3e::8000:1',
      maxRespCode: 0x8388,
      sFlag: true,
      qrv: 2,
      qqic: 125,
      sources: ['2001:db8::5', '2001:db8::6'],
    });
    assert.equal(event.src, FROM);
    assert.equal(event.ip.hopLimit, 1);
  });

  it('every version and kind decodes back to itself; a general MLDv2 query has S clear', () => {
    const requests: MldQueryRequest[] = [
      { version: '1' },
      { version: '1', group: 'ff05::101' },
      {},
      { group: 'ff15::1:2' },
      { group: 'ff3e::1', sources: '2001:db8::9' },
    ];
    for (const request of requests) {
      const spec = parseMldQuerySpec(request);
      const packet: MldQueryPacket = { message: mldQueryMessage(spec), src: FROM, dst: mldQueryDestination(spec) };
      const event = decodeFrame(locate, queryPacket.encodeMldFrame(packet, 'aa:bb:cc:dd:ee:ff'), { frame: 1, ts: 0 });
      assert.ok(event?.kind === 'mld', JSON.stringify(request));
      assert.deepEqual(event.message, packet.message);
      assert.equal(event.dst, packet.dst);
      if (event.message.kind === 'query' && event.message.version === 2)
        assert.equal(event.message.sFlag, spec.group !== undefined);
    }
  });
});

describe('MLD responder table', () => {
  const T0 = 2_000_000;
  const SELF = 'fe80::5';
  const general: SentQuery = {
    at: T0,
    protocol: 'mld',
    version: 2,
    kind: 'general',
    group: null,
    sources: [],
    src: SELF,
    dst: 'ff02::1',
    maxRespMs: 1000,
  };
  const heard = (table: ResponderTable, at: number, src: string, message: MldMessage) =>
    table.heard({ protocol: 'mld', at, src, message } satisfies HeardMld);
  const summary = (table: ResponderTable) =>
    table
      .responders()
      .map(
        (r) =>
          `${r.group} ${r.host} ${r.protocol}v${r.version} ${r.mode}{${r.sources.join(',')}} ${r.delayMs}ms x${r.answers}`,
      );
  const v2Query = (group: string): MldMessage => ({
    kind: 'query',
    version: 2,
    group,
    maxRespCode: 1000,
    sFlag: false,
    qrv: 2,
    qqic: 125,
    sources: [],
  });

  it('lists MLDv1 and MLDv2 listeners with their version and filter, IPv6 order', () => {
    const table = new ResponderTable({ self: { address: SELF, version: 2 }, protocol: 'mld' });
    table.querySent(general);
    heard(table, T0 + 300, 'fe80::11', { kind: 'report', version: 1, group: 'ff05::101' });
    heard(table, T0 + 20, 'fe80::a', {
      kind: 'report',
      version: 2,
      records: [
        { type: 'MODE_IS_INCLUDE', group: 'ff3e::8000:1', sources: ['2001:db8::6', '2001:db8::5'] },
        { type: 'MODE_IS_EXCLUDE', group: 'ff05::202', sources: ['2001:db8::7'] },
      ],
    });
    heard(table, T0 + 30, 'fe80::9', {
      kind: 'report',
      version: 2,
      records: [{ type: 'MODE_IS_EXCLUDE', group: 'ff05::202', sources: [] }],
    });
    // IGMP on the same link is the other family's business
    table.heard({ at: T0 + 40, src: '10.0.0.9', ipId: 1, message: { kind: 'report', version: 2, group: '239.1.1.1' } });
    assert.deepEqual(summary(table), [
      'ff05::101 fe80::11 mldv1 exclude{} 300ms x1',
      // fe80::9 before fe80::a: numeric, not text, order
      'ff05::202 fe80::9 mldv2 exclude{} 30ms x1',
      'ff05::202 fe80::a mldv2 exclude{2001:db8::7} 20ms x1',
      'ff3e::8000:1 fe80::a mldv2 include{2001:db8::5,2001:db8::6} 20ms x1',
    ]);
    assert.equal(table.ignoredReports, 0);
  });

  it('a Done and a TO_IN {} end a membership; a specific query counts other groups aside', () => {
    const table = new ResponderTable({ group: 'ff05::101', self: { address: SELF, version: 1 }, protocol: 'mld' });
    table.querySent({ ...general, version: 1, kind: 'group', group: 'ff05::101', dst: 'ff05::101' });
    heard(table, T0 + 10, 'fe80::11', { kind: 'report', version: 1, group: 'ff05::101' });
    heard(table, T0 + 11, 'fe80::12', { kind: 'report', version: 1, group: 'ff05::999' });
    heard(table, T0 + 12, 'fe80::13', {
      kind: 'report',
      version: 2,
      records: [{ type: 'MODE_IS_EXCLUDE', group: 'ff05::101', sources: [] }],
    });
    heard(table, T0 + 20, 'fe80::11', { kind: 'leave', version: 1, group: 'ff05::101' });
    heard(table, T0 + 21, 'fe80::13', {
      kind: 'report',
      version: 2,
      records: [{ type: 'CHANGE_TO_INCLUDE_MODE', group: 'ff05::101', sources: [] }],
    });
    assert.deepEqual(summary(table), []);
    assert.equal(table.ignoredReports, 1);
  });

  it('the election (RFC 3810 §7.6.2): lowest IPv6 address wins, MLDv1 queriers included, :: not', () => {
    const table = new ResponderTable({ self: { address: SELF, version: 2 }, protocol: 'mld' });
    table.querySent(general);
    heard(table, T0 + 1, '::', v2Query('::'));
    heard(table, T0 + 2, 'fe80::1:0', v2Query('::'));
    // IGMP queriers are not MLD queriers
    table.heard({
      at: T0 + 3,
      src: '10.0.0.1',
      ipId: 5,
      message: { kind: 'query', version: 2, group: '0.0.0.0', maxRespTimeDs: 100 },
    });
    const list = () =>
      table
        .queriers()
        .map(
          (q) =>
            `${q.address} ${q.protocol}v${q.version} ${q.self ? 'self' : 'other'} ${q.elected ? 'elected' : '-'} ${q.queries}`,
        );
    assert.deepEqual(list(), [':: mldv2 other - 1', 'fe80::5 mldv2 self elected 1', 'fe80::1:0 mldv2 other - 1']);
    heard(table, T0 + 4, 'fe80::3', { kind: 'query', version: 1, group: '::', maxRespDelayMs: 10_000 });
    assert.deepEqual(list(), [
      ':: mldv2 other - 1',
      'fe80::3 mldv1 other elected 1',
      'fe80::5 mldv2 self - 1',
      'fe80::1:0 mldv2 other - 1',
    ]);
  });

  it('our own query echoed by the link is not another querier; another query from our address is', () => {
    const table = new ResponderTable({ self: { address: SELF, version: 2 }, protocol: 'mld' });
    table.querySent(general);
    heard(table, T0 + 1, SELF, v2Query('::'));
    assert.deepEqual(
      table.queriers().map((q) => [q.address, q.self]),
      [[SELF, true]],
    );
    heard(table, T0 + 2, SELF, v2Query('ff05::1'));
    assert.deepEqual(
      table.queriers().map((q) => [q.address, q.self]),
      [
        [SELF, false],
        [SELF, true],
      ],
    );
  });

  it('a query from :: leaves us out of the list and the election', () => {
    const table = new ResponderTable({ self: { address: '::', version: 2 }, protocol: 'mld' });
    table.querySent({ ...general, src: '::' });
    assert.deepEqual(table.queriers(), []);
  });

  it('an IGMP table ignores MLD, and marks its entries igmp', () => {
    const table = new ResponderTable({ self: { address: '10.0.0.1', version: 3 } });
    table.querySent({ ...general, protocol: 'igmp', version: 3, src: '10.0.0.1', dst: '224.0.0.1', identification: 1 });
    heard(table, T0 + 5, 'fe80::11', { kind: 'report', version: 1, group: 'ff05::101' });
    table.heard({ at: T0 + 6, src: '10.0.0.9', ipId: 1, message: { kind: 'report', version: 2, group: '239.1.1.1' } });
    assert.deepEqual(summary(table), ['239.1.1.1 10.0.0.9 igmpv2 exclude{} 6ms x1']);
    assert.equal(table.ignoredReports, 0);
  });
});

describe('MLD query run', () => {
  class FakeMldLink implements QueryLink {
    readonly name = { iface: 'fake0' };
    readonly ownAddress = undefined;
    readonly ownLinkLocal = 'fe80::5';
    sent: unknown[] = [];
    private onHeard: ((event: HeardMld) => void) | undefined;
    async listen(onHeard: (event: HeardMld) => void): Promise<void> {
      this.onHeard = onHeard;
    }
    async send(packet: MldQueryPacket): Promise<void> {
      this.sent.push(packet);
      this.onHeard?.({
        protocol: 'mld',
        at: Date.now(),
        src: 'fe80::11',
        message: { kind: 'report', version: 1, group: 'ff05::101' },
      });
    }
    async close(): Promise<void> {}
  }

  it('sends the MLD query from the given address to the group, no IP identification, and counts the answer', async () => {
    const link = new FakeMldLink();
    const spec = parseMldQuerySpec({ version: '1', group: 'ff05::101', maxResp: '0.1' });
    const result = await runQuery({
      link,
      spec,
      src: 'fe80::5',
      repeat: 2,
      intervalMs: 1,
      waitMs: 5,
      clock: { now: () => Date.now() - 1 },
    });
    assert.deepEqual(link.sent, [
      {
        message: { kind: 'query', version: 1, group: 'ff05::101', maxRespDelayMs: 100 },
        src: 'fe80::5',
        dst: 'ff05::101',
      },
      {
        message: { kind: 'query', version: 1, group: 'ff05::101', maxRespDelayMs: 100 },
        src: 'fe80::5',
        dst: 'ff05::101',
      },
    ]);
    assert.deepEqual(
      result.table.queries.map((q) => [q.protocol, q.version, q.kind, q.dst, 'identification' in q]),
      [
        ['mld', 1, 'group', 'ff05::101', false],
        ['mld', 1, 'group', 'ff05::101', false],
      ],
    );
    assert.deepEqual(
      result.table.responders().map((r) => [r.host, r.protocol, r.version, r.answers]),
      [['fe80::11', 'mld', 1, 2]],
    );
    assert.deepEqual(
      result.table.queriers().map((q) => [q.address, q.protocol, q.elected]),
      [['fe80::5', 'mld', true]],
    );
  });
});
