/**
 * The text of `mcastctl completion`: one bash function, `_mcastctl`, that completes from a
 * table of the program's commands (written in by completionScript), and the same function
 * for zsh through its bash compatibility (bashcompinit), so that both shells complete alike.
 * Fixed words (commands, flags, shells) are checked plain here and may go through compgen -W;
 * every other name (pods, groups, interfaces, files) is matched and quoted by QUOTING.
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

/**
 * The shell functions that put names in COMPREPLY: no name is expanded, each is offered quoted.
 * Shell text, but for the template literal's own escapes of backslashes, backticks and ${.
 */
const QUOTING = `# Every name offered is quoted as the shell will read it back, and none is expanded. The
# daemon's pods and groups come from OVSDB, where whoever writes an Interface row names the
# pod, and interfaces and files are named by whoever made them: compgen -W would expand such
# a name, and one put in COMPREPLY as it is would go into the line as shell text, so a pod
# named $(...) would run in the shell that pressed TAB, or when the line is run.

# Reads the word being completed ($1) as the shell will, a character at a time (eval would
# run what it holds). Sets the caller's typed to its text with the quoting taken off, quote
# to the quote it leaves open (' or ", or empty), and before to the text ahead of that quote.
_mcastctl_unquote() {
  local word="$1" char i=0
  typed="" quote="" before=""
  while [ "$i" -lt "\${#word}" ]; do
    char="\${word:$i:1}"
    i=$((i + 1))
    if [ "$quote" = "'" ]; then
      if [ "$char" = "'" ]; then quote=""; else typed+="$char"; fi
    elif [ "$char" = '\\' ]; then
      # Between double quotes a backslash quotes only $ \` " and \\, and stays before the rest.
      if [ "$quote" = '"' ] && [[ "\${word:$i:1}" != [\\$\\\`\\"\\\\] ]]; then
        typed+="$char"
      else
        typed+="\${word:$i:1}"
        i=$((i + 1))
      fi
    elif [ -n "$quote" ] && [ "$char" = '"' ]; then
      quote=""
    elif [ -z "$quote" ] && { [ "$char" = "'" ] || [ "$char" = '"' ]; }; then
      quote="$char" before="$typed"
    else
      typed+="$char"
    fi
  done
  return 0
}
# Sets the caller's quoted to the name $1 as it must be typed to be read back as itself.
# Inside a quote the word leaves open, readline puts the reply after that quote and closes
# it (unless the reply ends with it): the rest of the name in that quote's own escapes.
_mcastctl_quote() {
  local name="$1" sq="'" dq='"' bs='\\' bq='\`' dl='$' bang='!' head
  if [ -n "\${ZSH_VERSION:-}" ]; then
    # zsh's bash compatibility takes the quoting off the reply and quotes it for the line itself.
    printf -v quoted %q "$name"
    return 0
  fi
  if [ "$quote" = "'" ]; then
    name="\${name:\${#before}}"
    quoted="\${name//"$sq"/"$sq$bs$sq$sq"}"
  elif [ "$quote" = '"' ]; then
    name="\${name:\${#before}}"
    name="\${name//"$bs"/"$bs$bs"}"
    name="\${name//"$dq"/"$bs$dq"}"
    name="\${name//"$dl"/"$bs$dl"}"
    name="\${name//"$bq"/"$bs$bq"}"
    # A backslash keeps history from expanding a ! between double quotes, but stays in the word.
    quoted="\${name//"$bang"/"$dq$sq$bang$sq$dq"}"
  else
    head=""
    # A ~ typed at the start of a path is left as it is, for the shell to expand.
    if [[ "$cur" == "~"*/* && "\${cur%%/*}" != *[!~A-Za-z0-9._-]* && "$name" == "\${cur%%/*}/"* ]]; then
      head="\${cur%%/*}/"
    fi
    printf -v quoted %q "\${name:\${#head}}"
    quoted="$head$quoted"
  fi
  # A reply that ends with its quote has left it open: closed here, since readline will not.
  if [ -n "$quote" ] && [[ "$quoted" == *"$quote" ]]; then quoted+="$quote"; fi
  return 0
}
# Adds to COMPREPLY, quoted, each line of standard input that begins with the typed word.
_mcastctl_reply() {
  local name quoted
  while IFS= read -r name; do
    [[ "$name" == "$typed"* ]] || continue
    _mcastctl_quote "$name"
    COMPREPLY+=("$quoted")
  done
  return 0
}`;

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
${QUOTING}
_mcastctl() {
  local cur prev command flags value_flags takes_group fixed typed quote before
  cur="\${COMP_WORDS[COMP_CWORD]}"
  _mcastctl_unquote "$cur"
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
      _mcastctl_reply < <(ls /sys/class/net 2>/dev/null); return 0 ;;
    esac
    case " ${words(POD_FLAGS)} " in *" $prev "*)
      _mcastctl_reply < <("\${COMP_WORDS[0]}" completion --list pods 2>/dev/null); return 0 ;;
    esac
    case " ${words(GROUP_FLAGS)} " in *" $prev "*)
      _mcastctl_reply < <("\${COMP_WORDS[0]}" completion --list groups 2>/dev/null); return 0 ;;
    esac
    case " ${words(PATH_FLAGS)} " in *" $prev "*)
      # zsh's compgen -f matches the word being completed by itself (its ~ expanded), not the one it is given.
      [ -n "\${ZSH_VERSION:-}" ] && typed=""
      _mcastctl_reply < <(compgen -f -- "$typed"); return 0 ;;
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
    _mcastctl_reply < <("\${COMP_WORDS[0]}" completion --list groups 2>/dev/null)
  fi
  return 0
}
`;
  if (shell === 'bash') return `${body}complete -F _mcastctl mcastctl\n`;
  return `${body}autoload -U +X bashcompinit && bashcompinit
complete -F _mcastctl mcastctl
`;
}
