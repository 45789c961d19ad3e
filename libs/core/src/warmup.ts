import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { resolveInside, type ModelConfig, type ModelWarmup, type ModelWarmupInput } from '@nereid/model-config';
import {
  InferenceError,
  newInferenceRequest,
  toInferenceError,
  type ExecutionItem,
  type InferenceRequest,
  type InferenceResponse,
  type ResponseSink,
} from '@nereid/protocol';
import {
  allocateTensorData,
  bytesView,
  BYTES_LENGTH_PREFIX,
  checkedZeroTensorBytes,
  elementCount,
  ELEMENT_SIZE,
  fromConfigType,
  tensorDataFromBytes,
  viewAs,
  type DataType,
  type NumericDataType,
  type Tensor,
  type TensorData,
} from '@nereid/tensor';
import type { ModelKey, WorkerChannel } from '@nereid/transport';
import { modelIo, validateRequest } from './request-validation';

/** The data of a sample's tensors while they are validated, before their data is made. */
const NO_DATA: TensorData = new Uint8Array(0);

/**
 * Model warmup (`model_warmup`, model-config.md §11): each sample runs `count` times (0 = once) on
 * every instance of a freshly loaded version, before the version is READY and before a reload
 * switches traffic to it. The samples go straight to the instances through the worker channel, as
 * Triton sends them to its backend instances: no scheduler, no statistics. Any failure fails the
 * load, with Triton's words: `failed to run warmup sample '<name>': <error>`.
 *
 * A sample's shapes come from the config, which a repository load may carry: each sample's inputs
 * are sized before anything is allocated or read. One row of the sample (batch 1) may hold no more
 * than `maxBytes` (the server's `--http-max-input-size`: what a client's request may hold), and the
 * whole batch (the row repeated `batch_size` times, as Triton's backends assemble it) no more than
 * MAX_WARMUP_BATCH_BYTES; a shape whose element count JavaScript cannot hold exactly is refused.
 */

/** The bound on one sample's bytes when none is given: 64 MiB, Triton's default `--http-max-input-size`. */
export const DEFAULT_MAX_WARMUP_BYTES = 64 * 1024 * 1024;

/**
 * The bound on a whole sample, its `batch_size` copies included: 1 GiB. Triton has none; a batch of 16
 * 3x640x640 FP32 images (79 MB) is a usual warmup and loads, a config asking for gigabytes does not.
 */
export const MAX_WARMUP_BATCH_BYTES = 1024 * 1024 * 1024;

/** One sample's request, built once and sent `count` times to every instance. */
export interface WarmupSample {
  name: string;
  count: number;
  inputs: Tensor[];
}

/**
 * The samples of `config`, their data generated or read from `<model>/warmup/`; each at most
 * `maxBytes` (default DEFAULT_MAX_WARMUP_BYTES), checked before its data is made.
 */
export async function buildWarmupSamples(
  config: ModelConfig,
  modelDir: string,
  maxBytes: number = DEFAULT_MAX_WARMUP_BYTES,
): Promise<WarmupSample[]> {
  const samples: WarmupSample[] = [];
  for (const sample of config.model_warmup ?? []) {
    const name = sample.name ?? '';
    try {
      const limit = { maxBytes, used: 0, rowUsed: 0 };
      samples.push({ name, count: Math.max(1, sample.count ?? 0), inputs: await sampleInputs(config, sample, modelDir, limit) });
    } catch (e) {
      throw warmupError(name, e);
    }
  }
  return samples;
}

/**
 * Runs every sample on instances `0..instances-1` of the runtime `key`, passive ones included (in
 * parallel across instances, in order on each). Rejects with the first failure.
 */
export async function runWarmup(
  worker: WorkerChannel,
  key: ModelKey,
  config: ModelConfig,
  samples: readonly WarmupSample[],
  instances: number,
): Promise<void> {
  if (samples.length === 0) return;
  const onInstance = async (instance: number): Promise<void> => {
    for (const sample of samples) {
      for (let i = 0; i < sample.count; i++) {
        try {
          await runOnce(worker, key, instance, warmupRequest(config, sample));
        } catch (e) {
          throw warmupError(sample.name, e);
        }
      }
    }
  };
  const runs = [];
  for (let i = 0; i < Math.max(1, instances); i++) runs.push(onInstance(i));
  const results = await Promise.allSettled(runs);
  const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
}

