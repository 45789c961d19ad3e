import type { ModelConfig } from '@nereid/model-config';
import { fromConfigType } from '@nereid/tensor';
import { ORT_ARRAY, ortTypeOf } from './datatypes';
import type { RunTensor } from './messages';
import type { SessionRunner } from './session-runner';

/**
 * A model whose largest batch runs within this many microseconds is cheaper to run on the event
 * loop than to hand to a worker thread: the hop (structured clone, two thread wake-ups, message
 * dispatch) costs about as much, and on a small machine the extra thread competes for the cores.
 */
export const EVENT_LOOP_BUDGET_US = 300;

/** Zero-filled feeds for the largest batch the model accepts (variable dims taken as 1). */
export function probeFeeds(config: ModelConfig): RunTensor[] | undefined {
  const batch = Math.max(0, config.max_batch_size ?? 0);
  const feeds: RunTensor[] = [];
  for (const input of config.input ?? []) {
    const datatype = fromConfigType(input.data_type ?? '');
    const type = datatype && ortTypeOf(datatype);
    if (!type) return undefined;
    const inner = (input.reshape?.shape ?? input.dims ?? []).map((d) => (d < 0 ? 1 : d));
    const dims = batch > 0 ? [batch, ...inner] : inner;
    const count = dims.reduce((a, b) => a * b, 1);
    const data = type === 'string' ? new Array<string>(count).fill('') : new ORT_ARRAY[type](count);
    feeds.push({ name: input.name ?? '', type, dims, data });
  }
  return feeds;
}

/**
 * Fastest of `runs` probe runs in microseconds (the minimum measures the model, not the machine's
 * momentary load), or undefined when the model cannot be probed.
 */
export function probeRunMicros(runner: SessionRunner, config: ModelConfig, runs = 10): Promise<number | undefined> {
  // One probe at a time: models load in parallel, and probes timing each other would mislead.
  const probe = probeQueue.then(() => probeOnce(runner, config, runs));
  probeQueue = probe.catch(() => undefined);
  return probe;
}

let probeQueue: Promise<unknown> = Promise.resolve();

async function probeOnce(runner: SessionRunner, config: ModelConfig, runs: number): Promise<number | undefined> {
  const times: number[] = [];
  // Run 0 warms the session up (first runs allocate and plan) and is not counted.
  for (let i = 0; i <= runs; i++) {
    const feeds = probeFeeds(config);
    if (!feeds) return undefined;
    const t0 = performance.now();
    try {
      await runner.run(feeds, [...runner.outputNames]);
    } catch {
      return undefined;
    }
    if (i > 0) times.push((performance.now() - t0) * 1000);
  }
  return Math.min(...times);
}
