import { TickGroups, type BatchDoneMessage, type MessagePort } from '@nereid/transport';

/**
 * A worker's batch-done reports to the versions' request queues, one message per queue per tick
 * (TickGroups): the batches that end together (an event-loop ONNX session runs every batch asked
 * for in a turn back to back, and `simple`'s instance had ~8 in flight) are reported in one
 * message, its `more` holding all but the first.
 */
export class BatchReports {
  private readonly groups: TickGroups<BatchDoneMessage>;

  constructor(port: MessagePort) {
    this.groups = new TickGroups((queue, [first, ...rest]) => {
      const message: BatchDoneMessage = rest.length === 0 ? first : {
        ...first,
        more: rest.map((r) => ({ batchId: r.batchId, batchSize: r.batchSize, requestCount: r.requestCount, compute: r.compute })),
      };
      void port.enqueue(queue, message).catch(() => undefined);
    });
  }

  /** Reports `report` to `queue`, with the other reports of this tick to that queue. */
  add(queue: string, report: BatchDoneMessage): void {
    this.groups.add(queue, report);
  }
}
