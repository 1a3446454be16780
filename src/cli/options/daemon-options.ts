/**
 * `mcastctl daemon`'s options, built from the table of settings (controllers/daemon/
 * settings.ts): one flag per setting, its help ending in the table's default, then the OVS
 * options every OVS command shares. Commander hands each value on under the setting's
 * file key, unchecked (but for the OVS numbers); loadDaemonConfig checks them.
 */
import { Option, type Command } from 'commander';
import { DAEMON_SETTINGS } from '../../controllers/daemon/config/settings.js';
import { addOvsOptions } from './ovs-options.js';

export function addDaemonOptions(command: Command): Command {
  command.option('--config <file>', 'YAML configuration file (see contrib/daemon.yaml); flags override it');
  for (const setting of DAEMON_SETTINGS) {
    // The OVS settings have no help of their own here: their flags are addOvsOptions'.
    if (setting.help === undefined) continue;
    if (setting.argument === undefined) {
      // The switch first, then its --no- form: then commander gives the value no default, and a file's value stands
      // unless a flag is given.
      command.option(setting.flag, setting.help);
    } else {
      const shown = setting.flagDefault === 'none' ? ' (default: none)' : ` (default ${setting.flagDefault})`;
      command.addOption(new Option(`${setting.flag} ${setting.argument}`, `${setting.help}${shown}`));
    }
    if (setting.negation !== undefined) command.option(setting.negation.flag, setting.negation.help);
  }
  return addOvsOptions(command);
}
