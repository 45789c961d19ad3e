import {
  InferenceError,
  isCancelled,
  toInferenceError,
  type ComputeDurations,
  type ExecutionItem,
  type InferenceRequest,
  type InferenceResponse,
  type ResponseSink,
} from '@nereid/protocol';
import type { ModelConfig } from '@nereid/model-config';
import type { Tensor } from '@nereid/tensor';
import type { EnsemblePlan, PlannedStep } from './ensemble-plan';
import { shapeFor, type EnsembleValue } from './ensemble-shapes';
import { DerivedRequest } from './derived-request';
import { cancelledError, requestPrefix } from './rejections';

/**
 * What an ensemble scheduler needs from the server around it.
 */
export interface EnsembleServices {
  /**
   * Sends a step's request into the server as a client request would go: validation, its model's
   * own scheduler (so steps batch across ensemble requests), statistics. Its responses and its
   * failure go to `sink`, possibly synchronously; so does what its execution cost (`executed`),
   * once the step has succeeded and its instance has reported it.
   */
  inferStep(request: InferenceRequest, sink: ResponseSink): void;
  /**
   * The config of the served model a step names (its batching and input dims shape what the step
   * gets); undefined when it is not served (the step request then fails with the server's words).
   */
  modelConfig(name: string, version: number): ModelConfig | undefined;
  /** One ensemble request was executed: `batchSize` inferences, its steps' compute time (batch statistics). */
  onExecution?(batchSize: number, compute: ComputeDurations): void;
}

/**
 * One ensemble request flowing through its steps (Triton's EnsembleContext). Each ensemble tensor
 * keeps its values in the order they were written (its iterations: the request's inputs are
 * iteration 0; each response of a decoupled step writes the next one). A step is sent for
 * iteration k once every tensor it reads has a k-th value, so independent steps run in parallel
 * and every response of a decoupled step flows on, paired with the k-th values of the other
 * tensors as Triton pairs them. The ensemble answers iteration k once every output it owes has a
 * k-th value. The request ends once no step is running: a decoupled ensemble has sent each answer
 * as it appeared, any other sends its one answer then. The first step failure fails the request;
 * nothing is sent after it.
 */
export class EnsembleRun {
  /**
   * Ensemble tensor → its values by iteration, each with the number of readers (steps, the answer)
   * still to take it; a value all have taken is dropped, as Triton releases it (a long decoupled
   * stream does not pile up its tensors).
   */
  private readonly tensors = new Map<string, { values: (EnsembleValue | undefined)[]; readers: number[] }>();
  /** The outputs the client gets: those it asked for (all when it named none). */
  private readonly owed: string[];
  private readonly tally: ComputeDurations = { inputNs: 0, inferNs: 0, outputNs: 0 };
  private running = 0;
  /** Steps sent whose execution statistics have not come back yet. */
  private unreported = 0;
  private ended = false;
  /** Answered successfully, execution not reported yet. */
  private reportDue = false;
  private answer: InferenceResponse | undefined;
  private readonly execStart: number;

  constructor(
    private readonly plan: EnsemblePlan,
    private readonly item: ExecutionItem,
    private readonly services: EnsembleServices,
    now: number,
    private readonly onEnd: () => void,
  ) {
    this.execStart = now;
    const asked = item.request.outputs?.map((o) => o.name).filter((n) => plan.outputNames.includes(n));
    this.owed = asked && asked.length > 0 ? asked : plan.outputNames;
    for (const t of item.request.inputs) this.write(t.name, { tensor: t, batch: plan.batching ? (t.shape[0] ?? 1) : 0 });
  }

  start(): void {
    // Held while the first steps are sent, so that one answering at once cannot end the request.
    this.running++;
    for (const step of this.plan.roots) this.send(step, 0);
    this.running--;
    this.settle();
  }

  /** The k-th value of an ensemble tensor, if written (and not yet taken by all its readers). */
  private valueOf(name: string, k: number): EnsembleValue | undefined {
    return this.tensors.get(name)?.values[k];
  }

  /** Writes the next value of an ensemble tensor; returns its iteration. */
  private write(name: string, value: EnsembleValue): number {
    let entry = this.tensors.get(name);
    if (!entry) this.tensors.set(name, (entry = { values: [], readers: [] }));
    const readers = (this.plan.consumers.get(name)?.length ?? 0) + (this.owed.includes(name) ? 1 : 0);
    entry.values.push(readers > 0 ? value : undefined);
    entry.readers.push(readers);
    return entry.values.length - 1;
  }

  /** One reader has taken the k-th value of `name`. */
  private taken(name: string, k: number): void {
    const entry = this.tensors.get(name);
    if (entry && --entry.readers[k] <= 0) entry.values[k] = undefined;
  }

  /** Sends one step's request for iteration `k` of the tensors it reads. */
  private send(step: PlannedStep, k: number): void {
    if (this.ended) return;
    const parent = this.item.request;
    if (isCancelled(parent)) {
      this.fail(cancelledError(parent));
      return;
    }
    // Between batching and non-batching models a batch dimension of 1 comes and goes (shapeFor).
    const layout = stepLayout(step, this.services.modelConfig(step.modelName, step.modelVersion));
    const inputs: Tensor[] = new Array<Tensor>(step.inputs.length);
    for (let i = 0; i < step.inputs.length; i++) {
      const [modelInput, tensor] = step.inputs[i];
      const value = this.valueOf(tensor, k)!;
      const t = value.tensor;
      const shape = layout.known ? shapeFor(layout.dims[i], layout.batching, value) : t.shape;
      inputs[i] = { name: modelInput, datatype: t.datatype, shape, data: t.data };
    }
    // What the step's outputs carry: the batch size of its request when its model batches.
    const batch = layout.batching ? (inputs[0]?.shape[0] ?? 1) : 0;
    for (const tensor of step.reads) this.taken(tensor, k);
    this.running++;
    this.unreported++;
    this.services.inferStep(new DerivedRequest(parent, step.modelName, step.modelVersion, inputs, step.requestedOutputs), {
      send: (response, final) => this.onStepResponse(step, batch, response, final),
      fail: (error) => this.fail(error),
      executed: (stats) => this.onStepExecuted(stats),
    });
  }

