/** `mcastctl show`: the multicast groups installed on an OVS bridge, read back from the switch. */
import type { Command } from 'commander';
import { BridgeClient } from '../../adapters/ovs/bridge-client.js';
import { describePort } from '../render/group-results.js';
import { Output } from '../render/output.js';
import { forwardingKey } from '../../domain/pipeline/forwarding-key.js';
import { addOvsOptions, ovsSettings, type OvsFlags } from '../options/ovs-options.js';

interface ShowFlags extends OvsFlags {
  json?: boolean;
}

export function registerShow(program: Command): void {
  const command = program
    .command('show')
    .summary('list the multicast groups installed on an OVS bridge')
    .description(
      'Read the installed groups back from the switch (flows with our cookie and the OVS groups they use) and list each with its member ports ' +
        'and the traffic its flow forwarded; a per-source entry, which forwards one source of a group to its own ports, is a row (S, G) of its own.',
    )
    .option('--json', 'print one JSON document');
  addOvsOptions(command).addHelpText('after', '\nSee mcastctl-show(1).');
  command.action(async (flags: ShowFlags) => {
    const output = new Output({ json: flags.json === true });
    const { target, pipeline } = ovsSettings(flags);
    const bridge = await BridgeClient.open(target, { pipeline });
    try {
      const { pipeline: installed, counters } = await bridge.readInstalled();
      // An (S,G) entry is an item of its own, its chain's head read back (its id is not the group's); its counters are
      // by its forwarding key.
      const groups = installed.groups.map((group) => ({
        group: group.group,
        ...(group.source === undefined ? {} : { source: group.source }),
        groupId: group.source === undefined ? bridge.pipeline.groupId(group.group) : (group.groups[0]?.groupId ?? 0),
        ports: group.ports.map((ofport) => bridge.portByNumber(ofport) ?? { ofport, name: String(ofport) }),
        packets: Number(counters.get(forwardingKey(group))?.packets ?? 0n),
        bytes: Number(counters.get(forwardingKey(group))?.bytes ?? 0n),
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
            group.problem === undefined
              ? describeEntry(group)
              : `${describeEntry(group)}\n${output.style.red(group.problem)}`,
            `0x${group.groupId.toString(16)}`,
            group.ports.map(describePort).join('\n'),
            String(group.packets),
            String(group.bytes),
          ]),
          alignRight: [3, 4],
        });
        const sourceEntries = groups.filter((group) => group.source !== undefined).length;
        const groupCount = groups.length - sourceEntries;
        const sourcePart =
          sourceEntries === 0 ? '' : `, ${sourceEntries} (S, G) entr${sourceEntries === 1 ? 'y' : 'ies'}`;
        output.line(`bridge ${target.bridge}: ${groupCount} group${groupCount === 1 ? '' : 's'}${sourcePart}`);
      }
      output.flush();
    } finally {
      await bridge.close();
    }
  });
}

/** A group's (*,G) entry by its address alone; an (S,G) entry as `(S, G)`, as routes are written. */
function describeEntry(entry: { group: string; source?: string }): string {
  return entry.source === undefined ? entry.group : `(${entry.source}, ${entry.group})`;
}
