/**
 * The tunnel peers: a flag's list and a file's, deduplicated, without this node, capped, with errors that say where.
 */
import assert from 'node:assert/strict';
import { describe, it } from '../helpers/node-test.js';
import { UsageError } from '../../src/errors.js';
import { MAX_PEERS, parsePeerList, parsePeersFile } from '../../src/domain/peers/peer-set.js';

const none = { localAddresses: new Set<string>() };
const self = { localAddresses: new Set(['192.168.60.11', '10.0.0.1']) };

function refused(run: () => unknown, code: string, message: RegExp): void {
  assert.throws(run, (error: unknown) => {
    assert.ok(error instanceof UsageError, String(error));
    assert.equal(error.code, code);
    assert.match(error.message, message);
    return true;
  });
}

describe('parsePeerList (the --peers flag)', () => {
  it('parses, trims and sorts by address', () => {
    const set = parsePeerList(' 192.168.60.13, 192.168.60.9 ,192.168.60.12', '--peers', none);
    assert.deepEqual(set.peers, ['192.168.60.9', '192.168.60.12', '192.168.60.13']);
    assert.deepEqual(set.duplicates, []);
    assert.deepEqual(set.droppedSelf, []);
  });

  it('an empty value is no peers', () => {
    assert.deepEqual(parsePeerList('', '--peers', none).peers, []);
    assert.deepEqual(parsePeerList('  ', '--peers', none).peers, []);
  });

  it('keeps one of each address and drops this node, saying so', () => {
    const set = parsePeerList('192.168.60.11,192.168.60.12,192.168.60.13,192.168.60.12,10.0.0.1', '--peers', self);
    assert.deepEqual(set.peers, ['192.168.60.12', '192.168.60.13']);
    assert.deepEqual(set.duplicates, ['192.168.60.12']);
    assert.deepEqual(set.droppedSelf, ['10.0.0.1', '192.168.60.11']);
  });

  it('a list of only this node is empty', () => {
    assert.deepEqual(parsePeerList('192.168.60.11,192.168.60.11', '--peers', self).peers, []);
  });

  it('refuses what is no unicast node address, naming the entry', () => {
    refused(
      () => parsePeerList('192.168.60.12,nope', '--peers', none),
      'bad-address',
      /^--peers: entry 2: "nope" is not an IPv4 address/,
    );
    refused(
      () => parsePeerList('192.168.60.12,,192.168.60.13', '--peers', none),
      'bad-address',
      /entry 2: an empty entry/,
    );
    refused(() => parsePeerList('239.1.2.3', '--peers', none), 'bad-address', /not a unicast address/);
    refused(() => parsePeerList('0.0.0.0', '--peers', none), 'bad-address', /not a unicast address/);
    refused(() => parsePeerList('255.255.255.255', '--peers', none), 'bad-address', /not a unicast address/);
    refused(() => parsePeerList('127.0.0.1', '--peers', none), 'bad-address', /loopback/);
    refused(() => parsePeerList('192.168.060.12', '--peers', none), 'bad-address', /not an IPv4 address/);
  });

  it(`caps the peers at ${MAX_PEERS} after dedup and self`, () => {
    const addresses = Array.from({ length: MAX_PEERS }, (_, index) => `10.1.${index >> 8}.${index & 0xff}`);
    // Duplicates and this node's address do not count against the cap.
    const atCap = parsePeerList([...addresses, addresses[0], '10.0.0.1'].join(','), '--peers', self);
    assert.equal(atCap.peers.length, MAX_PEERS);
    refused(
      () => parsePeerList([...addresses, '10.2.0.1'].join(','), '--peers', none),
      'bad-address',
      new RegExp(`entry ${MAX_PEERS + 1}: more than ${MAX_PEERS} peers`),
    );
  });
});

