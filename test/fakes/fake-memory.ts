/** The daemon's memory for tests (MemoryPort): resident bytes the test sets, and the times it was given back. */
import type { MemoryPort } from '../../src/controllers/daemon/loop/ports.js';

export class FakeMemory implements MemoryPort {
  resident = 80 * 2 ** 20;
  releases = 0;

  residentBytes(): number {
    return this.resident;
  }

  release(): void {
    this.releases++;
  }
}
