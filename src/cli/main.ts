/**
 * mcastctl's command line: builds the commander program from one module per
 * subcommand, runs it, and turns whatever happens into one exit code.
 */
import { Command } from 'commander';
import { ExitCode } from '../errors.js';
import { registerCompletion } from './commands/completion.js';
import { registerDaemon } from './commands/daemon.js';
import { registerGroups } from './commands/groups.js';
import { registerInstall } from './commands/install.js';
import { registerInstallService } from './commands/install-service.js';
import { registerQuery } from './commands/query.js';
import { registerReconcile } from './commands/reconcile.js';
import { registerRoutes } from './commands/routes.js';
import { registerShow } from './commands/show.js';
import { registerSnoop } from './commands/snoop.js';
import { registerStatus } from './commands/status.js';
import { registerTrace } from './commands/trace.js';
import { registerTop } from './commands/top.js';
import { registerUninstall } from './commands/uninstall.js';
import { boundText, describeFailure, printFailure } from './exit.js';
import { VERSION } from '../version.js';

export function buildProgram(): Command {
  const program = new Command('mcastctl')
    .description(
      'IPv4 and IPv6 multicast for Open vSwitch nodes: IGMP and MLD snooping, group state, OVS and kernel multicast routing',
    )
    .version(VERSION, '-V, --version')
    // Options of mcastctl itself only before the subcommand: `query --version 2` is the IGMP version.
    .enablePositionalOptions()
    .showSuggestionAfterError(true)
    .exitOverride()
    .configureOutput({
      // Commander quotes what it refused (an unknown option) whole: bounded like every other message.
      outputError: (text, write) => write(boundText(text.startsWith('error:') ? `mcastctl: ${text}` : text)),
    })
    .addHelpText(
      'after',
      `
Exit status:
  0   success            1   runtime failure          2   reconcile found drift
  64  usage error (bad flag, address, file; nothing changed)
  69  a required service is unreachable               77  missing privilege

See mcastctl(1) and mcastctl-<command>(1).`,
    );
  registerSnoop(program);
  registerQuery(program);
  registerInstall(program);
  registerUninstall(program);
  registerShow(program);
  registerRoutes(program);
  registerReconcile(program);
  registerDaemon(program);
  registerStatus(program);
  registerGroups(program);
  registerTop(program);
  registerTrace(program);
  registerInstallService(program);
  registerCompletion(program);
  return program;
}

export async function run(argv: readonly string[]): Promise<ExitCode> {
  const program = buildProgram();
  try {
    await program.parseAsync([...argv], { from: 'user' });
    return ExitCode.Ok;
  } catch (error) {
    const failure = describeFailure(error);
    printFailure(failure, process.stderr);
    return failure.exitCode;
  }
}
