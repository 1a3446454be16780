/**
 * `mcastctl completion bash|zsh` in a real bash: the script is loaded, COMP_WORDS and
 * COMP_CWORD are set as bash sets them for a TAB, `_mcastctl` runs, and COMPREPLY is
 * what bash would offer. The daemon's names come from a stand-in `mcastctl` on the
 * command line (the script calls the first word back), which answers `completion --list`.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
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
function completeWith(command: string, typed: readonly string[]): string[] {
  const words = [command, ...typed].map((word) => `'${word.replaceAll("'", "'\\''")}'`).join(' ');
  const out = execFileSync(
    'bash',
    [
      '-c',
      `source '${script}'; COMP_WORDS=(${words}); COMP_CWORD=${typed.length}; _mcastctl; printf '%s\\n' "\${COMPREPLY[@]}"`,
    ],
    { encoding: 'utf8' },
  );
  return out.split('\n').filter((line) => line !== '');
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

  it('hostile names from the daemon are offered as they are, never expanded or run', () => {
    const marker = join(scratch, 'ran');
    // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${HOME}, which the shell must not expand
    const names = [`$(touch ${marker})`, `\`touch ${marker}\``, 'default/*', 'default/${HOME}', 'default/ok'];
    const hostile = join(scratch, 'hostile-mcastctl');
    writeFileSync(hostile, `#!/bin/sh\nprintf '%s\\n' ${names.map((name) => `'${name}'`).join(' ')}\nexit 0\n`);
    chmodSync(hostile, 0o755);
    assert.deepEqual(completeWith(hostile, ['trace', '239.1.2.3', '--pod', '']), names);
    assert.deepEqual(completeWith(hostile, ['trace', '239.1.2.3', '--pod', 'default/']), names.slice(2));
    assert.deepEqual(completeWith(hostile, ['install', '$(']), [names[0]]);
    assert.equal(existsSync(marker), false, 'a name ran as a command');
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
