/**
 * Runs one coverage-guided fuzz target for a while in a worker thread and reports what it did:
 * cases run, blocks of the project's code reached, corpus size, and findings, each saved under the
 * crashes folder with its input (also given in base64).
 *
 * Findings are of three kinds: `exception` (the target's oracle refused an outcome: an error other
 * than the code's own typed error, or a broken invariant), `hang` (one input ran longer than
 * `timeoutMs`: the thread is terminated and a fresh one goes on from the corpus) and `memory` (the
 * worker's heap passed `memoryMb`, or the process's resident memory grew by more than that).
 */
import { createHash } from 'node:crypto';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { Worker } from 'node:worker_threads';
import { SLOT, type FromWorker, type WorkerInput } from './protocol';
import { fromRoot } from './target';

export interface FuzzOptions {
  /** How long to fuzz, once the target is loaded (its seeds replayed) in each worker. */
  seconds: number;
  /** PRNG seed (default: from the clock; printed in the report). */
  seed?: number;
  /** Stop after this many cases (default: no limit). */
  maxCases?: number;
  /** Longest one input may run (default 3000 ms). */
  timeoutMs?: number;
  /** Heap limit of the worker and the resident growth allowed (default 512 MiB). */
  memoryMb?: number;
  /** Where findings are saved (default .tmp/fuzz/crashes); a folder per target. */
  crashDir?: string;
  /** Stop at the first finding (default: go on until the time is up). */
  stopOnFinding?: boolean;
}

export interface Finding {
  kind: 'exception' | 'hang' | 'memory';
  signature: string;
  message: string;
  stack: string;
  input: Uint8Array;
  /** The saved input (its .txt beside it has the error and the base64). */
  file: string;
}

export interface FuzzReport {
  target: string;
  seed: number;
  cases: number;
  blocksReached: number;
  blocksKnown: number;
  corpus: number;
  findings: Finding[];
  seconds: number;
  /** Workers started after a hang or a memory finding. */
  restarts: number;
}

const MAX_INPUT = 1 << 20;

export const DEFAULT_CRASH_DIR = fromRoot('.tmp', 'fuzz', 'crashes');

function save(dir: string, target: string, finding: Omit<Finding, 'file'>): string {
  const folder = path.join(dir, target);
  mkdirSync(folder, { recursive: true });
  const base = path.join(folder, `${finding.kind}-${createHash('sha1').update(finding.input).digest('hex').slice(0, 16)}`);
  writeFileSync(`${base}.bin`, finding.input);
  writeFileSync(
    `${base}.txt`,
    `${finding.signature}\n\n${finding.stack || finding.message}\n\ninput (base64):\n${Buffer.from(finding.input).toString('base64')}\n`,
  );
  return `${base}.bin`;
}

