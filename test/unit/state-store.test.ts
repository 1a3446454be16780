/** The daemon's state file: round trip, atomic replacement, corrupt files moved aside, every field checked. */
import assert from 'node:assert/strict';
import { mkdir, mkdtemp, readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { parseSavedState, STATE_FORMAT, type SavedState } from '../../src/controllers/daemon/state/state-format.js';
import { StateStore } from '../../src/controllers/daemon/state/state-store.js';
import { VERSION } from '../../src/version.js';
import { McastError, UsageError } from '../../src/errors.js';
import { type GroupAddress, groupAddress, hostAddress, sourceAddress } from '../../src/wire/ip-address.js';

let root: string;
let counter = 0;
before(async () => {
  root = await mkdtemp(join(tmpdir(), 'mcastctl-state-'));
});
after(async () => {
  await rm(root, { recursive: true, force: true });
});
const freshDir = () => join(root, `s${++counter}`, 'state');

function sample(savedAt = 1_767_225_600_000, extraGroups = 0): SavedState {
  return {
    version: 2,
    savedAt,
    bridge: 'br-int',
    groups: [
      {
        group: groupAddress('239.1.2.3'),
        members: [
          {
            portName: 'veth-a',
            host: hostAddress('10.0.0.5'),
            mode: 'exclude',
            sources: [],
            compatibility: 3,
            lastReportAt: savedAt - 1000,
          },
          {
            portName: 'veth-b',
            host: hostAddress('10.0.0.6'),
            mode: 'exclude',
            sources: [],
            compatibility: 2,
            lastReportAt: savedAt - 2000,
          },
        ],
      },
      {
        group: groupAddress('232.1.1.1'),
        members: [
          {
            portName: 'veth-a',
            host: hostAddress('10.0.0.5'),
            mode: 'include',
            sources: [sourceAddress('10.9.9.9'), sourceAddress('10.9.9.8')],
            compatibility: 3,
            lastReportAt: savedAt,
          },
        ],
      },
      ...Array.from({ length: extraGroups }, (_, index) => ({
        group: groupAddress(`239.2.${index >> 8}.${index & 0xff}`),
        members: [
          {
            portName: `veth-${index}`,
            host: hostAddress('10.1.0.1'),
            mode: 'exclude' as const,
            sources: [],
            compatibility: 3 as const,
            lastReportAt: savedAt,
          },
        ],
      })),
    ],
  };
}

describe('StateStore', () => {
  it('load() with no file returns nothing and no warning', async () => {
    assert.deepEqual(await new StateStore({ dir: freshDir() }).load(), {});
  });

  it('saves and loads back the same state, in a 0700 directory it creates, leaving no temporary file', async () => {
    const dir = freshDir();
    const store = new StateStore({ dir });
    await store.save(sample());
    assert.deepEqual(await store.load(), { state: sample() });
    assert.deepEqual(await readdir(dir), ['state.json']);
    assert.equal((await stat(dir)).mode & 0o777, 0o700);
    assert.equal((await stat(join(dir, 'state.json'))).mode & 0o077, 0, 'not readable by others');
    // A fresh store (a restarted daemon) reads it too.
    assert.deepEqual(await new StateStore({ dir }).load(), { state: sample() });
  });

  it('concurrent saves are serialised: the last state wins, and no temporary file remains', async () => {
    const dir = freshDir();
    const store = new StateStore({ dir });
    const saves = Array.from({ length: 20 }, (_, index) => store.save(sample(1_767_225_600_000 + index, index * 50)));
    await Promise.all(saves);
    const loaded = await store.load();
    assert.equal(loaded.state?.savedAt, 1_767_225_600_000 + 19);
    assert.equal(loaded.state?.groups.length, 2 + 19 * 50);
    assert.deepEqual(await readdir(dir), ['state.json']);
  });

  it('the file on disk is always a whole state, old or new, while saves run', async () => {
    const dir = freshDir();
    const store = new StateStore({ dir });
    await store.save(sample(1_000_000, 400));
    let running = true;
    const reads: number[] = [];
    const reader = (async () => {
      while (running) {
        const text = await readFile(join(dir, 'state.json'), 'utf8');
        reads.push(parseSavedState(JSON.parse(text)).savedAt); // throws on a half-written file
        await new Promise((resolve) => setImmediate(resolve));
      }
    })();
    for (let round = 2; round < 30; round++) await store.save(sample(1_000_000 + round, 400 + round));
    running = false;
    await reader;
    assert.ok(reads.length > 0);
    assert.deepEqual(await readdir(dir), ['state.json']);
  });

  it('moves an unparseable file aside with a warning, and starts empty', async () => {
    const dir = freshDir();
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'state.json'), '{"version":1,"savedAt":');
    const before = Date.now();
    const result = await new StateStore({ dir }).load();
    assert.equal(result.state, undefined);
    assert.match(
      result.warning ?? '',
      /state\.json" is unusable \(.*JSON.*\): moved to state\.json\.corrupt-\d+ in the same directory; starting with no learned memberships/,
    );
    const names = await readdir(dir);
    assert.equal(names.length, 1);
    const epoch = Number(/^state\.json\.corrupt-(\d+)$/.exec(names[0]!)?.[1]);
    assert.ok(epoch >= before && epoch <= Date.now());
    assert.equal(
      await readFile(join(dir, names[0]!), 'utf8'),
      '{"version":1,"savedAt":',
      'kept as it was, for a post-mortem',
    );
    // Then the next load finds nothing, and a save works.
    assert.deepEqual(await new StateStore({ dir }).load(), {});
  });

  // biome-ignore lint/suspicious/noExplicitAny: each case breaks one nested field of a parsed JSON document
  const invalid: Array<[string, (state: Record<string, any>) => void, RegExp]> = [
    ['a version of 0', (state) => (state.version = 0), /version 0 is not a format from 1 to 2/],
    ['a version that is not a number', (state) => (state.version = '2'), /version "2" is not a format from 1 to 2/],
    ['a fractional version', (state) => (state.version = 2.5), /version 2\.5 is not a format/],
    ['an empty writtenBy', (state) => (state.writtenBy = ''), /writtenBy is not a non-empty string/],
    ['a missing bridge', (state) => delete state.bridge, /bridge/],
    [
      'a unicast group',
      (state) => (state.groups[0].group = '10.0.0.1'),
      /groups\[0\]\.group "10\.0\.0\.1" is not an IPv4 multicast address/,
    ],
    ['a group given twice', (state) => (state.groups[1].group = '239.1.2.3'), /appears twice/],
    [
      'a host that is not an address',
      (state) => (state.groups[0].members[1].host = '10.0.0.256'),
      /groups\[0\]\.members\[1\]\.host/,
    ],
    ['a multicast source', (state) => (state.groups[1].members[0].sources = ['239.0.0.1']), /sources\[0\]/],
    ['a bad mode', (state) => (state.groups[0].members[0].mode = 'both'), /mode "both"/],
    ['a compatibility of 4', (state) => (state.groups[0].members[0].compatibility = 4), /compatibility 4/],
    ['a lastReportAt string', (state) => (state.groups[0].members[0].lastReportAt = '2026-01-01'), /lastReportAt/],
    ['a negative savedAt', (state) => (state.savedAt = -1), /savedAt -1/],
    ['an empty port name', (state) => (state.groups[0].members[0].portName = ''), /portName/],
    ['groups not an array', (state) => (state.groups = {}), /groups is not an array/],
    ['an array at the top', (state) => Object.setPrototypeOf(state, Array.prototype), /not a JSON object/],
  ];
  for (const [what, damage, message] of invalid) {
    it(`rejects a file with ${what}: moved aside, with a warning naming the field`, async () => {
      const dir = freshDir();
      await mkdir(dir, { recursive: true });
      // biome-ignore lint/suspicious/noExplicitAny: as above
      const state = JSON.parse(JSON.stringify(sample())) as Record<string, any>;
      damage(state);
      const text = Object.getPrototypeOf(state) === Array.prototype ? '[]' : JSON.stringify(state);
      await writeFile(join(dir, 'state.json'), text);
      const result = await new StateStore({ dir }).load();
      assert.equal(result.state, undefined);
      assert.match(result.warning ?? '', message);
      assert.match((await readdir(dir)).join(), /^state\.json\.corrupt-\d+$/);
    });
  }

  it('reads a format 1 file (an earlier release) as the current format, and saves format 2 naming this release', async () => {
    const dir = freshDir();
    await mkdir(dir, { recursive: true });
    const { version: _current, ...rest } = sample();
    await writeFile(join(dir, 'state.json'), JSON.stringify({ ...rest, version: 1 }));
    const store = await StateStore.prepare({ dir });
    const loaded = await store.load();
    assert.deepEqual(loaded, { state: sample() });
    await store.save({ ...sample(), writtenBy: VERSION });
    const written = JSON.parse(await readFile(join(dir, 'state.json'), 'utf8')) as Record<string, unknown>;
    assert.equal(written.version, STATE_FORMAT);
    assert.equal(written.writtenBy, VERSION);
    assert.deepEqual(await store.load(), { state: { ...sample(), writtenBy: VERSION } });
  });

  it("a file of a newer format is refused at prepare() and at load() (exit 64, 'bad-file'), left where it is", async () => {
    const dir = freshDir();
    await mkdir(dir, { recursive: true });
    const newer = JSON.stringify({ ...sample(), version: STATE_FORMAT + 1, writtenBy: '9.0.0', somethingNew: [1] });
    await writeFile(join(dir, 'state.json'), newer);
    const refused = (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.equal(error.code, 'bad-file');
      assert.equal(error.exitCode, 64);
      assert.match(
        error.message,
        new RegExp(
          `state\\.json" is of format ${STATE_FORMAT + 1} \\(written by mcastctl 9\\.0\\.0\\), newer than this mcastctl \\S+ reads \\(formats 1 to ${STATE_FORMAT}\\)`,
        ),
      );
      assert.match(error.hint ?? '', /run the mcastctl release that wrote it, or move the file away/);
      return true;
    };
    await assert.rejects(StateStore.prepare({ dir }), refused);
    await assert.rejects(new StateStore({ dir }).load(), refused);
    assert.deepEqual(await readdir(dir), ['state.json']);
    assert.equal(await readFile(join(dir, 'state.json'), 'utf8'), newer, 'untouched');
  });

  it('a newer format whose writtenBy is not a plain version names no release', async () => {
    const dir = freshDir();
    await mkdir(dir, { recursive: true });
    await writeFile(join(dir, 'state.json'), JSON.stringify({ version: 99, writtenBy: '\u001b[31mevil' }));
    await assert.rejects(new StateStore({ dir }).load(), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.match(error.message, /is of format 99, newer than/);
      return true;
    });
  });

  it('ignores fields it does not know (a later release may add some)', async () => {
    const dir = freshDir();
    await mkdir(dir, { recursive: true });
    await writeFile(
      join(dir, 'state.json'),
      JSON.stringify({ ...sample(), note: 'x', groups: sample().groups.map((group) => ({ ...group, extra: 1 })) }),
    );
    assert.deepEqual(await new StateStore({ dir }).load(), { state: sample() });
  });

  it('refuses to save an invalid state (a bug upstream), leaving the old file', async () => {
    const dir = freshDir();
    const store = new StateStore({ dir });
    assert.equal(store.lastSaved(), undefined, 'nothing written yet');
    await store.save(sample());
    assert.equal(store.lastSaved(), sample().savedAt, 'when the state written was taken');
    const bad = { ...sample(), groups: [{ group: '1.2.3.4' as GroupAddress, members: [] }], savedAt: 1 };
    await assert.rejects(store.save(bad), (error: unknown) => error instanceof McastError && error.code === 'internal');
    assert.deepEqual(await store.load(), { state: sample() });
    assert.equal(store.lastSaved(), sample().savedAt, 'a save refused leaves the last one');
  });

  it('a state of thousands of members, checked and written a slice at a time, loads back whole; a bad group in a late slice is refused', async () => {
    const dir = freshDir();
    const store = new StateStore({ dir });
    const big = sample(1_767_225_600_000, 3000);
    let turns = 0;
    const counting = setInterval(() => turns++, 0);
    await store.save(big);
    clearInterval(counting);
    assert.deepEqual(await store.load(), { state: big });
    assert.ok(turns > 0, 'the loop ran between slices');
    const bad = { ...big, groups: [...big.groups, { group: '1.2.3.4' as GroupAddress, members: [] }] };
    await assert.rejects(store.save(bad), (error: unknown) => error instanceof McastError && error.code === 'internal');
    assert.deepEqual(await store.load(), { state: big }, 'the last good state is kept');
    // The first group again at the end: a slice alone cannot see it twice.
    const twice = { ...big, groups: [...big.groups, big.groups[0]!] };
    await assert.rejects(store.save(twice), (error: unknown) => {
      assert.ok(error instanceof McastError && error.code === 'internal');
      assert.match(error.message, new RegExp(`group ${big.groups[0]!.group} appears twice`));
      return true;
    });
    assert.deepEqual(await store.load(), { state: big }, 'the last good state is kept');
  });

  it('removes a temporary file a crashed daemon left behind', async () => {
    const dir = freshDir();
    const store = new StateStore({ dir });
    await store.save(sample());
    await writeFile(join(dir, 'state.json.tmp-999999'), '{"half');
    assert.deepEqual(await store.load(), { state: sample() });
    assert.deepEqual(await readdir(dir), ['state.json']);
  });

  it("a state.json that is a directory is refused (exit 64, 'bad-file'), neither read nor moved aside", async () => {
    const dir = freshDir();
    await mkdir(join(dir, 'state.json'), { recursive: true });
    await assert.rejects(new StateStore({ dir }).load(), (error: unknown) => {
      assert.ok(error instanceof UsageError);
      assert.equal(error.code, 'bad-file');
      assert.match(error.message, /state\.json" is a directory, not a regular file/);
      assert.match(error.hint ?? '', /rm -r /);
      return true;
    });
    assert.deepEqual(await readdir(dir), ['state.json']);
  });

  it("a save that cannot write is an McastError 'io' naming the file", async () => {
    const dir = freshDir();
    // The state directory's place is taken by a file: mkdir fails (ENOTDIR/EEXIST), also for root.
    await mkdir(join(dir, '..'), { recursive: true });
    await writeFile(dir, 'not a directory');
    await assert.rejects(new StateStore({ dir }).save(sample()), (error: unknown) => {
      assert.ok(error instanceof McastError);
      assert.equal(error.code, 'io');
      assert.match(error.message, /cannot save the daemon state to ".*state\.json": E[A-Z]+/);
      return true;
    });
    // load() of a path through a file: a real I/O error too.
    await assert.rejects(
      new StateStore({ dir }).load(),
      (error: unknown) => error instanceof McastError && error.code === 'io',
    );
  });
});
