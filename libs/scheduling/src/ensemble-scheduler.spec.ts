import type { ModelConfig } from '@nereid/model-config';
import { InferenceError, type ComputeDurations, type ExecutionStats, type InferenceRequest, type InferenceResponse, type ResponseSink } from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import { FakeClock } from './clock';
import { EnsembleScheduler } from './ensemble-scheduler';
import { createScheduler } from './scheduler';
import { SinkLog } from './spec-helpers';

const fp32 = (name: string, values: number[], shape = [values.length]): Tensor => ({ name, datatype: 'FP32', shape, data: Float32Array.from(values) });
const valuesOf = (t: Tensor | undefined): number[] => [...(t?.data as Float32Array)];

/** a → (add_sub) → sum, diff → (mul) → OUT, as the repository's add_sub_mul ensemble. */
const PIPELINE: ModelConfig = {
  name: 'pipe',
  platform: 'ensemble',
  max_batch_size: 0,
  input: [{ name: 'A', data_type: 'TYPE_FP32', dims: [2] }, { name: 'B', data_type: 'TYPE_FP32', dims: [2] }],
  output: [{ name: 'OUT', data_type: 'TYPE_FP32', dims: [2] }],
  ensemble_scheduling: {
    step: [
      { model_name: 'add_sub', model_version: -1, input_map: { x: 'A', y: 'B' }, output_map: { sum: 'S', diff: 'D' } },
      { model_name: 'mul', model_version: -1, input_map: { x: 'S', y: 'D' }, output_map: { prod: 'OUT' } },
    ],
  },
};

/** Two independent steps reading A, joined by a third. */
const DIAMOND: ModelConfig = {
  name: 'diamond',
  platform: 'ensemble',
  input: [{ name: 'A', data_type: 'TYPE_FP32', dims: [2] }],
  output: [{ name: 'OUT', data_type: 'TYPE_FP32', dims: [2] }],
  ensemble_scheduling: {
    step: [
      { model_name: 'left', input_map: { x: 'A' }, output_map: { y: 'L' } },
      { model_name: 'right', input_map: { x: 'A' }, output_map: { y: 'R' } },
      { model_name: 'join', input_map: { a: 'L', b: 'R' }, output_map: { y: 'OUT' } },
    ],
  },
};

interface StepCall {
  request: InferenceRequest;
  sink: ResponseSink;
}

/** A fake server: records each step request; the test answers them. */
class FakeSteps {
  readonly calls: StepCall[] = [];
  /** Configs of the served models (unknown models are not served). */
  readonly configs = new Map<string, ModelConfig>();
  readonly executions: { batchSize: number; compute: ComputeDurations }[] = [];
  readonly services = {
    inferStep: (request: InferenceRequest, sink: ResponseSink) => {
      this.calls.push({ request, sink });
    },
    modelConfig: (name: string) => this.configs.get(name),
    onExecution: (batchSize: number, compute: ComputeDurations) => {
      this.executions.push({ batchSize, compute: { ...compute } });
    },
  };

  models(): string[] {
    return this.calls.map((c) => c.request.modelName);
  }

  call(model: string, n = 0): StepCall {
    const c = this.calls.filter((x) => x.request.modelName === model)[n];
    if (!c) throw new Error(`no call ${n} of ${model}`);
    return c;
  }

  input(model: string, name: string, n = 0): Tensor | undefined {
    return this.call(model, n).request.inputs.find((t) => t.name === name);
  }

  /** Answers a step request with `outputs`, then reports its execution as the core does for a step that succeeded. */
  answer(model: string, outputs: Tensor[], n = 0, final = true, inferNs = 0): void {
    const c = this.call(model, n);
    c.sink.send(response(c.request, outputs), final);
    if (final) c.sink.executed?.({ execStart: 0, inputNs: 0, inferNs, outputNs: 0 });
  }
}

function response(r: InferenceRequest, outputs: Tensor[]): InferenceResponse {
  return { id: r.id, modelName: r.modelName, modelVersion: '1', outputs };
}

/** The client's side of one ensemble request. */
function clientItem(log: SinkLog, id: string, inputs: Tensor[], extra: Partial<InferenceRequest> = {}) {
  const item = log.item({ id });
  item.request = { ...item.request, modelName: 'pipe', inputs, ...extra };
  const executed: ExecutionStats[] = [];
  item.sink.executed = (s) => executed.push(s);
  return { item, executed };
}

function outputOf(log: SinkLog, id: string, name: string): Tensor | undefined {
  const e = log.events.find((x) => x.id === id && 'final' in x && x.response);
  return e && 'response' in e ? e.response?.outputs.find((t) => t.name === name) : undefined;
}

