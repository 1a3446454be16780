/** `mcastctl show`: the multicast groups installed on an OVS bridge, read back from the switch. */
import type { Command } from 'commander';
import { BridgeSession } from '../../adapters/ovs/bridge-session.js';
import { describePort } from '../render/group-results.js';
import { Output } from '../render/output.js';
import { addOvsOptions, ovsSettings, type OvsFlags } from '../options/ovs-options.js';

interface ShowFlags extends OvsFlags {
  json?: boolean;
}

export function registerShow(program: Command): void {
  const command = program
    .command('show')
    .summary('list the multicast groups installed on an OVS bridge')
    .description(
      'Read the installed groups back from the switch (flows with our cookie and the OVS groups they use) and list each with its member ports and the traffic its flow forwarded.',
    )
    .option('--json', 'print one JSON document');
  addOvsOptions(command).addHelpText('after', '\nSee mcastctl-show(1).');
  command.action(async (flags: ShowFlags) => {
    const output = new Output({ json: flags.json === true });
    const { target, pipeline } = ovsSettings(flags);
    const session = await BridgeSession.open(target, { pipeline });
    try {
      const { pipeline: installed, counters } = await session.readInstalled();
      const groups = installed.groups.map((group) => ({
        group: group.group,
        groupId: session.pipeline.groupId(group.group),
        ports: group.ports.map((ofport) => session.portByNumber(ofport) ?? { ofport, name: String(ofport) }),
        packets: Number(counters.get(group.group)?.packets ?? 0n),
        bytes: Number(counters.get(group.group)?.bytes ?? 0n),
        ...(group.problem === undefined ? {} : { problem: group.problem }),
      }));
      if (output.json) {
        output.document({ bridge: target.bridge, groups });
        return;
      }
      if (groups.length === 0) {
        output.line(`bridge ${target.bridge}: no multicast groups installed`);
      } else {
        output.table({
          head: ['Group', 'OVS group', 'Members', 'Packets', 'Bytes'],
          rows: groups.map((group) => [
            group.problem === undefined ? group.group : `${group.group}\n${output.style.red(group.problem)}`,
            `0x${group.groupId.toString(16)}`,
            group.ports.map(describePort).join('\n'),
            String(group.packets),
            String(group.bytes),
          ]),
          alignRight: [3, 4],
        });
        output.line(`bridge ${target.bridge}: ${groups.length} group${groups.length === 1 ? '' : 's'}`);
      }
      output.flush();
    } finally {
      await session.close();
    }
  });
}
