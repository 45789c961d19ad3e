import { promises as fs } from 'node:fs';
import * as path from 'node:path';
import { resolveInside, type ModelConfig, type ModelOutput } from '@nereid/model-config';
import { InferenceError } from '@nereid/protocol';
import type { AutoCompleteContext, Backend, LoadContext, ModelInstance } from '../backend';
import { measureRssGrowth, type MemoryUsage } from '../memory-usage';
import { autoCompleteFromOnnx } from './auto-complete';
import { sessionSourceOf, type SessionSource } from './bf16-runner';
import type { BatchModel } from './batch';
import { InlineSessionRunner } from './inline-session-runner';
import { EVENT_LOOP_BUDGET_US, probeRunMicros } from './session-probe';
import { checkConfigAgainstOnnx } from './config-check';
import { readOnnxModelInfo, type OnnxModelInfo } from './onnx-model-info';
import { OnnxRuntimeInstance } from './onnxruntime-instance';
import { sessionOptionsFor, sessionThreadOf, type SessionOptions, type SessionThread } from './session-options';
import type { SessionRunner } from './session-runner';
import { WorkerSessionRunner } from './worker-session-runner';

const DEFAULT_MODEL_FILENAME = 'model.onnx';

/**
 * The `onnxruntime` backend (platform `onnxruntime_onnx`) on onnxruntime-node. Each instance owns
 * one InferenceSession, run in a worker thread of its own unless the config asks for the event loop
 * (`parameters { key: "session_thread" value: { string_value: "event_loop" } }`).
 */
export class OnnxRuntimeBackend implements Backend {
  readonly name = 'onnxruntime';
  readonly defaultModelFilename = DEFAULT_MODEL_FILENAME;
  readonly defaultCpuInstanceCount = 2;

  async autoComplete(ctx: AutoCompleteContext): Promise<ModelConfig> {
    const { config } = ctx;
    if ((config.input?.length ?? 0) > 0 && (config.output?.length ?? 0) > 0) return config;
    const file = await resolveModelFile(config, ctx.versionDir);
    let bytes: Uint8Array;
    try {
      bytes = await fs.readFile(file);
    } catch (e) {
      throw InferenceError.invalidArg(`unable to auto-complete model '${config.name ?? ''}': cannot read '${file}': ${message(e)}`);
    }
    let info;
    try {
      info = readOnnxModelInfo(bytes);
    } catch (e) {
      throw InferenceError.invalidArg(`unable to auto-complete model '${config.name ?? ''}' from '${file}': ${message(e)}`);
    }
    return autoCompleteFromOnnx(config, info, ctx.defaultMaxBatchSize);
  }

  async loadInstance(ctx: LoadContext): Promise<ModelInstance> {
    const { config } = ctx;
    const modelName = config.name ?? '';
    const file = await resolveModelFile(config, ctx.versionDir);
    const options = sessionOptionsFor(config, ctx.instance);
    const placement = sessionThreadOf(config);
    const read = await checkConfigAgainstFile(config, ctx, file);
    // A model light enough for the event loop gains nothing from a thread pool, only wake-ups.
    const inlineOptions = { intraOpNumThreads: 1, interOpNumThreads: 1, ...options };
    let runner: SessionRunner;
    let thread: 'worker' | 'event_loop';
    let grewBytes: number;
    try {
      // The file, or the model rewritten for its BF16 inputs and outputs (bf16-graph.ts).
      const source = await sessionSourceOf(config, file, read);
      // What the session took: this process's memory growth while it opened (memory-usage.ts).
      ({ value: [runner, thread], bytes: grewBytes } = await measureRssGrowth(() => openRunner(source, placement, options, inlineOptions, config, ctx)));
    } catch (e) {
      throw InferenceError.internal(`failed to load model '${modelName}' version ${ctx.version} from '${file}': ${message(e)}`);
    }
    ctx.log('info', `created ONNX Runtime session for instance ${ctx.instance.name} (${thread} thread, ${ctx.instance.kind})`);
    // Host memory, whatever the instance kind: a CUDA session's device memory is not measured.
    const memory: MemoryUsage[] = grewBytes > 0 ? [{ type: 'CPU', id: 0, byteSize: grewBytes }] : [];
    return new OnnxRuntimeInstance(runner, batchModelOf(config, ctx.version, runner), thread === 'worker', memory);
  }
}

