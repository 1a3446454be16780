/**
 * OpenFlow 1.3 meters against a real ovs-vswitchd (a lab node with the user-space
 * datapath, test/lab/ovs.ts): METER_FEATURES is read; a meter (packets/s, burst, a drop
 * band) is added, and a flow sends a pod's UDP through it; a pod floods above the rate and
 * the meter's counters show the excess dropped while the receiver gets about the allowed
 * rate; MODIFY and DELETE are what `ovs-ofctl -O OpenFlow13 dump-meters` (an independent
 * reader) then shows; OVS's refusals arrive as typed METER_MOD_FAILED errors.
 *
 * What OVS's user-space datapath does with meters is logged (`meter fact:` lines).
 *
 * Needs root, iproute2, ethtool, python3 and Open vSwitch 3.x. Never touches the
 * machine's own OVS.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from '../helpers/node-test.js';
import { output } from '../../src/protocol/openflow/action.js';
import { OpenFlowError } from '../../src/protocol/openflow/errors.js';
import { flowMod } from '../../src/protocol/openflow/flow-mod.js';
import { applyActions, meter } from '../../src/protocol/openflow/instruction.js';
import { dropBand, dscpRemarkBand, MeterBandType } from '../../src/protocol/openflow/meter-band.js';
import { MeterFlag, MeterModCommand, meterMod, OfpMeter } from '../../src/protocol/openflow/meter-mod.js';
import { FlowModCommand } from '../../src/protocol/openflow/mod-command.js';
import type { OxmField } from '../../src/protocol/openflow/oxm.js';
import { OpenFlowConnection } from '../../src/transport/openflow/connection.js';
import { Lab, sleep } from '../lab/lab.js';
import { OvsNode, type OvsPod } from '../lab/ovs.js';

const GROUP_ADDRESS = '239.30.0.1';
const UDP_PORT = 5301;
const METER_ID = 1;
const RATE_PPS = 50;
const BURST_PACKETS = 10;
const COOKIE_METERED = 0x6d63_0003_0000_0001n;
const PKTPS_BURST_STATS = MeterFlag.PKTPS | MeterFlag.BURST | MeterFlag.STATS;

/**
 * `ovs-ofctl dump-meters` lines after the reply header, joined per meter ("meter=1 pktps burst stats bands= type=drop
 * rate=50 burst_size=10").
 */
function meterLines(text: string): string[] {
  const lines = text
    .split('\n')
    .map((line) => line.trim())
    .filter((line) => line !== '' && !line.startsWith('OFPST_'));
  const meters: string[] = [];
  for (const line of lines) {
    if (line.startsWith('meter=')) meters.push(line);
    else if (meters.length > 0) meters[meters.length - 1] += ` ${line}`;
  }
  return meters.sort();
}

