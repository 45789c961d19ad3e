/** What the fuzz runner (runner.ts) and its worker thread (worker.ts) exchange. */

/** Int32 slots at the start of the shared buffer; the running input's bytes follow them. */
export const SLOT = {
  /** 1 while the target runs an input. */
  running: 0,
  /** Distinct inputs run (the figure reported). */
  cases: 1,
  /** Length of the input in the shared buffer. */
  length: 2,
  /** Bumped before each run of an input (batches run some twice): the watchdog sees whether the worker moved on. */
  executions: 3,
  header: 4,
} as const;

export interface WorkerInput {
  targetModule: string;
  seed: number;
  /** How long the loop runs once the target is loaded and the corpus replayed (ms). */
  budgetMs: number;
  /** Stop after this many cases (0: only the deadline). */
  maxCases: number;
  /** Stop at the first finding. */
  stopOnFinding: boolean;
  /** Corpus entries of an earlier worker of the same run (after a hang or a memory finding). */
  corpus: Uint8Array[];
  /** Findings already reported, by signature (not reported again). */
  knownSignatures: string[];
  /** Longest input the shared buffer holds. */
  maxLength: number;
  /** Resident memory the process may grow by while the loop runs, in MiB (a finding past it). */
  memoryMb: number;
  shared: SharedArrayBuffer;
}

export type FromWorker =
  | { kind: 'ready'; loadMs: number }
  | { kind: 'corpus'; input: Uint8Array }
  | { kind: 'finding'; input: Uint8Array; signature: string; name: string; message: string; stack: string }
  | { kind: 'stats'; done: boolean; cases: number; blocksReached: number; blocksKnown: number; corpus: number };

/** What identifies a finding: the error's class, its message with numbers masked, and its first frame in the project's code. */
export function signatureOf(error: unknown, root: string): string {
  if (!(error instanceof Error)) return `thrown ${typeof error}`;
  const message = error.message.split('\n')[0].replace(/\d+/g, 'N').slice(0, 160);
  const frame = (error.stack ?? '')
    .split('\n')
    .find((l) => l.includes(root) && !l.includes('/test/fuzz/') && !l.includes('/node_modules/'));
  return `${error.name}: ${message} @ ${frame?.trim().replace(/:\d+:\d+\)?$/, '') ?? '?'}`;
}