/**
 * Opens the instance's session: on a worker thread, on the event loop, or (`auto`) on the event
 * loop after a probe run showed the model light enough for it. Returns the runner and where it runs.
 */
async function openRunner(
  source: SessionSource,
  thread: SessionThread,
  options: SessionOptions,
  inlineOptions: SessionOptions,
  config: ModelConfig,
  ctx: LoadContext,
): Promise<[SessionRunner, 'worker' | 'event_loop']> {
  if (thread === 'worker') return [source.wrap(await WorkerSessionRunner.open(source.model, options)), 'worker'];
  const inline = source.wrap(await InlineSessionRunner.open(source.model, inlineOptions));
  if (thread === 'event_loop') return [inline, 'event_loop'];
  // Probe on the event loop; a model too heavy for it moves to a worker thread.
  const micros = await probeRunMicros(inline, config);
  ctx.log('verbose', `probe of '${config.name ?? ''}': ${micros === undefined ? 'not probed' : `${micros.toFixed(0)} us`} at its largest batch`);
  if (micros !== undefined && micros <= EVENT_LOOP_BUDGET_US) return [inline, 'event_loop'];
  await inline.close();
  return [source.wrap(await WorkerSessionRunner.open(source.model, options)), 'worker'];
}

/** `<version dir>/<default_model_filename or model.onnx>`, or `model.onnx` inside it when it is a directory. */
async function resolveModelFile(config: ModelConfig, versionDir: string): Promise<string> {
  const name = config.default_model_filename || DEFAULT_MODEL_FILENAME;
  const candidate = await resolveInside(versionDir, name, `model file name '${name}' of model '${config.name ?? ''}'`);
  const stat = await fs.stat(candidate).catch(() => undefined);
  const file = stat?.isDirectory() ? path.join(candidate, DEFAULT_MODEL_FILENAME) : candidate;
  if (stat === undefined || (stat.isDirectory() && !(await fs.stat(file).catch(() => undefined)))) {
    throw InferenceError.notFound(`unable to find '${file}' for model '${config.name ?? ''}'`);
  }
  return file;
}

/**
 * The config against the graph of the model file (config-check.ts), before a session is opened.
 * A file that is not readable as ONNX here is left for onnxruntime to report when it opens it
 * (undefined). Returns the bytes and graph read, for the BF16 rewrite (sessionSourceOf).
 */
async function checkConfigAgainstFile(
  config: ModelConfig,
  ctx: LoadContext,
  file: string,
): Promise<{ bytes: Uint8Array; info: OnnxModelInfo } | undefined> {
  let bytes: Uint8Array;
  let info: OnnxModelInfo;
  try {
    bytes = await fs.readFile(file);
    info = readOnnxModelInfo(bytes);
  } catch {
    return undefined;
  }
  checkConfigAgainstOnnx(config, info, path.join(String(ctx.version), path.relative(ctx.versionDir, file)));
  return { bytes, info };
}

/**
 * What the instance batches and splits by. Its outputs are the config's and each implicit state's
 * output (the sequence batcher asks for those and keeps them for the sequence's next request), in
 * that order: a request that names no outputs gets all of them.
 */
function batchModelOf(config: ModelConfig, version: number, runner: SessionRunner): BatchModel {
  const configOutputs: ModelOutput[] = config.output?.length ? config.output : runner.outputNames.map((name) => ({ name }));
  const outputs = new Map(configOutputs.map((o) => [o.name ?? '', o]));
  for (const state of config.sequence_batching?.state ?? []) {
    const name = state.output_name ?? '';
    if (!outputs.has(name)) outputs.set(name, { name, data_type: state.data_type, dims: state.dims });
  }
  return {
    name: config.name ?? '',
    version: String(version),
    maxBatchSize: config.max_batch_size ?? 0,
    inputs: new Map((config.input ?? []).map((i) => [i.name ?? '', i])),
    outputs,
    outputOrder: [...outputs.keys()],
  };
}

function message(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}
