/**
 * What a role hands to one queue within one tick of the event loop, sent there together: `send`
 * gets a queue's items once every promise reaction of the tick has run (`process.nextTick` after
 * the first item: all the items one callback resolved are in, and the message reaches the port's
 * outbox in the same turn), or at once when their weight reaches `maxWeight`. One message per queue
 * per tick instead of one per item: an encode and an XADD on the sender, a read, a decode and an ack
 * on the receiver, per message (bench/RESULTS.md, "bench/distributed").
 */
export class TickGroups<T> {
  private readonly pending = new Map<string, { items: T[]; weight: number }>();
  private scheduled = false;

  constructor(
    private readonly send: (queue: string, items: T[]) => void,
    private readonly weightOf: (item: T) => number = () => 0,
    private readonly maxWeight = Infinity,
  ) {}

  add(queue: string, item: T): void {
    let group = this.pending.get(queue);
    if (!group) this.pending.set(queue, (group = { items: [], weight: 0 }));
    group.items.push(item);
    group.weight += this.weightOf(item);
    if (group.weight >= this.maxWeight) {
      this.pending.delete(queue);
      this.send(queue, group.items);
    } else if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    for (const [queue, group] of this.pending) this.send(queue, group.items);
    this.pending.clear();
  }
}
