/** A FIFO queue with O(1) push/shift and indexed reads (array + moving head). */
export class Deque<T> {
  private items: T[] = [];
  private head = 0;

  get size(): number {
    return this.items.length - this.head;
  }

  push(item: T): void {
    this.items.push(item);
  }

  at(i: number): T {
    return this.items[this.head + i];
  }

  shift(): T | undefined {
    if (this.head >= this.items.length) return undefined;
    const item = this.items[this.head];
    this.items[this.head] = undefined as T;
    this.head++;
    if (this.head > 1024 && this.head * 2 > this.items.length) {
      this.items = this.items.slice(this.head);
      this.head = 0;
    }
    return item;
  }

  /** Removes every item matching `pred` (order kept) and returns them in order. */
  removeIf(pred: (item: T) => boolean): T[] {
    const kept: T[] = [];
    const removed: T[] = [];
    for (let i = this.head; i < this.items.length; i++) {
      const item = this.items[i];
      (pred(item) ? removed : kept).push(item);
    }
    this.items = kept;
    this.head = 0;
    return removed;
  }

  *[Symbol.iterator](): IterableIterator<T> {
    for (let i = this.head; i < this.items.length; i++) yield this.items[i];
  }
}
