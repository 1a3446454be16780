/**
 * An OVS daemon's pidfile, read as a small regular file: a FIFO, a device or a huge file in its place is refused at
 * once with the path named, and trace's search for ovs-vswitchd's socket says so when nothing else is there.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from '../helpers/node-test.js';
import { deadline } from '../helpers/time-scale.js';
import { ovsPidfilePath, readOvsPidfile } from '../../src/adapters/ovs/locations.js';
import { vswitchdControlPath } from '../../src/adapters/ovs/ofproto-trace.js';
import { UnavailableError } from '../../src/errors.js';
import { FileRefusedError, type FileRefusal } from '../../src/runtime/regular-file.js';

const root = mkdtempSync(join(tmpdir(), 'mcastctl-ovs-pidfile-'));
after(() => rmSync(root, { recursive: true, force: true }));

let counter = 0;
/** A fresh rundir; `make` puts what it likes at the pidfile's path. */
function rundir(make?: (pidfile: string) => void): { dir: string; pidfile: string } {
  const dir = mkdtempSync(join(root, `r${++counter}-`));
  const pidfile = ovsPidfilePath(dir, 'ovs-vswitchd');
  make?.(pidfile);
  return { dir, pidfile };
}

/** A FIFO that nothing ever opens for writing: a read that waited for a writer would wait forever. */
const fifo = (path: string) => execFileSync('mkfifo', [path]);

/** `promise`, or a failure once `ms` (scaled) have passed: a hang fails the test rather than stalling it. */
async function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), deadline(ms));
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Asserts that reading `pidfile` is refused for `reason` within a second, naming the path and not `hidden`. */
async function refused(pidfile: string, reason: FileRefusal, hidden?: string): Promise<FileRefusedError> {
  const error = await within(1000, readOvsPidfile(pidfile)).then(
    () => assert.fail('read'),
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof FileRefusedError, String(error));
  assert.equal(error.reason, reason);
  assert.equal(error.path, pidfile);
  assert.equal(error.code, 'bad-file');
  assert.ok(error.message.includes(pidfile), error.message);
  if (hidden !== undefined) assert.ok(!error.message.includes(hidden), error.message);
  return error;
}

describe('readOvsPidfile', () => {
  it('the pid of a pidfile as OVS writes it', async () => {
    const { pidfile } = rundir((path) => writeFileSync(path, '1234\n'));
    assert.equal(await readOvsPidfile(pidfile), 1234);
    const { pidfile: bare } = rundir((path) => writeFileSync(path, '99'));
    assert.equal(await readOvsPidfile(bare), 99);
  });

  it('no pidfile: undefined, not an error', async () => {
    assert.equal(await readOvsPidfile(rundir().pidfile), undefined);
  });

  it('a FIFO is refused within a second, naming it (nothing writes to it)', { timeout: 10_000 }, async () => {
    const { pidfile } = rundir(fifo);
    const error = await refused(pidfile, 'not-regular');
    assert.match(error.message, /FIFO/);
    assert.ok(error.hint !== undefined && error.hint.length > 0);
  });

  it('/dev/zero through a symbolic link is refused at once, not read', { timeout: 10_000 }, async () => {
    const { pidfile } = rundir((path) => symlinkSync('/dev/zero', path));
    assert.match((await refused(pidfile, 'not-regular')).message, /character device/);
  });

  it('a huge file is refused by its size, before it is read', { timeout: 10_000 }, async () => {
    // Sparse: a gigabyte by its size, none of it on disk.
    const { pidfile } = rundir((path) => {
      writeFileSync(path, '');
      truncateSync(path, 1024 * 1024 * 1024);
    });
    await refused(pidfile, 'too-large');
    const { pidfile: long } = rundir((path) => writeFileSync(path, '7'.repeat(65)));
    await refused(long, 'too-large');
  });

  it('a directory is refused', async () => {
    await refused(rundir((path) => mkdirSync(path)).pidfile, 'not-regular');
  });

  it('a file that holds no pid is refused without quoting it', async () => {
    for (const text of ['root:x:0:0:secret-line\n', 'secret-line', '', '\n', '0\n', '-1\n', '12 34\n', '99999999\n']) {
      const { pidfile } = rundir((path) => writeFileSync(path, text));
      await refused(pidfile, 'bad-content', 'secret-line');
    }
  });
});

describe('vswitchdControlPath with a pidfile that is refused', () => {
  it('a FIFO and no ovs-vswitchd.ctl: UnavailableError within a second, saying why', { timeout: 10_000 }, async () => {
    const { dir, pidfile } = rundir(fifo);
    const error = await within(1000, vswitchdControlPath(dir)).then(
      () => assert.fail('found'),
      (caught: unknown) => caught,
    );
    assert.ok(error instanceof UnavailableError, String(error));
    assert.equal(error.exitCode, 69);
    assert.ok(error.message.includes(pidfile), error.message);
    assert.match(error.message, /FIFO/);
    assert.ok(error.cause instanceof FileRefusedError && error.cause.reason === 'not-regular');
  });

  it("a pidfile of someone else's text and no socket: the text is not in the error", async () => {
    const { dir } = rundir((path) => writeFileSync(path, 'secret-line\n'));
    await assert.rejects(
      vswitchdControlPath(dir),
      (error: unknown) => error instanceof UnavailableError && !error.message.includes('secret-line'),
    );
  });

  it('a refused pidfile beside ovs-vswitchd.ctl: that socket, as before', async () => {
    const { dir } = rundir(fifo);
    writeFileSync(join(dir, 'ovs-vswitchd.ctl'), '');
    assert.equal(await within(1000, vswitchdControlPath(dir)), join(dir, 'ovs-vswitchd.ctl'));
  });

  it('a good pidfile: ovs-vswitchd.<pid>.ctl', async () => {
    const { dir } = rundir((path) => writeFileSync(path, '4321\n'));
    writeFileSync(join(dir, 'ovs-vswitchd.4321.ctl'), '');
    assert.equal(await vswitchdControlPath(dir), join(dir, 'ovs-vswitchd.4321.ctl'));
  });
});
