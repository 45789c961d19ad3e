import type { EnsembleStep, ModelConfig } from '@nereid/model-config';
import {
  InferenceError,
  toInferenceError,
  type ComputeDurations,
  type ExecutionItem,
  type InferenceRequest,
  type InferenceResponse,
} from '@nereid/protocol';
import type { Tensor } from '@nereid/tensor';
import { ignoreExecution, type InferFn, type ModelInstance, type ReportExecution } from '../backend';

/**
 * Runs one ensemble request as a dataflow graph: every step whose mapped inputs are available is
 * sent to its model (steps run concurrently); each completion makes the step's mapped outputs
 * available; the response carries the ensemble outputs once no step is left. The steps' compute
 * durations are added to `tally` (the server adds each step request's to its `composingStats`).
 */
export async function runEnsemble(
  config: ModelConfig,
  request: InferenceRequest,
  infer: InferFn,
  tally?: ComputeDurations,
): Promise<InferenceResponse> {
  const steps = config.ensemble_scheduling?.step ?? [];
  const tensors = new Map<string, Tensor>();
  for (const t of request.inputs) tensors.set(t.name, t);
  const started = new Set<number>();
  let failure: InferenceError | undefined;

  const ready = (s: EnsembleStep): boolean => Object.values(s.input_map ?? {}).every((name) => tensors.has(name));

  const runStep = async (s: EnsembleStep): Promise<void> => {
    const inputs: Tensor[] = Object.entries(s.input_map ?? {}).map(([modelInput, ensembleTensor]) => ({
      ...tensors.get(ensembleTensor)!,
      name: modelInput,
    }));
    const sub: InferenceRequest = {
      ...request,
      // A getter on the request's prototype: spread copies own properties only.
      signal: request.signal,
      id: request.id,
      modelName: s.model_name ?? '',
      modelVersion: s.model_version ?? -1,
      inputs,
      outputs: Object.keys(s.output_map ?? {}).map((name) => ({ name })),
      composingStats: tally,
    };
    const responses = await infer(sub);
    const last = responses[responses.length - 1];
    if (!last) throw InferenceError.internal(`ensemble '${config.name}' step '${s.model_name}' returned no response`);
    for (const out of last.outputs) {
      const target = s.output_map?.[out.name];
      if (target) tensors.set(target, { ...out, name: target });
    }
  };

  await new Promise<void>((resolve) => {
    let running = 0;
    const pump = (): void => {
      if (!failure) {
        steps.forEach((s, i) => {
          if (started.has(i) || !ready(s)) return;
          started.add(i);
          running++;
          runStep(s).then(
            () => {
              running--;
              pump();
            },
            (e: unknown) => {
              running--;
              failure ??= toInferenceError(e);
              pump();
            },
          );
        });
      }
      if (running === 0) resolve();
    };
    pump();
  });
  if (failure) throw failure;
  const outputs: Tensor[] = [];
  for (const o of config.output ?? []) {
    const t = tensors.get(o.name ?? '');
    if (!t) {
      throw InferenceError.internal(`ensemble '${config.name}' did not produce output '${o.name}': a step it depends on never ran`);
    }
    outputs.push(t);
  }
  return { id: request.id, modelName: request.modelName, modelVersion: '', outputs };
}

/**
 * The one "instance" of an ensemble: never busy, each request runs its graph concurrently. Each
 * request is reported as one execution, as Triton reports an ensemble's: it starts when the request
 * gets here, and its compute phases are the sums of its steps'.
 */
export class EnsembleInstance implements ModelInstance {
  constructor(
    private readonly config: ModelConfig,
    private readonly infer: InferFn,
  ) {}

  async execute(items: ExecutionItem[], report: ReportExecution = ignoreExecution): Promise<void> {
    for (const item of items) {
      const execStart = performance.now();
      const tally: ComputeDurations = { inputNs: 0, inferNs: 0, outputNs: 0 };
      runEnsemble(this.config, item.request, this.infer, tally).then(
        (response) => {
          report([item], { execStart, ...tally });
          item.sink.send(response, true);
        },
        (e: unknown) => item.sink.fail(toInferenceError(e)),
      );
    }
  }

  async unload(): Promise<void> {}
}
