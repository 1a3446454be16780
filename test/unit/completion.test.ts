/**
 * `mcastctl completion bash|zsh` in a real bash: the script is loaded, COMP_WORDS and
 * COMP_CWORD are set as bash sets them for a TAB, `_mcastctl` runs, and COMPREPLY is
 * what bash would offer. The daemon's names come from a stand-in `mcastctl` on the
 * command line (the script calls the first word back), which answers `completion --list`.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from '../helpers/node-test.js';
import { buildProgram } from '../../src/cli/main.js';
import { completionScript } from '../../src/cli/render/completion-script.js';

const REPO_ROOT = new URL('../../', import.meta.url).pathname;
const ENTRY = 'import { run } from "./src/cli/main.js"; process.exitCode = await run(process.argv.slice(1));';

let scratch: string;
let standIn: string;
let script: string;

before(() => {
  scratch = mkdtempSync(join(tmpdir(), 'mcl-completion-'));
  standIn = join(scratch, 'mcastctl');
  writeFileSync(
    standIn,
    '#!/bin/sh\n[ "$1 $2 $3" = "completion --list groups" ] && printf "239.1.2.3\\n239.1.9.9\\nff15::8000:1\\n"\n[ "$1 $2 $3" = "completion --list pods" ] && printf "default/pod-a\\nkube-system/dns\\n"\nexit 0\n',
  );
  chmodSync(standIn, 0o755);
  // The script as `mcastctl completion bash` prints it.
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

/** What bash offers for the words typed so far (the last one is being completed). */
function complete(...typed: string[]): string[] {
  return completeWith(standIn, typed);
}

/** The same, with `command` as the first word (the mcastctl the script calls back). */
function completeWith(command: string, typed: readonly string[], env: NodeJS.ProcessEnv = {}): string[] {
  const out = inBash(command, typed, `printf '%s\\n' "\${COMPREPLY[@]}"`, env);
  return out.split('\n').filter((line) => line !== '');
}

/**
 * The words the shell reads back from each reply once it is in the line, as readline puts it
 * there: after the quote the typed word leaves open (only a leading one here), closed after it.
 * They are read with eval on purpose, as the shell reads the line it runs: a reply that is
 * not quoted runs what it holds here, and the tests look for what it would have made.
 */
