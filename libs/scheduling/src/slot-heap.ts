/** One slot of one model instance: where a sequence lives (direct) or is a candidate (oldest). */
export interface SlotRef {
  instance: number;
  slot: number;
}

/** Free slots, lowest slot number first, then lowest instance (a binary min-heap). */
export class SlotHeap {
  private readonly codes: number[] = [];

  constructor(private readonly instances: number) {}

  get size(): number {
    return this.codes.length;
  }

  push(ref: SlotRef): void {
    const h = this.codes;
    h.push(ref.slot * this.instances + ref.instance);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (h[parent] <= h[i]) break;
      [h[parent], h[i]] = [h[i], h[parent]];
      i = parent;
    }
  }

  pop(): SlotRef | undefined {
    const h = this.codes;
    if (h.length === 0) return undefined;
    const top = h[0];
    const last = h.pop() as number;
    if (h.length > 0) {
      h[0] = last;
      let i = 0;
      for (;;) {
        const l = 2 * i + 1;
        const r = l + 1;
        let m = i;
        if (l < h.length && h[l] < h[m]) m = l;
        if (r < h.length && h[r] < h[m]) m = r;
        if (m === i) break;
        [h[m], h[i]] = [h[i], h[m]];
        i = m;
      }
    }
    return { instance: top % this.instances, slot: Math.floor(top / this.instances) };
  }
}
