/**
 * V8 block coverage as fuzzing feedback, through `node:inspector` in the thread that runs the target.
 *
 * Profiler.startPreciseCoverage {callCount, detailed} counts every block; takePreciseCoverage
 * returns the counts since the previous call (and resets them), for the functions that ran. V8
 * reports a function's range and then only the nested ranges whose count differs from their parent's
 * (merging neighbours of equal count), so a block's count is that of the innermost reported range
 * holding its start. Every range start seen so far in a function is a known block; after each input,
 * each known block of the functions that ran gets its count, bucketed as AFL does (1, 2, 3, 4-7, ...).
 * A feature is a (block, bucket) pair; an input that shows a feature never seen before is kept.
 */
import { Session } from 'node:inspector';

interface Range {
  startOffset: number;
  endOffset: number;
  count: number;
}

interface ScriptCoverage {
  scriptId: string;
  url: string;
  functions: { functionName: string; ranges: Range[]; isBlockCoverage: boolean }[];
}

/** The known block starts of one function, sorted, and their global ids. */
interface FunctionBlocks {
  starts: number[];
  ids: number[];
}

interface ScriptBlocks {
  /** Whether its blocks count towards the reported figure (project source, not a dependency). */
  own: boolean;
  functions: Map<number, FunctionBlocks>;
}

/** AFL's hit-count buckets: 1, 2, 3, 4-7, 8-15, 16-31, 32-127, 128+ → bits 0..7. */
export function bucketOf(count: number): number {
  if (count <= 3) return count - 1;
  if (count < 8) return 3;
  if (count < 16) return 4;
  if (count < 32) return 5;
  if (count < 128) return 6;
  return 7;
}

function innermostCount(ranges: readonly Range[], offset: number): number {
  // Ranges come sorted by start (a parent before the ranges it holds): the last that holds
  // `offset` is the innermost.
  let count = 0;
  for (const r of ranges) {
    if (r.startOffset > offset) break;
    if (offset < r.endOffset) count = r.count;
  }
  return count;
}

export interface CoverageOptions {
  /** Absolute path prefixes of the files whose blocks are features (others are ignored). */
  include: readonly string[];
  /** Of those, the prefixes whose blocks count in `blocksReached` (the project's own source). */
  own: readonly string[];
}

export class BlockCoverage {
  private readonly session = new Session();
  private readonly scripts = new Map<string, ScriptBlocks | null>();
  /** Global block id → bitmask of the buckets seen. */
  private readonly seen: number[] = [];
  private readonly ownIds = new Set<number>();
  private nextId = 0;
  private covered = 0;

  private options: CoverageOptions = { include: [], own: [] };

  /** Starts counting; call before the target's modules are loaded so that they are compiled with block counters. */
  start(): void {
    this.session.connect();
    this.post('Profiler.enable');
    this.post('Profiler.startPreciseCoverage', { callCount: true, detailed: true });
  }

  stop(): void {
    this.post('Profiler.stopPreciseCoverage');
    this.session.disconnect();
  }

  /** Known blocks of the project's own files that some input reached. */
  get blocksReached(): number {
    let n = 0;
    for (const id of this.ownIds) if (this.seen[id] !== 0) n++;
    return n;
  }

  /** Known blocks of the project's own files (reached or not). */
  get blocksKnown(): number {
    return this.ownIds.size;
  }

  /** Blocks of every included file reached so far. */
  get blocksCovered(): number {
    return this.covered;
  }

  /** Chooses the files that count (known once the target is loaded) and discards the counts gathered so far. */
  select(options: CoverageOptions): void {
    this.options = options;
    this.scripts.clear();
    this.post('Profiler.takePreciseCoverage');
  }

  /**
   * Collects the counts of the input that just ran and merges them in; returns the number of new
   * features (block and bucket pairs never seen before).
   */
  collect(): number {
    return this.scan(true);
  }

  /**
   * Collects the counts of the inputs run since the last call (a batch) without merging them:
   * returns the number of blocks they reached that no input had reached before. Summed counts of
   * several inputs say nothing of one input's buckets, so only new blocks count here.
   */
  probe(): number {
    return this.scan(false);
  }

  private scan(merge: boolean): number {
    const { result } = this.post('Profiler.takePreciseCoverage') as { result: ScriptCoverage[] };
    let fresh = 0;
    for (const script of result) {
      const blocks = this.scriptBlocks(script);
      if (!blocks) continue;
      for (const fn of script.functions) {
        const ranges = fn.ranges;
        if (ranges.length === 0 || ranges[0].count === 0) continue;
        const known = this.functionBlocks(blocks, ranges);
        for (let i = 0; i < known.starts.length; i++) {
          const count = innermostCount(ranges, known.starts[i]);
          if (count === 0) continue;
          const id = known.ids[i];
          const before = this.seen[id];
          if (!merge) {
            if (before === 0) fresh++;
            continue;
          }
          const bit = 1 << bucketOf(count);
          if ((before & bit) === 0) {
            if (before === 0) this.covered++;
            this.seen[id] = before | bit;
            fresh++;
          }
        }
      }
    }
    return fresh;
  }

  private scriptBlocks(script: ScriptCoverage): ScriptBlocks | null {
    let blocks = this.scripts.get(script.scriptId);
    if (blocks === undefined) {
      const file = script.url.startsWith('file://') ? decodeURIComponent(script.url.slice('file://'.length)) : script.url;
      const included = this.options.include.some((p) => file.startsWith(p));
      blocks = included ? { own: this.options.own.some((p) => file.startsWith(p)), functions: new Map() } : null;
      this.scripts.set(script.scriptId, blocks);
    }
    return blocks;
  }

  private functionBlocks(blocks: ScriptBlocks, ranges: readonly Range[]): FunctionBlocks {
    let fn = blocks.functions.get(ranges[0].startOffset);
    if (!fn) {
      fn = { starts: [], ids: [] };
      blocks.functions.set(ranges[0].startOffset, fn);
    }
    for (const r of ranges) {
      const at = lowerBound(fn.starts, r.startOffset);
      if (fn.starts[at] === r.startOffset) continue;
      const id = this.nextId++;
      this.seen[id] = 0;
      if (blocks.own) this.ownIds.add(id);
      fn.starts.splice(at, 0, r.startOffset);
      fn.ids.splice(at, 0, id);
    }
    return fn;
  }

  private post(method: string, params?: object): unknown {
    let result: unknown;
    let error: Error | null = null;
    // A session connected to its own thread answers synchronously.
    this.session.post(method, params, (e, r) => {
      error = e;
      result = r;
    });
    if (error) throw error;
    return result;
  }
}

function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}
