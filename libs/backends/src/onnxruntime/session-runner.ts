import type { RunTensor } from './messages';

/** One open ONNX Runtime session, wherever it runs. */
export interface SessionRunner {
  readonly inputNames: readonly string[];
  readonly outputNames: readonly string[];
  /**
   * Runs the session once. The feeds' buffers may be taken over (transferred to another thread):
   * callers pass buffers they own and do not touch them afterwards. Resolves with exactly
   * `fetches`, in that order. Rejects with ORT's message.
   */
  run(feeds: RunTensor[], fetches: string[]): Promise<RunTensor[]>;
  /** Releases the session (and its thread). */
  close(): Promise<void>;
}
