import type { OrtType } from './datatypes';
import type { RunTensor } from './messages';

/** When a session run executed, in performance.now() milliseconds of the calling thread. */
export interface RunTiming {
  start: number;
  end: number;
}

export interface RunOptions {
  /** Filled in with when the run itself executed (not the wait for a thread or a loop turn). */
  timing?: RunTiming;
  /** Keeps onnxruntime's own log quiet for this run (a probe whose failure is expected and handled). */
  quiet?: boolean;
}

/** An input of the ONNX graph, as the session describes it. */
export interface SessionInput {
  name: string;
  /** undefined: not a tensor, or a type onnxruntime-node cannot carry. */
  type: OrtType | undefined;
  /** Its dimensions, -1 where the graph leaves one free (named or not). */
  shape: number[];
}

/** One open ONNX Runtime session, wherever it runs. */
export interface SessionRunner {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  /** Every input of the graph, configured or not; undefined when this runner cannot tell. */
  readonly inputs?: readonly SessionInput[];
  /**
   * Runs the session once. The feeds' buffers may be taken over (transferred to another thread):
   * callers pass buffers they own and do not touch them afterwards. Resolves with exactly
   * `fetches`, in that order. Rejects with ORT's message.
   */
  run(feeds: RunTensor[], fetches: string[], options?: RunOptions): Promise<RunTensor[]>;
  /** Releases the session (and its thread). */
  close(): Promise<void>;
}

/** onnxruntime's run option that lets only fatal messages through (ORT_LOGGING_LEVEL_FATAL). */
export const QUIET_RUN = { logSeverityLevel: 4 } as const;
