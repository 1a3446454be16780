/**
 * The metrics endpoint under a local user's load: scrapes served from a copy rendered at
 * most once per max age (one render for many scrapes, a bounded number of answers each),
 * gzip for those who accept it, a bounded number of connections where a new one closes
 * the longest idle, and idle ones closed after the timeout.
 */
import assert from 'node:assert/strict';
import { get } from 'node:http';
import { connect, type Socket } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { Counter, Registry } from 'prom-client';
import { describe, it } from '../helpers/node-test.js';
import { MetricsServer, type MetricsServerOptions } from '../../src/controllers/daemon/observe/metrics-server.js';
import { setTimeout as sleep } from 'node:timers/promises';

/** A registry with one counter, and how many times it was collected. */
function countingRegistry() {
  const registry = new Registry();
  const state = { collected: 0 };
  const counter = new Counter({
    name: 'test_events_total',
    help: 'test',
    registers: [registry],
    collect() {
      state.collected += 1;
    },
  });
  return { registry, counter, state };
}

async function withServer(
  options: Omit<MetricsServerOptions, 'address'>,
  body: (server: MetricsServer) => Promise<void>,
): Promise<void> {
  const server = await MetricsServer.listen({ address: '127.0.0.1:0', ...options });
  try {
    await body(server);
  } finally {
    await server.close();
  }
}

const scrape = (server: MetricsServer) => fetch(`http://${server.address}/metrics`).then((response) => response.text());

/** `count` connections that send nothing, and a promise per connection of its close. */
async function idleConnections(server: MetricsServer, count: number) {
  const [host, port] = [server.address.split(':')[0]!, Number(server.address.split(':')[1])];
  const sockets: Socket[] = [];
  const closed: Array<Promise<void>> = [];
  for (let index = 0; index < count; index += 1) {
    const socket = connect(port, host);
    closed.push(new Promise((resolve) => socket.once('close', () => resolve())));
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()).once('close', () => resolve()));
    sockets.push(socket);
  }
  return { sockets, closed };
}

const openCount = (sockets: Socket[]) => sockets.filter((socket) => !socket.destroyed && socket.readyState === 'open');

describe('MetricsServer under load', () => {
  it('scrapes within the max age share one render: the figures are at most that old', async () => {
    const { registry, counter, state } = countingRegistry();
    await withServer({ registry, maxAgeMs: 300 }, async (server) => {
      counter.inc();
      const first = await Promise.all(Array.from({ length: 8 }, () => scrape(server)));
      assert.equal(state.collected, 1, 'eight scrapes at once: one render');
      assert.ok(first.every((text) => /^test_events_total 1$/m.test(text)));
      counter.inc();
      assert.match(await scrape(server), /^test_events_total 1$/m, 'the copy, not yet the new figure');
      assert.equal(state.collected, 1);
      await sleep(350);
      const fresh = await scrape(server);
      assert.match(fresh, /^test_events_total 2$/m);
      assert.match(fresh, /^mcastctl_metrics_renders_total 2$/m);
      assert.equal(state.collected, 2);
    });
  });

  it('one copy answers at most maxAnswers scrapes: the others wait for the next copy', async () => {
    const { registry, state } = countingRegistry();
    await withServer({ registry, maxAgeMs: 300, maxAnswers: 3 }, async (server) => {
      const started = performance.now();
      const answeredAfter = await Promise.all(
        Array.from({ length: 7 }, () => scrape(server).then(() => performance.now() - started)),
      );
      answeredAfter.sort((a, b) => a - b);
      // Three from the first copy, three from the second (300 ms on), one from the third.
      assert.ok(answeredAfter[2]! < 250, `${answeredAfter}`);
      assert.ok(answeredAfter[3]! >= 250 && answeredAfter[5]! < 550, `${answeredAfter}`);
      assert.ok(answeredAfter[6]! >= 550, `${answeredAfter}`);
      assert.equal(state.collected, 3);
    });
  });

  it('gzip for a scraper that accepts it, the same text', async () => {
    const { registry } = countingRegistry();
    await withServer({ registry }, async (server) => {
      const plain = await scrape(server);
      const [host, port] = server.address.split(':');
      const { encoding, body } = await new Promise<{ encoding: string | undefined; body: Buffer }>(
        (resolve, reject) => {
          get({ host, port, path: '/metrics', headers: { 'accept-encoding': 'gzip' } }, (response) => {
            const chunks: Buffer[] = [];
            response.on('data', (chunk: Buffer) => chunks.push(chunk));
            response.on('end', () =>
              resolve({ encoding: response.headers['content-encoding'], body: Buffer.concat(chunks) }),
            );
          }).on('error', reject);
        },
      );
      assert.equal(encoding, 'gzip');
      assert.equal(gunzipSync(body).toString(), plain);
    });
  });

  it('past the connection limit a new connection closes the longest idle one: a scrape still answers', async () => {
    const { registry } = countingRegistry();
    await withServer({ registry, maxConnections: 4 }, async (server) => {
      const { sockets, closed } = await idleConnections(server, 12);
      // The first eight were closed to admit the last four.
      await Promise.all(closed.slice(0, 8));
      assert.equal(openCount(sockets).length, 4);
      assert.ok(openCount(sockets.slice(8)).length === 4, 'the newest four are kept');
      assert.match(await scrape(server), /^mcastctl_metrics_connections_closed_total\{reason="evicted"\} (8|9)$/m);
      for (const socket of sockets) socket.destroy();
    });
  });

  it('an idle connection is closed after the idle timeout, and counted', async () => {
    const { registry } = countingRegistry();
    await withServer({ registry, idleTimeoutMs: 200 }, async (server) => {
      const { closed } = await idleConnections(server, 3);
      const started = performance.now();
      await Promise.all(closed);
      const waited = performance.now() - started;
      assert.ok(waited >= 100 && waited < 2000, `${waited} ms`);
      assert.match(await scrape(server), /^mcastctl_metrics_connections_closed_total\{reason="idle"\} 3$/m);
    });
  });
});
