import * as ort from 'onnxruntime-node';
import type { OrtType } from './datatypes';
import type { RunTensor } from './messages';
import type { SessionOptions } from './session-options';
import type { SessionRunner } from './session-runner';

/**
 * Runs the session on the calling thread (the event loop). Only for tiny models, where the run
 * is cheaper than a hop to a worker thread: `run()` blocks the thread for its whole duration.
 */
export class InlineSessionRunner implements SessionRunner {
  private constructor(private session: ort.InferenceSession | undefined) {}

  static async open(modelPath: string, options: SessionOptions): Promise<InlineSessionRunner> {
    return new InlineSessionRunner(await ort.InferenceSession.create(modelPath, options));
  }

  get inputNames(): readonly string[] {
    return this.session?.inputNames ?? [];
  }

  get outputNames(): readonly string[] {
    return this.session?.outputNames ?? [];
  }

  run(feeds: RunTensor[], fetches: string[]): Promise<RunTensor[]> {
    const session = this.session;
    if (!session) return Promise.reject(new Error('the session is closed'));
    const ortFeeds: Record<string, ort.Tensor> = {};
    for (const t of feeds) ortFeeds[t.name] = new ort.Tensor(t.type, t.data, t.dims);
    // Every output is fetched: onnxruntime-node 1.23 mislabels the results of a partial fetch list.
    return session.run(ortFeeds).then((results) =>
      fetches.map((name) => {
        const t = results[name];
        if (!t) throw new Error(`ONNX Runtime returned no output '${name}'`);
        return { name, type: t.type as OrtType, dims: Array.from(t.dims), data: t.data as RunTensor['data'] };
      }),
    );
  }

  async close(): Promise<void> {
    const session = this.session;
    this.session = undefined;
    await session?.release();
  }
}
