/**
 * A binary min-heap of values by a numeric key (a deadline): the earliest of a million
 * memberships is found without a scan. Values are not moved when their deadline does; the
 * owner checks the top against its own record (remote-members.ts).
 */
export class DeadlineHeap<Value> {
  private readonly keys: number[] = [];
  private readonly values: Value[] = [];

  get size(): number {
    return this.keys.length;
  }

  push(key: number, value: Value): void {
    this.keys.push(key);
    this.values.push(value);
    let at = this.keys.length - 1;
    while (at > 0) {
      const parent = (at - 1) >> 1;
      if (this.keys[parent]! <= key) break;
      this.swap(at, parent);
      at = parent;
    }
  }

  peek(): { key: number; value: Value } | undefined {
    return this.keys.length === 0 ? undefined : { key: this.keys[0]!, value: this.values[0]! };
  }

  pop(): void {
    const last = this.keys.length - 1;
    if (last < 0) return;
    this.swap(0, last);
    this.keys.pop();
    this.values.pop();
    let at = 0;
    for (;;) {
      const left = 2 * at + 1;
      const right = left + 1;
      let least = at;
      if (left < last && this.keys[left]! < this.keys[least]!) least = left;
      if (right < last && this.keys[right]! < this.keys[least]!) least = right;
      if (least === at) return;
      this.swap(at, least);
      at = least;
    }
  }

  clear(): void {
    this.keys.length = 0;
    this.values.length = 0;
  }

  private swap(a: number, b: number): void {
    const key = this.keys[a]!;
    this.keys[a] = this.keys[b]!;
    this.keys[b] = key;
    const value = this.values[a]!;
    this.values[a] = this.values[b]!;
    this.values[b] = value;
  }
}
