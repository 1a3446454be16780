/** `mcastctl top`: rates over a window of reads of the per-pod counters, and the screen that shows them. */
import assert from 'node:assert/strict';
import { Chalk } from 'chalk';
import { describe, it } from '../helpers/node-test.js';
import { measuringLines, type TrafficRates, TrafficRateWindow, topLines } from '../../src/cli/render/traffic-rates.js';
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

/** The rates of a window of `seconds` fed `reads`, one a second from 0. */
function ratesOf(reads: TrafficStatsView[], seconds = reads.length - 1): TrafficRates {
  const window = new TrafficRateWindow({ seconds });
  reads.forEach((read, index) => window.add(read, index));
  const rates = window.rates();
  assert.ok(rates !== undefined, 'the reads span the window');
  return rates;
}

describe('TrafficRateWindow', () => {
  it("per pod and per group (the sum of its pods), busiest first, over the seconds between the window's reads", () => {
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
    const window = new TrafficRateWindow({ seconds: 2 });
    window.add(before, 10);
    window.add(after, 12);
    const rates = window.rates()!;
    assert.equal(rates.windowSeconds, 2);
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
    const rates = ratesOf([before, after]);
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

  it('no rates until the reads span the window; then over the last window only', () => {
    const window = new TrafficRateWindow({ seconds: 5 });
    const at = (second: number, packets: number) => window.add(stats([entry('239.1.1.1', 5, 'p', packets)]), second);
    at(0, 0);
    assert.equal(window.rates(), undefined);
    assert.equal(window.waitingSeconds, 5);
    for (let second = 1; second < 5; second += 1) at(second, second * 100);
    assert.equal(window.rates(), undefined);
    assert.equal(window.waitingSeconds, 1);
    at(5, 500);
    assert.equal(window.rates()!.groups[0]!.received.packetsPerSecond, 100);
    // Ten seconds at 1000 a second: the first seconds at 100 have left the window.
    for (let second = 6; second <= 15; second += 1) at(second, 500 + (second - 5) * 1000);
    const rates = window.rates()!;
    assert.equal(rates.windowSeconds, 5);
    assert.equal(rates.groups[0]!.received.packetsPerSecond, 1000);
  });

  it('counts folded in every half second read a second apart: a one-second difference is off by half, the window is not', () => {
    // 100 packets a second, added to the counter at every 0.5 s (as the switch's revalidators
    // do), read at every 1.02 s: one-second differences hold one, two or three additions.
    const counted = (second: number) => Math.floor(second / 0.5) * 50;
    const window = new TrafficRateWindow({ seconds: 5 });
    const oneSecond: number[] = [];
    const windowed: number[] = [];
    for (let read = 0; read <= 60; read += 1) {
      const second = 0.3 + read * 1.02;
      window.add(stats([entry('239.1.1.1', 5, 'p', counted(second))]), second);
      if (read > 0) oneSecond.push((counted(second) - counted(second - 1.02)) / 1.02);
      const rates = window.rates();
      if (rates !== undefined) windowed.push(rates.groups[0]!.received.packetsPerSecond);
    }
    assert.ok(Math.max(...oneSecond) > 140 || Math.min(...oneSecond) < 60, `one second: ${oneSecond.join(' ')}`);
    assert.equal(windowed.length, 61 - 5);
    for (const rate of windowed) assert.ok(rate >= 90 && rate <= 110, `windowed: ${windowed.join(' ')}`);
  });

  it('a counter started again in the middle of the window counts on: what it had counted is kept', () => {
    const rates = ratesOf([
      stats([entry('239.1.1.1', 5, 'p', 1000)]),
      stats([entry('239.1.1.1', 5, 'p', 1100)]),
      stats([entry('239.1.1.1', 5, 'p', 50)]),
      stats([entry('239.1.1.1', 5, 'p', 150)]),
    ]);
    assert.equal(rates.groups[0]!.received.packetsPerSecond, (100 + 50 + 100) / 3);
  });
});

describe('topLines', () => {
  const rates = ratesOf([
    stats([]),
    stats(
      Array.from({ length: 20 }, (_, index) => entry(`239.1.1.${index + 1}`, 5, 'default/a', (index + 1) * 10, 0)),
      true,
      3,
    ),
  ]);

  it('a heading, the columns, a bold row per group and a row per pod under it, busiest first', () => {
    const lines = topLines(rates, { columns: 120, rows: 100 }, plain, NOW);
    assert.equal(lines[0], 'mcastctl top: 20 groups, a second over the last 1.0 s, 10:00:05 UTC; q quits');
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
    const lines = topLines(ratesOf([stats([]), stats([])]), { columns: 80, rows: 24 }, plain, NOW);
    assert.deepEqual(lines.slice(2), ['no pod is counted in any group']);
  });

  it('before the first rates: the groups counted, and how long until the rates', () => {
    const window = new TrafficRateWindow({ seconds: 5 });
    const read = stats([entry('239.1.1.1', 5, 'a', 0), entry('239.1.1.1', 6, 'b', 0), entry('239.2.2.2', 5, 'a', 0)]);
    window.add(read, 0);
    window.add(read, 1.5);
    assert.deepEqual(measuringLines(read, window, plain, NOW), [
      'mcastctl top: 2 groups, 10:00:05 UTC; q quits',
      'measuring: rates are averaged over 5 s, the first in 4 s',
    ]);
  });
});
