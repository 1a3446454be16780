/**
 * `mcastctl completion bash` in an interactive bash on a terminal: readline itself takes the
 * TAB, runs `_mcastctl`, puts the reply in the line, and bash runs the line on Enter (with
 * history expansion on, as for an operator). The terminal is `script`'s. The daemon's pods
 * come from a stand-in `mcastctl` on PATH that also writes down the arguments of every run:
 * a hostile name must reach it as itself, and must not have run anything, at TAB or Enter.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deadline } from '../helpers/time-scale.js';
import { after, before, describe, it } from '../helpers/node-test.js';

const REPO_ROOT = new URL('../../', import.meta.url).pathname;
const ENTRY = 'import { run } from "./src/cli/main.js"; process.exitCode = await run(process.argv.slice(1));';
const PROMPT = 'mcl-prompt$ ';
/** How long bash may take over one line: a TAB that fails leaves the line waiting for more. */
const LINE_MS = deadline(10_000);
/** Each name runs `touch ran` in the shell's directory if the shell ever reads it as code. */
const MARKER = 'ran';

/** What is typed after the flag, and the name it must complete to. */
const PODS: [typed: string, name: string][] = [
  ['$', `$(touch ${MARKER})`],
  ['ns/b', `ns/b\`touch ${MARKER}\``],
  ['ns/c', `ns/c;touch ${MARKER}`],
  // The shell's directory holds ns/d-file: the name put in unquoted would be that file.
  ['ns/d', 'ns/d*'],
  ['ns/e', 'ns/e has spaces'],
  ['ns/h', 'ns/h!-1 history'],
  ['ns/k\\ ', 'ns/k l'],
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${HOME}, which the shell must not expand
  ['ns/m', 'ns/m${HOME}'],
  // Inside a quote left open, readline puts the reply after the quote and closes it.
  ["'ns/i", `ns/i'$(touch ${MARKER})`],
  ['"ns/j', `ns/j"$(touch ${MARKER})!`],
  ['"ns/o', 'ns/o\'\\x"'],
];
/** The one file of the directory completed by --read. */
const FILE = `f $(touch ${MARKER});*`;

let scratch: string;
let records: string;
let script: string;

before(() => {
  scratch = mkdtempSync(join(tmpdir(), 'mcl-completion-tty-'));
  records = join(scratch, 'records');
  mkdirSync(join(scratch, 'bin'));
  mkdirSync(join(scratch, 'home'));
  mkdirSync(join(scratch, 'ns'));
  mkdirSync(join(scratch, 'files'));
  writeFileSync(join(scratch, 'ns', 'd-file'), '');
  writeFileSync(join(scratch, 'files', FILE), '');
  writeFileSync(join(scratch, 'home', 'capture.pcap'), '');
  const quoted = (text: string) => `'${text.replaceAll("'", "'\\''")}'`;
  // Every run but the completion's own writes its arguments, each ended by a NUL, and then a newline.
  writeFileSync(
    join(scratch, 'bin', 'mcastctl'),
    [
      '#!/bin/sh',
      'if [ "$1 $2 $3" = "completion --list pods" ]; then',
      `  printf '%s\\n' ${PODS.map(([, name]) => quoted(name)).join(' ')}`,
      '  exit 0',
      'fi',
      `{ printf '%s\\0' "$@"; printf '\\n'; } >> ${quoted(records)}`,
      '',
    ].join('\n'),
  );
  chmodSync(join(scratch, 'bin', 'mcastctl'), 0o755);
  script = join(scratch, 'completion.bash');
  writeFileSync(
    script,
    execFileSync(
      process.execPath,
      ['--import', 'tsx', '--input-type=module', '-e', ENTRY, '--', 'completion', 'bash'],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    ),
  );
});
after(() => rmSync(scratch, { recursive: true, force: true }));

/** The runs of the stand-in so far, each as its arguments. */
function runs(): string[][] {
  if (!existsSync(records)) return [];
  return readFileSync(records, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .map((line) => line.split('\0').slice(0, -1));
}

/** An interactive bash on a terminal of its own, and what it has written to it. */
class Terminal {
  private screen = '';
  private readonly bash: ChildProcess;
  private readonly closed: Promise<void>;

  constructor() {
    this.bash = spawn('script', ['-qfec', 'bash --norc --noprofile -i', '/dev/null'], {
      cwd: scratch,
      env: {
        PATH: `${join(scratch, 'bin')}:${process.env.PATH ?? '/usr/bin:/bin'}`,
        HOME: join(scratch, 'home'),
        TERM: 'dumb',
        PS1: PROMPT,
        INPUTRC: '/dev/null',
        HISTFILE: join(scratch, 'history'),
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    this.bash.stdout!.on('data', (chunk: Buffer) => (this.screen += chunk.toString('latin1')));
    // A terminal that could not start or has gone says so on the screen, for the wait that fails.
    this.bash.stdin!.on('error', (error) => (this.screen += `\n[terminal input: ${error.message}]`));
    this.closed = new Promise((resolve) => {
      this.bash.on('error', (error) => {
        this.screen += `\n[script: ${error.message}]`;
        resolve();
      });
      this.bash.on('close', () => resolve());
    });
  }

  type(text: string): void {
    this.bash.stdin!.write(text);
  }

  /** Waits until `done` holds, or fails with the last of the screen. */
  async until(what: string, done: () => boolean): Promise<void> {
    const end = Date.now() + LINE_MS;
    while (!done()) {
      if (Date.now() > end)
        assert.fail(`${what}: not within ${LINE_MS} ms; the terminal ends:\n${this.screen.slice(-600)}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  async exit(): Promise<void> {
    this.type('exit\r');
    const timer = setTimeout(() => this.bash.kill('SIGKILL'), LINE_MS);
    await this.closed;
    clearTimeout(timer);
  }

  get text(): string {
    return this.screen;
  }
}

describe('mcastctl completion bash, on a terminal: hostile names go into the line quoted', () => {
  it('each pod, file and ~ path completes on TAB to a word that bash reads back as itself, and none runs', async () => {
    const terminal = new Terminal();
    try {
      await terminal.until('the first prompt', () => terminal.text.includes(PROMPT));
      terminal.type(`source '${script}'; echo "loaded-$((6 * 7))"\r`);
      await terminal.until('the script loaded', () => terminal.text.includes('loaded-42'));
      const lines: [typed: string, expected: string[]][] = [
        ...PODS.map(([typed, name]): [string, string[]] => [
          `trace 239.1.2.3 --pod ${typed}`,
          ['trace', '239.1.2.3', '--pod', name],
        ]),
        [`snoop --read ${scratch}/files/`, ['snoop', '--read', join(scratch, 'files', FILE)]],
        // A ~ typed stays a ~ for bash to expand.
        ['snoop --read ~/cap', ['snoop', '--read', join(scratch, 'home', 'capture.pcap')]],
      ];
      for (const [index, [typed, expected]] of lines.entries()) {
        terminal.type(`mcastctl ${typed}\t\r`);
        await terminal.until(`mcastctl ${typed}<TAB><Enter>`, () => runs().length > index);
        assert.deepEqual(runs()[index], expected, `mcastctl ${typed}<TAB>`);
      }
    } finally {
      await terminal.exit();
    }
    assert.equal(existsSync(join(scratch, MARKER)), false, 'a name ran as a command');
  });
});
