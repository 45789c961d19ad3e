import type { ModelConfig, ModelSequenceBatching } from '@nereid/model-config';
import type { ExecutionItem, InferenceResponse } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import { FakeClock } from './clock';
import { createScheduler } from './scheduler';
import type { SequenceBatchScheduler } from './sequence-batch-scheduler';
import { SinkLog, settle, type RequestSpec } from './spec-helpers';

/** START / READY / END as INT32 0/1 and CORRID as UINT64: the controls Triton's examples use. */
export const CONTROLS: ModelSequenceBatching['control_input'] = [
  { name: 'START', control: [{ kind: 'CONTROL_SEQUENCE_START', int32_false_true: [0, 1] }] },
  { name: 'END', control: [{ kind: 'CONTROL_SEQUENCE_END', int32_false_true: [0, 1] }] },
  { name: 'READY', control: [{ kind: 'CONTROL_SEQUENCE_READY', int32_false_true: [0, 1] }] },
  { name: 'CORRID', control: [{ kind: 'CONTROL_SEQUENCE_CORRID', data_type: 'TYPE_UINT64' }] },
];

export interface SequenceRequestSpec extends Partial<RequestSpec> {
  start?: boolean;
  end?: boolean;
  /** The value of IN's one element (default 0). */
  value?: number;
}

/** One row of an execution as the backend saw it: id ('' for padding) and its control values. */
export interface RowView {
  id: string;
  padding: boolean;
  controls: Record<string, number | bigint | string>;
}

/** An execute function that records executions and answers them when the test says so. */
export class SequenceExecutor {
  readonly batches: { instance: number; items: ExecutionItem[]; done: () => void; failed: (e: unknown) => void }[] = [];

  readonly execute = (instance: number, items: ExecutionItem[]): Promise<void> =>
    new Promise<void>((resolve, reject) => {
      this.batches.push({ instance, items, done: resolve, failed: reject });
    });

  ids(): string[][] {
    return this.batches.map((b) => b.items.map((i) => (i.request.padding ? 'pad' : i.request.id)));
  }

  rows(n: number): RowView[] {
    return this.batches[n].items.map((i) => ({
      id: i.request.id,
      padding: i.request.padding === true,
      controls: Object.fromEntries(
        i.request.inputs.filter((t) => ['START', 'END', 'READY', 'CORRID'].includes(t.name)).map((t) => [t.name, first(t)]),
      ),
    }));
  }

  /**
   * Answers every row of execution `n` with the outputs `outputs` computes (none by default), then
   * frees the instance.
   */
  finish(n: number, outputs: (item: ExecutionItem) => Tensor[] = () => []): void {
    const b = this.batches[n];
    for (const item of b.items) {
      const r = item.request;
      const response: InferenceResponse = { id: r.id, modelName: r.modelName, modelVersion: '1', outputs: outputs(item) };
      item.sink.send(response, true);
    }
    b.done();
  }
}

function first(t: Tensor): number | bigint | string {
  const d = t.data;
  if (Array.isArray(d)) return Buffer.from(d[0]).toString('utf8');
  return d[0];
}

/** A sequence model on the fake clock. */
export function sequenceModel(sb: ModelSequenceBatching, opts: { max?: number; instances?: number; config?: Partial<ModelConfig> } = {}) {
  const clock = new FakeClock(0);
  const log = new SinkLog();
  const ex = new SequenceExecutor();
  const config: ModelConfig = { name: 'm', max_batch_size: opts.max ?? 4, sequence_batching: sb, ...opts.config };
  const s = createScheduler(config, { instanceCount: opts.instances ?? 1, execute: ex.execute, clock }) as SequenceBatchScheduler;
  const send = (id: string, seq: bigint | string, spec: SequenceRequestSpec = {}): void => {
    const item = log.item({ id, inputs: { IN: [1, 1] }, ...spec });
    if (spec.value !== undefined) (item.request.inputs[0].data as Float32Array)[0] = spec.value;
    Object.assign(item.request, { sequenceId: seq, sequenceStart: spec.start === true, sequenceEnd: spec.end === true });
    s.enqueue(item);
  };
  /** Finishes execution `n` and lets the instance take its next one. */
  const finish = async (n: number, outputs?: (item: ExecutionItem) => Tensor[]): Promise<void> => {
    ex.finish(n, outputs);
    await settle();
  };
  return { clock, log, ex, s, send, finish };
}
