/**
 * Follows gRPC's message framing (1 flag byte, 4 bytes of big-endian length, the message) over a
 * call's data frames, without holding any of the bytes: what the budget of request bytes needs to
 * know before grpc-js has collected a message (message-budget.ts).
 */
export class MessageFraming {
  private readonly prefix = Buffer.alloc(5);
  private prefixHave = 0;
  private remaining = 0;
  /** Messages begun so far (a first prefix byte seen); the last one may still be arriving. */
  begun = 0;

  /** `onMessage(length, compressed)` is called when a message's prefix is complete, before its bytes. */
  constructor(private readonly onMessage: (length: number, compressed: boolean) => void) {}

  /** True while a message (or its prefix) has begun and not fully arrived. */
  get midMessage(): boolean {
    return this.prefixHave > 0 || this.remaining > 0;
  }

  write(data: Buffer): void {
    let at = 0;
    while (at < data.length) {
      if (this.remaining > 0) {
        const take = Math.min(this.remaining, data.length - at);
        this.remaining -= take;
        at += take;
        continue;
      }
      if (this.prefixHave === 0) this.begun++;
      this.prefix[this.prefixHave++] = data[at++];
      if (this.prefixHave < 5) continue;
      this.prefixHave = 0;
      this.remaining = this.prefix.readUInt32BE(1);
      this.onMessage(this.remaining, this.prefix[0] === 1);
    }
  }
}
