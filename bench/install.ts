/**
 * `mcastctl install -f` of 10,000 groups of 4 member ports each, on a lab node's real OVS,
 * against the same entries added the one-by-one way: one `ovs-ofctl add-group` and one
 * `add-flow` per group. Both measured in this run, on the same bridge.
 *
 *   node --import tsx bench/install.ts [groups]      (root: it builds a network namespace)
 */
import { execFile, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { promisify } from 'node:util';
import { Lab } from '../test/lab/lab.js';
import { OvsNode } from '../test/lab/ovs.js';
import { DEFAULT_PIPELINE_CONFIG } from '../src/domain/pipeline/config.js';
import { MulticastPipeline } from '../src/domain/pipeline/multicast-pipeline.js';
import { type GroupAddress, groupAddress } from '../src/wire/ip-address.js';

const run = promisify(execFile);

export interface InstallFigures {
  groups: number;
  mcastctlSeconds: number;
  ofctlSeconds: number;
  ratio: number;
}

function groupAt(index: number): GroupAddress {
  return groupAddress(`239.${10 + (index >> 16)}.${(index >> 8) & 0xff}.${index & 0xff}`);
}

export async function benchInstall(count = 10_000): Promise<InstallFigures> {
  const lab = Lab.create();
  try {
    const node = await OvsNode.start(lab, 'bench');
    const pods = [];
    for (let i = 1; i <= 4; i++) pods.push(await node.addPod(`p${i}`, { address: `10.9.0.${10 + i}/24` }));
    const file = lab.file('groups.yaml');
    const portList = pods.map((pod) => pod.port).join(', ');
    const lines = ['groups:'];
    for (let i = 0; i < count; i++) lines.push(`  - {group: ${groupAt(i)}, ports: [${portList}]}`);
    writeFileSync(file, lines.join('\n') + '\n');
    const countOurs = async () =>
      (await node.ofctl('dump-groups', node.bridge)).split('\n').filter((line) => line.includes('group_id=')).length;

    // mcastctl: one process, one file.
    let started = process.hrtime.bigint();
    const result = spawnSync(
      process.execPath,
      ['bin/mcastctl.js', 'install', '-f', file, '--json', '--ovs-rundir', node.rundir],
      {
        encoding: 'utf8',
        maxBuffer: 1 << 28,
      },
    );
    const mcastctlSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    if (result.status !== 0) throw new Error(`mcastctl install exited ${result.status}: ${result.stderr}`);
    if ((await countOurs()) !== count) throw new Error('mcastctl did not install every group');
    const removal = spawnSync(
      process.execPath,
      ['bin/mcastctl.js', 'uninstall', '--all', '--json', '--ovs-rundir', node.rundir],
      {
        encoding: 'utf8',
        maxBuffer: 1 << 28,
      },
    );
    if (removal.status !== 0 || (await countOurs()) !== 0) throw new Error(`uninstall --all failed: ${removal.stderr}`);

    // ovs-ofctl: the same entries (same ids, cookies, buckets), one call per group and per flow.
    const pipeline = new MulticastPipeline(DEFAULT_PIPELINE_CONFIG, { maxBucketsPerGroup: 2047 });
    const mgmt = node.openflowEndpoint;
    const buckets = pods.map((pod) => `bucket=actions=output:${pod.ofport}`).join(',');
    started = process.hrtime.bigint();
    for (let i = 0; i < count; i++) {
      const group = groupAt(i);
      const { groupId, flow } = { groupId: pipeline.groupId(group), flow: pipeline.groupFlow(group) };
      await run('ovs-ofctl', ['-O', 'OpenFlow13', 'add-group', mgmt, `group_id=${groupId},type=all,${buckets}`]);
      await run('ovs-ofctl', [
        '-O',
        'OpenFlow13',
        'add-flow',
        mgmt,
        `cookie=0x${flow.cookie.toString(16)},priority=${flow.priority},ip,nw_dst=${group},actions=group:${groupId}`,
      ]);
    }
    const ofctlSeconds = Number(process.hrtime.bigint() - started) / 1e9;
    if ((await countOurs()) !== count) throw new Error('ovs-ofctl did not install every group');
    return { groups: count, mcastctlSeconds, ofctlSeconds, ratio: ofctlSeconds / mcastctlSeconds };
  } finally {
    await lab.destroy();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const figures = await benchInstall(Number(process.argv[2] ?? 10_000));
  console.log(figures);
}
