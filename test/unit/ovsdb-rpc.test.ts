/**
 * JSON-RPC 1.0 messages, OVSDB data, transaction operations and their results, monitor
 * updates and schemas, against JSON written out by hand from RFC 7047 (§4.1 messages,
 * §5.1 notation, §5.2 operations) and from what ovsdb-server 3.1 actually sends
 * (test/fixtures/ovsdb/server-stream.bin). Expected values never come from the encoder.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from '../helpers/node-test.js';
import { McastError } from '../../src/errors.js';
import {
  asOptional,
  asSet,
  asStringMap,
  asUuidStrings,
  datumFromJson,
  datumToJson,
  namedUuid,
  ovsdbMap,
  rowFromJson,
  uuid,
  type Datum,
} from '../../src/protocol/ovsdb/datum.js';
import { OvsdbDecodeError, OvsdbError } from '../../src/protocol/ovsdb/errors.js';
import { JsonStreamSplitter } from '../../src/protocol/ovsdb/json-stream.js';
import {
  monitorRequestsToJson,
  rowChangeKind,
  TableCache,
  tableUpdatesFromJson,
} from '../../src/protocol/ovsdb/monitor.js';
import { operationToJson, transactResultsFromJson, type Operation } from '../../src/protocol/ovsdb/operations.js';
import * as rpc from '../../src/protocol/ovsdb/rpc.js';
import { schemaFromJson } from '../../src/protocol/ovsdb/schema.js';
import { assertRoundTrip } from '../helpers/roundtrip.js';

const UUID_A = '550e8400-e29b-41d4-a716-446655440000';
const UUID_B = '36bc2a1c-97a8-4b0e-9c33-6e7a6e4e0d11';
const json = (text: string) => Buffer.from(text, 'utf8');

function decodeRefusal(fn: () => unknown, code: string): OvsdbDecodeError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof OvsdbDecodeError, String(error));
    assert.equal(error.code, code);
    return error;
  }
  assert.fail('accepted');
}

describe('JSON-RPC messages (RFC 7047 §4)', () => {
  it('round-trips a request: list_dbs (§4.1.1)', () => {
    assertRoundTrip(
      rpc,
      { kind: 'request', method: 'list_dbs', params: [], id: 0 },
      json('{"method":"list_dbs","params":[],"id":0}'),
    );
  });

  it('round-trips a result: the list_dbs reply', () => {
    assertRoundTrip(
      rpc,
      { kind: 'result', result: ['Open_vSwitch', '_Server'], id: 0 },
      json('{"result":["Open_vSwitch","_Server"],"error":null,"id":0}'),
    );
  });

  it('round-trips an error reply carrying an OVSDB error object', () => {
    assertRoundTrip(
      rpc,
      {
        kind: 'error',
        error: { error: 'unknown database', details: 'transact request specifies unknown database Nope' },
        id: 'x',
      },
      json(
        '{"result":null,"error":{"error":"unknown database","details":"transact request specifies unknown database Nope"},"id":"x"}',
      ),
    );
  });

  it('round-trips notifications: update (§4.1.6) and cancel (§4.1.4)', () => {
    assertRoundTrip(
      rpc,
      { kind: 'notification', method: 'update', params: ['mon', { Bridge: { [UUID_A]: { new: { name: 'br0' } } } }] },
      json(`{"method":"update","params":["mon",{"Bridge":{"${UUID_A}":{"new":{"name":"br0"}}}}],"id":null}`),
    );
    assertRoundTrip(
      rpc,
      { kind: 'notification', method: 'cancel', params: [7] },
      json('{"method":"cancel","params":[7],"id":null}'),
    );
  });

  it('round-trips non-ASCII text and escapes', () => {
    assertRoundTrip(
      rpc,
      { kind: 'request', method: 'echo', params: ['café "x" \\ 😀'], id: [1, 'a'] },
      json('{"method":"echo","params":["café \\"x\\" \\\\ 😀"],"id":[1,"a"]}'),
    );
  });

  it('decodes the terse forms ovsdb-server sends: echo probes, error replies without "result"', () => {
    assert.deepEqual(rpc.decode(json('{"id":"echo","method":"echo","params":[]}')), {
      kind: 'request',
      method: 'echo',
      params: [],
      id: 'echo',
    });
    assert.deepEqual(rpc.decode(json('{"id":13,"error":"unknown method"}')), {
      kind: 'error',
      error: 'unknown method',
      id: 13,
    });
    assert.deepEqual(rpc.decode(json('{"method":"locked","params":["lk"]}')), {
      kind: 'notification',
      method: 'locked',
      params: ['lk'],
    });
    assert.deepEqual(rpc.decode(json('{"id":1,"result":null,"error":null}')), { kind: 'result', result: null, id: 1 });
  });

  it('decodes every message ovsdb-server sent in the recorded session', () => {
    const splitter = new JsonStreamSplitter();
    const messages = splitter
      .push(readFileSync(new URL('../fixtures/ovsdb/server-stream.bin', import.meta.url)))
      .map(rpc.fromJson);
    assert.deepEqual(
      messages.map((message) => message.kind),
      ['result', 'result', 'result', 'notification', 'result', 'notification', 'notification', 'result', 'result'],
    );
    for (const message of messages) {
      if (message.kind === 'notification') tableUpdatesFromJson(message.params[1]);
    }
  });

  it('refuses what is not a JSON-RPC message (bad-message)', () => {
    const refuse = (text: string, pattern: RegExp) =>
      assert.match(decodeRefusal(() => rpc.decode(json(text)), 'bad-message').message, pattern);
    refuse('[1]', /expected a JSON object/);
    refuse('{"method":7,"params":[],"id":1}', /"method" must be a string/);
    refuse('{"method":"echo","params":{},"id":1}', /"params" of echo must be an array/);
    refuse('{"method":"echo","id":1}', /"params" of echo must be an array/);
    refuse('{"method":"echo","params":[],"id":1,"result":1}', /must not carry/);
    refuse('{"result":1,"error":null}', /neither "method" nor "id"/);
    refuse('{"result":1,"error":"e","id":1}', /both "result" and "error"/);
    refuse('{"error":null,"id":1}', /neither "result" nor "error"/);
    assert.equal(decodeRefusal(() => rpc.decode(json('{"id":1,')), 'bad-json').code, 'bad-json');
  });

  it("refuses to encode beyond the caller's buffer", () => {
    assert.throws(() => rpc.encode({ kind: 'notification', method: 'x', params: [] }, new Uint8Array(10)), RangeError);
  });
});

describe('OVSDB data (RFC 7047 §5.1)', () => {
  const cases: Array<[string, unknown, Datum]> = [
    ['a string atom', 'br0', 'br0'],
    ['an integer atom', 42, 42],
    ['a real atom', -1.5, -1.5],
    ['a boolean atom', true, true],
    ['a uuid', ['uuid', UUID_A], { uuid: UUID_A }],
    ['a named-uuid', ['named-uuid', 'new_port'], { namedUuid: 'new_port' }],
    ['an empty set', ['set', []], []],
    [
      'a set of uuids',
      [
        'set',
        [
          ['uuid', UUID_A],
          ['uuid', UUID_B],
        ],
      ],
      [{ uuid: UUID_A }, { uuid: UUID_B }],
    ],
    ['an empty map', ['map', []], { map: [] }],
    [
      'a map',
      [
        'map',
        [
          ['pod-name', 'web-1'],
          ['ip-address', '10.0.0.5'],
        ],
      ],
      {
        map: [
          ['pod-name', 'web-1'],
          ['ip-address', '10.0.0.5'],
        ],
      },
    ],
    ['a map of integers to uuids', ['map', [[1, ['uuid', UUID_A]]]], { map: [[1, { uuid: UUID_A }]] }],
  ];
  for (const [name, wire, value] of cases) {
    it(`decodes and encodes ${name}`, () => {
      assert.deepEqual(datumFromJson(wire), value);
      assert.deepEqual(datumToJson(value), wire);
    });
  }

  it('reads a set of one sent as the bare atom (§5.1), as ovsdb-server does', () => {
    // What ovsdb-server sends for Port.interfaces with one interface:
    const bare = datumFromJson(['uuid', UUID_A]);
    assert.deepEqual(asSet(bare), [{ uuid: UUID_A }]);
    assert.deepEqual(asUuidStrings(bare), [UUID_A]);
    assert.deepEqual(asSet(datumFromJson(['set', [['uuid', UUID_A]]])), [{ uuid: UUID_A }]);
    // ... and always writes a set in the ["set", ...] form, which is valid for one element too.
    assert.deepEqual(datumToJson([{ uuid: UUID_A }]), ['set', [['uuid', UUID_A]]]);
  });

  it('reads optional values: empty set, bare atom, set of one', () => {
    assert.equal(asOptional(datumFromJson(['set', []])), undefined);
    assert.equal(asOptional(datumFromJson(5)), 5);
    assert.equal(asOptional(datumFromJson(['set', [5]])), 5);
    decodeRefusal(() => asOptional(datumFromJson(['set', [5, 6]]), 'Interface x column ofport'), 'bad-datum');
  });

  it('converts maps to and from records', () => {
    assert.deepEqual(
      asStringMap(
        datumFromJson([
          'map',
          [
            ['a', '1'],
            ['b', '2'],
          ],
        ]),
      ),
      { a: '1', b: '2' },
    );
    assert.deepEqual(datumToJson(ovsdbMap({ a: '1', b: '2' })), [
      'map',
      [
        ['a', '1'],
        ['b', '2'],
      ],
    ]);
    assert.deepEqual(datumToJson(ovsdbMap([[1, uuid(UUID_A)]])), ['map', [[1, ['uuid', UUID_A]]]]);
    decodeRefusal(() => asStringMap(datumFromJson(['map', [['a', 1]]])), 'bad-datum');
  });

  it('decodes a row', () => {
    assert.deepEqual(rowFromJson({ _uuid: ['uuid', UUID_A], name: 'p1', ofport: ['set', []] }), {
      _uuid: { uuid: UUID_A },
      name: 'p1',
      ofport: [],
    });
  });

  it('refuses what is not OVSDB data (bad-datum), saying where', () => {
    assert.match(
      decodeRefusal(() => datumFromJson(['uuid', 'nope'], 'Bridge x column ports'), 'bad-datum').message,
      /^Bridge x column ports: "nope" is not a UUID/,
    );
    decodeRefusal(() => datumFromJson(['set', 5]), 'bad-datum');
    decodeRefusal(() => datumFromJson(['set', [['set', []]]]), 'bad-datum');
    decodeRefusal(() => datumFromJson(['map', [[1]]]), 'bad-datum');
    decodeRefusal(() => datumFromJson(null), 'bad-datum');
    decodeRefusal(() => datumFromJson({}), 'bad-datum');
    decodeRefusal(() => datumFromJson(['frob', 'x']), 'bad-datum');
    decodeRefusal(() => rowFromJson([]), 'bad-datum');
  });

  it('refuses to build or encode impossible values', () => {
    assert.throws(() => uuid('xyz'), RangeError);
    assert.throws(() => namedUuid('1abc'), RangeError);
    assert.throws(() => datumToJson(Number.NaN), RangeError);
  });
});

describe('transaction operations (RFC 7047 §5.2)', () => {
  const cases: Array<[Operation, unknown]> = [
    [
      { op: 'insert', table: 'Port', row: { name: 'p1', interfaces: [namedUuid('iface')] }, uuidName: 'port' },
      {
        op: 'insert',
        table: 'Port',
        row: { name: 'p1', interfaces: ['set', [['named-uuid', 'iface']]] },
        'uuid-name': 'port',
      },
    ],
    [
      { op: 'insert', table: 'Bridge', row: { name: 'br0' } },
      { op: 'insert', table: 'Bridge', row: { name: 'br0' } },
    ],
    [
      { op: 'select', table: 'Interface', where: [['name', '==', 'p1']], columns: ['_uuid', 'ofport'] },
      { op: 'select', table: 'Interface', where: [['name', '==', 'p1']], columns: ['_uuid', 'ofport'] },
    ],
    [
      { op: 'select', table: 'Bridge', where: [] },
      { op: 'select', table: 'Bridge', where: [] },
    ],
    [
      {
        op: 'update',
        table: 'Bridge',
        where: [['_uuid', '==', uuid(UUID_A)]],
        row: { other_config: ovsdbMap({ 'mcast-snooping-aging-time': '300' }) },
      },
      {
        op: 'update',
        table: 'Bridge',
        where: [['_uuid', '==', ['uuid', UUID_A]]],
        row: { other_config: ['map', [['mcast-snooping-aging-time', '300']]] },
      },
    ],
    [
      {
        op: 'mutate',
        table: 'Bridge',
        where: [['name', '==', 'br0']],
        mutations: [
          ['ports', 'insert', [uuid(UUID_B)]],
          ['flood_vlans', 'delete', [5]],
        ],
      },
      {
        op: 'mutate',
        table: 'Bridge',
        where: [['name', '==', 'br0']],
        mutations: [
          ['ports', 'insert', ['set', [['uuid', UUID_B]]]],
          ['flood_vlans', 'delete', ['set', [5]]],
        ],
      },
    ],
    [
      { op: 'delete', table: 'Port', where: [['interfaces', 'includes', [uuid(UUID_A)]]] },
      { op: 'delete', table: 'Port', where: [['interfaces', 'includes', ['set', [['uuid', UUID_A]]]]] },
    ],
    [
      {
        op: 'wait',
        table: 'Bridge',
        where: [['name', '==', 'br0']],
        columns: ['name'],
        until: '==',
        rows: [{ name: 'br0' }],
        timeout: 0,
      },
      {
        op: 'wait',
        table: 'Bridge',
        where: [['name', '==', 'br0']],
        columns: ['name'],
        until: '==',
        rows: [{ name: 'br0' }],
        timeout: 0,
      },
    ],
    [
      { op: 'commit', durable: false },
      { op: 'commit', durable: false },
    ],
    [{ op: 'abort' }, { op: 'abort' }],
    [
      { op: 'comment', comment: 'mcastctl: add group 239.1.2.3' },
      { op: 'comment', comment: 'mcastctl: add group 239.1.2.3' },
    ],
    [
      { op: 'assert', lock: 'mcastctl' },
      { op: 'assert', lock: 'mcastctl' },
    ],
  ];
  for (const [operation, wire] of cases) {
    it(`encodes ${operation.op} ${JSON.stringify(wire).slice(0, 60)}`, () => {
      assert.deepEqual(operationToJson(operation), wire);
    });
  }

  it('monitor requests (§4.1.5)', () => {
    assert.deepEqual(
      monitorRequestsToJson({
        Interface: { columns: ['name', 'ofport'], select: { initial: true, modify: false } },
        Port: [{ columns: ['name'] }, {}],
      }),
      {
        Interface: { columns: ['name', 'ofport'], select: { initial: true, modify: false } },
        Port: [{ columns: ['name'] }, {}],
      },
    );
  });
});

describe('transact results', () => {
  const operations = [
    { op: 'insert', table: 'Bridge', row: { name: 'br0' }, uuidName: 'br' },
    { op: 'select', table: 'Bridge', where: [], columns: ['_uuid', 'name'] },
    { op: 'mutate', table: 'Open_vSwitch', where: [], mutations: [['bridges', 'insert', [namedUuid('br')]]] },
    { op: 'comment', comment: 'x' },
  ] as const satisfies readonly Operation[];

  it('decodes one typed result per operation', () => {
    const results = transactResultsFromJson('Open_vSwitch', operations, [
      { uuid: ['uuid', UUID_A] },
      { rows: [{ _uuid: ['uuid', UUID_A], name: 'br0' }] },
      { count: 1 },
      {},
    ]);
    assert.deepEqual(results, [
      { uuid: UUID_A },
      { rows: [{ _uuid: { uuid: UUID_A }, name: 'br0' }] },
      { count: 1 },
      {},
    ]);
    // The tuple is typed: results[0].uuid is a string, results[2].count a number.
    const [inserted, , mutated] = results;
    assert.equal(inserted.uuid.length, 36);
    assert.equal(mutated.count + 1, 2);
  });

  it('rejects with the failing operation: its index, the operation, error and details', () => {
    // ovsdb-server 3.1's reply for an insert with a non-string name, as the second operation.
    const error = captureOvsdbError(() =>
      transactResultsFromJson('Open_vSwitch', operations, [
        { uuid: ['uuid', UUID_A] },
        { syntax: '7', details: 'expected string', error: 'syntax error' },
      ]),
    );
    assert.equal(error.error, 'syntax error');
    assert.equal(error.details, 'expected string');
    assert.equal(error.syntax, '7');
    assert.equal(error.operationIndex, 1);
    assert.deepEqual(error.operation, operations[1]);
    assert.equal(
      error.message,
      'OVSDB transact on Open_vSwitch failed at operation 1 of 4 (select on Bridge): syntax error: expected string',
    );
    assert.ok(error instanceof McastError);
    assert.equal(error.code, 'refused');
    assert.equal(error.exitCode, 1);
  });

  it('rejects with a commit failure: the extra result after all operations (§4.1.3)', () => {
    const details = `Table Bridge column ports row ${UUID_A} references nonexistent row ${UUID_B} in table Port.`;
    const error = captureOvsdbError(() =>
      transactResultsFromJson('Open_vSwitch', operations, [
        { uuid: ['uuid', UUID_A] },
        { rows: [] },
        { count: 1 },
        {},
        { details, error: 'referential integrity violation' },
      ]),
    );
    assert.equal(error.error, 'referential integrity violation');
    assert.equal(error.operationIndex, undefined);
    assert.equal(error.operation, undefined);
    assert.equal(
      error.message,
      `OVSDB transact on Open_vSwitch failed at commit, after all 4 operations succeeded: referential integrity violation: ${details}`,
    );
  });

  it('refuses results of the wrong shape (bad-datum)', () => {
    decodeRefusal(() => transactResultsFromJson('db', operations, {}), 'bad-datum');
    decodeRefusal(() => transactResultsFromJson('db', operations, [{ uuid: ['uuid', UUID_A] }]), 'bad-datum');
    decodeRefusal(
      () => transactResultsFromJson('db', operations, [{ uuid: 'x' }, { rows: [] }, { count: 1 }, {}]),
      'bad-datum',
    );
    decodeRefusal(
      () => transactResultsFromJson('db', operations, [{ uuid: ['uuid', UUID_A] }, { rows: 1 }, { count: 1 }, {}]),
      'bad-datum',
    );
    decodeRefusal(
      () => transactResultsFromJson('db', operations, [{ uuid: ['uuid', UUID_A] }, { rows: [] }, { count: -1 }, {}]),
      'bad-datum',
    );
  });
});

describe('monitor updates (RFC 7047 §4.1.6)', () => {
  const initial = tableUpdatesFromJson({
    Interface: {
      [UUID_A]: { new: { name: 'p1', ofport: 1 } },
      [UUID_B]: { new: { name: 'p2', ofport: ['set', []] } },
    },
  });

  it('classifies row updates and keeps a cache current', () => {
    const update = tableUpdatesFromJson({
      Interface: {
        [UUID_A]: { old: { ofport: 1 }, new: { name: 'p1', ofport: 7 } },
        [UUID_B]: { old: { name: 'p2', ofport: ['set', []] } },
      },
    });
    assert.equal(rowChangeKind(initial['Interface']![UUID_A]!), 'insert');
    assert.equal(rowChangeKind(update['Interface']![UUID_A]!), 'modify');
    assert.equal(rowChangeKind(update['Interface']![UUID_B]!), 'delete');
    const cache = new TableCache();
    cache.reset(initial);
    assert.equal(cache.table('Interface').size, 2);
    cache.apply(update);
    assert.deepEqual([...cache.table('Interface')], [[UUID_A, { name: 'p1', ofport: 7 }]]);
    cache.reset(tableUpdatesFromJson({}));
    assert.equal(cache.table('Interface').size, 0);
  });

  it('refuses malformed updates (bad-datum)', () => {
    decodeRefusal(() => tableUpdatesFromJson([]), 'bad-datum');
    decodeRefusal(() => tableUpdatesFromJson({ Interface: [] }), 'bad-datum');
    decodeRefusal(() => tableUpdatesFromJson({ Interface: { [UUID_A]: {} } }), 'bad-datum');
    decodeRefusal(
      () => tableUpdatesFromJson({ Interface: { [UUID_A]: { new: { ofport: ['uuid', 'x'] } } } }),
      'bad-datum',
    );
  });
});

describe('schemas (RFC 7047 §3.2)', () => {
  it('accepts a schema and refuses one without names, version or column types', () => {
    const schema = schemaFromJson({
      name: 'db',
      version: '1.0.0',
      tables: { T: { columns: { c: { type: 'integer' } } } },
    });
    assert.equal(schema.tables['T']?.columns['c']?.type, 'integer');
    decodeRefusal(() => schemaFromJson({ version: '1', tables: {} }), 'bad-datum');
    decodeRefusal(() => schemaFromJson({ name: 'db', tables: {} }), 'bad-datum');
    decodeRefusal(() => schemaFromJson({ name: 'db', version: '1', tables: { T: {} } }), 'bad-datum');
    decodeRefusal(
      () => schemaFromJson({ name: 'db', version: '1', tables: { T: { columns: { c: {} } } } }),
      'bad-datum',
    );
  });
});

function captureOvsdbError(fn: () => unknown): OvsdbError {
  try {
    fn();
  } catch (error) {
    assert.ok(error instanceof OvsdbError, String(error));
    return error;
  }
  assert.fail('did not throw');
}