  private onStepResponse(step: PlannedStep, batch: number, response: InferenceResponse | undefined, final: boolean): void {
    if (this.ended) return;
    if (response) {
      const produced: [string, number][] = [];
      for (const out of response.outputs) {
        const target = step.outputs.get(out.name);
        if (target === undefined) continue;
        produced.push([target, this.write(target, { tensor: { ...out, name: target }, batch })]);
      }
      try {
        this.flowOn(produced);
      } catch (e) {
        this.fail(toInferenceError(e));
        return;
      }
    }
    if (final) {
      this.running--;
      this.settle();
    }
  }

  /** A step's execution statistics: the ensemble's compute time is the sum of its steps'. */
  private onStepExecuted(stats: ComputeDurations): void {
    this.tally.inputNs += stats.inputNs;
    this.tally.inferNs += stats.inferNs;
    this.tally.outputNs += stats.outputNs;
    this.unreported--;
    this.report();
  }

  /** New values (tensor, iteration): the ensemble's answer when complete, then every step that can run. */
  private flowOn(produced: [string, number][]): void {
    const answered = new Set<number>();
    for (const [name, k] of produced) {
      if (answered.has(k) || !this.owed.includes(name)) continue;
      if (!this.owed.every((n) => this.valueOf(n, k) !== undefined)) continue;
      answered.add(k);
      const response: InferenceResponse = {
        id: this.item.request.id,
        modelName: this.item.request.modelName,
        modelVersion: '',
        outputs: this.owed.map((n) => {
          const value = this.valueOf(n, k)!;
          return { ...value.tensor, shape: shapeFor(this.plan.outputDims.get(n), this.plan.batching, value) };
        }),
      };
      for (const n of this.owed) this.taken(n, k);
      if (this.plan.decoupled) this.item.sink.send(response, false);
      else this.answer = response;
    }
    const next = new Map<PlannedStep, Set<number>>();
    for (const [name, k] of produced) {
      for (const step of this.plan.consumers.get(name) ?? []) {
        if (!step.inputs.every(([, tensor]) => this.valueOf(tensor, k) !== undefined)) continue;
        let ks = next.get(step);
        if (!ks) next.set(step, (ks = new Set()));
        ks.add(k);
      }
    }
    for (const [step, ks] of next) for (const k of ks) this.send(step, k);
  }

  /** Ends the request once no step is running. */
  private settle(): void {
    if (this.ended || this.running > 0) return;
    if (!this.plan.decoupled && !this.answer) {
      // Triton's words for a request whose steps are done without a complete answer (a decoupled
      // ensemble may answer nothing and just ends).
      this.fail(
        InferenceError.invalidArg(
          `in ensemble '${this.plan.name}', ${requestPrefix(this.item.request)}unexpected deadlock, at least one output is not set while no more ensemble steps can be made`,
        ),
      );
      return;
    }
    this.ended = true;
    this.reportDue = true;
    if (this.plan.decoupled) this.item.sink.send(undefined, true);
    else this.item.sink.send(this.answer, true);
    this.onEnd();
    this.report();
  }

  /**
   * Reports the request as one execution, as Triton reports an ensemble's: it starts when the
   * request reached the scheduler, and its compute phases are the sums of its steps'. A step's
   * statistics may come after its response, so this waits for the last one.
   */
  private report(): void {
    if (!this.reportDue || this.unreported > 0) return;
    this.reportDue = false;
    this.item.sink.executed?.({ execStart: this.execStart, ...this.tally });
    const batchSize = this.plan.batching ? (this.item.request.inputs[0]?.shape[0] ?? 1) : 1;
    this.services.onExecution?.(batchSize, this.tally);
  }

  private fail(error: InferenceError): void {
    if (this.ended) return;
    this.ended = true;
    this.item.sink.fail(error);
    this.onEnd();
  }
}

/**
 * How a step reads its tensors under its model's config: whether the model batches, and each
 * input's config dims (in `step.inputs` order). Worked out once per step and served config (a
 * reloaded model brings a new config object), not on every request.
 */
interface StepLayout {
  config: ModelConfig | undefined;
  /** The step's model is served: its config shapes the inputs. */
  known: boolean;
  batching: boolean;
  dims: (number[] | undefined)[];
}

const layouts = new WeakMap<PlannedStep, StepLayout>();

function stepLayout(step: PlannedStep, config: ModelConfig | undefined): StepLayout {
  const cached = layouts.get(step);
  if (cached && cached.config === config) return cached;
  const layout: StepLayout = {
    config,
    known: config !== undefined,
    batching: (config?.max_batch_size ?? 0) > 0,
    dims: step.inputs.map(([modelInput]) => config?.input?.find((i) => i.name === modelInput)?.dims),
  };
  layouts.set(step, layout);
  return layout;
}

