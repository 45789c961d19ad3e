import type { ModelConfig } from '@nereid/model-config';
import type { RequestedOutput } from '@nereid/protocol';

/** One step of an ensemble, in the terms the dataflow needs. */
export interface PlannedStep {
  index: number;
  modelName: string;
  /** -1: the latest ready version. */
  modelVersion: number;
  /** [model input, ensemble tensor] pairs. */
  inputs: [string, string][];
  /** Model output → ensemble tensor. */
  outputs: Map<string, string>;
  /** The ensemble tensors the step reads, each once. */
  reads: string[];
  /** The model outputs the step's request asks for (shared by every request of the step: read-only). */
  requestedOutputs: RequestedOutput[];
}

/**
 * An ensemble's dataflow, worked out once when the scheduler is created: which steps read which
 * ensemble tensors, and what the ensemble answers with. The config has been validated (every
 * tensor a step reads is an ensemble input or another step's output, every output is written).
 */
export interface EnsemblePlan {
  name: string;
  /** The ensemble batches (max_batch_size > 0). */
  batching: boolean;
  /** Responses flow to the client as they come (model_transaction_policy.decoupled). */
  decoupled: boolean;
  steps: PlannedStep[];
  /** Ensemble tensor → steps that read it. */
  consumers: Map<string, PlannedStep[]>;
  /** Steps whose inputs are all ensemble inputs: they start the request. */
  roots: PlannedStep[];
  /** The ensemble's outputs, in config order. */
  outputNames: string[];
  /** Their dims (without the batch dimension). */
  outputDims: Map<string, number[]>;
}

export function planEnsemble(config: ModelConfig): EnsemblePlan {
  const ensembleInputs = new Set((config.input ?? []).map((i) => i.name ?? ''));
  const steps: PlannedStep[] = (config.ensemble_scheduling?.step ?? []).map((s, index) => {
    const inputs = Object.entries(s.input_map ?? {});
    const outputs = new Map(Object.entries(s.output_map ?? {}));
    return {
      index,
      modelName: s.model_name ?? '',
      modelVersion: s.model_version ?? -1,
      inputs,
      outputs,
      reads: [...new Set(inputs.map(([, tensor]) => tensor))],
      requestedOutputs: [...outputs.keys()].map((name) => ({ name })),
    };
  });
  const consumers = new Map<string, PlannedStep[]>();
  for (const step of steps) {
    for (const [, tensor] of step.inputs) {
      const list = consumers.get(tensor) ?? [];
      if (!list.includes(step)) list.push(step);
      consumers.set(tensor, list);
    }
  }
  return {
    name: config.name ?? '',
    batching: (config.max_batch_size ?? 0) > 0,
    decoupled: config.model_transaction_policy?.decoupled === true,
    steps,
    consumers,
    roots: steps.filter((s) => s.inputs.every(([, tensor]) => ensembleInputs.has(tensor))),
    outputNames: (config.output ?? []).map((o) => o.name ?? ''),
    outputDims: new Map((config.output ?? []).map((o) => [o.name ?? '', o.dims ?? []])),
  };
}
