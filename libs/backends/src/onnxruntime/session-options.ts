import * as fs from 'node:fs';
import * as path from 'node:path';
import type { ModelConfig } from '@nereid/model-config';
import { InferenceError } from '@nereid/protocol';
import type { InferenceSession } from 'onnxruntime-node';
import { listSupportedBackends } from 'onnxruntime-node';
import type { InstanceSpec } from '../backend';

/** Session options as plain data (they cross to the worker thread by structured clone). */
export type SessionOptions = InferenceSession.SessionOptions;

/** Where `session.run()` executes. See {@link SESSION_THREAD_PARAMETER}. */
export type SessionThread = 'worker' | 'event_loop' | 'auto';

/**
 * Nereid's own config parameter: `worker` runs the session in a worker thread so a heavy model
 * never stalls the event loop; `event_loop` runs it in the server's thread, which saves the thread
 * hop for tiny models whose run takes less than the hop; `auto` (default) probes the model at load
 * with its largest batch and picks `event_loop` only when that run fits EVENT_LOOP_BUDGET_US.
 */
export const SESSION_THREAD_PARAMETER = 'session_thread';

/** Triton onnxruntime backend `parameters` honoured here. */
const INTRA_OP = 'intra_op_thread_count';
const INTER_OP = 'inter_op_thread_count';
const EXECUTION_MODE = 'execution_mode';
/** Nereid parameter: `1` lets ORT's thread pools spin-wait between runs (ORT's own default). */
const ALLOW_SPINNING = 'allow_spinning';

export function sessionThreadOf(config: ModelConfig): SessionThread {
  const v = parameter(config, SESSION_THREAD_PARAMETER);
  if (v === undefined || v === 'auto') return 'auto';
  if (v === 'worker') return 'worker';
  if (v === 'event_loop') return 'event_loop';
  throw InferenceError.invalidArg(
    `invalid value '${v}' of parameter '${SESSION_THREAD_PARAMETER}' for model '${config.name ?? ''}': expected 'auto', 'worker' or 'event_loop'`,
  );
}

/** Builds ORT session options from the config and the instance kind (throws for KIND_GPU without CUDA). */
export function sessionOptionsFor(config: ModelConfig, instance: InstanceSpec): SessionOptions {
  const options: SessionOptions = {
    executionProviders: executionProviders(config, instance),
    graphOptimizationLevel: graphOptimizationLevel(config),
  };
  const intra = intParameter(config, INTRA_OP);
  if (intra !== undefined) options.intraOpNumThreads = intra;
  const inter = intParameter(config, INTER_OP);
  if (inter !== undefined) options.interOpNumThreads = inter;
  const mode = intParameter(config, EXECUTION_MODE);
  if (mode !== undefined) options.executionMode = mode === 1 ? 'parallel' : 'sequential';
  // Spinning thread pools burn a core between runs; with several sessions and an event loop on a
  // small machine that starves the front doors (measured: bench/http-infer). Off unless asked.
  const spin = intParameter(config, ALLOW_SPINNING) === 1 ? '1' : '0';
  options.extra = { session: { intra_op: { allow_spinning: spin }, inter_op: { allow_spinning: spin } } };
  return options;
}

/**
 * Triton's `optimization { graph { level } }`: -1 basic, 1 basic + extended, 2 none, anything
 * else (0, the default) every optimization.
 */
function graphOptimizationLevel(config: ModelConfig): NonNullable<SessionOptions['graphOptimizationLevel']> {
  const graph = config.optimization?.graph;
  const level = typeof graph === 'object' && graph !== null ? (graph as { level?: unknown }).level : undefined;
  switch (Number(level ?? 0)) {
    case -1:
      return 'basic';
    case 1:
      return 'extended';
    case 2:
      return 'disabled';
    default:
      return 'all';
  }
}

function executionProviders(config: ModelConfig, instance: InstanceSpec): SessionOptions['executionProviders'] {
  if (instance.kind !== 'KIND_GPU') return ['cpu'];
  const reason = cudaUnavailableReason();
  if (reason !== undefined) {
    throw InferenceError.unavailable(
      `KIND_GPU requested for model '${config.name ?? ''}' but the CUDA execution provider is not available ` +
        `in onnxruntime-node (${reason}); use instance_group kind KIND_CPU`,
    );
  }
  return [{ name: 'cuda', deviceId: instance.deviceId }];
}

/** undefined when onnxruntime-node lists CUDA and its provider library is installed. */
export function cudaUnavailableReason(): string | undefined {
  const backends = listSupportedBackends();
  const cuda = backends.find((b) => b.name === 'cuda');
  const names = backends.map((b) => b.name).join(', ');
  if (!cuda) return `supported execution providers: ${names}`;
  if (cuda.bundled) return undefined;
  const libDir = path.join(
    path.dirname(require.resolve('onnxruntime-node/package.json')),
    'bin', 'napi-v6', process.platform, process.arch,
  );
  const libs = ['libonnxruntime_providers_cuda.so', 'onnxruntime_providers_cuda.dll'];
  if (libs.some((l) => fs.existsSync(path.join(libDir, l)))) return undefined;
  const bundled = backends.filter((b) => b.bundled).map((b) => b.name).join(', ');
  return `its provider library is not installed in ${libDir}; usable execution providers: ${bundled}`;
}

function parameter(config: ModelConfig, key: string): string | undefined {
  return config.parameters?.[key]?.string_value;
}

function intParameter(config: ModelConfig, key: string): number | undefined {
  const v = parameter(config, key);
  if (v === undefined || v.trim() === '') return undefined;
  const n = Number(v);
  if (!Number.isInteger(n) || n < 0) {
    throw InferenceError.invalidArg(
      `invalid value '${v}' of parameter '${key}' for model '${config.name ?? ''}': expected a non-negative integer`,
    );
  }
  return n;
}
