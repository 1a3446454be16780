/** A state directory in memory (ControllerStateStore): what was saved last, and how often. */
import type { ControllerStateStore } from '../../src/controllers/daemon/loop/ports.js';
import type { SavedState } from '../../src/controllers/daemon/state/state-format.js';

export class MemoryStateStore implements ControllerStateStore {
  saves = 0;
  failSaves = false;

  constructor(public state: SavedState | undefined = undefined) {}

  async load(): Promise<{ state?: SavedState }> {
    return this.state === undefined ? {} : { state: structuredClone(this.state) };
  }

  async save(state: SavedState): Promise<void> {
    if (this.failSaves) throw new Error('EROFS: read-only file system');
    this.saves++;
    this.state = structuredClone(state);
  }

  lastSaved(): number | undefined {
    return this.saves === 0 ? undefined : this.state?.savedAt;
  }
}
