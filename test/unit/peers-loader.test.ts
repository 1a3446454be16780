/** The peers file: read with its limits, read again against a running tunnel, and watched for changes. */
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/node-test.js';
import { loadPeersFile, peersFileSource, watchPeersFile } from '../../src/controllers/daemon/config/peers-loader.js';
import { UsageError } from '../../src/errors.js';
import { FileRefusedError } from '../../src/runtime/regular-file.js';
import { hostAddress } from '../../src/wire/ip-address.js';

const directory = mkdtempSync(join(tmpdir(), 'mcastctl-peers-loader-'));
after(() => rmSync(directory, { recursive: true, force: true }));

function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

describe('loadPeersFile', () => {
  it('reads lines or a YAML list; this node is left out once its address is known', async () => {
    const lines = join(directory, 'lines');
    writeFileSync(lines, '10.0.0.3\n10.0.0.1\n10.0.0.2\n10.0.0.2\n');
    const text = await loadPeersFile(lines);
    assert.equal(text.firstPeer(), '10.0.0.1');
    const set = text.peersFor(hostAddress('10.0.0.1'));
    assert.deepEqual(set.peers, ['10.0.0.2', '10.0.0.3']);
    assert.deepEqual(set.droppedSelf, ['10.0.0.1']);
    assert.deepEqual(set.duplicates, ['10.0.0.2']);
    const yaml = join(directory, 'list.yaml');
    writeFileSync(yaml, '- 10.0.0.4\n- 10.0.0.5\n');
    assert.deepEqual((await loadPeersFile(yaml)).peersFor(hostAddress('10.0.0.1')).peers, ['10.0.0.4', '10.0.0.5']);
  });

  it('refuses a bad entry with FILE:LINE before anything else is done', async () => {
    const path = join(directory, 'bad');
    writeFileSync(path, '10.0.0.2\n\n# a comment\nnode-3\n');
    await assert.rejects(loadPeersFile(path), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.match(error.message, new RegExp(`^${path}:4: not an IPv4 address`));
      assert.doesNotMatch(error.message, /node-3/, 'what is in the file is not shown');
      return true;
    });
  });

  it('refuses what is no regular file, or too large, saying what to give', async () => {
    await assert.rejects(
      loadPeersFile(directory),
      (error: unknown) => error instanceof FileRefusedError && error.reason === 'not-regular',
    );
    const large = join(directory, 'large');
    writeFileSync(large, '# padding\n'.repeat(30_000));
    await assert.rejects(loadPeersFile(large), (error: unknown) => {
      assert.ok(error instanceof FileRefusedError);
      assert.equal(error.reason, 'too-large');
      assert.match(error.hint ?? '', /at most 256 KiB/);
      return true;
    });
  });
});

describe('loadPeersFile of a file that is no peers file', () => {
  /** The UsageError that loading a file of `text` throws. */
  const refusal = async (name: string, text: string): Promise<UsageError> => {
    const path = join(directory, name);
    writeFileSync(path, text);
    const error = await loadPeersFile(path).then(
      () => assert.fail('loaded'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof UsageError, String(error));
    assert.equal(error.code, 'bad-file');
    assert.ok(error.message.startsWith(`${path}:`), error.message);
    return error;
  };

  it('says where, never what the file holds: lines, YAML tags, anchors and aliases', async () => {
    const texts = [
      'root:x:0:0:secret-line:/root:/bin/bash\nsecond line\n',
      'secret-line\n',
      '- secret-line\n',
      '[secret-line]\n',
      '- !secret-line 10.0.0.1\n',
      '- !!int secret-line\n',
      '- &secret-line 10.0.0.1\n',
      '- 10.0.0.1\n- *secret-line\n',
      '- "secret-line\n',
      '-----BEGIN PRIVATE KEY-----\nsecret-line\n-----END PRIVATE KEY-----\n',
    ];
    for (const [index, text] of texts.entries()) {
      const error = await refusal(`not-peers-${index}`, text);
      assert.ok(!error.message.includes('secret'), error.message);
      assert.ok(!(error.hint ?? '').includes('secret'), error.hint);
    }
  });

  it('a YAML error is placed by line and column', async () => {
    const error = await refusal('bad-yaml', '- 10.0.0.1\n- [10.0.0.2\n');
    assert.match(error.message, /:\d+: not valid YAML at column \d+: /);
  });

  it('a peers file with a bad entry still names the entry', async () => {
    assert.match((await refusal('typo', '10.0.0.1\n10.0.0.256\n')).message, /:2: "10\.0\.0\.256" is not an IPv4/);
    assert.match((await refusal('loop', '- 10.0.0.1\n- 127.0.0.1\n')).message, /:2: "127\.0\.0\.1" is a loopback/);
  });
});

describe('peersFileSource', () => {
  it('reads the file again at each read, normalised against this node: duplicates and this node dropped', async () => {
    const path = join(directory, 'reread');
    writeFileSync(path, '10.0.0.2\n10.0.0.4\n10.0.0.1\n10.0.0.2\n');
    const source = peersFileSource(path);
    assert.equal(source.label, `peers file ${path}`);
    const first = await source.read(hostAddress('10.0.0.1'));
    assert.deepEqual(first.peers, ['10.0.0.2', '10.0.0.4']);
    assert.deepEqual(first.droppedSelf, ['10.0.0.1']);
    assert.deepEqual(first.duplicates, ['10.0.0.2']);
    writeFileSync(path, '10.0.0.3\n');
    assert.deepEqual((await source.read(hostAddress('10.0.0.1'))).peers, ['10.0.0.3']);
  });

  it('a bad file is refused with its line: the caller keeps the peers it has', async () => {
    const path = join(directory, 'reread-bad');
    writeFileSync(path, '10.0.0.2\n10.0.0\n');
    await assert.rejects(
      peersFileSource(path).read(hostAddress('10.0.0.1')),
      (error: unknown) => error instanceof UsageError && error.message.startsWith(`${path}:2:`),
    );
  });
});

describe('watchPeersFile', () => {
  it('reports a burst of changes once, after it is quiet; a file replaced by a rename too; other files not', async () => {
    const dir = join(directory, 'watched');
    mkdirSync(dir);
    const path = join(dir, 'peers');
    writeFileSync(path, '10.0.0.2\n');
    let changes = 0;
    const errors: Error[] = [];
    const watch = watchPeersFile({
      path,
      debounceMs: 50,
      onChange: () => changes++,
      onError: (error) => errors.push(error),
    });
    try {
      await delay(20);
      writeFileSync(path, '10.0.0.2\n10.0.0.3\n');
      writeFileSync(path, '10.0.0.2\n10.0.0.3\n10.0.0.4\n');
      await delay(200);
      assert.equal(changes, 1);
      writeFileSync(join(dir, 'unrelated'), 'x');
      await delay(200);
      assert.equal(changes, 1);
      const next = join(dir, 'peers.new');
      writeFileSync(next, '10.0.0.5\n');
      renameSync(next, path);
      await delay(200);
      assert.equal(changes, 2);
      assert.deepEqual(errors, []);
    } finally {
      watch.close();
    }
    writeFileSync(path, '10.0.0.6\n');
    await delay(150);
    assert.equal(changes, 2, 'nothing after close');
  });

  it('a directory that cannot be watched is an error reported, not thrown', () => {
    const errors: Error[] = [];
    const watch = watchPeersFile({
      path: join(directory, 'no-such-dir', 'peers'),
      onChange: () => {},
      onError: (error) => errors.push(error),
    });
    watch.close();
    assert.equal(errors.length, 1);
  });
});
