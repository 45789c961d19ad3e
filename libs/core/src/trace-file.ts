import * as fs from 'node:fs';
import type { CoreTrace, TraceSink } from './trace-record';

/**
 * One trace file as Triton writes it: a JSON array of the traces' records. With a log frequency
 * of n, every n traces go to `<file>.<index>` (index from 0); with 0, every trace is kept and the
 * file is written at shutdown.
 */
class TraceFile {
  private records: string[] = [];
  private traces = 0;
  private index = 0;
  private writing: Promise<void> = Promise.resolve();

  constructor(
    private readonly file: string,
    private readonly onError: (message: string) => void,
  ) {}

  add(trace: CoreTrace, logFrequency: number): void {
    for (const r of trace.records()) this.records.push(r);
    this.traces++;
    if (logFrequency > 0 && this.traces >= logFrequency) this.flush(true);
  }

  /** Writes what is held: to the next indexed file when rotating, else the whole file. */
  flush(indexed: boolean): void {
    if (this.traces === 0 && (indexed || this.index > 0)) return;
    const name = indexed ? `${this.file}.${this.index++}` : this.file;
    const text = `[${this.records.join(',')}]`;
    this.records = [];
    this.traces = 0;
    this.writing = this.writing
      .then(() => fs.promises.writeFile(name, text))
      .catch((e: unknown) => this.onError(`failed to write trace file '${name}': ${(e as Error).message}`));
  }

  settled(): Promise<void> {
    return this.writing;
  }
}

/** Triton-mode traces: each trace goes to its scope's file. */
export class TraceFiles implements TraceSink {
  private readonly files = new Map<string, TraceFile>();
  /** Per file, whether it rotates (the last log frequency it was written with). */
  private readonly rotating = new Map<string, boolean>();

  constructor(private readonly onError: (message: string) => void = () => undefined) {}

  finished(trace: CoreTrace): void {
    const { file, logFrequency } = trace.scope;
    if (!file) return;
    let f = this.files.get(file);
    if (!f) {
      f = new TraceFile(file, this.onError);
      this.files.set(file, f);
    }
    this.rotating.set(file, logFrequency > 0);
    f.add(trace, logFrequency);
  }

  /** Writes every held trace and waits for the writes (shutdown). */
  async close(): Promise<void> {
    for (const [name, f] of this.files) f.flush(this.rotating.get(name) ?? false);
    await Promise.all([...this.files.values()].map((f) => f.settled()));
  }
}