describe('OpenFlow meters against ovs-vswitchd', () => {
  let lab: Lab;
  let node: OvsNode;
  let sender: OvsPod;
  let receiver: OvsPod;
  let connection: OpenFlowConnection;
  const log = (line: string) => console.log(`meter fact: ${line}`);

  /** The flow that sends the sender's UDP to the group through meter METER_ID, then to the receiver's port. */
  function meteredFlow(command: number = FlowModCommand.ADD) {
    const match: OxmField[] = [
      { field: 'IN_PORT', value: sender.ofport },
      { field: 'ETH_TYPE', value: 0x0800 },
      { field: 'IP_PROTO', value: 17 },
      { field: 'IPV4_DST', value: GROUP_ADDRESS },
    ];
    return flowMod({
      command,
      cookie: COOKIE_METERED,
      priority: 200,
      match,
      instructions: [meter(METER_ID), applyActions([output(receiver.ofport)])],
    });
  }

  /** Sends `count` datagrams from the sender; what the receiver got and what the meter counted meanwhile. */
  async function flood(count: number, intervalMs: number) {
    const [before] = await connection.meterStats(METER_ID);
    const listening = await receiver.listen(GROUP_ADDRESS, UDP_PORT);
    await sleep(200);
    const started = performance.now();
    await sender.send(GROUP_ADDRESS, UDP_PORT, count, { intervalMs });
    const seconds = (performance.now() - started) / 1000;
    await sleep(300);
    const received = (await listening.stop()).filter((datagram) => datagram.from === sender.address).length;
    const [stats] = await connection.meterStats(METER_ID);
    assert.ok(before && stats, 'meter stats for the meter');
    return {
      received,
      seconds,
      stats,
      packetIn: stats.packetInCount - before.packetInCount,
      dropped: stats.bandStats[0]!.packetCount - before.bandStats[0]!.packetCount,
    };
  }

  before(async () => {
    lab = Lab.create();
    node = await OvsNode.start(lab, 'mt');
    sender = await node.addPod('pod1', { address: '10.3.0.11/24' });
    receiver = await node.addPod('pod2', { address: '10.3.0.12/24' });
    connection = await OpenFlowConnection.connect({ endpoint: node.openflowEndpoint });
  });

  after(async () => {
    await connection?.close();
    await lab?.destroy();
  });

  it('METER_FEATURES: the datapath supports packet and kbit rates, bursts, stats and the drop band', async () => {
    const features = await connection.meterFeatures();
    log(
      `METER_FEATURES max_meter=${features.maxMeter} band_types=0x${features.bandTypes.toString(16)} ` +
        `capabilities=0x${features.capabilities.toString(16)} max_bands=${features.maxBands} max_color=${features.maxColor}`,
    );
    assert.ok(features.maxMeter > 0, 'the user-space datapath has meters');
    assert.ok(features.bandTypes & (1 << MeterBandType.DROP), 'the drop band is supported');
    for (const flag of [MeterFlag.KBPS, MeterFlag.PKTPS, MeterFlag.BURST, MeterFlag.STATS])
      assert.ok(features.capabilities & flag, `flag ${flag}`);
    assert.ok(features.maxBands >= 1);
    const text = await node.ofctl('meter-features', 'br-int');
    assert.match(
      text,
      new RegExp(`max_meter:${features.maxMeter} max_bands:${features.maxBands} max_color:${features.maxColor}`),
    );
  });

  it('METER_MOD ADD and a flow with the METER instruction: ovs-ofctl shows both, flow stats decode the instruction', async () => {
    const { errors } = await connection.batch([
      meterMod({ meterId: METER_ID, flags: PKTPS_BURST_STATS, bands: [dropBand(RATE_PPS, BURST_PACKETS)] }),
      meteredFlow(),
    ]);
    assert.deepEqual(
      [...errors.values()].map((error) => error.errorName),
      [],
    );
    assert.deepEqual(meterLines(await node.ofctl('dump-meters', 'br-int')), [
      `meter=${METER_ID} pktps burst stats bands= type=drop rate=${RATE_PPS} burst_size=${BURST_PACKETS}`,
    ]);
    assert.match(
      await node.ofctl('dump-flows', 'br-int'),
      new RegExp(`cookie=0x6d63000300000001,.* actions=meter:${METER_ID},output:${receiver.ofport}`),
    );
    const [flow] = await connection.dumpFlows({ cookie: COOKIE_METERED });
    assert.deepEqual(flow?.instructions, meteredFlow().instructions);
    const config = await connection.multipart({ kind: 'METER_CONFIG', meterId: METER_ID });
    assert.deepEqual(
      config.flatMap((part) => (part.body.kind === 'METER_CONFIG' ? part.body.meters : [])),
      [{ flags: PKTPS_BURST_STATS, meterId: METER_ID, bands: [dropBand(RATE_PPS, BURST_PACKETS)] }],
    );
  });

  it('a burst after a quiet second: about burst_size packets pass at once', async () => {
    await sleep(1000); // the bucket fills
    const sent = 100;
    const { received, seconds, packetIn, dropped } = await flood(sent, 0);
    log(
      `burst of ${sent} in ${seconds.toFixed(2)} s after 1 s idle at a ${RATE_PPS} pps meter with burst ${BURST_PACKETS}: ` +
        `received ${received}, dropped ${dropped}`,
    );
    assert.equal(packetIn, BigInt(sent));
    assert.equal(dropped + BigInt(received), BigInt(sent));
    // The sender's python starts in most of `seconds`; the datagrams themselves leave within milliseconds.
    assert.ok(
      received >= BURST_PACKETS / 2 && received <= BURST_PACKETS + RATE_PPS * seconds + 2,
      `received ${received}`,
    );
  });

  it('a pod flooding above the rate: the band counts the drops, the receiver gets about rate × time + burst', async () => {
    const sent = 400;
    const { received, seconds, stats, packetIn, dropped } = await flood(sent, 2);
    log(
      `sent ${sent} in ${seconds.toFixed(2)} s (${Math.round(sent / seconds)} pps) at a ${RATE_PPS} pps meter with burst ${BURST_PACKETS}: ` +
        `received ${received}`,
    );
    log(
      `METER stats flow_count=${stats.flowCount} packet_in=${stats.packetInCount} byte_in=${stats.byteInCount} ` +
        `band drops=${stats.bandStats[0]!.packetCount} duration=${stats.durationSec}s`,
    );
    // Flow counters come from the datapath's flows, which the revalidators read every half second or so: wait for them.
    let flow = (await connection.dumpFlows({ cookie: COOKIE_METERED }))[0];
    for (let tries = 0; tries < 30 && flow?.packetCount !== stats.packetInCount; tries++) {
      await sleep(100);
      flow = (await connection.dumpFlows({ cookie: COOKIE_METERED }))[0];
    }
    log(`the metered flow's own packet_count=${flow?.packetCount} (of ${stats.packetInCount} through the meter)`);

    assert.equal(stats.meterId, METER_ID);
    assert.equal(stats.flowCount, 1);
    assert.equal(stats.bandStats.length, 1);
    assert.equal(packetIn, BigInt(sent), 'every datagram went through the meter');
    assert.equal(dropped + BigInt(received), BigInt(sent), 'what the band did not drop, the receiver got');
    const allowed = RATE_PPS * seconds + BURST_PACKETS;
    assert.ok(received <= allowed * 1.5 + 5, `received ${received}, allowed about ${allowed.toFixed(0)}`);
    assert.ok(
      received >= Math.min(BURST_PACKETS, allowed * 0.5),
      `received ${received}, allowed about ${allowed.toFixed(0)}`,
    );
    assert.ok(dropped > BigInt(sent / 2), `dropped ${dropped}`);
    assert.equal(
      flow?.packetCount,
      stats.packetInCount,
      "OVS counts a metered flow's packets before the meter: dropped ones too",
    );

    const all = await connection.meterStats('all');
    assert.deepEqual(
      all.map((entry) => entry.meterId),
      [METER_ID],
    );
  });

  it('METER_MOD ADD of a taken id, and MODIFY of an unknown one, are refused with typed errors', async () => {
    const { errors } = await connection.batch([
      meterMod({ meterId: METER_ID, bands: [dropBand(1)] }),
      meterMod({ command: MeterModCommand.MODIFY, meterId: 77, bands: [dropBand(1)] }),
    ]);
    assert.deepEqual(
      [...errors.entries()].map(([index, error]) => [
        index,
        error instanceof OpenFlowError ? error.errorName : String(error),
      ]),
      [
        [0, 'METER_MOD_FAILED/METER_EXISTS'],
        [1, 'METER_MOD_FAILED/UNKNOWN_METER'],
      ],
    );
    assert.match(
      errors.get(0)!.message,
      /refused METER_MOD ADD meter 1 \(xid \d+, flags 0xe, 1 band\): METER_MOD_FAILED\/METER_EXISTS/,
    );
    const beyond = await connection.batch([meterMod({ meterId: OfpMeter.MAX + 1, bands: [dropBand(1)] })]);
    assert.equal(beyond.errors.get(0)?.errorName, 'METER_MOD_FAILED/INVALID_METER');
    const dscp = await connection.batch([meterMod({ meterId: 5, bands: [dscpRemarkBand(100, 1)] })]);
    log(`METER_MOD ADD with a dscp_remark band: ${dscp.errors.get(0)?.errorName ?? 'accepted'}`);
    const features = await connection.meterFeatures();
    const pastMax = await connection.batch([meterMod({ meterId: features.maxMeter + 1, bands: [dropBand(1)] })]);
    log(
      `METER_MOD ADD of meter id max_meter+1 (${features.maxMeter + 1}): ${pastMax.errors.get(0)?.errorName ?? 'accepted'}`,
    );
    await connection.batch(
      [5, features.maxMeter + 1].map((meterId) => meterMod({ command: MeterModCommand.DELETE, flags: 0, meterId })),
    );
    await assert.rejects(
      connection.meterStats(77),
      (error: unknown) => error instanceof OpenFlowError && error.errorName === 'METER_MOD_FAILED/UNKNOWN_METER',
    );
  });

  it('METER_MOD MODIFY replaces flags and bands; DELETE removes the meter and the flow that used it', async () => {
    const modified = meterMod({
      command: MeterModCommand.MODIFY,
      meterId: METER_ID,
      flags: MeterFlag.KBPS | MeterFlag.STATS,
      bands: [dropBand(2000)],
    });
    const modify = await connection.batch([modified]);
    assert.equal(modify.errors.size, 0);
    const afterModify = meterLines(await node.ofctl('dump-meters', 'br-int'));
    log(`after MODIFY to kbps without BURST, dump-meters: ${afterModify.join(' | ')}`);
    assert.match(afterModify[0] ?? '', new RegExp(`^meter=${METER_ID} kbps stats bands= type=drop rate=2000`));
    const [stats] = await connection.meterStats(METER_ID);
    log(
      `after MODIFY the meter's counters: packet_in=${stats?.packetInCount} band drops=${stats?.bandStats[0]?.packetCount}`,
    );

    const remove = await connection.batch([meterMod({ command: MeterModCommand.DELETE, flags: 0, meterId: METER_ID })]);
    assert.equal(remove.errors.size, 0);
    assert.deepEqual(meterLines(await node.ofctl('dump-meters', 'br-int')), []);
    assert.deepEqual(await connection.meterStats('all'), []);
    const flows = await connection.dumpFlows({ cookie: COOKIE_METERED });
    log(`after DELETE of the meter, flows that used it: ${flows.length}`);
    assert.doesNotMatch(await node.ofctl('dump-flows', 'br-int'), /meter:/);
  });
});
