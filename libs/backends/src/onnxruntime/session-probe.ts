import type { ModelConfig, ModelInput } from '@nereid/model-config';
import { fromConfigType } from '@nereid/tensor';
import { ORT_ARRAY, ortTypeOf, type OrtType } from './datatypes';
import type { RunTensor } from './messages';
import type { SessionInput, SessionRunner } from './session-runner';

/**
 * A model whose largest batch runs within this many microseconds is cheaper to run on the event
 * loop than to hand to a worker thread: the hop (structured clone, two thread wake-ups, message
 * dispatch) costs about as much, and on a small machine the extra thread competes for the cores.
 */
export const EVENT_LOOP_BUDGET_US = 300;

/**
 * The most bytes of probe input made: a model whose largest batch reads more cannot run within
 * EVENT_LOOP_BUDGET_US (8 MiB in 300 µs is ~28 GB/s), so it is not probed and takes a worker thread.
 * The shapes come from the config (a repository load may carry one): made unchecked, a dimension
 * of 2^31 - 1 meant a RangeError, 10^9 float32 elements a 4 GB allocation, before the model ran once.
 */
export const MAX_PROBE_BYTES = 8 * 1024 * 1024;

/**
 * Feeds for the largest batch the model accepts: every input the graph has (sequence controls and
 * states included, which the config does not list as inputs), shaped as the config says or, for
 * the others, as the graph says; a free dimension is the batch size when it comes first and 1
 * elsewhere. Every element is 1 (strings "1"): a value that parses as a number and divides, unlike
 * 0 or an empty string. undefined when some input has a type the probe cannot build.
 */
export function probeFeeds(config: ModelConfig, inputs?: readonly SessionInput[]): RunTensor[] | undefined {
  const batch = Math.max(0, config.max_batch_size ?? 0);
  const configured = new Map((config.input ?? []).map((i) => [i.name ?? '', i]));
  const wanted: { name: string; type: OrtType | undefined; dims: number[] }[] = inputs
    ? inputs.map((i) => {
        const c = configured.get(i.name);
        return { name: i.name, type: i.type, dims: c ? configDims(c, batch) : graphDims(i.shape, batch) };
      })
    : [...configured.values()].map((c) => ({ name: c.name ?? '', type: configType(c), dims: configDims(c, batch) }));
  const feeds: RunTensor[] = [];
  let bytes = 0;
  for (const { name, type, dims } of wanted) {
    if (!type) return undefined;
    const count = dims.reduce((a, b) => a * b, 1);
    // Strings count their one character and their slot; every count is checked before anything is made.
    bytes += count * (type === 'string' ? 9 : elementBytes(type));
    if (!Number.isSafeInteger(count) || !(bytes <= MAX_PROBE_BYTES)) return undefined;
    const data = type === 'string' ? new Array<string>(count).fill('1') : ones(type, count);
    if (data === undefined) return undefined;
    feeds.push({ name, type, dims, data });
  }
  return feeds;
}

function configType(input: ModelInput): OrtType | undefined {
  const datatype = fromConfigType(input.data_type ?? '');
  return datatype && ortTypeOf(datatype);
}

function configDims(input: ModelInput, batch: number): number[] {
  const inner = (input.reshape?.shape ?? input.dims ?? []).map((d) => (d < 0 ? 1 : d));
  return batch > 0 ? [batch, ...inner] : inner;
}

function graphDims(shape: readonly number[], batch: number): number[] {
  return shape.map((d, i) => (d >= 0 ? d : i === 0 && batch > 0 ? batch : 1));
}

function elementBytes(type: OrtType): number {
  const Ctor = (ORT_ARRAY as Partial<Record<OrtType, { BYTES_PER_ELEMENT: number }>>)[type];
  return Ctor?.BYTES_PER_ELEMENT ?? 1;
}

function ones(type: Exclude<OrtType, 'string'>, count: number): RunTensor['data'] | undefined {
  const Ctor = (ORT_ARRAY as Partial<Record<OrtType, (typeof ORT_ARRAY)[keyof typeof ORT_ARRAY]>>)[type];
  if (Ctor === undefined) return undefined;
  const data = new Ctor(count);
  if (data instanceof BigInt64Array || data instanceof BigUint64Array) data.fill(1n);
  // FP16 as its bit pattern (0x3c00 = 1.0); BOOL as 1 = true.
  else data.fill(type === 'float16' ? 0x3c00 : 1);
  return data;
}

/**
 * Fastest of `runs` probe runs in microseconds (the minimum measures the model, not the machine's
 * momentary load), or undefined when the model cannot be probed: a run that fails says nothing
 * about the cost (the caller then takes a worker thread), and onnxruntime's own error log is kept
 * quiet for these runs, since nothing is wrong with the model.
 */
export function probeRunMicros(runner: SessionRunner, config: ModelConfig, runs = 10): Promise<number | undefined> {
  // One probe at a time: models load in parallel, and probes timing each other would mislead.
  const probe = probeQueue.then(() => probeOnce(runner, config, runs));
  probeQueue = probe.catch(() => undefined);
  return probe;
}

let probeQueue: Promise<unknown> = Promise.resolve();

async function probeOnce(runner: SessionRunner, config: ModelConfig, runs: number): Promise<number | undefined> {
  const times: number[] = [];
  // Run 0 warms the session up (first runs allocate and plan) and is not counted.
  for (let i = 0; i <= runs; i++) {
    const feeds = probeFeeds(config, runner.inputs);
    if (!feeds) return undefined;
    const t0 = performance.now();
    try {
      await runner.run(feeds, [...runner.outputNames], { quiet: true });
    } catch {
      return undefined;
    }
    if (i > 0) times.push((performance.now() - t0) * 1000);
  }
  return Math.min(...times);
}