describe('EnsembleScheduler', () => {
  it('is what createScheduler gives an ensemble, and needs the step function', () => {
    const steps = new FakeSteps();
    const execute = () => Promise.resolve();
    expect(createScheduler(PIPELINE, { instanceCount: 1, execute, ensemble: steps.services })).toBeInstanceOf(EnsembleScheduler);
    expect(() => createScheduler(PIPELINE, { instanceCount: 1, execute })).toThrow("ensemble 'pipe' needs the server's step function");
  });

  it('sends each step once its tensors exist, renamed to the model\'s names, and answers with the ensemble\'s outputs', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    const clock = new FakeClock(1000);
    const s = new EnsembleScheduler(PIPELINE, steps.services, clock);
    const { item, executed } = clientItem(log, 'r1', [fp32('A', [3, 4]), fp32('B', [1, 2])]);
    s.enqueue(item);
    expect(steps.models()).toEqual(['add_sub']);
    expect(steps.call('add_sub').request.inputs.map((t) => t.name)).toEqual(['x', 'y']);
    expect(steps.call('add_sub').request.outputs).toEqual([{ name: 'sum' }, { name: 'diff' }]);
    expect(s.inflightCount).toBe(1);
    expect(s.pendingCount).toBe(0);

    steps.answer('add_sub', [fp32('sum', [4, 6]), fp32('diff', [2, 2])], 0, true, 5);
    expect(steps.models()).toEqual(['add_sub', 'mul']);
    expect(valuesOf(steps.input('mul', 'x'))).toEqual([4, 6]);
    expect(valuesOf(steps.input('mul', 'y'))).toEqual([2, 2]);
    expect(log.events).toEqual([]);

    steps.answer('mul', [fp32('prod', [8, 12])], 0, true, 7);
    expect(log.finals()).toEqual(['r1']);
    expect(valuesOf(outputOf(log, 'r1', 'OUT'))).toEqual([8, 12]);
    // One execution of the ensemble: from its arrival, with its steps' compute time.
    expect(executed).toEqual([{ execStart: 1000, inputNs: 0, inferNs: 12, outputNs: 0 }]);
    expect(steps.executions).toEqual([{ batchSize: 1, compute: { inputNs: 0, inferNs: 12, outputNs: 0 } }]);
    expect(s.inflightCount).toBe(0);
  });

  it('reports its execution once the last step\'s statistics are in, even when they come after the responses', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    const s = new EnsembleScheduler(PIPELINE, steps.services, new FakeClock(5));
    const { item, executed } = clientItem(log, 'r', [fp32('A', [1, 1]), fp32('B', [1, 1])]);
    s.enqueue(item);
    const first = steps.call('add_sub');
    // add_sub's instance reports before its response, mul's after it.
    first.sink.executed?.({ execStart: 0, inputNs: 1, inferNs: 2, outputNs: 3 });
    first.sink.send(response(first.request, [fp32('sum', [2, 2]), fp32('diff', [0, 0])]), true);
    const second = steps.call('mul');
    second.sink.send(response(second.request, [fp32('prod', [0, 0])]), true);
    expect(log.finals()).toEqual(['r']);
    expect(executed).toEqual([]);
    expect(steps.executions).toEqual([]);
    second.sink.executed?.({ execStart: 0, inputNs: 10, inferNs: 20, outputNs: 30 });
    expect(executed).toEqual([{ execStart: 5, inputNs: 11, inferNs: 22, outputNs: 33 }]);
    expect(steps.executions).toEqual([{ batchSize: 1, compute: { inputNs: 11, inferNs: 22, outputNs: 33 } }]);
  });

  it('runs independent steps in parallel and joins them', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    const s = new EnsembleScheduler(DIAMOND, steps.services, new FakeClock());
    s.enqueue(clientItem(log, 'r', [fp32('A', [1, 2])]).item);
    expect(steps.models()).toEqual(['left', 'right']);
    steps.answer('right', [fp32('y', [20, 20])]);
    expect(steps.models()).toEqual(['left', 'right']);
    steps.answer('left', [fp32('y', [10, 10])]);
    expect(steps.models()).toEqual(['left', 'right', 'join']);
    expect(valuesOf(steps.input('join', 'a'))).toEqual([10, 10]);
    expect(valuesOf(steps.input('join', 'b'))).toEqual([20, 20]);
    steps.answer('join', [fp32('y', [30, 30])]);
    expect(valuesOf(outputOf(log, 'r', 'OUT'))).toEqual([30, 30]);
  });

  it('lets every response of a decoupled step flow on, and a decoupled ensemble answers each', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    const config: ModelConfig = { ...PIPELINE, model_transaction_policy: { decoupled: true } };
    const s = new EnsembleScheduler(config, steps.services, new FakeClock());
    s.enqueue(clientItem(log, 'r', [fp32('A', [1, 1]), fp32('B', [0, 0])]).item);
    const first = steps.call('add_sub');
    first.sink.send(response(first.request, [fp32('sum', [1, 1]), fp32('diff', [1, 1])]), false);
    first.sink.send(response(first.request, [fp32('sum', [2, 2]), fp32('diff', [3, 3])]), false);
    first.sink.send(undefined, true);
    first.sink.executed?.({ execStart: 0, inputNs: 0, inferNs: 1, outputNs: 0 });
    expect(steps.calls.filter((c) => c.request.modelName === 'mul')).toHaveLength(2);
    expect(valuesOf(steps.input('mul', 'x', 1))).toEqual([2, 2]);
    steps.answer('mul', [fp32('prod', [1, 1])], 0);
    expect(log.events.map((e) => ('final' in e ? e.final : 'error'))).toEqual([false]);
    steps.answer('mul', [fp32('prod', [6, 6])], 1);
    // Each complete set of outputs as it came, then the final flag once no step is running.
    expect(log.events.map((e) => ('final' in e ? [e.final, e.response ? valuesOf(e.response.outputs[0]) : 'none'] : 'error'))).toEqual([
      [false, [1, 1]],
      [false, [6, 6]],
      [true, 'none'],
    ]);
  });

  it('pairs the k-th values written to each tensor, as Triton does, when a decoupled step runs ahead of the next one', () => {
    // repeat (decoupled) writes V and I once per response; scale reads V and writes R; the answer is R with I.
    const config: ModelConfig = {
      name: 'stream',
      platform: 'ensemble',
      model_transaction_policy: { decoupled: true },
      input: [{ name: 'IN', data_type: 'TYPE_FP32', dims: [-1] }],
      output: [{ name: 'R', data_type: 'TYPE_FP32', dims: [1] }, { name: 'I', data_type: 'TYPE_FP32', dims: [1] }],
      ensemble_scheduling: {
        step: [
          { model_name: 'repeat', input_map: { IN: 'IN' }, output_map: { OUT: 'V', IDX: 'I' } },
          { model_name: 'scale', input_map: { X: 'V' }, output_map: { Y: 'R' } },
        ],
      },
    };
    const log = new SinkLog();
    const steps = new FakeSteps();
    const s = new EnsembleScheduler(config, steps.services, new FakeClock());
    s.enqueue(clientItem(log, 'r', [fp32('IN', [5, 6, 7])]).item);
    const repeat = steps.call('repeat');
    // Three responses of repeat before scale answers any of its three requests.
    [5, 6, 7].forEach((v, i) => repeat.sink.send(response(repeat.request, [fp32('OUT', [v]), fp32('IDX', [i])]), false));
    repeat.sink.send(undefined, true);
    expect(steps.calls.filter((c) => c.request.modelName === 'scale').map((c) => valuesOf(c.request.inputs[0]))).toEqual([[5], [6], [7]]);
    // Each answer pairs the k-th value written to R with the k-th written to I (Triton's iteration
    // counts: the order values were written, not which request produced them).
    steps.answer('scale', [fp32('Y', [50])], 0);
    expect(log.events).toHaveLength(1);
    for (const n of [2, 1]) steps.answer('scale', [fp32('Y', [10 * valuesOf(steps.input('scale', 'X', n))[0]])], n);
    const answers = log.events.flatMap((e) => ('final' in e && e.response ? [e.response.outputs.map((t) => valuesOf(t)[0])] : []));
    expect(answers).toEqual([[50, 0], [70, 1], [60, 2]]);
    expect(log.finals()).toEqual(['r']);
  });

  it('owes the client only the outputs it asked for', () => {
    const config: ModelConfig = { ...DIAMOND, output: [{ name: 'L' }, { name: 'R' }], ensemble_scheduling: { step: DIAMOND.ensemble_scheduling!.step!.slice(0, 2) } };
    const log = new SinkLog();
    const steps = new FakeSteps();
    const s = new EnsembleScheduler(config, steps.services, new FakeClock());
    s.enqueue(clientItem(log, 'r', [fp32('A', [1, 2])], { outputs: [{ name: 'R' }] }).item);
    steps.answer('right', [fp32('y', [2, 4])]);
    // left leaves out its output: R alone is owed, so the request succeeds.
    steps.answer('left', []);
    expect(log.errors()).toEqual([]);
    expect(valuesOf(outputOf(log, 'r', 'R'))).toEqual([2, 4]);
  });

  it('gives every step the ensemble request\'s correlation id, flags, priority, timeout, parameters and cancellation', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    const s = new EnsembleScheduler(PIPELINE, steps.services, new FakeClock());
    const abort = new AbortController();
    const extra = { sequenceId: 42n, sequenceStart: true, sequenceEnd: false, priority: 2, timeoutUs: 5000, parameters: { p: 'v' }, signal: abort.signal };
    const { item } = clientItem(log, 'r', [fp32('A', [1, 1]), fp32('B', [1, 1])], extra);
    s.enqueue(item);
    const step = steps.call('add_sub').request;
    expect(step).toMatchObject({ id: 'r', modelName: 'add_sub', modelVersion: -1, sequenceId: 42n, sequenceStart: true, priority: 2, timeoutUs: 5000, parameters: { p: 'v' } });
    expect(step.cancelled).toBe(false);
    abort.abort();
    expect(step.cancelled).toBe(true);
    expect(step.signal).toBe(abort.signal);
    // The client's request is left as it was.
    expect(item.request.modelName).toBe('pipe');
    // A step ready after the client went away is not sent: the request is answered CANCELLED.
    steps.answer('add_sub', [fp32('sum', [2, 2]), fp32('diff', [0, 0])]);
    expect(steps.models()).toEqual(['add_sub']);
    expect(log.errors()).toEqual([{ id: 'r', code: 'CANCELLED', message: '[request id: r] Request was cancelled before it ran' }]);
  });

  /** A model config with inputs x and y of `dims`. */
  const model = (maxBatchSize: number, dims: number[]): ModelConfig => ({
    max_batch_size: maxBatchSize,
    input: [{ name: 'x', dims }, { name: 'y', dims }],
  });

  it('adds a batch dimension of 1 where a non-batching ensemble feeds a batching model, and removes it for a non-batching reader', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    steps.configs.set('add_sub', model(8, [2])).set('mul', model(0, [2]));
    const s = new EnsembleScheduler(PIPELINE, steps.services, new FakeClock());
    s.enqueue(clientItem(log, 'r', [fp32('A', [1, 2]), fp32('B', [3, 4])]).item);
    expect(steps.input('add_sub', 'x')?.shape).toEqual([1, 2]);
    steps.answer('add_sub', [fp32('sum', [4, 6], [1, 2]), fp32('diff', [-2, -2], [1, 2])]);
    // mul does not batch: a batch of one loses its batch dimension.
    expect(steps.input('mul', 'x')?.shape).toEqual([2]);
    steps.answer('mul', [fp32('prod', [-8, -12])]);
    expect(outputOf(log, 'r', 'OUT')?.shape).toEqual([2]);
  });

  it('removes the batch dimension of a batching last step from the answer of a non-batching ensemble', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    steps.configs.set('add_sub', model(8, [2])).set('mul', model(8, [2]));
    const s = new EnsembleScheduler(PIPELINE, steps.services, new FakeClock());
    s.enqueue(clientItem(log, 'r', [fp32('A', [1, 2]), fp32('B', [3, 4])]).item);
    steps.answer('add_sub', [fp32('sum', [4, 6], [1, 2]), fp32('diff', [-2, -2], [1, 2])]);
    // Batching to batching: the batch of one passes as it is.
    expect(steps.input('mul', 'x')?.shape).toEqual([1, 2]);
    steps.answer('mul', [fp32('prod', [-8, -12], [1, 2])]);
    expect(outputOf(log, 'r', 'OUT')?.shape).toEqual([2]);
  });

  it('leaves a shape alone that is not the reader\'s dims (Triton\'s rule compares with the config)', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    // The ensemble's A is already [1, 2]: add_sub, batching with dims [2], takes it as a batch of one.
    steps.configs.set('add_sub', model(8, [2]));
    const s = new EnsembleScheduler(PIPELINE, steps.services, new FakeClock());
    s.enqueue(clientItem(log, 'r', [fp32('A', [1, 2], [1, 2]), fp32('B', [3, 4], [1, 2])]).item);
    expect(steps.input('add_sub', 'x')?.shape).toEqual([1, 2]);
    // A model the server does not serve gets the tensors as they are (the server refuses the step).
    steps.answer('add_sub', [fp32('sum', [4, 6], [1, 2]), fp32('diff', [-2, -2], [1, 2])]);
    expect(steps.input('mul', 'x')?.shape).toEqual([1, 2]);
  });

  it('passes shapes through when the ensemble and its models batch', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    steps.configs.set('add_sub', model(8, [2])).set('mul', model(8, [2]));
    const s = new EnsembleScheduler({ ...PIPELINE, max_batch_size: 4 }, steps.services, new FakeClock());
    s.enqueue(clientItem(log, 'r', [fp32('A', [1, 2, 3, 4], [2, 2]), fp32('B', [1, 2, 3, 4], [2, 2])]).item);
    expect(steps.input('add_sub', 'x')?.shape).toEqual([2, 2]);
    steps.answer('add_sub', [fp32('sum', [0, 0, 0, 0], [2, 2]), fp32('diff', [0, 0, 0, 0], [2, 2])]);
    expect(steps.input('mul', 'x')?.shape).toEqual([2, 2]);
    steps.answer('mul', [fp32('prod', [0, 0, 0, 0], [2, 2])]);
    expect(outputOf(log, 'r', 'OUT')?.shape).toEqual([2, 2]);
    expect(steps.executions.map((e) => e.batchSize)).toEqual([2]);
  });

  it('fails the request once with the first step\'s error and sends nothing after it', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    const s = new EnsembleScheduler(DIAMOND, steps.services, new FakeClock());
    s.enqueue(clientItem(log, 'r', [fp32('A', [1, 2])]).item);
    steps.call('left').sink.fail(InferenceError.invalidArg('left broke'));
    steps.call('right').sink.fail(InferenceError.internal('right broke too'));
    steps.answer('right', [fp32('y', [1, 1])]);
    expect(steps.models()).toEqual(['left', 'right']);
    expect(log.events).toHaveLength(1);
    expect(log.errors()).toEqual([{ id: 'r', code: 'INVALID_ARG', message: 'left broke' }]);
    expect(s.inflightCount).toBe(0);
  });

  it('fails a step that is refused at once (unknown model) without running the rest', () => {
    const log = new SinkLog();
    const s = new EnsembleScheduler(PIPELINE, {
      inferStep: (_r, sink) => sink.fail(InferenceError.invalidArg("Request for unknown model: 'add_sub' is not found")),
      modelConfig: () => undefined,
    });
    s.enqueue(clientItem(log, 'r', [fp32('A', [1, 1]), fp32('B', [1, 1])]).item);
    expect(log.errors()).toEqual([{ id: 'r', code: 'INVALID_ARG', message: "Request for unknown model: 'add_sub' is not found" }]);
    expect(s.inflightCount).toBe(0);
  });

  it('fails a request whose steps ended without writing every output, in Triton\'s words', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    const s = new EnsembleScheduler(PIPELINE, steps.services, new FakeClock());
    s.enqueue(clientItem(log, 'r', [fp32('A', [1, 1]), fp32('B', [1, 1])]).item);
    // add_sub leaves out 'diff': mul never becomes ready.
    steps.answer('add_sub', [fp32('sum', [2, 2])]);
    expect(log.errors()).toEqual([
      {
        id: 'r',
        code: 'INVALID_ARG',
        message: "in ensemble 'pipe', [request id: r] unexpected deadlock, at least one output is not set while no more ensemble steps can be made",
      },
    ]);
  });

  it('has no instance limit: many requests run their steps at once', () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    const s = new EnsembleScheduler(PIPELINE, steps.services, new FakeClock());
    for (let i = 0; i < 50; i++) s.enqueue(clientItem(log, `r${i}`, [fp32('A', [1, 1]), fp32('B', [1, 1])]).item);
    expect(steps.calls).toHaveLength(50);
    expect(s.inflightCount).toBe(50);
  });

  it('stops: refuses new requests and resolves once running ones are answered', async () => {
    const log = new SinkLog();
    const steps = new FakeSteps();
    const s = new EnsembleScheduler(PIPELINE, steps.services, new FakeClock());
    s.enqueue(clientItem(log, 'r', [fp32('A', [1, 1]), fp32('B', [1, 1])]).item);
    let stopped = false;
    const stopping = s.stop().then(() => (stopped = true));
    s.enqueue(clientItem(log, 'late', [fp32('A', [1, 1]), fp32('B', [1, 1])]).item);
    expect(log.errors()).toEqual([
      { id: 'late', code: 'UNAVAILABLE', message: "[request id: late] Server is stopping: model 'pipe' is not accepting new requests" },
    ]);
    await Promise.resolve();
    expect(stopped).toBe(false);
    steps.answer('add_sub', [fp32('sum', [2, 2]), fp32('diff', [0, 0])]);
    steps.answer('mul', [fp32('prod', [0, 0])]);
    await stopping;
    expect(log.finals()).toEqual(['r']);
  });
});
