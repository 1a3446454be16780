/**
 * `mcastctl install-service`: places the package's systemd units and example
 * configuration below --root (default /), reports each file and the next step. It never
 * runs systemctl: enabling the daemon is the operator's step, and printed as such.
 */
import { realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Command } from 'commander';

import { McastError, messageOf } from '../../errors.js';
import {
  CONFIG_DIRECTORY,
  type FileAction,
  installService,
  type InstallServiceResult,
} from '../../controllers/service/install-service.js';
import { Output } from '../render/output.js';

interface InstallServiceFlags {
  root: string;
  dryRun?: boolean;
  force?: boolean;
  json?: boolean;
}

/** The package's root, three levels above this file as src/cli/commands/*.ts (tsx) and dist/cli/commands/*.js. */
const PACKAGE_ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const ENTRY_SCRIPT = fileURLToPath(new URL('../../../bin/mcastctl.js', import.meta.url));

const NEXT_STEP = 'systemctl daemon-reload && systemctl enable --now mcastctl';

const DONE: Record<FileAction, string> = {
  write: 'wrote',
  update: 'updated',
  replace: 'replaced',
  keep: 'kept',
  unchanged: 'unchanged',
};
const PLANNED: Record<FileAction, string> = {
  write: 'would write',
  update: 'would update',
  replace: 'would replace',
  keep: 'would keep',
  unchanged: 'unchanged',
};

/**
 * What ExecStart runs: this Node.js and this installation's entry script, both by their
 * real paths, so the service starts the same program whatever PATH systemd gives it and
 * wherever npm's bin link points later.
 */
function serviceCommand(): string[] {
  try {
    return [realpathSync(process.execPath), realpathSync(ENTRY_SCRIPT)];
  } catch (error) {
    throw new McastError(
      'internal',
      `cannot find this installation's entry script ${ENTRY_SCRIPT}: ${messageOf(error)}`,
      {
        hint: 'reinstall mcastctl',
        cause: error,
      },
    );
  }
}

export function registerInstallService(program: Command): void {
  program
    .command('install-service')
    .summary("place the daemon's systemd units and example configuration (no systemctl)")
    .description(
      'Write the systemd units of the daemon (mcastctl.service) and of reconcile (mcastctl-reconcile.service and .timer) into ' +
        '<root>/etc/systemd/system, with ExecStart running this installation, and the example configuration (daemon.yaml, ' +
        'group-policy.yaml) into <root>/etc/mcastctl. Units are replaced when they differ; a configuration file that exists is ' +
        'kept unless --force. Prints each file and the next step; it does not run systemctl.',
    )
    .option('--root <dir>', 'the directory the system tree starts at (a staging tree, an image)', '/')
    .option('--dry-run', 'say what would be written, write nothing')
    .option('--force', 'replace configuration files that exist (the units are replaced anyway)')
    .option('--json', 'print one JSON document')
    .addHelpText(
      'after',
      '\nExit status: 0 done; 64 a bad --root (empty, a control character, a symbolic link below it) or a path ' +
        'a unit cannot hold; 77 no permission to write there. See mcastctl-install-service(1).',
    )
    .action((flags: InstallServiceFlags) => {
      const output = new Output({ json: flags.json === true });
      const result = installService({
        root: flags.root,
        packageRoot: PACKAGE_ROOT,
        command: serviceCommand(),
        force: flags.force === true,
        dryRun: flags.dryRun === true,
      });
      if (output.json) {
        output.document({ ...result, dryRun: flags.dryRun === true, next: NEXT_STEP });
        return;
      }
      printResult(output, result, flags.dryRun === true);
      output.flush();
    });
}

function printResult(output: Output, result: InstallServiceResult, dryRun: boolean): void {
  const words = dryRun ? PLANNED : DONE;
  const width = Math.max(...result.files.map((file) => words[file.action].length));
  for (const file of result.files) {
    const note = file.action === 'keep' ? ' (exists and differs; --force replaces it)' : '';
    output.line(`${words[file.action].padEnd(width)}  ${file.path}${note}`);
  }
  output.line(`ExecStart runs: ${result.execStart}`);
  const config = `${result.root === '/' ? '/' : `${result.root}/`}${CONFIG_DIRECTORY}/daemon.yaml`;
  output.line(`next: set gateway and multicastInterfaces in ${config}, then: ${NEXT_STEP}`);
  output.line(
    `(mcastctl-reconcile.timer reads ${CONFIG_DIRECTORY.replace(/^/, '/')}/state.yaml, the declared state: see mcastctl-reconcile(1))`,
  );
  if (dryRun) output.line('(--dry-run: nothing was written)');
}