/** Runs `targetModule` (a file exporting `target`) under the name `name`. */
export function runTarget(name: string, targetModule: string, options: FuzzOptions): Promise<FuzzReport> {
  const started = Date.now();
  const budgetMs = options.seconds * 1000;
  /** Fuzzing time used by the workers so far (from their `ready` to their end). */
  let spentMs = 0;
  const seed = options.seed ?? (Date.now() ^ (process.pid << 16)) >>> 0;
  const timeoutMs = options.timeoutMs ?? 3000;
  const memoryMb = options.memoryMb ?? 512;
  const crashDir = options.crashDir ?? DEFAULT_CRASH_DIR;
  const report: FuzzReport = { target: name, seed, cases: 0, blocksReached: 0, blocksKnown: 0, corpus: 0, findings: [], seconds: 0, restarts: 0 };
  const corpus: Uint8Array[] = [];

  const addFinding = (f: Omit<Finding, 'file'>) => {
    if (report.findings.some((g) => g.signature === f.signature)) return;
    report.findings.push({ ...f, file: save(crashDir, name, f) });
  };

  return new Promise<FuzzReport>((resolve, reject) => {
    const startWorker = (generation: number) => {
      const shared = new SharedArrayBuffer(SLOT.header * 4 + MAX_INPUT);
      const slots = new Int32Array(shared, 0, SLOT.header);
      const data: WorkerInput = {
        targetModule,
        seed: (seed + generation * 0x9e3779b9) >>> 0,
        budgetMs: budgetMs - spentMs,
        maxCases: options.maxCases ? Math.max(1, options.maxCases - report.cases) : 0,
        stopOnFinding: options.stopOnFinding ?? false,
        corpus: corpus.slice(),
        knownSignatures: report.findings.map((f) => f.signature),
        maxLength: MAX_INPUT,
        memoryMb,
        shared,
      };
      const worker = new Worker(path.join(__dirname, 'worker-entry.js'), {
        workerData: data,
        resourceLimits: { maxOldGenerationSizeMb: memoryMb, maxYoungGenerationSizeMb: 32 },
        stdout: true,
        stderr: true,
      });
      // Whatever the code under test logs is not the run's output.
      worker.stdout.resume();
      worker.stderr.resume();
      const running = (): Uint8Array | undefined => {
        if (Atomics.load(slots, SLOT.running) !== 1) return undefined;
        return new Uint8Array(shared, SLOT.header * 4, Atomics.load(slots, SLOT.length)).slice();
      };
      let lastCases = -1;
      let since = Date.now();
      let stopped: 'hang' | 'memory' | undefined;
      let readyAt: number | undefined;
      const workerStarted = Date.now();
      let failure: Error | undefined;
      const watchdog = setInterval(() => {
        const cases = Atomics.load(slots, SLOT.executions);
        if (cases !== lastCases || Atomics.load(slots, SLOT.running) !== 1) {
          lastCases = cases;
          since = Date.now();
          return;
        }
        if (Date.now() - since < timeoutMs) return;
        const input = running();
        if (!input) return;
        stopped = 'hang';
        const message = `one input ran for more than ${timeoutMs} ms`;
        // Where it hangs is unknown: one hang finding per run (a fresh worker may hit it again).
        addFinding({ kind: 'hang', signature: 'hang', message, stack: '', input });
        void worker.terminate();
      }, Math.min(100, timeoutMs / 4));
      worker.on('message', (m: FromWorker) => {
        switch (m.kind) {
          case 'corpus':
            corpus.push(m.input);
            break;
          case 'finding':
            addFinding({ kind: 'exception', signature: m.signature, message: `${m.name}: ${m.message}`, stack: m.stack, input: m.input });
            break;
          case 'stats':
            report.blocksReached = Math.max(report.blocksReached, m.blocksReached);
            report.blocksKnown = Math.max(report.blocksKnown, m.blocksKnown);
            break;
          case 'ready':
            readyAt = Date.now();
            break;
        }
      });
      worker.on('error', (e: Error & { code?: string }) => {
        const input = running();
        if (e.code === 'ERR_WORKER_OUT_OF_MEMORY' && input) {
          const message = `the worker's heap passed ${memoryMb} MiB while running this input`;
          stopped = 'memory';
          addFinding({ kind: 'memory', signature: `memory: heap`, message, stack: e.stack ?? '', input });
        } else {
          failure = e;
        }
      });
      worker.on('exit', () => {
        clearInterval(watchdog);
        report.cases += Atomics.load(slots, SLOT.cases);
        // A worker that never got ready (a seed that hangs) spends its whole time: no endless restarts.
        spentMs += Date.now() - (readyAt ?? workerStarted);
        if (failure) {
          reject(failure);
          return;
        }
        const more =
          spentMs < budgetMs - 500 &&
          (!options.maxCases || report.cases < options.maxCases) &&
          !(options.stopOnFinding && report.findings.length > 0);
        if (stopped && more) {
          report.restarts++;
          startWorker(generation + 1);
          return;
        }
        report.corpus = corpus.length;
        report.seconds = (Date.now() - started) / 1000;
        resolve(report);
      });
    };
    startWorker(0);
  });
}

/** One line per report: what `npm run fuzz` prints. */
export function formatReport(r: FuzzReport): string {
  const found = r.findings.length === 0 ? 'no crashes' : `${r.findings.length} crash${r.findings.length > 1 ? 'es' : ''}`;
  return (
    `${r.target}: ${r.cases} cases in ${r.seconds.toFixed(1)} s, ${r.blocksReached} blocks reached (of ${r.blocksKnown} seen), ` +
    `corpus ${r.corpus}, ${found} (seed ${r.seed}${r.restarts > 0 ? `, ${r.restarts} restarts` : ''})`
  );
}

/** A finding as printed on failure: what broke, where the input is saved, the input in base64. */
export function formatFinding(f: Finding): string {
  return `${f.kind}: ${f.signature}\n  saved: ${f.file}\n  input (base64): ${Buffer.from(f.input).toString('base64')}\n${f.stack ? `  ${f.stack.split('\n').slice(0, 8).join('\n  ')}\n` : ''}`;
}
