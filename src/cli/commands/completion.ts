/**
 * `mcastctl completion bash|zsh`: a completion script written from the program's own
 * commands, flags and arguments, so that it can never disagree with them. Subcommands and
 * flags complete from the script alone (no process per TAB); group arguments and `--pod`
 * values ask the running daemon through `mcastctl completion --list groups|pods`, which
 * prints nothing at all when no daemon answers (a completion must never print errors into
 * the operator's command line).
 */
import { type Command, Option } from 'commander';
import { UsageError, quoteInput } from '../../errors.js';
import { ControlClient, DEFAULT_CONTROL_SOCKET } from '../../transport/control/control-client.js';
import type { DaemonStatus, GroupView } from '../../transport/control/daemon-view.js';
import { parseControlSocket } from '../../transport/control/socket-path.js';
import { Output } from '../render/output.js';
import { type CompletionCommand, completionScript, SHELLS, type Shell } from '../render/completion-script.js';

interface CompletionFlags {
  list?: 'groups' | 'pods';
  controlSocket: string;
}

/** The daemon must answer at once: the operator is waiting on a TAB. */
const LIST_TIMEOUT_MS = 500;

export function registerCompletion(program: Command): void {
  program
    .command('completion')
    .summary(
      'print a bash or zsh completion script: subcommands, flags, and group and pod names from the running daemon',
    )
    .description(
      'Print a completion script for the shell. It completes subcommands and their flags, interface names for ' +
        'flags that take one, files for flags that take a path, and, where the daemon answers, the groups it has ' +
        'learned (for GROUP arguments) and its pods (for --pod). Load it with `source <(mcastctl completion bash)` ' +
        '(zsh: `source <(mcastctl completion zsh)`), or install it as a file (see mcastctl-completion(1)).',
    )
    .argument('[shell]', `the shell: ${SHELLS.join(' or ')}`)
    .addOption(
      new Option(
        '--list <what>',
        'print the names the daemon knows, one a line (groups or pods); nothing when it does not answer',
      ).choices(['groups', 'pods']),
    )
    .option(
      '--control-socket <path>',
      "the daemon's control socket, for --list",
      parseControlSocket,
      DEFAULT_CONTROL_SOCKET,
    )
    .addHelpText('after', '\nExit status: 0 done; 64 an unknown shell. See mcastctl-completion(1).')
    .action(async (shell: string | undefined, flags: CompletionFlags) => {
      const output = new Output({ json: false });
      if (flags.list !== undefined) {
        for (const name of await daemonNames(flags.list, flags.controlSocket)) output.line(name);
        output.flush();
        return;
      }
      if (shell === undefined || !(SHELLS as readonly string[]).includes(shell)) {
        throw new UsageError(
          `${shell === undefined ? 'no shell given' : `unknown shell ${quoteInput(shell)}`}: give ${SHELLS.join(' or ')}`,
          {
            hint: 'source <(mcastctl completion bash)',
          },
        );
      }
      output.line(completionScript(shell as Shell, commandTree(program)).trimEnd());
      output.flush();
    });
}

/** Every subcommand with its flags (hidden ones left out) and whether it takes a group argument. */
function commandTree(program: Command): CompletionCommand[] {
  return program.commands.map((command) => {
    const options = command.options.filter((option) => !option.hidden);
    const names = (option: Option) => [option.long, option.short].filter((name): name is string => name !== undefined);
    return {
      name: command.name(),
      flags: [...options.flatMap(names), '--help'].sort(),
      valueFlags: options
        .filter((option) => option.required || option.optional)
        .flatMap(names)
        .sort(),
      takesGroup: command.registeredArguments.some((argument) => /group/i.test(argument.name())),
      words: command.name() === 'completion' ? [...SHELLS] : [],
    };
  });
}

/**
 * A name offered on a TAB: printable ASCII without spaces. A pod's name comes from OVSDB,
 * where anyone who writes an Interface row may put control characters (a terminal's escape
 * sequences) or line breaks (two names on the one-per-line list) in it; such a name is left out.
 */
const COMPLETABLE = /^[\x21-\x7e]+$/;

/** The groups or pods the daemon knows, sorted; none when it does not answer. */
async function daemonNames(what: 'groups' | 'pods', socketPath: string): Promise<string[]> {
  let client: ControlClient;
  try {
    client = await ControlClient.connect(socketPath, { timeoutMs: LIST_TIMEOUT_MS });
  } catch {
    return [];
  }
  try {
    const groups = await client.request<GroupView[]>('groups');
    if (what === 'groups') return [...new Set(groups.map((view) => view.group))].sort();
    // Every pod port the daemon meters, and every pod that is a member somewhere.
    const status = await client.request<DaemonStatus>('status');
    const ports = [
      ...(status.igmpMeter?.byPort.map((entry) => entry.port) ?? []),
      ...groups.flatMap((view) => view.ports),
    ];
    return [...new Set(ports.flatMap((port) => (port.pod === undefined ? [] : [port.pod])))]
      .filter((name) => COMPLETABLE.test(name))
      .sort();
  } catch {
    return [];
  } finally {
    client.close();
  }
}