function warmupError(name: string, e: unknown): InferenceError {
  const err = toInferenceError(e);
  return new InferenceError(err.code, `failed to run warmup sample '${name}': ${err.message}`);
}

function warmupRequest(config: ModelConfig, sample: WarmupSample): InferenceRequest {
  const request = newInferenceRequest(config.name ?? '', -1);
  request.inputs = sample.inputs;
  return request;
}

/** Collects one request's answer: resolves at its final response, rejects on its error. */
class WarmupSink implements ResponseSink {
  readonly done: Promise<void>;
  private resolve!: () => void;
  private reject!: (e: InferenceError) => void;

  constructor() {
    this.done = new Promise<void>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  send(_response: InferenceResponse | undefined, final: boolean): void {
    if (final) this.resolve();
  }

  fail(error: InferenceError): void {
    this.reject(error);
  }
}

async function runOnce(worker: WorkerChannel, key: ModelKey, instance: number, request: InferenceRequest): Promise<void> {
  const sink = new WarmupSink();
  const item: ExecutionItem = { request, sink, enqueuedAt: performance.now() };
  // The execution resolves once the instance is free; a decoupled model may send its final flag
  // later, so both are waited for.
  await Promise.all([worker.execute(key, instance, [item], { warmup: true }), sink.done]);
}

/** What a sample may still take: its inputs' bytes are added to `rowUsed` (one row) and `used` (the batch). */
interface SampleBudget {
  maxBytes: number;
  rowUsed: number;
  used: number;
}

/**
 * Counts `rowBytes` (one row of input `name`) and `bytes` (its whole batch) against the sample's
 * budget; throws beyond either bound, before any allocation.
 */
function take(budget: SampleBudget, rowBytes: number, bytes: number, name: string, model: string, shape: readonly number[]): void {
  budget.rowUsed += rowBytes;
  budget.used += bytes;
  if (budget.rowUsed > budget.maxBytes) {
    throw InferenceError.invalidArg(
      `warmup input '${name}' of model '${model}' with shape [${shape.join(',')}] takes a row of the sample to ${budget.rowUsed} bytes, ` +
        `more than the maximum allowed input size of ${budget.maxBytes} bytes. Use --http-max-input-size to increase the limit.`,
    );
  }
  if (budget.used > MAX_WARMUP_BATCH_BYTES) {
    throw InferenceError.invalidArg(
      `warmup input '${name}' of model '${model}' with shape [${shape.join(',')}] takes the sample's batch to ${budget.used} bytes, ` +
        `more than the ${MAX_WARMUP_BATCH_BYTES} bytes a warmup sample may hold`,
    );
  }
}

async function sampleInputs(config: ModelConfig, sample: ModelWarmup, modelDir: string, budget: SampleBudget): Promise<Tensor[]> {
  const batched = (config.max_batch_size ?? 0) > 0;
  const batchSize = batched ? Math.max(1, sample.batch_size ?? 1) : 1;
  const model = config.name ?? '';
  const planned: { name: string; input: ModelWarmupInput; datatype: DataType; dims: number[]; shape: number[] }[] = [];
  // Every input sized first (the batch's copies included): nothing is allocated for a sample that
  // does not fit, whichever of its inputs is the large one.
  for (const [name, input] of Object.entries(sample.inputs ?? {})) {
    const datatype = fromConfigType(input.data_type ?? '');
    if (!datatype) throw InferenceError.invalidArg(`input '${name}' has an unsupported data type '${input.data_type ?? ''}'`);
    const dims = input.dims ?? [];
    const shape = batched ? [batchSize, ...dims] : [...dims];
    // The batch's shape first: its words name the shape a request would carry.
    const batchBytes = checkedZeroTensorBytes(shape, datatype, name, model);
    take(budget, checkedZeroTensorBytes(dims, datatype, name, model), batchBytes, name, model, shape);
    planned.push({ name, input, datatype, dims, shape });
  }
  // Checked against the model's inputs as a request is (Triton's warmup requests go through
  // PrepareForInference): names, datatypes and shapes need no data, so a sample the model would
  // refuse is refused before its data is made. An input the config does not declare (a sequence
  // control, an implicit state) is one of Triton's override inputs, added after that check.
  const io = modelIo(config);
  const skeleton = newInferenceRequest(model, -1);
  skeleton.inputs = planned.filter(({ name }) => io.inputs.has(name)).map(({ name, datatype, shape }) => ({ name, datatype, shape, data: NO_DATA }));
  validateRequest(skeleton, config, io);
  const tensors: Tensor[] = [];
  for (const { name, input, datatype, dims, shape } of planned) {
    const one = await inputData(config, sample, name, input, datatype, dims, modelDir, { budget, batchSize, shape });
    // The batch is the sample repeated `batch_size` times (model-config.md §6).
    tensors.push({ name, datatype, shape, data: batchSize > 1 ? repeat(datatype, one, batchSize) : one });
  }
  return tensors;
}

async function inputData(
  config: ModelConfig,
  sample: ModelWarmup,
  name: string,
  input: ModelWarmupInput,
  datatype: DataType,
  dims: number[],
  modelDir: string,
  sized: { budget: SampleBudget; batchSize: number; shape: readonly number[] },
): Promise<TensorData> {
  // Checked (and counted against the budget) by sampleInputs.
  const count = elementCount(dims);
  if (input.input_data_file) {
    const what = `input_data_file '${input.input_data_file}' of input '${name}' in warmup '${sample.name ?? ''}' of model '${config.name ?? ''}'`;
    const file = await resolveInside(path.join(modelDir, 'warmup'), input.input_data_file, what);
    const stat = await fs.stat(file).catch(() => undefined);
    if (!stat?.isFile()) throw InferenceError.invalidArg(`failed to read ${what}`);
    // A BYTES file's contents come on top of its elements' lengths (counted already); a numeric
    // file is read whole though only its first bytes are used.
    const extra = datatype === 'BYTES' ? Math.max(0, stat.size - count * BYTES_LENGTH_PREFIX) : stat.size - count * ELEMENT_SIZE[datatype];
    if (extra > 0) take(sized.budget, extra, extra * (datatype === 'BYTES' ? sized.batchSize : 1), name, config.name ?? '', sized.shape);
    const bytes = await fs.readFile(file).catch(() => {
      throw InferenceError.invalidArg(`failed to read ${what}`);
    });
    if (datatype === 'BYTES') return tensorDataFromBytes('BYTES', dims, bytes, name, config.name ?? '');
    const expected = count * ELEMENT_SIZE[datatype];
    if (bytes.byteLength < expected) {
      throw InferenceError.invalidArg(
        `warmup setting expects ${expected} bytes, but the data provided from ${input.input_data_file} only has ${bytes.byteLength} bytes`,
      );
    }
    // A copy: the typed array must own aligned memory of exactly the tensor's size.
    return tensorDataFromBytes(datatype, dims, new Uint8Array(bytes.subarray(0, expected)), name, config.name ?? '');
  }
  const data = allocateTensorData(datatype, count);
  // Random data for STRING falls back to zero data (empty elements), as in Triton.
  if (input.random_data && datatype !== 'BYTES') fillRandom(datatype, data);
  return data;
}

function fillRandom(datatype: DataType, data: TensorData): void {
  if (Array.isArray(data)) return;
  for (let i = 0; i < data.length; i++) {
    if (data instanceof BigInt64Array || data instanceof BigUint64Array) data[i] = BigInt(Math.floor(Math.random() * 100));
    else if (datatype === 'BOOL') data[i] = Math.random() < 0.5 ? 0 : 1;
    else if (datatype === 'FP32' || datatype === 'FP64') data[i] = Math.random();
    // FP16 and BF16 hold raw bits: small positive values (exponent bits below 1.0) keep them finite.
    else if (datatype === 'FP16') data[i] = 0x3000 + Math.floor(Math.random() * 0x0800);
    else if (datatype === 'BF16') data[i] = 0x3e00 + Math.floor(Math.random() * 0x0080);
    else data[i] = Math.floor(Math.random() * 100);
  }
}

function repeat(datatype: DataType, one: TensorData, times: number): TensorData {
  if (Array.isArray(one)) {
    // Element by element: spreading a large sample into push's arguments overflows the stack.
    const out = new Array<Uint8Array>(one.length * times);
    for (let t = 0; t < times; t++) for (let i = 0; i < one.length; i++) out[t * one.length + i] = one[i];
    return out;
  }
  const bytes = bytesView(one);
  const out = new Uint8Array(bytes.byteLength * times);
  for (let t = 0; t < times; t++) out.set(bytes, t * bytes.byteLength);
  return viewAs(datatype as NumericDataType, out);
}