function readBack(command: string, typed: readonly string[]): string[] {
  const open = /^['"]/.test(typed.at(-1) ?? '') ? typed.at(-1)![0]! : '';
  const readEach = `open=${open === "'" ? '"\'"' : `'${open}'`}; for reply in "\${COMPREPLY[@]}"; do
    word="$open$reply"; if [ -n "$open" ] && [[ "$reply" != *"$open" ]]; then word+="$open"; fi
    eval "set -- $word"
    if [ "$#" -eq 1 ]; then printf '%s\\0' "$1"; else printf 'not one word: %s\\0' "$word"; fi
  done`;
  return inBash(command, typed, readEach).split('\0').slice(0, -1);
}

/** Runs `_mcastctl` in bash for the words typed after `command`, then `then`; its output. */
function inBash(command: string, typed: readonly string[], then: string, env: NodeJS.ProcessEnv = {}): string {
  const words = [command, ...typed].map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(' ');
  return execFileSync(
    'bash',
    ['-c', `source '${script}'; COMP_WORDS=(${words}); COMP_CWORD=${typed.length}; _mcastctl; ${then}`],
    { cwd: scratch, encoding: 'utf8', env: { ...process.env, ...env } },
  );
}

/** A stand-in mcastctl that lists these names, whatever it is asked. */
function standInFor(names: readonly string[]): string {
  const path = join(scratch, 'hostile-mcastctl');
  writeFileSync(
    path,
    `#!/bin/sh\nprintf '%s\\n' ${names.map((name) => `'${name.replaceAll("'", "'\\''")}'`).join(' ')}\n`,
  );
  chmodSync(path, 0o755);
  return path;
}

describe('mcastctl completion bash, in bash', () => {
  it('subcommands', () => {
    assert.deepEqual(complete('ro'), ['routes']);
    assert.deepEqual(complete('r').sort(), ['reconcile', 'routes']);
    assert.ok(complete('').includes('completion') && complete('').includes('daemon'));
  });

  it("a subcommand's flags, and only its own", () => {
    assert.deepEqual(complete('install', '--so'), ['--source']);
    assert.deepEqual(complete('daemon', '--mld'), ['--mld-query-versions']);
    assert.deepEqual(complete('routes', '--so'), []);
  });

  it("values: interfaces of this namespace, the daemon's pods and groups, files", () => {
    assert.ok(complete('snoop', '--iface', 'l').includes('lo'));
    assert.deepEqual(complete('install', '239.1.2.3', '--iif', 'l'), ['lo']);
    assert.deepEqual(complete('query', '--group', 'ff'), ['ff15::8000:1']);
    assert.deepEqual(complete('install', '239.1.'), ['239.1.2.3', '239.1.9.9']);
    assert.deepEqual(complete('reconcile', '-f', join(scratch, 'completion.b')), [script]);
    // A flag's value is not taken for a flag or an argument: nothing for a value with no list.
    assert.deepEqual(complete('install', '--ports', ''), []);
  });

  it('hostile names from the daemon are offered quoted, never expanded or run', () => {
    const marker = join(scratch, 'ran');
    const names = [
      `$(touch ${marker})`,
      `\`touch ${marker}\``,
      `ns/a;touch ${marker}`,
      'ns/*',
      // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${HOME}, which the shell must not expand
      'ns/${HOME}',
      'ns/my pod',
      "ns/it's",
      `ns/q"$(touch ${marker})!`,
      'ns/ok',
    ];
    const hostile = standInFor(names);
    // bash's directory holds ns/file: ns/* read back unquoted would be that file.
    mkdirSync(join(scratch, 'ns'));
    writeFileSync(join(scratch, 'ns', 'file'), '');
    const pod = (typed: string) => ['trace', '239.1.2.3', '--pod', typed];
    assert.deepEqual(completeWith(hostile, ['install', '$(']), [`\\$\\(touch\\ ${marker}\\)`]);
    assert.deepEqual(completeWith(hostile, pod('ns/my')), ['ns/my\\ pod']);
    assert.deepEqual(readBack(hostile, pod('')), names);
    assert.deepEqual(readBack(hostile, pod('ns/')), names.slice(2));
    // What is typed is matched as the shell reads it: backslashes and quotes taken off.
    assert.deepEqual(readBack(hostile, pod('ns/my\\ ')), ['ns/my pod']);
    assert.deepEqual(readBack(hostile, pod('n"s/i"t')), ["ns/it's"]);
    // Inside a quote left open, the reply is what follows the quote, in that quote's escapes.
    assert.deepEqual(readBack(hostile, pod("'ns/")), names.slice(2));
    assert.deepEqual(readBack(hostile, pod('"ns/')), names.slice(2));
    assert.equal(existsSync(marker), false, 'a name ran as a command');
  });

  it('file names are offered quoted too, and a ~ typed is left for the shell to expand', () => {
    // A file's name holds no slash: the marker is made in bash's directory, the scratch one.
    const files = join(scratch, 'files');
    const names = ['f $(touch ran-file)', 'g;*', "h'i"];
    mkdirSync(files);
    for (const name of names) writeFileSync(join(files, name), '');
    const paths = names.map((name) => join(files, name)).sort();
    assert.deepEqual(readBack(standIn, ['snoop', '--read', `${files}/`]).sort(), paths);
    assert.deepEqual(readBack(standIn, ['snoop', '--read', `'${files}/`]).sort(), paths);
    assert.equal(existsSync(join(scratch, 'ran-file')), false, 'a file name ran as a command');
    mkdirSync(join(scratch, 'home'));
    writeFileSync(join(scratch, 'home', 'capture.pcap'), '');
    const home = { HOME: join(scratch, 'home') };
    assert.deepEqual(completeWith(standIn, ['snoop', '--read', '~/cap'], home), ['~/capture.pcap']);
  });

  it('only fixed words go through compgen -W, and nothing through eval', () => {
    const code = readFileSync(script, 'utf8')
      .split('\n')
      .filter((line) => !/^\s*#/.test(line))
      .join('\n');
    for (const [, list] of code.matchAll(/compgen -W "([^"]*)"/g))
      assert.ok(list === '$flags' || list === '$fixed' || /^[-A-Za-z0-9_. ]+$/.test(list!), `compgen -W "${list}"`);
    assert.doesNotMatch(code, /\beval\b/);
  });

  it('the shells themselves after `completion`', () => {
    assert.deepEqual(complete('completion', ''), ['bash', 'zsh']);
  });

  it('every subcommand of the program is in the script, and the zsh script is the same function through bashcompinit', () => {
    const names = buildProgram().commands.map((command) => command.name());
    assert.deepEqual(
      complete('')
        .filter((word) => !word.startsWith('-'))
        .sort(),
      [...names].sort(),
    );
    const zsh = completionScript('zsh', []);
    assert.match(zsh, /autoload -U \+X bashcompinit && bashcompinit\ncomplete -F _mcastctl mcastctl\n$/);
  });
});
