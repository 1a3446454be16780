/**
 * The life of a native socket, counted by the kernel: three sockets are opened, one is
 * closed at once, one listens and is then closed, and one is dropped unstarted, which
 * only the GC finalizer can close. Runs in a child started with --expose-gc, in a network
 * namespace of its own, so that the kernel's table holds no other process's sockets.
 */
import { readFileSync } from 'node:fs';

export interface LifecycleCounts {
  before: number;
  /** With all three open. */
  open: number;
  /** After close() of the first. */
  closed: number;
  /** After close() of the listening one and collections. */
  collected: number;
}

export interface LifecycleSocket {
  close(): void;
}

export interface LifecycleOptions<S extends LifecycleSocket> {
  /** The kernel's table of such sockets in this namespace: /proc/net/packet, /proc/net/raw. */
  table: string;
  open(): S;
  /** Starts it, with callbacks that do nothing. */
  listen(socket: S): void;
}

export async function socketLifecycle<S extends LifecycleSocket>(
  options: LifecycleOptions<S>,
): Promise<LifecycleCounts> {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with --expose-gc');
  const count = (): number => readFileSync(options.table, 'utf8').trim().split('\n').length - 1;
  const before = count();
  const kept = options.open();
  const listening = options.open();
  options.listen(listening);
  (() => {
    options.open(); // dropped at once, never started
  })();
  const open = count();
  kept.close();
  const closed = count();
  listening.close();
  // Finalizers run after a collection, on a later turn of the loop.
  for (let i = 0; i < 20 && count() > before; i++) {
    gc();
    await new Promise((resolve) => setImmediate(resolve));
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return { before, open, closed, collected: count() };
}