describe('parsePeersFile', () => {
  it('one address a line, with comments and blank lines', () => {
    const text = '# the cluster\n\n192.168.60.12   # node 2\r\n192.168.60.11\n\t192.168.60.13\n192.168.60.12\n';
    const set = parsePeersFile(text, 'peers.txt', self);
    assert.deepEqual(set.peers, ['192.168.60.12', '192.168.60.13']);
    assert.deepEqual(set.duplicates, ['192.168.60.12']);
    assert.deepEqual(set.droppedSelf, ['192.168.60.11']);
  });

  it('a YAML list, block or flow', () => {
    const block = '# peers\n---\n- 192.168.60.13\n- "192.168.60.12"  # two\n- 192.168.60.12\n';
    assert.deepEqual(parsePeersFile(block, 'peers.yaml', none).peers, ['192.168.60.12', '192.168.60.13']);
    assert.deepEqual(parsePeersFile('[192.168.60.12, 192.168.60.11]\n', 'peers.yaml', self).peers, ['192.168.60.12']);
  });

  it('an empty file, or one of comments, is no peers', () => {
    assert.deepEqual(parsePeersFile('', 'peers', none).peers, []);
    assert.deepEqual(parsePeersFile('# nobody yet\n\n', 'peers', none).peers, []);
    assert.deepEqual(parsePeersFile('[]\n', 'peers', none).peers, []);
  });

  it('errors name the file and the line', () => {
    refused(
      () => parsePeersFile('192.168.60.12\n# x\nnode-3\n', 'peers.txt', none),
      'bad-file',
      /^peers\.txt:3: not an IPv4 address \(a dotted quad such as 192\.168\.60\.11\); the line is not shown, in case the file is no peers file$/,
    );
    // A mistyped address is shown, to be mended.
    refused(
      () => parsePeersFile('192.168.60.12\n192.168.60.300\n', 'peers.txt', none),
      'bad-file',
      /^peers\.txt:2: "192\.168\.60\.300" is not an IPv4 address/,
    );
    refused(
      () => parsePeersFile('192.168.60.12 192.168.60.13\n', 'peers.txt', none),
      'bad-file',
      /^peers\.txt:1: .*one address a line/,
    );
    refused(
      () => parsePeersFile('- 192.168.60.12\n\n- 239.1.1.1\n', 'peers.yaml', none),
      'bad-file',
      /^peers\.yaml:3: "239\.1\.1\.1" is not a unicast/,
    );
    refused(
      () => parsePeersFile('- 192.168.60.12\n- 42\n', 'peers.yaml', none),
      'bad-file',
      /^peers\.yaml:2: a number, not a string/,
    );
    refused(
      () => parsePeersFile('- 192.168.60.12\n- [a]\n', 'peers.yaml', none),
      'bad-file',
      /^peers\.yaml:2: a list or mapping/,
    );
    // An empty node has no span of its own: the loader names its list's line.
    refused(
      () => parsePeersFile('- 192.168.60.12\n-\n', 'peers.yaml', none),
      'bad-file',
      /^peers\.yaml:\d+: an empty entry/,
    );
    refused(() => parsePeersFile('- a: [\n', 'peers.yaml', none), 'bad-file', /^peers\.yaml:\d+: not valid YAML/);
    refused(
      () => parsePeersFile('- &a 192.168.60.12\n- *a\n', 'peers.yaml', none),
      'bad-file',
      /^peers\.yaml:1: an anchor/,
    );
    refused(
      () => parsePeersFile('peers: [192.168.60.12]\n', 'peers.yaml', none),
      'bad-file',
      /^peers\.yaml:1: more than one word: one address a line; the line is not shown/,
    );
  });

  it('a list as a mapping value is not a peers file', () => {
    refused(
      () => parsePeersFile('---\npeers:\n  - 192.168.60.12\n', 'peers.yaml', none),
      'bad-file',
      /^peers\.yaml:2: the file must be a list of addresses/,
    );
  });

  it(`caps a file at ${MAX_PEERS} peers, naming the line past it`, () => {
    const lines = Array.from({ length: MAX_PEERS + 1 }, (_, index) => `10.1.${index >> 8}.${index & 0xff}`);
    refused(
      () => parsePeersFile(lines.join('\n'), 'peers', none),
      'bad-file',
      new RegExp(`^peers:${MAX_PEERS + 1}: more than ${MAX_PEERS} peers`),
    );
  });
});
