import type { BatchDoneMessage, MessagePort } from '@nereid/transport';

/**
 * A worker's batch-done reports to the versions' request queues, one message per queue per turn
 * of the event loop: the batches that end together (an event-loop ONNX session runs every batch
 * asked for in a turn back to back, and `simple`'s instance had ~8 in flight) are reported in one
 * message, its `more` holding all but the first. Each report used to be a message of its own: an
 * encode and an XADD on the worker, a read, a decode and an ack on the scheduler, per batch.
 *
 * The message goes out on `process.nextTick` after the first report of a tick: Node runs it once
 * every promise reaction of that tick has run, so the batches that one callback (the session's
 * run of the turn) resolved are all in it, and it reaches the port's outbox in the same turn as
 * their answers (the same pipeline).
 */
export class BatchReports {
  private readonly pending = new Map<string, BatchDoneMessage>();
  private scheduled = false;

  constructor(private readonly port: MessagePort) {}

  /** Reports `report` to `queue`, with the other reports of this tick to that queue. */
  add(queue: string, report: BatchDoneMessage): void {
    const first = this.pending.get(queue);
    if (first) {
      (first.more ??= []).push({ batchId: report.batchId, batchSize: report.batchSize, requestCount: report.requestCount, compute: report.compute });
    } else {
      this.pending.set(queue, report);
    }
    if (!this.scheduled) {
      this.scheduled = true;
      process.nextTick(() => this.flush());
    }
  }

  private flush(): void {
    this.scheduled = false;
    for (const [queue, message] of this.pending) void this.port.enqueue(queue, message).catch(() => undefined);
    this.pending.clear();
  }
}
