/** `mcastctl top`: rates from two reads of the per-pod counters, and the screen that shows them. */
import assert from 'node:assert/strict';
import { Chalk } from 'chalk';
import { describe, it } from '../helpers/node-test.js';
import { topLines, trafficRatesOf } from '../../src/cli/render/traffic-rates.js';
import type { PodTrafficView, TrafficStatsView } from '../../src/transport/control/daemon-view.js';

const plain = new Chalk({ level: 0 });
const NOW = new Date('2026-12-07T10:00:05.000Z');

function entry(
  group: string,
  ofport: number,
  pod: string | undefined,
  received: number,
  sent?: number,
): PodTrafficView {
  return {
    group,
    port: { ofport, name: `veth-${ofport}`, ...(pod === undefined ? {} : { pod }) },
    received: { packets: received, bytes: received * 242 },
    ...(sent === undefined ? {} : { sent: { packets: sent, bytes: sent * 242 } }),
  };
}

const stats = (entries: PodTrafficView[], counting = true, uncounted = 0): TrafficStatsView => ({
  counting,
  limit: 4096,
  uncounted,
  entries,
});

describe('trafficRatesOf', () => {
  it('per pod and per group (the sum of its pods), busiest first, over the seconds between the reads', () => {
    const before = stats([
      entry('239.1.1.1', 5, 'default/a', 100, 0),
      entry('239.1.1.1', 6, 'default/b', 100, 10),
      entry('239.2.2.2', 5, 'default/a', 0, 0),
    ]);
    const after = stats([
      entry('239.1.1.1', 5, 'default/a', 150, 0),
      entry('239.1.1.1', 6, 'default/b', 300, 30),
      entry('239.2.2.2', 5, 'default/a', 1000, 0),
    ]);
    const rates = trafficRatesOf(before, after, 2);
    assert.equal(rates.intervalSeconds, 2);
    assert.deepEqual(
      rates.groups.map((group) => [group.group, group.received.packetsPerSecond, group.sent?.packetsPerSecond]),
      [
        ['239.2.2.2', 500, 0],
        ['239.1.1.1', 125, 10],
      ],
    );
    const [, shared] = rates.groups;
    assert.deepEqual(shared!.pods, [
      {
        pod: 'default/b',
        port: 'veth-6',
        received: { packetsPerSecond: 100, bytesPerSecond: 24_200 },
        sent: { packetsPerSecond: 10, bytesPerSecond: 2420 },
      },
      {
        pod: 'default/a',
        port: 'veth-5',
        received: { packetsPerSecond: 25, bytesPerSecond: 6050 },
        sent: { packetsPerSecond: 0, bytesPerSecond: 0 },
      },
    ]);
  });

  it('a pair new in the second read, or whose counter went down (its OVS group rewritten), counts from zero', () => {
    const before = stats([entry('239.1.1.1', 5, 'default/a', 500)], false);
    const after = stats([entry('239.1.1.1', 5, 'default/a', 40), entry('239.1.1.1', 7, undefined, 60)], false);
    const rates = trafficRatesOf(before, after, 1);
    assert.deepEqual(
      rates.groups[0]!.pods.map((pod) => [pod.pod, pod.received.packetsPerSecond, pod.sent]),
      [
        ['veth-7', 60, undefined],
        ['default/a', 40, undefined],
      ],
    );
    assert.equal(rates.groups[0]!.sent, undefined, 'sent not counted');
    assert.equal(rates.counting, false);
  });
});

describe('topLines', () => {
  const rates = trafficRatesOf(
    stats([]),
    stats(
      Array.from({ length: 20 }, (_, index) => entry(`239.1.1.${index + 1}`, 5, 'default/a', (index + 1) * 10, 0)),
      true,
      3,
    ),
    1,
  );

  it('a heading, the columns, a bold row per group and a row per pod under it, busiest first', () => {
    const lines = topLines(rates, { columns: 120, rows: 100 }, plain, NOW);
    assert.equal(lines[0], 'mcastctl top: 20 groups, every 1 s, 10:00:05 UTC; q quits');
    assert.match(lines[1]!, /^Group \/ pod +Rx pkt\/s +Rx bytes\/s +Tx pkt\/s +Tx bytes\/s$/);
    assert.match(lines[2]!, /^239\.1\.1\.20 +200\.0 +48,400 +0\.0 +0$/);
    assert.match(lines[3]!, /^ {2}default\/a +200\.0 +48,400 +0\.0 +0$/);
    assert.equal(lines.at(-1), 'partial: 3 (pod, group) pairs past maxTrafficCounters');
    assert.equal(lines.length, 2 + 40 + 1);
  });

  it('fits the terminal: rows past its height are counted, lines cut at its width', () => {
    const lines = topLines(rates, { columns: 30, rows: 12 }, plain, NOW);
    assert.ok(lines.length <= 12, `${lines.length} lines`);
    assert.ok(
      lines.every((line) => line.length <= 30),
      lines.join('\n'),
    );
    assert.ok(lines.includes('… 33 more rows'), lines.join('\n'));
  });

  it('no pod counted: says so', () => {
    const lines = topLines(trafficRatesOf(stats([]), stats([]), 1), { columns: 80, rows: 24 }, plain, NOW);
    assert.deepEqual(lines.slice(2), ['no pod is counted in any group']);
  });
});
