/**
 * The text of `mcastctl completion`: one bash function, `_mcastctl`, that completes from a
 * table of the program's commands (written in by completionScript), and the same function
 * for zsh through its bash compatibility (bashcompinit), so that both shells complete alike.
 */

export const SHELLS = ['bash', 'zsh'] as const;
export type Shell = (typeof SHELLS)[number];

/** One subcommand as the script completes it. */
export interface CompletionCommand {
  name: string;
  /** Every flag, long and short. */
  flags: string[];
  /** The flags that take a value (the next word is that value, not a flag or argument). */
  valueFlags: string[];
  /** Whether its positional argument is a group (the daemon's groups complete there). */
  takesGroup: boolean;
  /** Fixed words its positional argument takes. */
  words: string[];
}

/** Flags whose value is an interface of this namespace. */
const INTERFACE_FLAGS = ['--iface', '-i', '--iif', '--oif', '--gateway', '--multicast-interfaces'];
/** Flags whose value is a pod the daemon knows (namespace/name). */
const POD_FLAGS = ['--pod', '--from'];
/** Flags whose value is a group: the daemon's groups. */
const GROUP_FLAGS = ['--group', '-g'];
/** Flags whose value is a path. */
const PATH_FLAGS = [
  '--read',
  '-r',
  '--write',
  '-w',
  '--config',
  '--file',
  '-f',
  '--group-policy',
  '--peers',
  '--state-dir',
  '--control-socket',
  '--lock-file',
  '--ovs-rundir',
  '--root',
];

/** Words safe to put between double quotes in a shell script (flag and command names are). */
function words(list: readonly string[]): string {
  for (const word of list)
    if (!/^[-A-Za-z0-9_.]+$/.test(word)) throw new RangeError(`not a plain word: ${JSON.stringify(word)}`);
  return list.join(' ');
}

export function completionScript(shell: Shell, commands: readonly CompletionCommand[]): string {
  const cases = commands
    .map((command) =>
      [
        `    ${words([command.name])})`,
        `      flags="${words(command.flags)}"`,
        `      value_flags="${words(command.valueFlags)}"`,
        `      takes_group=${command.takesGroup ? 1 : 0}`,
        `      fixed="${words(command.words)}"`,
        '      ;;',
      ].join('\n'),
    )
    .join('\n');
  const body = `# mcastctl completion for ${shell}. Load it with: source <(mcastctl completion ${shell})
# Adds to COMPREPLY each line of standard input that begins with $1, as it is. Names from
# the daemon or the kernel never go through compgen -W, which expands its words: a pod
# named $(...) would run it in the shell that pressed TAB.
_mcastctl_reply() {
  local word
  while IFS= read -r word; do
    [[ "$word" == "$1"* ]] && COMPREPLY+=("$word")
  done
  return 0
}
_mcastctl() {
  local cur prev command flags value_flags takes_group fixed
  cur="\${COMP_WORDS[COMP_CWORD]}"
  prev="\${COMP_WORDS[COMP_CWORD-1]}"
  COMPREPLY=()
  if [ "$COMP_CWORD" -le 1 ]; then
    COMPREPLY=($(compgen -W "${words(commands.map((command) => command.name))} --help --version" -- "$cur"))
    return 0
  fi
  command="\${COMP_WORDS[1]}"
  case "$command" in
${cases}
    *) return 0 ;;
  esac
  # The word after a flag that takes a value is that value.
  if [[ " $value_flags " == *" $prev "* ]]; then
    case " ${words(INTERFACE_FLAGS)} " in *" $prev "*)
      _mcastctl_reply "$cur" < <(ls /sys/class/net 2>/dev/null); return 0 ;;
    esac
    case " ${words(POD_FLAGS)} " in *" $prev "*)
      _mcastctl_reply "$cur" < <("\${COMP_WORDS[0]}" completion --list pods 2>/dev/null); return 0 ;;
    esac
    case " ${words(GROUP_FLAGS)} " in *" $prev "*)
      _mcastctl_reply "$cur" < <("\${COMP_WORDS[0]}" completion --list groups 2>/dev/null); return 0 ;;
    esac
    case " ${words(PATH_FLAGS)} " in *" $prev "*)
      COMPREPLY=($(compgen -f -- "$cur")); return 0 ;;
    esac
    return 0
  fi
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$flags" -- "$cur"))
    return 0
  fi
  if [ -n "$fixed" ]; then
    COMPREPLY=($(compgen -W "$fixed" -- "$cur"))
  elif [ "$takes_group" = 1 ]; then
    _mcastctl_reply "$cur" < <("\${COMP_WORDS[0]}" completion --list groups 2>/dev/null)
  fi
  return 0
}
`;
  if (shell === 'bash') return `${body}complete -F _mcastctl mcastctl\n`;
  return `${body}autoload -U +X bashcompinit && bashcompinit
complete -F _mcastctl mcastctl
`;
}
