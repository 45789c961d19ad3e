/**
 * The coverage-guided fuzz loop, run in a worker thread (test/fuzz/worker-entry.js) so that the
 * parent (runner.ts) can stop a hanging input and bound the worker's heap.
 *
 * Before each case the input is copied into a shared buffer and a counter is bumped: the parent's
 * watchdog reads the input that is running from there when it has to terminate the thread.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { BlockCoverage } from './coverage';
import { dictionaryOf, mutate, Rng, type MutationContext } from './mutate';
import { ROOT, type FuzzTarget } from './target';
import { signatureOf, SLOT, type FromWorker, type WorkerInput } from './protocol';

const input = workerData as WorkerInput;
const port = parentPort!;
const send = (message: FromWorker) => port.postMessage(message);

const slots = new Int32Array(input.shared, 0, SLOT.header);
const bytes = new Uint8Array(input.shared, SLOT.header * 4);

const coverage = new BlockCoverage();
coverage.start();
const loadStart = Date.now();
// eslint-disable-next-line @typescript-eslint/no-require-imports
const target = (require(input.targetModule) as { target: FuzzTarget }).target;
const rng = new Rng(input.seed);
const corpus: Uint8Array[] = [];
const signatures = new Set<string>(input.knownSignatures);
let cases = 0;
let found = false;
let lastStats = 0;

/** Runs one input; false when it is a finding (reported once per signature). */
function execute(data: Uint8Array, checkMemory: boolean): boolean {
  bytes.set(data);
  Atomics.store(slots, SLOT.length, data.length);
  Atomics.add(slots, SLOT.executions, 1);
  Atomics.store(slots, SLOT.running, 1);
  let error: unknown;
  let failed = false;
  try {
    target.run(Buffer.from(data.buffer, data.byteOffset, data.byteLength));
  } catch (e) {
    failed = true;
    error = e;
  }
  Atomics.store(slots, SLOT.running, 0);
  if (!failed && checkMemory && process.memoryUsage.rss() > rssLimit) {
    failed = true;
    error = new RangeError(`memory: the process grew past ${Math.round(rssLimit / 2 ** 20)} MiB resident while running this input`);
  }
  if (!failed) return true;
  const signature = signatureOf(error, ROOT);
  found = true;
  if (!signatures.has(signature)) {
    signatures.add(signature);
    const e = error instanceof Error ? error : new Error(String(error));
    send({ kind: 'finding', input: data.slice(), signature, name: e.name, message: e.message, stack: e.stack ?? '' });
  }
  return false;
}

/** A new case: counted, run alone with its coverage collected; true when it showed new features. */
function runOne(data: Uint8Array): boolean {
  Atomics.add(slots, SLOT.cases, 1);
  cases++;
  const ok = execute(data, true);
  const fresh = coverage.collect();
  return ok && fresh > 0;
}

function keep(data: Uint8Array): void {
  const entry = data.slice();
  corpus.push(entry);
  send({ kind: 'corpus', input: entry });
}

function stats(done: boolean): void {
  send({ kind: 'stats', done, cases, blocksReached: coverage.blocksReached, blocksKnown: coverage.blocksKnown, corpus: corpus.length });
}

// The figure reported counts the code under test, not the dependencies it goes through (protobufjs).
coverage.select({ include: target.coverage, own: target.coverage.filter((p) => !p.includes('/node_modules/')) });
let rssLimit = Number.POSITIVE_INFINITY;
const initial = [...input.corpus, ...target.seeds().map((s) => s.subarray(0, input.maxLength))];
for (const entry of initial) {
  if (!runOne(entry)) continue;
  if (input.corpus.includes(entry)) corpus.push(entry);
  else keep(entry);
}
if (corpus.length === 0) corpus.push(new Uint8Array(0));
rssLimit = process.memoryUsage.rss() + input.memoryMb * 2 ** 20;
send({ kind: 'ready', loadMs: Date.now() - loadStart });
const deadline = Date.now() + input.budgetMs;

const context: MutationContext = {
  maxLength: Math.min(input.maxLength, target.maxLength),
  dictionary: dictionaryOf(target.dictionary),
  other: () => rng.pick(corpus),
};

/**
 * Collecting coverage costs V8 a walk over every function that has run (1-2 ms of CPU), far more
 * than one decoder call; so most cases run in batches of BATCH with one collection for the batch,
 * and only a batch that reached a new block (or grew the process past its memory limit) is run
 * again one input at a time to find which inputs to keep. Every fourth round is one case alone, whose
 * hit-count buckets can also count as new.
 */
const BATCH = 16;
const more = () => Date.now() < deadline && (input.maxCases === 0 || cases < input.maxCases) && !(input.stopOnFinding && found);
const nextCase = (): Uint8Array => {
  // Recent entries are picked more often: they are where new coverage was found last.
  const parent = rng.chance(0.3) ? corpus[corpus.length - 1 - rng.below(Math.min(16, corpus.length))] : rng.pick(corpus);
  return mutate(rng, parent, context);
};
for (let round = 1; more(); round++) {
  if (round % 4 === 0) {
    const child = nextCase();
    if (runOne(child)) keep(child);
  } else {
    const batch: Uint8Array[] = [];
    while (batch.length < BATCH && more()) {
      const child = nextCase();
      batch.push(child);
      Atomics.add(slots, SLOT.cases, 1);
      cases++;
      execute(child, false);
    }
    const fresh = coverage.probe();
    if (fresh > 0 || process.memoryUsage.rss() > rssLimit) {
      for (const child of batch) {
        const ok = execute(child, true);
        if (coverage.collect() > 0 && ok) keep(child);
      }
    }
  }
  if (Date.now() - lastStats > 500) {
    lastStats = Date.now();
    stats(false);
  }
}
coverage.stop();
stats(true);
